"""The suite metrics of an ``llm_judge`` criterion, by verdict kind (over the rows that got
a verdict; judge errors are left out by the caller and counted apart).

- every kind: ``count``/``mean``/… of the scores, ``pass_rate`` (score ≥ ``pass_threshold``;
  its interval is the suite's, clustered by row and ``cluster_field``:
  :mod:`assay.reports.cluster_tally`), the judges that graded (name, version, content hash);
- binary: ``corrected_pass_rate``, Rogan–Gladen for the judge's stored calibration
  (:func:`assay.metrics.agreement.rogan_gladen`), or why there is none;
- labels: ``share.<label>``, and with ``expected_label`` the classification metrics and the
  confusion matrix (expected vs the judge's label);
- scale: ``verdict_mean``/``median``/``std``/``min``/``max`` on the judge's own scale and a
  histogram;
- with samples: ``self_agreement`` (binary, labels) or ``sample_spread`` (scale).
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from assay.metrics.agreement import JudgeErrorRates, rogan_gladen
from assay.metrics.classification import classification_report
from assay.metrics.descriptive import describe
from assay.metrics.values import MetricTable
from assay.results.task_result import CriterionResult, JudgeCriterionResult
from assay.spec.criteria import LlmJudge
from assay.spec.judge import JudgeAsset, VerdictSpec

HISTOGRAM_BINS = 10
NO_VERDICT = "0/0: no row has a verdict"


def judge_metrics(
    spec: LlmJudge, verdict: VerdictSpec, results: list[CriterionResult]
) -> tuple[MetricTable, dict[str, Any]]:
    """The metrics and details of ``results`` (see the module docstring)."""
    graded = [r for r in results if isinstance(r, JudgeCriterionResult) and r.verdict is not None]
    table = describe([r.score for r in graded])
    details: dict[str, Any] = {
        "verdict": verdict.describe(),
        "graded": len(graded),
        "judges": _judges(graded),
    }
    passed = sum(1 for r in graded if r.score >= spec.pass_threshold)
    table.put("pass_rate", passed, len(graded), NO_VERDICT)
    if verdict.kind == "binary":
        _corrected(table, details, spec.asset, passed, len(graded))
    elif verdict.kind == "labels":
        _labels(table, details, verdict, graded)
    else:
        _scale(table, details, verdict, graded)
    _self_agreement(table, verdict, graded)
    return table, details


def _same_label(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def _judges(graded: list[JudgeCriterionResult]) -> list[dict[str, Any]]:
    seen: dict[tuple[str, int | None, str], dict[str, Any]] = {}
    for result in graded:
        ref = result.judge
        seen.setdefault((ref.name, ref.version, ref.content_hash), ref.model_dump(mode="json"))
    return list(seen.values())


def _corrected(
    table: MetricTable, details: dict[str, Any], asset: JudgeAsset | None, passed: int, n: int
) -> None:
    calibration = asset.calibration if asset is not None else None
    counts = (
        (calibration.tp, calibration.positives, calibration.tn, calibration.negatives)
        if calibration is not None
        else None
    )
    if calibration is None or counts is None or None in counts:
        details["corrected_pass_rate"] = {
            "reason": "the judge has no stored binary calibration (assay judge calibrate)"
        }
        return
    tp, positives, tn, negatives = (int(c or 0) for c in counts)
    estimate = rogan_gladen(passed, n, JudgeErrorRates(tp, positives, tn, negatives))
    table.set("corrected_pass_rate", estimate.value, estimate.reason or "")
    details["corrected_pass_rate"] = {
        **estimate.to_json(),
        "calibration_id": calibration.calibration_id,
        "calibrated_on": f"{calibration.dataset}@{calibration.dataset_version}",
        "sensitivity": tp / positives if positives else None,
        "specificity": tn / negatives if negatives else None,
        "calibration_rows": {"positives": positives, "negatives": negatives},
    }


def _labels(
    table: MetricTable,
    details: dict[str, Any],
    verdict: VerdictSpec,
    graded: list[JudgeCriterionResult],
) -> None:
    counts = Counter(str(r.verdict) for r in graded)
    for label in verdict.labels or []:
        table.put(f"share.{label}", counts[label], len(graded), NO_VERDICT)
    details["label_counts"] = {label: counts[label] for label in verdict.labels or []}
    pairs = [
        (_expected(r.expected_label, verdict), str(r.verdict))
        for r in graded
        if r.expected_label is not None
    ]
    if pairs:
        report = classification_report(pairs)
        table.merge(report.table)
        details.update(report.details())


def _expected(label: str | None, verdict: VerdictSpec) -> str:
    text = (label or "").strip()
    for known in verdict.labels or []:
        if _same_label(known, text):
            return known
    return text


def _scale(
    table: MetricTable,
    details: dict[str, Any],
    verdict: VerdictSpec,
    graded: list[JudgeCriterionResult],
) -> None:
    values = [float(r.verdict) for r in graded if isinstance(r.verdict, int | float)]
    raw = describe(values)
    for name in ("mean", "median", "std", "min", "max"):
        table.set(f"verdict_{name}", raw.values[name], raw.undefined.get(name, ""))
    details["histogram"] = histogram(values, verdict)


def histogram(values: list[float], verdict: VerdictSpec) -> list[dict[str, Any]]:
    """Counts of scores: one bin per point of an integer scale (means rounded), else
    :data:`HISTOGRAM_BINS` equal bins from min to max (the last one closed)."""
    assert verdict.min is not None and verdict.max is not None
    low, high = verdict.min, verdict.max
    if verdict.is_integer:
        counts = Counter(round(v) for v in values)
        return [
            {"value": point, "count": counts[point]} for point in range(int(low), int(high) + 1)
        ]
    width = (high - low) / HISTOGRAM_BINS
    bins = [0] * HISTOGRAM_BINS
    for value in values:
        bins[min(HISTOGRAM_BINS - 1, int((value - low) / width))] += 1
    return [
        {"low": low + i * width, "high": low + (i + 1) * width, "count": n}
        for i, n in enumerate(bins)
    ]


def _self_agreement(
    table: MetricTable, verdict: VerdictSpec, graded: list[JudgeCriterionResult]
) -> None:
    if verdict.kind == "scale":
        spreads = [r.spread for r in graded if r.spread is not None]
        if spreads:
            table.set("sample_spread", statistics.fmean(spreads))
        return
    agreements = [r.self_agreement for r in graded if r.self_agreement is not None]
    if agreements:
        table.set("self_agreement", statistics.fmean(agreements))
