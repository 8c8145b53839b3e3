"""What users write, as pydantic models: task files and criteria."""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.spec.criterion_base import CriterionSpec
    from assay.spec.task import TaskDefinition

# each name's module, imported on first use (PEP 562): importing the package, as the
# command line does for one of its modules, imports none of them
_EXPORTS = MappingProxyType(
    {
        "CriterionSpec": "assay.spec.criterion_base",
        "TaskDefinition": "assay.spec.task",
    }
)

__all__ = ["CriterionSpec", "TaskDefinition"]


def __getattr__(name: str) -> Any:
    """The exported ``name``, imported from its module on first use.

    Raises:
        AttributeError: the package exports no such name.
    """
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
