"""A criterion that exists only for the tests: the whole of it is this one file (its fields
are its YAML config, ``check`` grades a row, ``metric_names`` adds its own metric, and a
tally counts it); the tests register it with one line, ``assay.run(criteria=[WordCount])``."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from assay.criteria import Criterion, GradingContext
from assay.criteria.base import ScoreTally, Tally, basic_result
from assay.metrics.values import MetricTable
from assay.results.task_result import CriterionResult


class WordCount(Criterion):
    """Score 1.0 when the final response has at least ``min_words`` words."""

    type: Literal["word_count"]
    min_words: int = 1

    graded_after_crash: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Count the words of the response."""
        words = len((context.response or "").split())
        return basic_result(self, float(words >= self.min_words), f"{words} words")

    def tally(self) -> Tally:
        """The scores' statistics, and ``long_share``: the share of rows that passed."""
        return _LongShare()

    def metric_names(self) -> set[str] | None:
        """The base metrics and ``long_share``."""
        return (super().metric_names() or set()) | {"long_share"}


class _LongShare(ScoreTally):
    def __init__(self) -> None:
        super().__init__()
        self.long = self.rows = 0

    def add(self, result: CriterionResult) -> None:
        super().add(result)
        self.rows += 1
        self.long += result.score == 1.0

    def result(self) -> tuple[MetricTable, dict[str, Any]]:
        table, details = super().result()
        table.put("long_share", self.long, self.rows, "no row was graded")
        return table, details
