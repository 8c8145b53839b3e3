"""Experiment intervals from row results: replicates resampled with their row, errors left
out, paired differences on the same resamples, against contributions written out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from assay.metrics.bootstrap import bootstrap, difference, ratio
from assay.reports.experiment import build_experiment
from assay.results.experiment import ExperimentResult
from assay.results.status import FinalStatus
from assay.results.task_result import EvaluationResult
from tests.reports.test_rollup import SUITE, errored, graded

# Four rows; each replicate passes (1) or fails (0); None is a replicate that errored.
ARM_A = {"r1": [1, 1, 1], "r2": [0, 0, 0], "r3": [1, 0, 1], "r4": [0, None, 1]}
ARM_B = {"r1": [1, 1, 1], "r2": [1, 0, 1], "r3": [1, 1, 1], "r4": [1, None, 1]}


def results(variant: str, arm: dict[str, list[int | None]]) -> list[EvaluationResult]:
    out = []
    for index, (row_id, outcomes) in enumerate(arm.items()):
        for replicate, outcome in enumerate(outcomes):
            if outcome is None:
                result = errored(index, row_id=row_id, replicate=replicate)
            else:
                observed = "positive" if outcome else "negative"
                result = graded(index, "positive", observed, row_id=row_id, replicate=replicate)
            out.append(result.model_copy(update={"variant_id": variant}))
    return out


def by_hand(arm: dict[str, list[int | None]]) -> NDArray[np.float64]:
    """One row per dataset row: [passed replicates, graded replicates]."""
    return np.array(
        [[sum(o for o in v if o is not None), sum(1 for o in v if o is not None)]
         for v in arm.values()], dtype=float,
    )  # fmt: skip


def experiment() -> ExperimentResult:
    everything = results("a", ARM_A) + results("b", ARM_B)
    return build_experiment(everything, {}, experiment_id="e", description="",
                            variant_ids=["a", "b"], row_ids={SUITE: list(ARM_A)})  # fmt: skip


def test_replicates_stay_with_their_row_and_errors_are_left_out() -> None:
    report = experiment()
    first = report.variants[0]
    assert first.replicates == 3
    estimate = first.metrics["pass_rate"]
    expected = bootstrap(by_hand(ARM_A), ratio(0, 1))
    assert estimate.value == pytest.approx(6 / 11)  # 6 passes over 11 graded replicates
    assert estimate.method == "bootstrap"
    assert (estimate.low, estimate.high) == (expected.low, expected.high)
    flat = np.array([[o, 1] for v in ARM_A.values() for o in v if o is not None], dtype=float)
    unclustered = bootstrap(flat, ratio(0, 1))
    assert (estimate.low, estimate.high) != (unclustered.low, unclustered.high)


def test_the_paired_difference_resamples_both_arms_by_row() -> None:
    report = experiment()
    (comparison,) = report.comparisons
    found = comparison.metrics["pass_rate"]
    assert found.a == pytest.approx(6 / 11) and found.b == pytest.approx(10 / 11)
    paired = np.hstack([by_hand(ARM_A), by_hand(ARM_B)])
    expected = bootstrap(paired, difference(ratio(0, 1), ratio(0, 1), 2))
    assert found.difference == pytest.approx(4 / 11)
    assert (found.low, found.high) == (expected.low, expected.high)


def test_status_of_the_hand_made_rows() -> None:
    """The rows above are what the runner writes: passes SUCCESS, fails FAILURE, errors ERROR."""
    made = results("a", ARM_A)
    statuses = [r.final_status for r in made]
    assert statuses.count(FinalStatus.ERROR) == 1
    assert statuses.count(FinalStatus.SUCCESS) == 6 and statuses.count(FinalStatus.FAILURE) == 5
