"""``plan.json`` from a plan, and the plan options a resumed run rebuilds from it."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from assay.criteria.registry import CriterionRegistry
from assay.orchestration.loading.experiment import Override
from assay.orchestration.loading.task_loader import load_task
from assay.orchestration.planning.expand import Selectors
from assay.orchestration.planning.plan import Plan, PlanOptions, TaskSource
from assay.orchestration.planning.resume_check import experiment_hash, task_hash
from assay.orchestration.running.runner import RunOptions, model_keys
from assay.providers.mock import script_path
from assay.providers.pricing import PriceTable
from assay.results.plan_record import JudgeUse, PlannedTaskRecord, PlanOptionsRecord, PlanRecord
from assay.results.selection_file import write_selection_rows
from assay.spec.criteria import LlmJudge
from assay.spec.judge import JudgeAsset
from assay.spec.run_names import BUILT_DIR as BUILT_DIR  # re-exported


def save_built_tasks(run_dir: Path, plan: Plan) -> dict[str, Path]:
    """Save every task of ``plan`` built in Python (rows included) as a task file in
    ``run_dir/python-tasks/``, so the run can be resumed; task id → its file. Secrets are
    redacted there too (a resumed run gets the marker for a secret written into
    ``agent.env``: pass secrets through the environment instead)."""
    saved: dict[str, Path] = {}
    for planned in plan.tasks:
        if planned.loaded.built:
            task_id = planned.loaded.definition.task_id
            saved[task_id] = run_dir / BUILT_DIR / f"{task_id}.json"  # JSON is YAML
            plan.writer.json(saved[task_id], planned.loaded.document.data)
    return saved


def write_selection(run_dir: Path, plan: Plan) -> None:
    """Write ``selection.jsonl``: every dataset task's selected rows and their content
    hashes, one row at a time (:mod:`assay.results.selection_file`)."""

    def rows() -> Iterator[tuple[str, str, str]]:
        for planned in plan.tasks:
            if planned.selection_made:
                task_id = planned.loaded.definition.task_id
                for row_id, row_hash in planned.expansion.selected_rows():
                    yield task_id, row_id, row_hash

    write_selection_rows(run_dir, rows(), writer=plan.writer)


def plan_sources(
    record: PlanRecord, *, criteria: CriterionRegistry | None = None
) -> list[TaskSource]:
    """The tasks of a recorded plan: task files, and tasks built in Python as saved, read
    with the folder they were built in (``criteria``: the run's own types)."""
    return [
        load_task(Path(t.file), base_dir=Path(t.base_dir), criteria=criteria)
        if t.base_dir
        else t.file
        for t in record.tasks
    ]


def plan_record(
    plan: Plan,
    options: PlanOptions,
    run: RunOptions,
    *,
    saved: Mapping[str, Path] | None = None,
    rows_file: str | None = None,
) -> PlanRecord:
    """What ``plan.json`` says about ``plan`` (``saved``: :func:`save_built_tasks`;
    ``rows_file``: the selected rows are listed in that file, :func:`write_selection`,
    not in the record)."""
    tasks = []
    for planned in plan.tasks:
        selection = planned.selection(rows_file=rows_file)
        task_id = planned.loaded.definition.task_id
        file = (saved or {}).get(task_id)
        tasks.append(
            PlannedTaskRecord(
                task_id=task_id,
                file=str((file or planned.loaded.path).resolve()),
                content_hash=task_hash(planned.loaded.definition),
                images=dict(planned.images),
                base_dir=str(planned.loaded.base_dir) if file else None,
                dataset=selection.dataset if selection else None,
                selection=selection.selection if selection else None,
            )
        )
    return PlanRecord(
        stage=run.stage,
        files=[t.file for t in tasks],
        options=PlanOptionsRecord(
            sample=options.selectors.sample,
            sample_per_stratum=options.selectors.sample_per_stratum,
            split=options.selectors.split,
            tags=list(options.tags),
            exclude_tags=list(options.exclude_tags),
            include_skipped=options.include_skipped,
            skip_unsupported=options.skip_unsupported,
            stop_when_decided=options.stop_when_decided,
            repeats=options.repeats,
            experiment=str(plan.experiment_file) if plan.experiment_file else None,
            experiment_hash=experiment_hash(plan.experiment) if plan.experiment else None,
            overrides=[(list(o.path), o.value) for o in options.overrides],
        ),
        jobs=run.jobs,
        keep_sandboxes=run.keep_sandboxes,
        tasks=tasks,
        variants=list(plan.variants),
        criteria=criteria_templates(plan),
        work_items=len(plan.work_items()),
        planned=planned_rows(plan),
        judges=judge_uses(plan),
        scripts=mock_scripts(plan),
    )


def mock_scripts(plan: Plan) -> dict[str, str]:
    """The ``mock/`` scripts the plan's models read (path → SHA-256 of the content)."""
    found: dict[str, str] = {}
    for key in model_keys(plan):
        if key.name.startswith("mock/") and key.name != "mock/echo":
            path = script_path(key.name, Path(key.base_dir))
            with contextlib.suppress(OSError):
                found[str(path.resolve())] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def judge_uses(plan: Plan) -> dict[str, list[JudgeUse]]:
    """Task id → the judges its ``llm_judge`` criteria and its ``qa.judge`` resolved to."""
    uses: dict[str, list[JudgeUse]] = {}
    for planned in plan.tasks:
        definition = planned.loaded.definition
        assets: list[tuple[int | None, JudgeAsset]] = [
            (index, spec.asset) for index, spec in enumerate(definition.success_criteria)
            if isinstance(spec, LlmJudge) and spec.asset is not None
        ]  # fmt: skip
        qa_judge = definition.qa.judge if definition.qa is not None else None
        if qa_judge is not None and qa_judge.asset is not None:
            assets.append((None, qa_judge.asset))
        found = [
            JudgeUse(position=position, name=asset.name, version=asset.version,
                     content_hash=asset.content_hash, source=asset.source)
            for position, asset in assets
        ]  # fmt: skip
        if found:
            uses[planned.loaded.definition.task_id] = found
    return uses


def planned_rows(plan: Plan) -> dict[str, int]:
    """``"<variant>/<suite>"`` → the work items the plan holds for that suite (counted from
    the plan's blocks, no work item made)."""
    counts: dict[str, int] = {}
    for planned, variant, repeats in plan.work_items().blocks:
        items = len(planned.expansion.row_tasks) * repeats
        if planned.loaded.definition.dataset is not None and items:  # a suite of rows
            key = f"{variant.variant_id}/{planned.loaded.definition.task_id}"
            counts[key] = counts.get(key, 0) + items
    return counts


def criteria_templates(plan: Plan) -> dict[str, list[dict[str, object]]]:
    """Each dataset task's criteria as written (before substitution), for its suite."""
    return {
        t.loaded.definition.task_id: [
            c.model_dump(mode="json", exclude_none=True)
            for c in t.loaded.definition.success_criteria
        ]
        for t in plan.tasks
        if t.loaded.definition.dataset is not None
    }


def replayed_options(
    record: PlanRecord,
    *,
    prices: PriceTable | None = None,
    store_url: str | None = None,
    criteria: CriterionRegistry | None = None,
) -> PlanOptions:
    """The options that rebuild ``record``'s plan with exactly its rows and store versions
    (``criteria``: the run's own criterion and agent types, as given to the resume)."""
    recorded = record.options
    return PlanOptions(
        selectors=Selectors(recorded.sample, recorded.sample_per_stratum, recorded.split),
        tags=tuple(recorded.tags),
        exclude_tags=tuple(recorded.exclude_tags),
        include_skipped=recorded.include_skipped,
        skip_unsupported=recorded.skip_unsupported,
        stop_when_decided=recorded.stop_when_decided,
        repeats=recorded.repeats,
        experiment=recorded.experiment,
        overrides=tuple(Override(tuple(path), value) for path, value in recorded.overrides),
        fixed_rows={
            t.task_id: t.selection.row_ids for t in record.tasks if t.selection is not None
        },
        prices=prices or PriceTable(),
        store_url=store_url,
        criteria=criteria,
        store_versions={
            t.task_id: t.dataset.version
            for t in record.tasks
            if t.dataset is not None and t.dataset.version is not None
        },
        started_images={t.task_id: dict(t.images) for t in record.tasks if t.images},
        judge_versions={
            use.name: use.version
            for uses in record.judges.values()
            for use in uses
            if use.version is not None
        },
    )
