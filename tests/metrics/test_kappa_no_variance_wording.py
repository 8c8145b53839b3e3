"""κ with no large-sample interval says what was measured: "every row agrees" only when every
row did; a rater that always says one thing is named, with how many rows agreed."""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score

from assay.metrics.agreement import cohen_kappa


def test_every_row_agreeing_is_said_with_its_count() -> None:
    pairs = [("pass", "pass")] * 6 + [("fail", "fail")] * 6
    estimate = cohen_kappa(pairs, categories=["pass", "fail"])
    assert estimate.value == pytest.approx(1.0)
    assert estimate.reason is not None and "(all 12 rows agree)" in estimate.reason


@pytest.mark.parametrize(
    ("human", "judge", "who", "agreed"),
    [
        (["pass", "fail"] * 6, ["pass"] * 12, "the second rater gave every row 'pass'", 6),
        (["fail", "fail", "pass"] * 4, ["fail"] * 12, "the second rater gave every row 'fail'", 8),
        (["pass"] * 12, ["pass", "fail", "fail"] * 4, "the first rater gave every row 'pass'", 4),
    ],
    ids=["judge-always-pass", "judge-always-fail", "humans-always-pass"],
)
def test_a_rater_that_always_says_one_thing_is_not_called_agreement(
    human: list[str], judge: list[str], who: str, agreed: int
) -> None:
    pairs = list(zip(human, judge, strict=True))
    estimate = cohen_kappa(pairs, categories=["pass", "fail"])
    assert estimate.value == pytest.approx(cohen_kappa_score(human, judge))
    assert estimate.low is None
    assert estimate.reason is not None
    assert "every row agrees" not in estimate.reason and "all 12 rows agree" not in estimate.reason
    assert f"({who}; {agreed} of 12 rows agree)" in estimate.reason
