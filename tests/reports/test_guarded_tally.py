"""A criterion's tally guarded (:mod:`assay.reports.guarded_tally`): each way a tally of
one's own can fail is that criterion's error, naming the class, and the guard counts nothing
after it; checked on the tally alone (the run-level effects are in
tests/criteria/test_user_criteria.py)."""

from __future__ import annotations

from typing import Any, Literal

from assay.criteria import Criterion, GradingContext
from assay.criteria.base import ScoreTally, Tally, basic_result
from assay.reports.guarded_tally import GuardedTally
from assay.results.task_result import CriterionResult


class _Mine(Criterion):
    type: Literal["mine"]

    async def check(self, context: GradingContext) -> CriterionResult:
        return basic_result(self, 1.0, "")


def _result(score: float) -> CriterionResult:
    return basic_result(_Mine(type="mine"), score, "")


def _guarded(tally: Any) -> GuardedTally:
    """The guard of a criterion class ``Owned`` whose ``tally()`` is ``tally()``."""
    owned = type("Owned", (_Mine,), {"tally": lambda self: tally()})
    return GuardedTally(owned(type="mine"))


def test_a_tally_that_counts_keeps_its_numbers() -> None:
    guard = _guarded(ScoreTally)
    for score in (0.0, 1.0, 0.5):
        guard.add(_result(score))
    table, _ = guard.result()
    assert guard.error is None and table.values["mean"] == 0.5 and table.values["count"] == 3


def test_a_tally_that_cannot_be_made_is_named() -> None:
    def broken() -> Tally:
        raise KeyError("setting")

    guard = _guarded(broken)
    guard.add(_result(1.0))
    assert guard.result()[0].values == {}
    assert guard.error == "Owned.tally() failed: KeyError: 'setting'"


def test_a_tally_whose_result_is_not_a_table_and_details_is_named() -> None:
    class Wrong(ScoreTally):
        def result(self) -> Any:
            return {"mean": 1.0}

    guard = _guarded(Wrong)
    guard.add(_result(1.0))
    assert guard.result()[0].values == {}
    assert guard.error == (
        "Owned.tally() answered dict, not (MetricTable, dict) as Tally.result() does"
    )


def test_the_first_failure_is_kept_and_nothing_is_counted_after_it() -> None:
    class Twice(ScoreTally):
        def add(self, result: CriterionResult) -> None:
            super().add(result)
            raise ValueError(f"row with score {result.score}")

    guard = _guarded(Twice)
    guard.add(_result(0.25))
    guard.add(_result(0.75))
    assert guard.error == "Owned.tally() failed: ValueError: row with score 0.25"
