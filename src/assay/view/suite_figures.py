"""The figures of one suite (of one variant): per-label precision/recall/F1 and the
confusion heatmap of each classification criterion, histograms of the weighted score, of
each criterion's score and of durations (binned by SQLite from the row index, so a page
never carries one point per row), per-replicate metrics and pass@k / pass^k (from
``suite.json``), and a QA suite's accuracy by group (from ``metrics.json``)."""

from __future__ import annotations

import sqlite3
from typing import Any

from assay.results.suite import CriterionAggregate, SuiteRollup
from assay.view import figures as fg
from assay.view.runinfo import SuiteInfo

# a criterion's graded results in one suite of one variant (errors and refusals are not)
GRADED = "suite = ? AND variant = ? AND position = ? AND outcome IN ('pass', 'fail')"


def suite_figures(
    anchor: str, suite: SuiteInfo, db: sqlite3.Connection, aggregates: list[CriterionAggregate]
) -> list[fg.Figure]:
    """Every figure of the suite, in page order (``anchor``: the suite section's HTML id,
    which prefixes each figure's)."""
    found: list[fg.Figure] = []
    for position, aggregate in enumerate(aggregates):
        found += _criterion_figures(anchor, suite.suite_id, position, aggregate)
    found += _histograms(anchor, db, suite, aggregates)
    if suite.rollup is not None:
        found += _replicate_figures(anchor, suite.suite_id, suite.rollup)
    if suite.qa_metrics:
        found += _qa_figures(anchor, suite.suite_id, suite.qa_metrics)
    return found


def _fig_id(anchor: str, name: str) -> str:
    return f"{anchor}-{name}"


def _criterion_figures(
    anchor: str, suite_id: str, position: int, agg: CriterionAggregate
) -> list[fg.Figure]:
    details = agg.details
    if not details.get("per_label"):
        return []
    title = f"{suite_id} · {agg.criterion_type}"
    cells = {(c["expected"], c["observed"]): int(c["count"]) for c in details["confusion"]}
    return [
        fg.label_bars(_fig_id(anchor, f"labels-{position}"), details["per_label"],
                      title=f"{title}: precision, recall and F1 per label"),
        fg.confusion_heatmap(_fig_id(anchor, f"confusion-{position}"), details["labels"], cells,
                             title=f"{title}: confusion matrix"),
    ]  # fmt: skip


def _bins(db: sqlite3.Connection, sql: str, params: list[object]) -> list[tuple[float, float, int]]:
    """Ten bins of width 0.1 over [0, 1] (the last one closed) from ``sql``'s scores; a
    score a float's rounding put just under an edge (0.7999999999999999 for a weighted 0.8)
    is in the bin that edge starts."""
    counts = dict.fromkeys(range(10), 0)
    for score, count in db.execute(f"SELECT MIN(CAST(ROUND(s * 10, 9) AS INTEGER), 9), "
                                   f"COUNT(*) FROM ({sql}) WHERE s IS NOT NULL GROUP BY 1",
                                   params):  # fmt: skip
        counts[int(score)] = int(count)
    return [(round(i / 10, 1), round((i + 1) / 10, 1), n) for i, n in counts.items()]


def _histograms(
    anchor: str, db: sqlite3.Connection, suite: SuiteInfo, aggs: list[CriterionAggregate]
) -> list[fg.Figure]:
    suite_id = suite.suite_id
    scope: list[object] = [suite.suite_id, suite.variant_id]
    found = [fg.histogram(
        _fig_id(anchor, "weighted"),
        _bins(db, "SELECT score AS s FROM rows WHERE suite = ? AND variant = ?", scope),
        title=f"{suite_id}: weighted score per row", axis="weighted score (0–1)",
        note="Rows that errored before grading have no score and are not counted.")]  # fmt: skip
    for position, agg in enumerate(aggs):
        bins = _bins(db, f"SELECT score AS s FROM criteria WHERE {GRADED}", [*scope, position])
        found.append(fg.histogram(_fig_id(anchor, f"scores-{position}"), bins,
                                  title=f"{suite_id}: {agg.criterion_type} score per row",
                                  axis="criterion score (0–1)"))  # fmt: skip
    found.append(_duration_histogram(anchor, suite_id, db, scope))
    return found


def _duration_histogram(
    anchor: str, suite_id: str, db: sqlite3.Connection, scope: list[object]
) -> fg.Figure:
    top = db.execute("SELECT MAX(duration) FROM rows WHERE suite = ? AND variant = ?",
                     scope).fetchone()[0] or 0.0  # fmt: skip
    width = _nice_width(float(top) / 20) if top else 1.0
    rows = db.execute("SELECT CAST(duration / ? AS INTEGER), COUNT(*) FROM rows WHERE suite = ? "
                      "AND variant = ? AND duration IS NOT NULL GROUP BY 1 ORDER BY 1",
                      [width, *scope]).fetchall()  # fmt: skip
    bins = [(round(b * width, 6), round((b + 1) * width, 6), int(n)) for b, n in rows]
    return fg.histogram(_fig_id(anchor, "duration"), bins, title=f"{suite_id}: duration per "
                        "row", axis="seconds")  # fmt: skip


def _nice_width(raw: float) -> float:
    """The smallest of 1, 2, 5 × 10^k at least ``raw``."""
    scale = 10.0 ** (len(str(int(raw))) - 1) if raw >= 1 else 10.0**-3
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000):
        if step * scale >= raw:
            return step * scale
    return raw


def _replicate_figures(anchor: str, suite_id: str, rollup: SuiteRollup) -> list[fg.Figure]:
    found = []
    if rollup.per_replicate:
        points = [
            {"replicate": f"{r.replicate_index:02d}", "series": "pass rate", "value": r.pass_rate}
            for r in rollup.per_replicate
            if r.pass_rate is not None
        ]
        for r in rollup.per_replicate:
            for i, metrics in enumerate(r.criterion_metrics):
                points += [
                    {"replicate": f"{r.replicate_index:02d}", "series": f"#{i + 1} {k}", "value": v}
                    for k, v in metrics.items()
                    if v is not None
                ]
        found.append(fg.line_chart(_fig_id(anchor, "replicates"), points,
                                   title=f"{suite_id}: metrics per replicate", x="replicate",
                                   x_title="replicate", y_title="value (0–1)",
                                   series="series"))  # fmt: skip
    if rollup.pass_k:
        points = [{"k": k, "series": name, "value": float(v[key])}
                  for k, v in rollup.pass_k.items()
                  for key, name in (("pass_at_k", "pass@k"), ("pass_hat_k", "pass^k"))
                  if key in v]  # fmt: skip
        found.append(fg.line_chart(_fig_id(anchor, "passk"), points,
                                   title=f"{suite_id}: pass@k and pass^k", x="k",
                                   x_title="k (attempts)", y_title="probability (0–1)",
                                   series="series"))  # fmt: skip
    return found


def _qa_figures(anchor: str, suite_id: str, document: dict[str, Any]) -> list[fg.Figure]:
    average = document.get("avg_metrics") or {}
    per = document.get("all_metrics") or [{}]
    found = []
    for name, values in average.items():
        if not (name.startswith("by_") and isinstance(values, dict)) or name.endswith(
            ("_counts", "_ci")
        ):
            continue
        counts = per[0].get(f"{name}_counts", {}) if per else {}
        intervals = average.get(f"{name}_ci") or {}
        points = [{"group": str(k), "value": v, "rows": counts.get(k),
                   "low": (intervals.get(k) or {}).get("low"),
                   "high": (intervals.get(k) or {}).get("high")}
                  for k, v in values.items()]  # fmt: skip
        found.append(fg.group_bars(_fig_id(anchor, f"qa-{name}"), points,
                                   title=f"{suite_id}: QA accuracy by "
                                         f"{name.removeprefix('by_')}",
                                   y_title="accuracy (0–1)"))  # fmt: skip
    return found
