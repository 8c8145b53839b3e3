"""Experiment intervals from row results: a row's replicates are one cluster, errors are left
out, rows that share a ``cluster_field`` value are one cluster, and paired differences use the
same clusters; checked against statsmodels' cluster-robust OLS on the observations."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from assay.reports.experiment import build_experiment
from assay.results.experiment import ExperimentResult
from assay.results.status import FinalStatus
from assay.results.task_result import EvaluationResult
from tests.reports.test_rollup import SUITE, errored, graded

# Four rows; each replicate passes (1) or fails (0); None is a replicate that errored.
ARM_A = {"r1": [1, 1, 1], "r2": [0, 0, 0], "r3": [1, 0, 1], "r4": [0, None, 1]}
ARM_B = {"r1": [1, 1, 1], "r2": [1, 0, 1], "r3": [1, 1, 1], "r4": [1, None, 1]}
STORY = {"r1": "s1", "r2": "s1", "r3": "s2", "r4": "s3"}


def results(variant: str, arm: dict[str, list[int | None]]) -> list[EvaluationResult]:
    out = []
    for index, (row_id, outcomes) in enumerate(arm.items()):
        for replicate, outcome in enumerate(outcomes):
            if outcome is None:
                result = errored(index, row_id=row_id, replicate=replicate)
            else:
                observed = "positive" if outcome else "negative"
                result = graded(index, "positive", observed, row_id=row_id, replicate=replicate)
            row = {"id": row_id, "story": STORY.get(row_id, row_id)}
            out.append(result.model_copy(update={"variant_id": variant, "row": row}))
    return out


def experiment(cluster_field: str | None = None) -> ExperimentResult:
    everything = results("a", ARM_A) + results("b", ARM_B)
    return build_experiment(everything, {}, experiment_id="e", description="",
                            variant_ids=["a", "b"], row_ids={SUITE: list(ARM_A)},
                            cluster_fields={SUITE: cluster_field})  # fmt: skip


def oracle(arm: dict[str, list[int | None]], groups: dict[str, str]) -> tuple[float, float]:
    """statsmodels' CR1 standard error and t(G-1) interval of the observations' mean."""
    values = [float(o) for v in arm.values() for o in v if o is not None]
    names = [groups[r] for r, v in arm.items() for o in v if o is not None]
    codes = {n: i for i, n in enumerate(dict.fromkeys(names))}
    fit = sm.OLS(np.array(values), np.ones(len(values))).fit(
        cov_type="cluster", cov_kwds={"groups": np.array([codes[n] for n in names])}, use_t=True
    )
    return float(fit.params[0]), float(fit.bse[0])


@pytest.mark.parametrize("field", [None, "story"])
def test_replicates_are_one_cluster_and_errors_are_left_out(field: str | None) -> None:
    report = experiment(field)
    first = report.variants[0]
    assert first.replicates == 3
    estimate = first.metrics["pass_rate"]
    groups = STORY if field else {r: r for r in ARM_A}
    mean, se = oracle(ARM_A, groups)
    assert estimate.value == pytest.approx(6 / 11) == pytest.approx(mean)
    assert estimate.se == pytest.approx(se)
    assert estimate.clusters == len(set(groups.values()))
    assert estimate.method == "cluster exact"  # a proportion on fewer than 30 clusters
    assert estimate.low is not None and estimate.high is not None
    assert estimate.low < 6 / 11 < estimate.high
    # the mean of a criterion's score is clustered the same way, with a t interval
    mean_estimate = first.metrics["classification_match.mean"]
    assert mean_estimate.se == pytest.approx(se) and mean_estimate.method == "cluster t"


def test_one_cluster_gives_no_interval_and_says_why() -> None:
    everything = [r.model_copy(update={"row": {"id": r.row_id, "story": "same"}})
                  for r in results("a", ARM_A) + results("b", ARM_B)]  # fmt: skip
    report = build_experiment(everything, {}, experiment_id="e", description="",
                              variant_ids=["a", "b"], row_ids={SUITE: list(ARM_A)},
                              cluster_fields={SUITE: "story"})  # fmt: skip
    estimate = report.variants[0].metrics["pass_rate"]
    assert estimate.clusters == 1 and estimate.low is None
    assert "at least 2 clusters" in (estimate.reason or "")
    assert "at least 2 clusters" in (report.comparisons[0].metrics["pass_rate"].reason or "")


@pytest.mark.parametrize("field", [None, "story"])
def test_the_paired_difference_is_clustered_like_each_arm(field: str | None) -> None:
    report = experiment(field)
    (comparison,) = report.comparisons
    found = comparison.metrics["pass_rate"]
    assert found.a == pytest.approx(6 / 11) and found.b == pytest.approx(10 / 11)
    assert found.difference == pytest.approx(4 / 11)
    groups = STORY if field else {r: r for r in ARM_A}
    # the influence of each cluster on b - a, by hand
    names = sorted(set(groups.values()))
    u = []
    for name in names:
        ya = sum(o for r, v in ARM_A.items() if groups[r] == name for o in v if o is not None)
        na = sum(1 for r, v in ARM_A.items() if groups[r] == name for o in v if o is not None)
        yb = sum(o for r, v in ARM_B.items() if groups[r] == name for o in v if o is not None)
        nb = sum(1 for r, v in ARM_B.items() if groups[r] == name for o in v if o is not None)
        u.append((yb - 10 / 11 * nb) / 11 - (ya - 6 / 11 * na) / 11)
    g = len(names)
    assert found.se == pytest.approx(np.sqrt(g / (g - 1) * sum(x * x for x in u)))
    assert found.clusters == g and found.method == "cluster t"
    assert found.low is not None and found.high is not None and found.low < found.high


def test_status_of_the_hand_made_rows() -> None:
    """The rows above are what the runner writes: passes SUCCESS, fails FAILURE, errors ERROR."""
    made = results("a", ARM_A)
    statuses = [r.final_status for r in made]
    assert statuses.count(FinalStatus.ERROR) == 1
    assert statuses.count(FinalStatus.SUCCESS) == 6 and statuses.count(FinalStatus.FAILURE) == 5
