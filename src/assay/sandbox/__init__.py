"""Per-row working directories and the processes run in them."""

from assay.sandbox.tempdir import Sandbox, SandboxEscape

__all__ = ["Sandbox", "SandboxEscape"]
