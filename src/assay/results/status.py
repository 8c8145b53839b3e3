"""``FinalStatus``: how a row-task ended, the category each status counts in, and the one
rule every report counts rows by.

Values and categories follow Coder Eval (``reference/originals.md`` §1.10): ``SUCCESS``
(succeeded); ``FAILURE``, ``TIMEOUT``, ``MAX_TURNS_EXHAUSTED``, ``TOKEN_BUDGET_EXCEEDED``,
``COST_BUDGET_EXCEEDED`` (failed: the agent was graded, or stopped, and did not pass);
``ERROR``, ``BUILD_FAILED`` (error: something broke before or during grading: the agent, the
sandbox, a criterion that could not evaluate, a judge without a verdict); ``NOT_GRADED``
(``assay execute`` ran the agent only). assay adds ``REFUSED``: the model declined to answer
(category ``refused``), which is neither a wrong answer nor an error.

**What did not grade** (categories ``error``, ``refused``, ``not_graded``) is kept out of
every denominator and every average, and counted apart, by :class:`RowCounts`, which every
report uses: ``pass_rate = passed / graded`` with ``graded = passed + failed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
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
    REFUSED = "REFUSED"
    NOT_GRADED = "NOT_GRADED"

    @property
    def category(self) -> str:
        """``"passed"``, ``"failed"``, ``"error"``, ``"refused"`` or ``"not_graded"``."""
        if self is FinalStatus.SUCCESS:
            return "passed"
        if self in (FinalStatus.ERROR, FinalStatus.BUILD_FAILED):
            return "error"
        if self is FinalStatus.REFUSED:
            return "refused"
        if self is FinalStatus.NOT_GRADED:
            return "not_graded"
        return "failed"

    @property
    def limit(self) -> str | None:
        """The ``run_limits`` setting a failed row ran into (``TIMEOUT``:
        ``task_timeout``, …), or ``None``."""
        return _LIMITS.get(self.value)

    @property
    def graded(self) -> bool:
        """The row was graded: it passed or failed (everything else is kept out of rates)."""
        return self.category in ("passed", "failed")


_LIMITS = {
    "TIMEOUT": "task_timeout",
    "MAX_TURNS_EXHAUSTED": "max_turns",
    "TOKEN_BUDGET_EXCEEDED": "max_total_tokens",
    "COST_BUDGET_EXCEEDED": "max_usd",
}


@dataclass(frozen=True)
class RowCounts:
    """Rows by category, and the rates every report derives from them.

    Attributes:
        passed, failed, error, refused, not_graded: rows per category.
    """

    passed: int = 0
    failed: int = 0
    error: int = 0
    refused: int = 0
    not_graded: int = 0

    @classmethod
    def of(cls, statuses: Iterable[FinalStatus]) -> RowCounts:
        """Count ``statuses`` (one per row-task replicate)."""
        counts = dict.fromkeys(("passed", "failed", "error", "refused", "not_graded"), 0)
        for status in statuses:
            counts[status.category] += 1
        return cls(**counts)

    @property
    def total(self) -> int:
        """Every row counted."""
        return self.passed + self.failed + self.error + self.refused + self.not_graded

    @property
    def graded(self) -> int:
        """Rows that passed or failed: the denominator of every rate."""
        return self.passed + self.failed

    @property
    def pass_rate(self) -> float | None:
        """``passed / graded``; ``None`` when nothing was graded."""
        return self.passed / self.graded if self.graded else None

    @property
    def refusal_rate(self) -> float | None:
        """``refused / (graded + refused)``: the share of answered rows that were refusals;
        ``None`` when no row was graded or refused."""
        answered = self.graded + self.refused
        return self.refused / answered if answered else None

    @property
    def did_not_grade(self) -> int:
        """Rows that errored or refused (not counting rows not graded yet)."""
        return self.error + self.refused
