"""The stopping test hears the rows in the rule's shuffled order, never as they finish: a row
that finishes before one ahead of it waits for it. (Heard as they finished, a variant whose
wrong answers take longer, an agent that fails by looping, reached the test late: two
equally good variants were declared different in 2 of 12 runs.)"""

from __future__ import annotations

from assay.metrics.sequential import SequentialTest
from assay.orchestration.running.stopping import Stopper
from assay.results.status import FinalStatus
from assay.results.task_result import EvaluationResult
from assay.spec.experiment import StopRule
from tests.reports.test_rollup import row

KEYS = [("toy", f"r{i}") for i in range(4)]


def _result(key: tuple[str, str], variant: str, passed: bool) -> EvaluationResult:
    status = FinalStatus.SUCCESS if passed else FinalStatus.FAILURE
    result = row(0, status, row_id=key[1])
    return result.model_copy(update={"suite_id": key[0], "variant_id": variant})


def _stopper() -> Stopper:
    stopper = Stopper(StopRule(), ("A", "B"), [[2 * i, 2 * i + 1] for i in range(4)],
                      dict.fromkeys(KEYS, 2), 8, SequentialTest(alpha=0.05))  # fmt: skip
    stopper.rank = {key: place for place, key in enumerate(KEYS)}
    stopper.keys = list(KEYS)
    return stopper


def test_rows_are_heard_in_the_shuffled_order_whatever_order_they_finish_in() -> None:
    stopper = _stopper()
    for key in reversed(KEYS[1:]):  # r3, r2, r1 finish first: B passes, A fails
        stopper.observe(_result(key, "A", passed=False))
        stopper.observe(_result(key, "B", passed=True))
    assert stopper.sequence == [] and stopper.test.state().rows == 0  # r0 is still running
    stopper.observe(_result(KEYS[0], "B", passed=False))
    stopper.observe(_result(KEYS[0], "A", passed=False))
    assert stopper.sequence == KEYS  # the shuffled order
    assert stopper.test.state().rows == 4
    assert stopper.finished == 8


def test_a_row_a_variant_did_not_grade_is_heard_in_its_place_and_left_out() -> None:
    stopper = _stopper()
    errored = _result(KEYS[0], "A", passed=False).model_copy(
        update={"final_status": FinalStatus.ERROR})  # fmt: skip
    stopper.observe(errored)
    stopper.observe(_result(KEYS[0], "B", passed=True))
    stopper.observe(_result(KEYS[1], "A", passed=True))
    stopper.observe(_result(KEYS[1], "B", passed=True))
    assert stopper.sequence == KEYS[:2] and stopper.test.state().rows == 1
