"""Criteria: per-row checks that also aggregate a suite, one class per type."""

from assay.criteria.base import Criterion, CriterionError, EvidenceError, GradingContext, Service
from assay.criteria.registry import CriterionRegistry, default_criteria

__all__ = [
    "Criterion",
    "CriterionError",
    "CriterionRegistry",
    "EvidenceError",
    "GradingContext",
    "Service",
    "default_criteria",
]
