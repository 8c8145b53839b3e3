"""``suite.md`` and ``run.md``.

``suite.md`` keeps Coder Eval's section layout (``reference/originals.md`` §1.5): title,
variant, rows, pass rate, average weighted score, criterion stats, one "Aggregate metrics"
section per criterion (denominator, metrics, thresholds, per-label breakdown, confusion
matrix), the suite gate, and the failed or errored samples with links to their
``task.json`` (relative to the ``suite.md`` itself). Undefined metrics show ``—`` and their
reason below the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.reports.rollup import FAILED_SAMPLE_LIMIT
from assay.results.run import RunSummary
from assay.results.suite import CriterionAggregate, SuiteRollup


def fmt(value: float | None, digits: int = 3) -> str:
    """A number with ``digits`` decimals, or ``—`` when undefined."""
    return "—" if value is None else f"{value:.{digits}f}"


def _percent(numerator: int, denominator: int) -> str:
    if not denominator:
        return "— (no graded rows)"
    return f"{100 * numerator / denominator:.1f}% ({numerator}/{denominator})"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def render_suite(suite: SuiteRollup) -> str:
    """The Markdown report of one suite."""
    out = [f"# Suite Rollup: {suite.suite_id}", ""]
    out.append(f"**Variant**: `{suite.variant_id}`")
    out.append(
        f"**Rows**: {suite.rows_total} total — {suite.rows_passed} passed, "
        f"{suite.rows_failed} failed, {suite.rows_error} errored"
        + (f", {suite.rows_not_graded} not graded" if suite.rows_not_graded else "")
    )
    if suite.selection is not None and suite.selection.applied:
        out.append(
            f"**Selection**: {suite.selection.rows_selected} of "
            f"{suite.selection.rows_in_dataset} rows ({', '.join(suite.selection.applied)})"
        )
    out.append(f"**Pass rate**: {_percent(suite.rows_passed, suite.rows_graded)}")
    out.append(f"**Average weighted score**: {fmt(suite.average_weighted_score)}")
    out += ["", "## Criterion stats", ""]
    out += _table(
        ["Criterion", "Rows", "Avg score", "Errors"],
        [
            [f"`{s.criterion_type}`", str(s.rows_evaluated), fmt(s.average_score),
             str(s.error_count)]
            for s in suite.criterion_stats
        ],
    )  # fmt: skip
    for aggregate in suite.criterion_aggregates:
        out += ["", *_aggregate_section(aggregate)]
    out += ["", f"**Suite gate**: {'PASSED' if suite.passed else 'FAILED'}"]
    if suite.failed_samples:
        out += ["", *_failed_section(suite)]
    return "\n".join(out) + "\n"


def _aggregate_section(agg: CriterionAggregate) -> list[str]:
    state = "PASSED" if agg.passed else "FAILED"
    out = [f"## Aggregate metrics — `{agg.criterion_type}` ({state})", ""]
    if agg.description:
        out += [f"_{agg.description}_", ""]
    if agg.rows_excluded:
        used = agg.rows_total - agg.rows_excluded
        out += [
            f"_Denominator: {used}/{agg.rows_total} rows ({agg.rows_excluded} excluded — "
            "errored before criteria ran)_",
            "",
        ]
    if agg.error:
        out += [f"**Error**: {agg.error}", ""]
    out += _table(["metric", "value"], [[f"`{k}`", fmt(v)] for k, v in agg.metrics.items()])
    if agg.undefined_metrics:
        out += ["", "Undefined (—):"]
        out += [f"- `{k}`: {why}" for k, why in agg.undefined_metrics.items()]
    if agg.threshold_checks:
        out += ["", "### Thresholds", ""]
        out += _table(
            ["metric", "minimum", "actual", "passed"],
            [
                [f"`{c.metric}`", fmt(c.min_value), fmt(c.actual_value),
                 "✓" if c.passed else "✗"]
                for c in agg.threshold_checks
            ],
        )  # fmt: skip
    out += _classification_sections(agg.details)
    return out


def _classification_sections(details: dict[str, Any]) -> list[str]:
    if "per_label" not in details:
        return []
    out = ["", "### Per-label breakdown", ""]
    out += _table(
        ["label", "precision", "recall", "f1", "support"],
        [
            [f"`{p['label']}`", fmt(p["precision"]), fmt(p["recall"]), fmt(p["f1"]),
             str(p["support"])]
            for p in details["per_label"]
        ],
    )  # fmt: skip
    labels: list[str] = details["labels"]
    cells = {(c["expected"], c["observed"]): c["count"] for c in details["confusion"]}
    out += ["", "### Confusion matrix", ""]
    out += _table(
        ["expected \\\\ observed", *[f"`{label}`" for label in labels]],
        [[f"`{e}`", *[str(cells.get((e, o), 0)) for o in labels]] for e in labels],
    )
    return out


def _failed_section(suite: SuiteRollup) -> list[str]:
    out = [f"## Failed/errored samples (up to {FAILED_SAMPLE_LIMIT})"]
    if suite.failed_samples_total > len(suite.failed_samples):
        out.append(f"_{len(suite.failed_samples)} of {suite.failed_samples_total} shown._")
    prefix = f"{suite.variant_id}/{suite.suite_id}/"
    for sample in suite.failed_samples:
        out += ["", f"### `{sample.task_id}` — {sample.final_status}"]
        out.append(f"- score: {fmt(sample.weighted_score)}")
        if sample.error_message:
            out.append(f"- error: {sample.error_message}")
        out += [f"- {reason}" for reason in sample.failure_reasons]
        link = sample.task_json_relpath.removeprefix(prefix)
        out.append(f"- [task.json](./{link})")
    return out


def render_run(summary: RunSummary) -> str:
    """The Markdown summary of one run."""
    out = [f"# Run {summary.run_id}", ""]
    out.append(f"**Stage**: {summary.stage} · **Duration**: {summary.total_duration_seconds:.1f} s"
               f" · **Parallel**: {summary.max_parallel}")  # fmt: skip
    out.append(
        f"**Rows**: {summary.tasks_run} run — {summary.tasks_succeeded} passed, "
        f"{summary.tasks_failed} failed, {summary.tasks_error} errored"
        + (f", {summary.tasks_not_graded} not graded" if summary.tasks_not_graded else "")
    )
    if summary.interrupted:
        out.append("**Interrupted**: the run stopped early; finished rows are kept.")
    if summary.suites:
        out += ["", "## Suites", ""]
        out += _table(
            ["variant", "suite", "gate", "failed gates", "report"],
            [
                [f"`{s.variant_id}`", f"`{s.suite_id}`", "PASSED" if s.passed else "FAILED",
                 ", ".join(s.failed_gates) or "—", f"[suite.md](./{s.suite_json[:-4]}md)"]
                for s in summary.suites
            ],
        )  # fmt: skip
    standalone = [t for t in summary.task_results if t.suite_id is None]
    if standalone:
        out += ["", "## Tasks without a dataset", ""]
        out += _table(
            ["task", "variant", "status", "score"],
            [[f"`{t.task_id}`", f"`{t.variant_id}`", t.final_status, fmt(t.weighted_score)]
             for t in standalone],
        )  # fmt: skip
    if summary.skipped_tasks:
        out += ["", "## Skipped", ""]
        out += [f"- `{s.path}`: {s.reason}" for s in summary.skipped_tasks]
    if summary.warnings:
        out += ["", "## Warnings", ""]
        out += [f"- {w}" for w in summary.warnings]
    return "\n".join(out) + "\n"
