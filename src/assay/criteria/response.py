"""``response_match``: the final response (or a file) against expected text.

A final response that matches nothing and declines the task (:func:`assay.qa.rules.
is_refusal`) is a refusal, not a mismatch: the criterion did not grade it (``refused``)."""

from __future__ import annotations

import re
from typing import ClassVar

from assay.criteria import patterns
from assay.criteria.base import Criterion, GradingContext, basic_result, read_text
from assay.qa.rules import is_refusal
from assay.results.secrets import clip_head
from assay.results.task_result import CriterionResult
from assay.spec.criteria import ResponseMatch


def matches(text: str, expected: str, how: str, *, case_sensitive: bool) -> bool:
    """``exact`` (both stripped), ``contains`` or ``regex`` (``re.search``)."""
    if how == "regex":
        return patterns.search(expected, text, 0 if case_sensitive else re.IGNORECASE) is not None
    if not case_sensitive:
        text, expected = text.casefold(), expected.casefold()
    if how == "exact":
        return text.strip() == expected.strip()
    return expected in text


def _short(text: str, limit: int = 80) -> str:
    return repr(clip_head(text, limit))


class ResponseMatchCriterion(ResponseMatch, Criterion):
    """Score 1.0 when the text matches any of ``expected``, else 0.0."""

    graded_after_crash: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Match the text against each expected item."""
        text = read_text(self.path, context)
        if self.path is None and context.refusal() is not None:
            refused = basic_result(self, 0.0, f"refused: the provider declined to answer "
                                              f"({context.refusal()})")  # fmt: skip
            return refused.model_copy(update={"evaluation_status": "refused"})
        if text.value is None:
            return basic_result(self, 0.0, f"{text.source} is missing")
        wanted = [self.expected] if isinstance(self.expected, str) else self.expected
        for item in wanted:
            if matches(text.value, item, self.match, case_sensitive=self.case_sensitive):
                return basic_result(self, 1.0, f"{text.source} matched ({self.match}) {item!r}")
        details = (f"{text.source} {_short(text.value)} does not match ({self.match}) "
                   + " or ".join(repr(w) for w in wanted))  # fmt: skip
        if self.path is None and is_refusal(text.value):
            refusal = basic_result(self, 0.0, "refused: " + details)
            return refusal.model_copy(update={"evaluation_status": "refused"})
        return basic_result(self, 0.0, details)
