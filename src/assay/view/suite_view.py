"""One suite (of one variant) as the run page and ``report.html`` show it: counts, the gate,
every criterion's metrics with 95% intervals, and the figures (per-label precision/recall/F1,
confusion heatmap, score and duration histograms, per-replicate metrics and pass@k, QA
accuracy by group).

Numbers come from ``suite.json`` when the run has written it (they are what the gate
decided on); a suite still running (no ``suite.json`` yet) is shown live from the rows
indexed so far, and says so. The intervals ``suite.json`` records (the pass rate's, and each
criterion's ``mean`` and ``accuracy``: cluster-robust, what its gates read) are shown as
recorded; the others (a label's precision and recall, macro-F1) and a running suite's are
computed from the row index (:mod:`assay.view.estimates`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.metrics.classification import classification_report
from assay.results.suite import CriterionAggregate, IntervalRecord, SuiteRollup, ThresholdCheck
from assay.view import figures as fg
from assay.view.estimates import Estimate, criterion_estimates, label_estimates, pass_rate
from assay.view.runinfo import SuiteInfo
from assay.view.suite_figures import GRADED, suite_figures


@dataclass
class MetricLine:
    """One metric of one criterion: value, interval, and its gate (if any)."""

    name: str
    value: float | None
    estimate: Estimate | None = None
    gate: ThresholdCheck | None = None
    undefined: str | None = None


@dataclass
class CriterionView:
    """A criterion's aggregate: ``title`` (its type and position), ``metrics``, ``note``."""

    title: str
    description: str
    metrics: list[MetricLine]
    note: str = ""
    error: str | None = None


@dataclass
class SuiteView:
    """Everything the page shows of one suite of one variant."""

    suite_id: str
    variant_id: str
    live: bool
    counts: dict[str, int]
    gate: str
    verdict: str | None
    reasons: list[str]
    pass_rate: Estimate | None
    dataset: str
    criteria: list[CriterionView] = field(default_factory=list)
    figures: list[fg.Figure] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        """An HTML id for the suite's section."""
        return f"suite-{self.variant_id}-{self.suite_id}".replace("/", "-")


def dataset_text(rollup: SuiteRollup | None) -> str:
    """Where the rows came from, with the content hash the run recorded: ``store
    NAME@VERSION``, the files, or ``rows`` (inline) — then ``· hash …``."""
    record = rollup.dataset if rollup else None
    if record is None:
        return "—"
    if record.store:
        version = f"@{record.version}" if record.version is not None else ""
        where = f"store {record.store}{version}"
    elif record.paths:
        where = ", ".join(record.paths)
    else:
        where = f"{record.source} (inline)" if record.source == "rows" else record.source
    return where + (f" · hash {record.content_hash[:12]}" if record.content_hash else "")


def gate_text(rollup: SuiteRollup | None) -> str:
    """``PASSED``/``FAILED`` for a suite with gates, ``no gate`` without, ``pending`` before
    its ``suite.json`` is written."""
    if rollup is None:
        return "pending"
    if rollup.gate != "none":
        return rollup.gate.upper()
    checks = [c for a in rollup.criterion_aggregates for c in a.threshold_checks]
    if not checks:  # (a suite.json from before `gate` was written says it by its checks)
        return "no gate"
    return "PASSED" if all(c.passed for c in checks) else "FAILED"


def build_suite_view(
    suite: SuiteInfo, db: sqlite3.Connection, *, intervals: bool = True
) -> SuiteView:
    """The suite's view (``intervals``: compute them from the index, which must then be
    complete)."""
    rollup = suite.rollup
    live = rollup is None
    counts = _counts(db, suite) if live else _rollup_counts(rollup)  # type: ignore[arg-type]
    replicates = rollup.replicates if rollup else _replicates(db, suite)
    view = SuiteView(
        suite_id=suite.suite_id,
        variant_id=suite.variant_id,
        live=live,
        counts=counts,
        gate=gate_text(rollup),
        verdict=None if rollup is None else ("passed" if rollup.passed else "failed"),
        reasons=list(rollup.result_reasons) if rollup is not None else [],
        pass_rate=_pass_rate(suite, db, replicates, intervals=intervals),
        dataset=dataset_text(rollup),
    )
    aggregates = rollup.criterion_aggregates if rollup else _live_aggregates(db, suite)
    for position, aggregate in enumerate(aggregates):
        estimates = (criterion_estimates(db, suite.suite_id, suite.variant_id, position,
                                         replicates, recorded=aggregate.intervals.keys())
                     if intervals else [])  # fmt: skip
        view.criteria.append(_criterion(position, aggregate, estimates, replicates))
    view.figures = suite_figures(view.anchor, suite, db, aggregates)
    return view


def _rollup_counts(rollup: SuiteRollup) -> dict[str, int]:
    return {"total": rollup.rows_total, "passed": rollup.rows_passed,
            "failed": rollup.rows_failed, "error": rollup.rows_error,
            "refused": rollup.rows_refused,
            "not_graded": rollup.rows_not_graded, "missing": rollup.rows_missing}  # fmt: skip


def _counts(db: sqlite3.Connection, suite: SuiteInfo) -> dict[str, int]:
    found = dict.fromkeys(("passed", "failed", "error", "refused", "not_graded", "unreadable"), 0)
    for category, count in db.execute("SELECT category, COUNT(*) FROM rows WHERE suite = ? AND "
                                      "variant = ? GROUP BY category",
                                      [suite.suite_id, suite.variant_id]):  # fmt: skip
        found[str(category)] = int(count)
    found["total"] = sum(found.values())
    return found


def _replicates(db: sqlite3.Connection, suite: SuiteInfo) -> int:
    row = db.execute("SELECT COUNT(DISTINCT replicate) FROM rows WHERE suite = ? AND "
                     "variant = ?", [suite.suite_id, suite.variant_id]).fetchone()  # fmt: skip
    return max(1, int(row[0] or 0))


def _live_aggregates(db: sqlite3.Connection, suite: SuiteInfo) -> list[CriterionAggregate]:
    """Each criterion's metrics over the rows indexed so far (a suite without ``suite.json``):
    mean score, and for a classification criterion its classification metrics."""
    found = []
    types = db.execute("SELECT position, MIN(type), COUNT(*) FROM criteria WHERE suite = ? AND "
                       "variant = ? GROUP BY position ORDER BY position",
                       [suite.suite_id, suite.variant_id]).fetchall()  # fmt: skip
    for position, kind, count in types:
        scope: list[object] = [suite.suite_id, suite.variant_id, position]
        mean, graded = db.execute(f"SELECT AVG(score), COUNT(*) FROM criteria WHERE {GRADED}",
                                  scope).fetchone()  # fmt: skip
        metrics: dict[str, float | None] = {"count": float(graded), "mean": mean}
        details: dict[str, Any] = {}
        pairs = db.execute(f"SELECT expected, observed, COUNT(*) FROM criteria WHERE {GRADED} "
                           "AND expected IS NOT NULL GROUP BY expected, observed",
                           scope).fetchall()  # fmt: skip
        if pairs:
            report = classification_report([(e, o) for e, o, n in pairs for _ in range(n)])
            metrics.update(report.table.values)
            details = report.details()
        found.append(CriterionAggregate(criterion_type=kind, rows_total=int(count),
                                        rows_excluded=int(count) - int(graded),
                                        metrics=metrics, details=details))  # fmt: skip
    return found


def _pass_rate(
    suite: SuiteInfo, db: sqlite3.Connection, replicates: int, *, intervals: bool
) -> Estimate | None:
    """The pass rate's interval: as ``suite.json`` recorded it, else drawn from the index
    (``None`` when ``intervals`` is off)."""
    if suite.rollup is not None and "pass_rate" in suite.rollup.intervals:
        return _recorded(suite.rollup.intervals, "pass_rate")
    return pass_rate(db, suite.suite_id, suite.variant_id, replicates) if intervals else None


def _recorded(intervals: Mapping[str, IntervalRecord], name: str) -> Estimate:
    """The interval ``suite.json`` recorded for ``name`` (the same one its gates read)."""
    record = intervals[name]
    return Estimate(name, record.value, record.low, record.high, record.method,
                    record.observations, record.reason)  # fmt: skip


def _criterion(
    position: int, aggregate: CriterionAggregate, estimates: list[Estimate], replicates: int
) -> CriterionView:
    by_name = {e.metric: e for e in estimates}
    details = aggregate.details
    if replicates <= 1 and details.get("confusion"):
        cells = {(c["expected"], c["observed"]): c["count"] for c in details["confusion"]}
        by_name.update({e.metric: e for e in label_estimates(cells, details["labels"])})
    graded = aggregate.rows_total - aggregate.rows_excluded
    if replicates <= 1 and aggregate.rows_total:
        from assay.view.estimates import wilson

        by_name["completion_rate"] = wilson("completion_rate", graded, aggregate.rows_total)
    # what suite.json holds (its cluster-robust intervals, which its gates read) comes first
    by_name.update({name: _recorded(aggregate.intervals, name) for name in aggregate.intervals})
    gates = {c.name: c for c in aggregate.threshold_checks}  # a bound gate has its own line
    lines = [
        MetricLine(name, value, by_name.get(name), gates.pop(name, None),
                   aggregate.undefined_metrics.get(name))
        for name, value in aggregate.metrics.items()
    ]  # fmt: skip
    lines += [MetricLine(c.name, c.actual_value, None, c) for c in gates.values()]
    note = (f"Denominator: {graded} of {aggregate.rows_total} rows ({aggregate.rows_excluded} "
            "excluded: errored, not graded, not run, or the criterion could not evaluate)."
            if aggregate.rows_excluded else "")  # fmt: skip
    return CriterionView(f"#{position + 1} {aggregate.criterion_type}", aggregate.description,
                         lines, note, aggregate.error)  # fmt: skip
