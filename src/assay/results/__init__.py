"""What assay writes: task.json, suite.json, run.json, as pydantic models."""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.results.run import RunSummary
    from assay.results.status import FinalStatus
    from assay.results.suite import CriterionAggregate, SuiteRollup, ThresholdCheck
    from assay.results.task_result import EvaluationResult

# each name's module, imported on first use (PEP 562): importing the package, as the
# command line does for one of its modules, imports none of them
_EXPORTS = MappingProxyType(
    {
        "RunSummary": "assay.results.run",
        "FinalStatus": "assay.results.status",
        "CriterionAggregate": "assay.results.suite",
        "SuiteRollup": "assay.results.suite",
        "ThresholdCheck": "assay.results.suite",
        "EvaluationResult": "assay.results.task_result",
    }
)

__all__ = [
    "CriterionAggregate",
    "EvaluationResult",
    "FinalStatus",
    "RunSummary",
    "SuiteRollup",
    "ThresholdCheck",
]


def __getattr__(name: str) -> Any:
    """The exported ``name``, imported from its module on first use.

    Raises:
        AttributeError: the package exports no such name.
    """
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
