"""What users write, as pydantic models: task files and criteria."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from assay.lazy import lazy_exports

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


__getattr__ = lazy_exports("assay.spec", _EXPORTS)
