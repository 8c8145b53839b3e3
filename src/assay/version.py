"""assay's version (PEP 440), at the bottom of the layers so any module may name it.

``pyproject.toml``'s ``version`` says the same; ``tests/test_layers.py`` checks that they agree.
"""

__version__ = "0.1.0"
