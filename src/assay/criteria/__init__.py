"""Criteria: per-row checks that also aggregate a suite."""

from assay.criteria.base import CriterionError, CriterionRegistry, GradingContext
from assay.criteria.registry import default_criteria

__all__ = ["CriterionError", "CriterionRegistry", "GradingContext", "default_criteria"]
