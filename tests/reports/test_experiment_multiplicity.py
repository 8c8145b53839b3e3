"""Several variants and several metrics: each difference's p-value is the clustered t test,
and a suite's p-values are adjusted together (Holm by default), against statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.stats.multitest import multipletests

from assay.reports.experiment import build_experiment
from assay.reports.markdown import render_experiment
from assay.results.experiment import ExperimentResult
from tests.reports.test_experiment_intervals import results
from tests.reports.test_rollup import SUITE

ROWS = 40  # no cluster_field: each row is its own cluster


def arm(rate: float, seed: int) -> dict[str, list[int | None]]:
    rng = np.random.default_rng(seed)
    return {f"r{i}": [int(rng.uniform() < rate)] for i in range(ROWS)}


ARMS = {"a": arm(0.3, 1), "b": arm(0.8, 2), "c": arm(0.35, 3), "d": arm(0.9, 4)}


def experiment(adjustment: str = "holm") -> ExperimentResult:
    everything = [r for name, outcomes in ARMS.items() for r in results(name, outcomes)]
    return build_experiment(everything, {}, experiment_id="e", description="",
                            variant_ids=list(ARMS), row_ids={SUITE: list(ARMS["a"])},
                            adjustment=adjustment)  # type: ignore[arg-type]  # fmt: skip


def oracle_p(first: str, second: str) -> float:
    diff = np.array([ARMS[second][r][0] - ARMS[first][r][0] for r in ARMS["a"]], dtype=float)
    fit = sm.OLS(diff, np.ones(ROWS)).fit(
        cov_type="cluster", cov_kwds={"groups": np.arange(ROWS)}, use_t=True
    )
    return float(fit.pvalues[0])


@pytest.mark.parametrize("adjustment", ["holm", "bonferroni"])
def test_every_difference_of_a_suite_is_one_family(adjustment: str) -> None:
    report = experiment(adjustment)
    assert report.adjustment == adjustment and len(report.comparisons) == 6
    found, raw = [], []
    for comparison in report.comparisons:
        for name, difference in comparison.metrics.items():
            if difference.p_value is None:
                continue
            found.append((comparison.variant_a, comparison.variant_b, name, difference))
            raw.append(difference.p_value)
    # pass_rate, the criterion's mean and its accuracy: three metrics × six pairs
    assert len(found) == 18
    for first, second, _, difference in found:
        assert difference.p_value == pytest.approx(oracle_p(first, second), rel=1e-9)
    # one hypothesis a pair, not three: the three metrics read the same per-row outcomes (one
    # criterion), so the family is the six pairs' tests and each metric gets its pair's value
    pairs = list(dict.fromkeys((a, b) for a, b, *_ in found))
    reject, expected, _, _ = multipletests([oracle_p(a, b) for a, b in pairs], alpha=0.05,
                                           method=adjustment)  # fmt: skip
    by_pair = {pair: (bool(r), float(e))
               for pair, r, e in zip(pairs, reject, expected, strict=True)}  # fmt: skip
    assert [d.p_adjusted for *_, d in found] == pytest.approx(
        [by_pair[a, b][1] for a, b, *_ in found])  # fmt: skip
    assert [d.survives for *_, d in found] == [by_pair[a, b][0] for a, b, *_ in found]
    tripled = multipletests(raw, alpha=0.05, method=adjustment)[1]  # each counted thrice
    shared = [by_pair[a, b][1] for a, b, *_ in found]
    assert any(e != pytest.approx(t) for e, t in zip(shared, tripled, strict=True))
    # a, c are close and b, d are close; the far pairs survive, the close ones do not
    survivors = {(a, b) for a, b, name, d in found if name == "pass_rate" and d.survives}
    assert ("a", "b") in survivors and ("a", "d") in survivors
    assert ("a", "c") not in survivors
    mcnemar = [c.mcnemar.p_value for c in report.comparisons]
    _, expected_m, _, _ = multipletests(mcnemar, alpha=0.05, method=adjustment)
    assert [c.mcnemar.p_adjusted for c in report.comparisons] == pytest.approx(list(expected_m))


def test_the_report_says_which_survive() -> None:
    markdown = render_experiment(experiment())
    assert "p → holm-adjusted" in markdown
    assert "✓ survives" in markdown and " ✗" in markdown
    assert "a difference survives when the adjusted p is at most 0.05" in markdown
    assert (
        "Achieved power: these 40 rows (40 clusters) detect a pass-rate difference of" in markdown
    )


def test_without_adjustment_the_p_values_stand() -> None:
    report = experiment("none")
    for comparison in report.comparisons:
        for difference in comparison.metrics.values():
            assert difference.p_adjusted == difference.p_value


def test_each_comparison_replays_the_stopping_rule() -> None:
    from assay.metrics.sequential import decide

    report = experiment()
    by_pair = {(c.variant_a, c.variant_b): c for c in report.comparisons}
    far = by_pair[("a", "d")].sequential
    assert far is not None and far.decision == "b_better" and far.of_rows == ROWS
    values = np.array([ARMS["d"][r][0] - ARMS["a"][r][0] for r in ARMS["a"]], dtype=float)
    expected = decide(values[np.random.default_rng(far.seed).permutation(ROWS)])
    assert (far.rows, far.low, far.high) == (expected.rows, expected.low, expected.high)
    assert far.rows < ROWS
    near = by_pair[("a", "c")].sequential
    assert near is not None and near.decision == "undecided" and near.rows == ROWS
    markdown = render_experiment(report)
    assert f"would have run {far.rows} of {ROWS} rows" in markdown
    assert "it would not have stopped early" in markdown


def test_a_p_value_that_underflowed_is_never_printed_as_zero() -> None:
    report = experiment()
    first = report.comparisons[0]
    mcnemar = first.mcnemar.model_copy(update={"p_value": 0.0, "p_adjusted": 0.0})
    name, difference = next(iter(first.metrics.items()))
    metrics = {
        **first.metrics,
        name: difference.model_copy(update={"p_value": 5e-324, "p_adjusted": 0.0}),
    }
    changed = first.model_copy(update={"mcnemar": mcnemar, "metrics": metrics})
    markdown = render_experiment(report.model_copy(update={"comparisons": [changed]}))
    mcnemar_line = next(line for line in markdown.splitlines() if line.startswith("McNemar"))
    assert mcnemar_line.endswith("; p < 1e-300 → < 1e-300 ✓ survives")
    metric_line = next(line for line in markdown.splitlines()
                       if line.startswith(f"| `{name}`") and "→" in line)  # fmt: skip
    assert "| < 1e-300 → < 1e-300 ✓ survives |" in metric_line
    assert "p = 0" not in markdown and "| 0 →" not in markdown and "| 5e-324" not in markdown


def test_a_difference_of_rates_stays_within_minus_one_and_one() -> None:
    few = {"a": {"r0": [0], "r1": [0], "r2": [1]}, "b": {"r0": [1], "r1": [1], "r2": [0]}}
    everything = [r for name, outcomes in few.items() for r in results(name, outcomes)]
    report = build_experiment(everything, {}, experiment_id="e", description="",
                              variant_ids=list(few), row_ids={SUITE: list(few["a"])})  # fmt: skip
    rate = report.comparisons[0].metrics["pass_rate"]
    # three clusters: t on 2 df makes the raw interval about [-2.5, 3.2]; a difference of two
    # rates lies in [-1, 1]
    assert rate.difference == pytest.approx(1 / 3)
    assert (rate.low, rate.high) == (-1.0, 1.0)
    assert rate.detectable is not None and rate.detectable > 1
    markdown = render_experiment(report)
    assert "are too few to detect any pass-rate difference with 80% power" in markdown
