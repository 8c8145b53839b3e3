"""What ``assay plan`` prints: each task file's agent, criteria, judges, rows and variants."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from assay.cli.shared.render import out
from assay.orchestration.planning.containment import describe_image
from assay.orchestration.planning.plan import Plan, PlannedTask
from assay.reports.plan import dialog_text, environment_lines, variables_of, variant_settings


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
    console = out()
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
                      + f"; sandbox: {task.sandbox_driver}{_image_text(planned)}\n"
                      f"  {planned.limits}", markup=False)  # fmt: skip
        gates = [f"{c.type}.{m}{' 95% lower bound' if low else ''} ≥ {v:g}"
                 for c in task.success_criteria
                 for low, found in ((False, c.suite_thresholds), (True, c.suite_lower_bounds))
                 for m, v in (found or {}).items()]  # fmt: skip
        kinds = ", ".join(_criterion_text(c) for c in task.success_criteria)
        console.print(f"  criteria: {kinds}" + (f"; gates: {', '.join(gates)}" if gates else ""))
        judge = task.qa.judge if task.qa is not None else None
        if judge is not None:
            console.print(escape(f"  qa judge: {_qa_judge_text(judge)}"))
        if task.dialog is not None:
            console.print(escape(f"  dialog: {dialog_text(task.dialog)}"))
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


def _qa_judge_text(judge: Any) -> str:
    """``open-qa@2 (sha256 …), calibrated; model openai/gpt-4o-mini``, or the judge's
    model."""
    asset = judge.asset
    if asset is None:
        return str(judge.display)
    return f"{_judge_label(asset)}; model {asset.definition.model}"


def _criterion_text(criterion: Any) -> str:
    """``llm_judge (judge truthful@2 (sha256 c5a7c7e341fc), calibrated)`` for a resolved
    judge, else the criterion's type."""
    asset = getattr(criterion, "asset", None)
    if asset is None:
        return str(criterion.type)
    return f"{criterion.type} (judge {_judge_label(asset)})"


def _judge_label(asset: Any) -> str:
    """``truthful@2 (sha256 c5a7c7e341fc), calibrated``."""
    calibrated = ", calibrated" if asset.calibration is not None else ""
    return f"{asset.label}{calibrated}"


def _image_text(planned: PlannedTask) -> str:
    """`` in IMAGE (ENGINE, ID)``: what a docker task's rows run in (its first variant's)."""
    identity = next(iter(planned.images.values()), None)
    return "" if identity is None else f" in {describe_image(identity)}"
