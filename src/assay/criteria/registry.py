"""The default criterion registry."""

from __future__ import annotations

from assay.criteria.base import CriterionRegistry
from assay.criteria.classification import ClassificationChecker
from assay.criteria.commands import RunCommandChecker
from assay.criteria.files import FileCheckChecker, FileExistsChecker
from assay.criteria.judge import JudgeChecker
from assay.criteria.qa import QaChecker
from assay.criteria.response import ResponseMatchChecker


def default_criteria() -> CriterionRegistry:
    """A registry with every built-in checker."""
    registry = CriterionRegistry()
    for checker in (
        FileExistsChecker(),
        FileCheckChecker(),
        RunCommandChecker(),
        ClassificationChecker(),
        ResponseMatchChecker(),
        QaChecker(),
        JudgeChecker(),
    ):
        registry.register(checker)
    return registry
