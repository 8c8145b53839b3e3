"""Judged metrics in a comparison: each binary judge's difference corrected for the judge's
calibrated error (:mod:`assay.metrics.judged`), beside the raw one.

For every comparison of an ``experiment.json`` (``assay run -e``, ``assay compare``) and
every criterion whose ``suite.json`` aggregate reports a ``corrected_pass_rate`` (a binary
judge; with the same stored calibration in both arms), the metric
``<criterion>.corrected_pass_rate`` is added: both arms' Rogan–Gladen pass rates and their
difference with an interval that carries the calibration's uncertainty too. Arms graded
under different calibrations, or a judge without one, get the metric with the reason instead
of a number. The suite's p-values are then adjusted for multiplicity again, the new ones
included.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from assay.metrics.agreement import JudgeErrorRates
from assay.metrics.judged import corrected_difference
from assay.metrics.multiplicity import Adjustment
from assay.reports.experiment import adjust_family
from assay.results.experiment import Difference, ExperimentResult

SuiteFile = Callable[[str, str], Path]
"""``(variant_id, suite_id)`` → that arm's ``suite.json``."""

METHOD = "Rogan–Gladen on both arms (one calibration), delta method: rows and calibration"


def add_judged_differences(report: ExperimentResult, suite_file: SuiteFile) -> None:
    """Add ``<criterion>.corrected_pass_rate`` to every comparison with a binary judge and
    adjust the p-values of each suite that got one again (see the module docstring). Each
    arm's ``suite.json`` is read once."""
    read: dict[Path, list[dict[str, Any]]] = {}
    touched: set[str] = set()
    for comparison in report.comparisons:
        for name, found in list(comparison.metrics.items()):
            prefix, _, statistic = name.rpartition(".")
            if statistic != "mean":
                continue
            sides = [_calibration(_aggregates(suite_file(v, comparison.suite_id), read), prefix)
                     for v in (comparison.variant_a, comparison.variant_b)]  # fmt: skip
            if sides[0] is None and sides[1] is None:
                continue
            comparison.metrics[f"{prefix}.corrected_pass_rate"] = _judged(found, *sides)
            touched.add(comparison.suite_id)
    for suite in touched:
        family = [c for c in report.comparisons if c.suite_id == suite]
        adjust_family(family, cast(Adjustment, report.adjustment), report.alpha)


def _aggregates(path: Path, read: dict[Path, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The ``criterion_aggregates`` of the ``suite.json`` at ``path`` (read once, kept in
    ``read``); none when it cannot be read."""
    if path not in read:
        try:
            suite = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            suite = {}
        read[path] = suite.get("criterion_aggregates") or [] if isinstance(suite, dict) else []
    return read[path]


def _calibration(aggregates: list[dict[str, Any]], prefix: str) -> dict[str, Any] | None:
    """The ``corrected_pass_rate`` details of the criterion ``prefix`` (its type, or
    ``type#N`` for the one at position N) among ``aggregates``; ``None`` when it has none (a
    criterion that is not a calibrated binary judge)."""
    kind, _, number = prefix.partition("#")
    if number.isdigit():
        chosen = aggregates[int(number)] if int(number) < len(aggregates) else None
    else:
        chosen = next((a for a in aggregates if a.get("criterion_type") == kind), None)
    details = (chosen or {}).get("details", {}).get("corrected_pass_rate")
    return details if isinstance(details, dict) else None


def _judged(found: Difference, a: dict[str, Any] | None, b: dict[str, Any] | None) -> Difference:
    reason = _unusable(a, b)
    if reason is not None or a is None or b is None or found.difference is None:
        return Difference(a=None, b=None, difference=None, method=METHOD,
                          reason=reason or found.reason or "no judged difference")  # fmt: skip
    rows = a["calibration_rows"]
    positives, negatives = int(rows["positives"]), int(rows["negatives"])
    rates = JudgeErrorRates(round(a["sensitivity"] * positives), positives,
                            round(a["specificity"] * negatives), negatives)  # fmt: skip
    judged = corrected_difference(found.difference, found.se, found.clusters or 0, rates)
    clipped = [f"{side}: {arm['note']}" for side, arm in (("A", a), ("B", b)) if arm.get("note")]
    return Difference(
        a=a.get("value"), b=b.get("value"), difference=judged.value, low=judged.low,
        high=judged.high, se=judged.se, clusters=found.clusters, p_value=judged.p_value,
        reason=judged.reason, method=METHOD,
        note=("the difference is of the unclipped corrections (the raw difference over "
              "sensitivity + specificity − 1), not B − A of the clipped rates shown; "
              + "; ".join(clipped)) if clipped else None,
    )  # fmt: skip


def _unusable(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str | None:
    if a is None or b is None or "calibration_id" not in a or "calibration_id" not in b:
        found = a if a is not None else b
        return str((found or {}).get("reason") or "an arm's judge has no stored calibration")
    if a["calibration_id"] != b["calibration_id"]:
        return (f"the arms were graded under different calibrations ({a['calibration_id']}, "
                f"{b['calibration_id']}): their corrections are not comparable")  # fmt: skip
    if a.get("sensitivity") is None or a.get("specificity") is None:
        return "the calibration lacks truly passing or truly failing rows"
    return None
