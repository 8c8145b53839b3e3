"""``FinalStatus``: how a row-task ended, and the category each status counts in.

Values and categories follow Coder Eval (``reference/originals.md`` §1.10): ``SUCCESS``
(succeeded); ``FAILURE``, ``TIMEOUT``, ``MAX_TURNS_EXHAUSTED``, ``TOKEN_BUDGET_EXCEEDED``,
``COST_BUDGET_EXCEEDED`` (failed: the agent was graded, or stopped, and did not pass);
``ERROR``, ``BUILD_FAILED`` (error: something broke before grading, so the row is excluded
from criterion denominators); ``NOT_GRADED`` (``assay execute`` ran the agent only).
"""

from __future__ import annotations

from enum import StrEnum


class FinalStatus(StrEnum):
    """How one row-task ended."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
    TIMEOUT = "TIMEOUT"
    MAX_TURNS_EXHAUSTED = "MAX_TURNS_EXHAUSTED"
    TOKEN_BUDGET_EXCEEDED = "TOKEN_BUDGET_EXCEEDED"
    COST_BUDGET_EXCEEDED = "COST_BUDGET_EXCEEDED"
    ERROR = "ERROR"
    BUILD_FAILED = "BUILD_FAILED"
    NOT_GRADED = "NOT_GRADED"

    @property
    def category(self) -> str:
        """``"passed"``, ``"failed"``, ``"error"`` or ``"not_graded"``."""
        if self is FinalStatus.SUCCESS:
            return "passed"
        if self in (FinalStatus.ERROR, FinalStatus.BUILD_FAILED):
            return "error"
        if self is FinalStatus.NOT_GRADED:
            return "not_graded"
        return "failed"
