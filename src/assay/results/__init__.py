"""What assay writes: task.json, suite.json, run.json, as pydantic models."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from assay.lazy import lazy_exports

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


__getattr__ = lazy_exports("assay.results", _EXPORTS)
