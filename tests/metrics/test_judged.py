"""A judged difference corrected for a calibrated judge's error: the formula by hand, its
edge cases, a simulation with known truth (coverage), and the report's new metric."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t

from assay.metrics.agreement import JudgeErrorRates
from assay.metrics.judged import corrected_difference
from assay.reports.judged import METHOD, add_judged_differences
from assay.reports.markdown import _comparison_section
from assay.results.experiment import Comparison, Difference, ExperimentResult, McNemarRecord


def test_the_formula_by_hand() -> None:
    rates = JudgeErrorRates(tp=45, positives=50, tn=40, negatives=50)  # q1 0.9, q0 0.8
    found = corrected_difference(0.1, 0.03, 100, rates)
    youden = 0.8 + 0.9 - 1  # 0.7
    var_j = 0.8 * 0.2 / 50 + 0.9 * 0.1 / 50  # 0.005
    se = math.sqrt(0.03**2 / youden**2 + 0.1**2 * var_j / youden**4)
    assert found.value == pytest.approx(0.1 / 0.7)
    assert found.se == pytest.approx(se) and se == pytest.approx(0.0452215, abs=1e-6)
    q = t.ppf(0.975, 99)
    assert found.low == pytest.approx(0.1 / 0.7 - q * se)
    assert found.high == pytest.approx(0.1 / 0.7 + q * se)
    assert found.p_value == pytest.approx(2 * t.sf((0.1 / 0.7) / se, 99))


def test_a_judge_no_better_than_chance_or_without_a_class_gives_no_number() -> None:
    chance = corrected_difference(0.2, 0.05, 50, JudgeErrorRates(25, 50, 25, 50))
    assert chance.value is None and "no better than chance" in (chance.reason or "")
    empty = corrected_difference(0.2, 0.05, 50, JudgeErrorRates(0, 0, 25, 50))
    assert empty.value is None and "no truly passing row" in (empty.reason or "")
    one = corrected_difference(0.2, None, 1, JudgeErrorRates(45, 50, 40, 50))
    assert one.value == pytest.approx(0.2 / 0.7) and one.low is None


def test_the_interval_stays_within_what_a_difference_of_rates_can_be() -> None:
    found = corrected_difference(-0.167, 0.12, 12, JudgeErrorRates(7, 20, 19, 20))
    assert found.value == pytest.approx(-0.167 / 0.3)
    assert found.low == -1.0 and found.high is not None and found.high < 1.0


def test_zero_difference_keeps_only_the_rows_error() -> None:
    found = corrected_difference(0.0, 0.03, 100, JudgeErrorRates(45, 50, 40, 50))
    assert found.value == 0.0 and found.se == pytest.approx(0.03 / 0.7)
    assert found.p_value == pytest.approx(1.0)


def test_coverage_with_known_truth() -> None:
    """2,000 simulated paired experiments: true pass rates 0.50 and 0.62 (Δ = 0.12), a judge
    with sensitivity 0.85 and specificity 0.75 calibrated on 60 + 60 labelled rows, 300 rows
    per run. The corrected interval covers the true Δ about 95% of the time; the raw judged
    interval (Δ shrunk by J) almost never does."""
    rng = np.random.default_rng(20261204)
    true_q1, true_q0, n, m, sims, delta = 0.85, 0.75, 300, 60, 2000, 0.12
    covered = raw_covered = 0
    for _ in range(sims):
        truth_a = rng.random(n) < 0.5
        truth_b = np.where(rng.random(n) < 0.8, truth_a, rng.random(n) < 0.62)  # paired rows
        truth_b = truth_b | (
            rng.random(n) < (0.62 - truth_b.mean()) / max(1e-9, 1 - truth_b.mean())
        )

        def judge(truth: np.ndarray) -> np.ndarray:
            noise = rng.random(truth.shape)
            return np.where(truth, noise < true_q1, noise >= true_q0)

        va, vb = judge(truth_a).astype(float), judge(truth_b).astype(float)
        d = vb - va
        se = d.std(ddof=1) / math.sqrt(n)
        tp = int((rng.random(m) < true_q1).sum())
        tn = int((rng.random(m) < true_q0).sum())
        found = corrected_difference(float(d.mean()), float(se), n, JudgeErrorRates(tp, m, tn, m))
        true_delta = truth_b.mean() - truth_a.mean()
        assert found.low is not None and found.high is not None
        covered += found.low <= true_delta <= found.high
        q = t.ppf(0.975, n - 1)
        raw_covered += d.mean() - q * se <= true_delta <= d.mean() + q * se
    rate = covered / sims
    half = 1.96 * math.sqrt(0.95 * 0.05 / sims)
    assert 0.95 - 2 * half <= rate, rate  # at least nominal, within simulation error
    assert rate <= 0.99, rate  # not wildly conservative
    assert raw_covered / sims < 0.8  # the uncorrected interval misses the true difference
    assert delta  # the design's nominal difference


def suite_json(folder: Path, variant: str, calibration: str | None, value: float) -> None:
    details = {"reason": "the judge has no stored binary calibration (assay judge calibrate)"}
    if calibration is not None:
        rows = {"positives": 50, "negatives": 50}
        details = {"value": value, "calibration_id": calibration, "sensitivity": 0.9,
                   "specificity": 0.8, "calibration_rows": rows}  # fmt: skip
    path = folder / variant / "s" / "suite.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    judge = {"criterion_type": "llm_judge", "details": {"corrected_pass_rate": details}}
    aggregates = [{"criterion_type": "file_exists", "details": {}}, judge]
    path.write_text(json.dumps({"criterion_aggregates": aggregates}))


def report() -> ExperimentResult:
    raw = Difference(a=0.5, b=0.6, difference=0.1, se=0.03, clusters=100, p_value=0.001)
    other = Difference(a=0.5, b=0.52, difference=0.02, se=0.03, clusters=100, p_value=0.5)
    comparison = Comparison(suite_id="s", variant_a="A", variant_b="B", rows=100,
                            metrics={"llm_judge.mean": raw, "pass_rate": other},
                            mcnemar=McNemarRecord(a_only=1, b_only=5, p_value=0.2))  # fmt: skip
    return ExperimentResult(experiment_id="e", description="d", variant_ids=["A", "B"],
                            comparisons=[comparison])  # fmt: skip


@pytest.mark.parametrize(
    ("calibrations", "expected"),
    [
        (("c1", "c1"), None),
        (("c1", "c2"), "different calibrations"),
        ((None, "c1"), "no stored binary calibration"),
    ],
)
def test_the_report_adds_the_corrected_difference(
    tmp_path: Path, calibrations: tuple[str | None, str | None], expected: str | None
) -> None:
    suite_json(tmp_path, "A", calibrations[0], 0.43)
    suite_json(tmp_path, "B", calibrations[1], 0.57)
    found = report()
    add_judged_differences(found, lambda v, s: tmp_path / v / s / "suite.json")
    metric = found.comparisons[0].metrics["llm_judge.corrected_pass_rate"]
    assert metric.method == METHOD
    if expected is None:
        assert (metric.a, metric.b) == (0.43, 0.57)
        assert metric.difference == pytest.approx(0.1 / 0.7)
        assert metric.p_adjusted is not None and metric.survives is not None
        # three p-values in the family now (Holm): the smallest is multiplied by 3, not 2
        assert found.comparisons[0].metrics["llm_judge.mean"].p_adjusted == pytest.approx(0.003)
    else:
        assert metric.difference is None and expected in (metric.reason or "")


def test_no_judge_no_metric(tmp_path: Path) -> None:
    found = report()
    add_judged_differences(found, lambda v, s: tmp_path / "missing.json")
    assert "llm_judge.corrected_pass_rate" not in found.comparisons[0].metrics


def test_a_clipped_arm_is_said_beside_the_difference(tmp_path: Path) -> None:
    suite_json(tmp_path, "A", "c1", 0.43)
    suite_json(tmp_path, "B", "c1", 1.0)
    clipped = tmp_path / "B" / "s" / "suite.json"
    data = json.loads(clipped.read_text())
    note = "the raw correction 1.100 lies outside [0, 1]: …, so it is clipped"
    data["criterion_aggregates"][1]["details"]["corrected_pass_rate"]["note"] = note
    clipped.write_text(json.dumps(data))
    found = report()
    add_judged_differences(found, lambda v, s: tmp_path / v / s / "suite.json")
    metric = found.comparisons[0].metrics["llm_judge.corrected_pass_rate"]
    # the difference stays the corrected raw one (0.1 / 0.7), not 1.0 − 0.43, and says so
    assert metric.difference == pytest.approx(0.1 / 0.7)
    assert metric.note is not None and metric.note.endswith(f"B: {note}")
    assert "not B − A of the clipped rates shown" in metric.note
    markdown = "\n".join(_comparison_section(found.comparisons[0], 1))
    assert "- `llm_judge.corrected_pass_rate`: the difference is of the unclipped" in markdown
    suite_json(tmp_path, "B", "c1", 0.57)
    plain = report()
    add_judged_differences(plain, lambda v, s: tmp_path / v / s / "suite.json")
    assert plain.comparisons[0].metrics["llm_judge.corrected_pass_rate"].note is None
