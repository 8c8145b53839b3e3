"""What the commands print at the end: the run's summary, the graded prediction file's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from assay.cli.shared.common import secret_findings, warn
from assay.reports.numbers import fmt, plural
from assay.reports.suite_rules import passed_gate_notes
from assay.results.suite import SuiteRollup

if TYPE_CHECKING:
    from assay.api import RunResult
    from assay.api.predictions import PredictionReport

HEADLINE_METRICS = ("accuracy", "macro_f1", "mean")


def out() -> Console:
    """The console of what a command prints (no highlighting, lines not wrapped)."""
    return Console(highlight=False, soft_wrap=True)


def _headline(suite: SuiteRollup) -> str:
    """The first headline metric of each gating criterion, named as reports name it."""
    parts, names = [], suite.criterion_names()
    for aggregate, criterion in zip(suite.criterion_aggregates, names, strict=True):
        for name in HEADLINE_METRICS:
            if name in aggregate.metrics:
                parts.append(f"{criterion} {name} {fmt(aggregate.metrics[name])}")
                break
    return "; ".join(parts)


def _row_count(suite: SuiteRollup) -> str:
    """``12 rows``, or ``6 rows × 2 replicates = 12 row-tasks`` when repeated."""
    if suite.replicates <= 1:
        return plural(suite.rows_total, "row")
    rows = suite.rows_total // suite.replicates
    return f"{plural(rows, 'row')} × {suite.replicates} replicates = {suite.rows_total} row-tasks"


def _verdict(suite: SuiteRollup) -> str:
    """``gate PASSED``, ``gate FAILED (why)`` or ``no gate · FAILED (why)``."""
    why = f" ({escape('; '.join(suite.result_reasons))})" if suite.result_reasons else ""
    if suite.awaiting_grading:  # assay execute: nothing to gate yet
        return f"not graded{why}"
    result = f"[green]PASSED[/]{why}" if suite.passed else f"[red]FAILED[/]{why}"
    if suite.gate == "none":
        return f"no gate · {result}"
    if suite.gate == "passed" and not suite.passed:
        return f"gate [green]PASSED[/] · {result}"
    return f"gate {result}"


def print_reports(result: RunResult) -> None:
    """The end-of-run summary: one line per suite, totals, where the reports are."""
    console = out()
    summary = result.summary
    suites = [s.rollup for s in result.suites]
    for suite in suites:
        console.print(
            f"[bold]{escape(suite.suite_id)}[/] \\[{escape(suite.variant_id)}]: "
            f"{_row_count(suite)} — "
            f"{suite.rows_passed} passed, {suite.rows_failed} failed, {suite.rows_error} errored"
            + (f", {suite.rows_refused} refused" if suite.rows_refused else "")
            + (f", {suite.rows_missing} never ran" if suite.rows_missing else "")
            + (f" · {escape(_headline(suite))}" if _headline(suite) else "")
            + f" · {_verdict(suite)}",
            markup=True,
        )
        for warning in suite.warnings:
            console.print(f"  [yellow]warning:[/] {escape(warning)}", markup=True)
        for note in passed_gate_notes(suite):
            console.print(f"  [yellow]note:[/] {escape(note)}", markup=True)
    console.print(
        f"{summary.tasks_run} row-task(s): {summary.tasks_succeeded} passed, "
        f"{summary.tasks_failed} failed, {summary.tasks_error} errored"
        + (f", {summary.tasks_refused} refused" if summary.tasks_refused else "")
        + (f", {summary.tasks_not_graded} not graded" if summary.tasks_not_graded else "")
        + f" in {summary.total_duration_seconds:.1f} s"
        + (
            f" · pass rate {fmt(summary.pass_rate)} micro, {fmt(summary.pass_rate_macro)} macro"
            + (
                f" (leaves out {escape(', '.join(summary.pass_rate_macro_left_out))}: no graded "
                "row)"
                if summary.pass_rate_macro_left_out
                else ""
            )
            if len(suites) > 1
            else ""
        )
    )
    if summary.interrupted:  # an evaluate or report of an interrupted run says so too
        resume = f"`assay run --resume {escape(str(result.run_dir))}` runs the rest"
        console.print(f"[yellow]the run was interrupted[/]: finished rows kept; {resume}")
    console.print(f"reports: {result.run_dir}/run.md")
    found = [f.render() for f in summary.secret_findings]
    secret_findings(str(result.run_dir), found)
    if result.html_report is not None:
        console.print(f"html report: {result.html_report}")


def print_prediction_report(report: PredictionReport) -> None:
    """One line per replicate (accuracy, Wilson 95% interval, counts) and where
    ``metrics.json`` went."""
    from assay.reports.qa import replicate_label

    console = out()
    per = report.document["all_metrics"]
    for index, metrics in enumerate(per):
        ci, accuracy = metrics.get("accuracy_ci"), metrics.get("accuracy")
        interval = f" [{ci['low']:.3f}, {ci['high']:.3f}]" if ci else ""
        shown = "—" if accuracy is None else f"{accuracy:.3f}"
        console.print(
            escape(
                f"replicate {replicate_label(index, metrics)}: accuracy {shown}{interval} · "
                f"correct {metrics.get('correct')}/{metrics.get('graded')} graded of "
                f"{metrics.get('total')} · extraction_failed {metrics.get('extraction_failed')}"
                f" · content_none {metrics.get('content_none')} · judge_errors "
                f"{metrics.get('judge_errors')} · answer_errors {metrics.get('answer_errors')}"
                f" · refused {metrics.get('refused')}"
            )
        )
    if len(per) > 1:
        pooled = report.document["avg_metrics"].get("accuracy_pooled")
        console.print(escape(f"pooled accuracy {'—' if pooled is None else f'{pooled:.3f}'}"
                             " (every replicate's correct over graded)"))  # fmt: skip
    for warning in report.warnings:
        warn(warning)
    graded = sum(int(m.get("graded") or 0) for m in per)
    console.print(escape(f"{report.records} records read, {graded} graded; "
                         f"metrics: {report.output}"))  # fmt: skip
    if report.exit_code:
        console.print(escape(f"exit 1: {report.not_graded} record(s) did not grade (answer or "
                             "judge errors, refusals)" if report.not_graded
                             else "exit 1: no record graded"))  # fmt: skip
    judge = report.document.get("judge")
    settings = f"settings: {', '.join(report.sources)}; judge: "
    if judge:
        console.print(escape(settings + str(judge)))
    else:
        console.print(escape(settings + "none: the rules alone graded the open answers (one "
                             "they cannot decide is wrong); --judge MODEL or --task FILE "
                             "gives a judge"))  # fmt: skip
