"""Loading task files, expanding datasets, planning and running work items."""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.orchestration.expand import expand_dataset
    from assay.orchestration.plan import build_plan
    from assay.orchestration.task_loader import load_task

# each name's module, imported on first use (PEP 562): importing the package, as the
# command line does for one of its modules, imports none of them
_EXPORTS = MappingProxyType(
    {
        "expand_dataset": "assay.orchestration.expand",
        "build_plan": "assay.orchestration.plan",
        "load_task": "assay.orchestration.task_loader",
    }
)

__all__ = ["build_plan", "expand_dataset", "load_task"]


def __getattr__(name: str) -> Any:
    """The exported ``name``, imported from its module on first use.

    Raises:
        AttributeError: the package exports no such name.
    """
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
