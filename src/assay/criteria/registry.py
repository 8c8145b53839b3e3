"""The default criterion registry."""

from __future__ import annotations

from assay.criteria.agent_registry import agent_checkers
from assay.criteria.base import Checker, CriterionRegistry
from assay.criteria.classification import ClassificationChecker
from assay.criteria.commands import RunCommandChecker
from assay.criteria.files import FileCheckChecker, FileExistsChecker
from assay.criteria.judge import JudgeChecker
from assay.criteria.qa import QaChecker
from assay.criteria.response import ResponseMatchChecker


def default_criteria() -> CriterionRegistry:
    """A registry with every built-in checker."""
    registry = CriterionRegistry()
    checkers: list[Checker] = [
        FileExistsChecker(),
        FileCheckChecker(),
        RunCommandChecker(),
        ClassificationChecker(),
        ResponseMatchChecker(),
        QaChecker(),
        JudgeChecker(),
        *agent_checkers(),
    ]
    for checker in checkers:
        registry.register(checker)
    return registry
