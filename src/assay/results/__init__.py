"""What assay writes: task.json, suite.json, run.json, as pydantic models."""

from assay.results.run import RunSummary
from assay.results.status import FinalStatus
from assay.results.suite import CriterionAggregate, SuiteRollup, ThresholdCheck
from assay.results.task_result import EvaluationResult

__all__ = [
    "CriterionAggregate",
    "EvaluationResult",
    "FinalStatus",
    "RunSummary",
    "SuiteRollup",
    "ThresholdCheck",
]
