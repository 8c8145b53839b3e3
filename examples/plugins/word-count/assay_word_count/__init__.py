"""``word_count``: an assay criterion that a package adds (its entry point is in
``pyproject.toml``, group ``assay.criteria``). Score 1.0 when the final response has at
least ``min_words`` words (and at most ``max_words``, when given)."""

from __future__ import annotations

from typing import ClassVar, Literal

from assay.criteria import Criterion, GradingContext
from assay.criteria.base import basic_result
from assay.results.task_result import CriterionResult


class WordCount(Criterion):
    """The fields are the criterion's YAML config; ``type`` names it in task files."""

    type: Literal["word_count"]
    min_words: int = 1
    max_words: int | None = None

    graded_after_crash: ClassVar[bool] = True  # it only reads the response

    async def check(self, context: GradingContext) -> CriterionResult:
        """Count the words of the final response."""
        words = len((context.response or "").split())
        fits = words >= self.min_words and (self.max_words is None or words <= self.max_words)
        return basic_result(self, 1.0 if fits else 0.0, f"{words} words")
