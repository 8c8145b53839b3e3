"""assay: evaluate LLMs and coding agents on the datasets their users bring."""

__version__ = "0.1.0"

__all__ = ["__version__"]
