"""A package's exported names imported on first use (PEP 562), so importing the package, as
the command line does for one of its modules, imports none of the modules behind them."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, str], *, keep: MutableMapping[str, Any] | None = None
) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``name`` taken from the module
    ``homes[name]`` names, imported on first use.

    Args:
        package: the package's dotted name (for the error).
        homes: exported name → the dotted module that defines it.
        keep: the package's namespace (``globals()``), where a name once imported is kept so
            later lookups skip the call; ``None`` keeps nothing.

    Returns:
        ``__getattr__(name)``, raising ``AttributeError`` for a name the package does not
        export.
    """

    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        if keep is not None:
            keep[name] = value
        return value

    return __getattr__
