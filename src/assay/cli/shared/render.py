"""What the commands print: the plan, and the end-of-run summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from assay.cli.shared.common import secret_findings
from assay.orchestration.planning.plan import Plan, PlannedTask
from assay.reports.numbers import fmt, plural
from assay.reports.plan import environment_lines, variables_of, variant_settings
from assay.results.suite import SuiteRollup

if TYPE_CHECKING:
    from assay.api import RunResult
    from assay.api.predictions import PredictionReport

HEADLINE_METRICS = ("accuracy", "macro_f1", "mean")


def _out() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _selection_text(planned: PlannedTask) -> str:
    expansion = planned.expansion
    if expansion.selection is None:
        return "no dataset: 1 task"
    total = expansion.selection.rows_in_dataset
    chosen = len(expansion.row_tasks)
    how = ", ".join(expansion.selection.applied) or "all rows"
    text = f"{chosen} of {total} rows selected ({how})"
    store = expansion.store
    if store is not None:
        version = store.version
        text += f" from store {store.name}@{version.number} (hash {version.content_hash[:12]})"
    seed = expansion.selection.stratified_seed
    if expansion.selection.seed_was_drawn:
        text += f"; unseeded stratified draw, seed {seed} this time"
    elif seed is not None:
        text += f"; stratified draw, seed {seed}"
    return text


def _print_variants(console: Console, planned: PlannedTask, plan: Plan) -> None:
    if plan.experiment is None:
        return
    first = variables_of(planned.variants[0], plan)
    for variant in planned.variants:
        about = f": {escape(variant.description)}" if variant.description else ""
        console.print(f"  variant [bold]{escape(variant.variant_id)}[/]{about}")
        for name, value, source in variant_settings(variant, repeats=plan.repeats_override):
            if source != "default" or name in ("agent.type", "agent.model", "repeats"):
                console.print(f"    {escape(name)} = {escape(value)}  [dim]({source})[/]")
        names = variables_of(variant, plan)
        for line in environment_lines(names, "    ") if names != first else []:
            console.print(escape(line))


def print_plan(plan: Plan, *, show_rows: int) -> None:
    """Print each task's expansion and selection, each variant's settings, then the totals."""
    console = _out()
    if plan.experiment is not None:
        console.print(f"experiment [bold]{escape(plan.experiment.experiment_id)}[/]: "
                      f"variants {', '.join(plan.variants)}")  # fmt: skip
    for planned in plan.tasks:
        task = planned.loaded.definition
        console.print(
            f"[bold]{escape(task.task_id)}[/]  ({escape(planned.loaded.display)})", markup=True
        )
        model = task.agent.route_model
        console.print(f"  agent: {task.agent.type}" + (f" ({model})" if model else "")
                      + f"; sandbox: {task.sandbox_driver}\n  {planned.limits}")  # fmt: skip
        gates = [f"{c.type}.{m}{' 95% lower bound' if low else ''} ≥ {v:g}"
                 for c in task.success_criteria
                 for low, found in ((False, c.suite_thresholds), (True, c.suite_lower_bounds))
                 for m, v in (found or {}).items()]  # fmt: skip
        kinds = ", ".join(_criterion_text(c) for c in task.success_criteria)
        console.print(f"  criteria: {kinds}" + (f"; gates: {', '.join(gates)}" if gates else ""))
        console.print(f"  rows: {_selection_text(planned)}")
        for line in environment_lines(variables_of(planned.variants[0], plan), "  "):
            console.print(escape(line))
        ids = [t.task_id for t in planned.expansion.row_tasks]
        if show_rows and ids:
            shown = ids[:show_rows]
            more = f" … and {len(ids) - len(shown)} more" if len(ids) > len(shown) else ""
            console.print("  row-tasks: " + ", ".join(shown) + more)
        _print_variants(console, planned, plan)
    for skipped in plan.skipped:
        console.print(f"[dim]skipped {escape(skipped.path)}: {escape(skipped.reason)}[/]")
    items = plan.work_item_count()
    console.print(
        f"Plan: {len(plan.tasks)} task file(s), {plan.row_task_count} row-task(s), "
        f"{len(plan.variants)} variant(s), {items} work item(s)."
    )


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
    if suite.rows_not_graded == suite.rows_total and suite.rows_total:
        return "not graded"  # assay execute: nothing to gate yet
    why = f" ({escape('; '.join(suite.result_reasons))})" if suite.result_reasons else ""
    result = f"[green]PASSED[/]{why}" if suite.passed else f"[red]FAILED[/]{why}"
    if suite.gate == "none":
        return f"no gate · {result}"
    if suite.gate == "passed" and not suite.passed:
        return f"gate [green]PASSED[/] · {result}"
    return f"gate {result}"


def print_reports(result: RunResult) -> None:
    """The end-of-run summary: one line per suite, totals, where the reports are."""
    console = _out()
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
    console.print(
        f"{summary.tasks_run} row-task(s): {summary.tasks_succeeded} passed, "
        f"{summary.tasks_failed} failed, {summary.tasks_error} errored"
        + (f", {summary.tasks_refused} refused" if summary.tasks_refused else "")
        + (f", {summary.tasks_not_graded} not graded" if summary.tasks_not_graded else "")
        + f" in {summary.total_duration_seconds:.1f} s"
        + (
            f" · pass rate {fmt(summary.pass_rate)} micro, {fmt(summary.pass_rate_macro)} macro"
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
    console = _out()
    for index, metrics in enumerate(report.document["all_metrics"]):
        ci, accuracy = metrics.get("accuracy_ci"), metrics.get("accuracy")
        interval = f" [{ci['low']:.3f}, {ci['high']:.3f}]" if ci else ""
        shown = "—" if accuracy is None else f"{accuracy:.3f}"
        console.print(
            escape(
                f"replicate {index}: accuracy {shown}{interval} · correct "
                f"{metrics.get('correct')}/{metrics.get('graded')} graded of "
                f"{metrics.get('total')} · extraction_failed {metrics.get('extraction_failed')}"
                f" · content_none {metrics.get('content_none')} · judge_errors "
                f"{metrics.get('judge_errors')} · answer_errors {metrics.get('answer_errors')}"
            )
        )
    console.print(escape(f"{report.records} records graded; metrics: {report.output}"))


def _criterion_text(criterion: Any) -> str:
    """``llm_judge (judge truthful@2, sha256 c5a7c7e341fc, calibrated)`` for a resolved
    judge, else the criterion's type."""
    asset = getattr(criterion, "asset", None)
    if asset is None:
        return str(criterion.type)
    calibrated = ", calibrated" if asset.calibration is not None else ""
    return f"{criterion.type} (judge {asset.label}{calibrated})"
