"""``assay run`` / ``assay execute``, new or resumed: the whole job behind the commands.

A new run: make the run directory → write ``plan.json`` → start the models → run every work
item (``task.json`` written as each row ends) → write the reports. A resumed run
(``--resume RUN_DIR``) rebuilds the plan from ``plan.json`` with the recorded rows, keeps every
row whose ``task.json`` is complete (with ``--retry-errors``, re-runs those that ended
``ERROR``), runs the rest, and rebuilds the reports over all rows, with durations covering
each session's active time.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from assay.criteria.registry import default_criteria
from assay.errors import UsageError
from assay.orchestration.expand import Selectors
from assay.orchestration.experiment import Override
from assay.orchestration.plan import Plan, PlanOptions, WorkItem, build_plan
from assay.orchestration.rundir import create_run_dir, item_dir, point_latest
from assay.orchestration.runner import Runner, RunOptions, judge_keys, model_keys
from assay.providers.cache import ResponseCache
from assay.providers.pool import ModelPool, PoolSettings, ProviderRegistry, default_registry
from assay.providers.pricing import PriceTable
from assay.providers.retry import RetryPolicy
from assay.qa import check_judge
from assay.reports.progress import Progress
from assay.reports.writer import Reports, RunMeta, write_reports
from assay.results.io import read_json
from assay.results.plan_record import (
    PLAN_FILE,
    PlannedTaskRecord,
    PlanOptionsRecord,
    PlanRecord,
    log_session,
    read_sessions,
    write_plan,
)
from assay.results.run import TaskSelection
from assay.results.task_result import EvaluationResult
from assay.sandbox.process import use_pidfd_child_watcher


@dataclass
class ModelSettings:
    """Command-line settings of model calls: retries, request timeout, response cache."""

    max_retries: int = 4
    timeout: float | None = None
    cache: bool = False
    cache_path: Path | None = None
    cache_expiry: float | None = None


@dataclass
class RunRequest:
    """Everything ``assay run`` / ``assay execute`` needs besides the plan."""

    runs_root: Path
    options: RunOptions
    progress: Progress
    junit_path: Path | None = None
    command: list[str] | None = None
    models: ModelSettings = field(default_factory=ModelSettings)
    registry: ProviderRegistry | None = None
    pool_hook: Callable[[ModelPool], None] | None = None
    retry_errors: bool = False


def plan_record(plan: Plan, options: PlanOptions, run: RunOptions) -> PlanRecord:
    """What ``plan.json`` says about ``plan``."""
    tasks = []
    for planned in plan.tasks:
        selection = planned.selection()
        tasks.append(
            PlannedTaskRecord(
                task_id=planned.loaded.definition.task_id,
                file=str(planned.loaded.path.resolve()),
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
            repeats=options.repeats,
            experiment=str(plan.experiment_file) if plan.experiment_file else None,
            overrides=[(list(o.path), o.value) for o in options.overrides],
        ),
        jobs=run.jobs,
        keep_sandboxes=run.keep_sandboxes,
        tasks=tasks,
        variants=list(plan.variants),
        criteria=criteria_templates(plan),
        work_items=len(plan.work_items()),
        planned=planned_rows(plan),
    )


def planned_rows(plan: Plan) -> dict[str, int]:
    """``"<variant>/<suite>"`` → the work items the plan holds for that suite."""
    counts: dict[str, int] = {}
    for item in plan.work_items():
        if item.row_task.suite_id is not None:
            key = f"{item.variant_id}/{item.row_task.suite_id}"
            counts[key] = counts.get(key, 0) + 1
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


def start_run(plan: Plan, options: PlanOptions, request: RunRequest) -> tuple[Path, Reports]:
    """A new run of ``plan``; returns the run directory and its reports."""
    started = datetime.now()
    run_dir = create_run_dir(request.runs_root, now=started)
    record = plan_record(plan, options, request.options)
    write_plan(run_dir, record)
    return run_dir, _run(plan, record, run_dir, request, started, kept=[], prices=options.prices)


def resume_run(
    run_dir: Path,
    request: RunRequest,
    *,
    prices: PriceTable | None = None,
    store_url: str | None = None,
) -> Reports:
    """Finish the run in ``run_dir``; see the module docstring.

    Raises:
        UsageError: ``run_dir`` has no ``plan.json``.
        UserError: a task file or dataset changed so that the recorded rows are gone.
    """
    started = datetime.now()
    if not (run_dir / PLAN_FILE).is_file():
        raise UsageError(
            f"{run_dir} has no {PLAN_FILE}: it is not a run directory assay can resume"
        )
    record = PlanRecord.model_validate(read_json(run_dir / PLAN_FILE))
    fixed = {t.task_id: t.selection.row_ids for t in record.tasks if t.selection is not None}
    options = PlanOptions(
        selectors=Selectors(
            record.options.sample, record.options.sample_per_stratum, record.options.split
        ),
        tags=tuple(record.options.tags),
        exclude_tags=tuple(record.options.exclude_tags),
        include_skipped=record.options.include_skipped,
        repeats=record.options.repeats,
        experiment=record.options.experiment,
        overrides=tuple(Override(tuple(path), value) for path, value in record.options.overrides),
        fixed_rows=fixed,
        prices=prices or PriceTable(),
        store_url=store_url,
        store_versions={
            t.task_id: t.dataset.version
            for t in record.tasks
            if t.dataset is not None and t.dataset.version is not None
        },
    )
    plan = build_plan(record.files, options, request.registry)
    _check_same_store_versions(plan, record)
    request.options.stage = record.stage
    request.options.keep_sandboxes = request.options.keep_sandboxes or record.keep_sandboxes
    kept = finished_results(run_dir, plan.work_items(), retry_errors=request.retry_errors)
    point_latest(run_dir.parent, run_dir)
    return _run(plan, record, run_dir, request, started, kept=kept, prices=options.prices)


def _check_same_store_versions(plan: Plan, record: PlanRecord) -> None:
    """A resumed run must read the store versions it started with, with the same content.

    Raises:
        UsageError: a version's content hash differs (another store, or a rewritten one).
    """
    recorded = {t.task_id: t.dataset for t in record.tasks if t.dataset is not None}
    for planned in plan.tasks:
        before = recorded.get(planned.loaded.definition.task_id)
        now = planned.expansion.dataset_record
        if before is None or now is None or before.store is None:
            continue
        if before.content_hash != now.content_hash:
            raise UsageError(
                f"store dataset {before.store}@{before.version} has content hash "
                f"{now.content_hash} here, but the run recorded {before.content_hash}",
                hint="resume with the store the run used (--store URL or $ASSAY_STORE)",
            )


def finished_results(
    run_dir: Path, items: list[WorkItem], *, retry_errors: bool
) -> list[EvaluationResult]:
    """The results of items whose ``task.json`` is complete (``ERROR`` ones dropped when
    retrying errors)."""
    kept = []
    for item in items:
        path = _task_json(run_dir, item)
        if not path.is_file():
            continue
        try:
            result = EvaluationResult.model_validate(read_json(path))
        except ValueError:
            continue  # unreadable: run it again
        if retry_errors and result.final_status.category == "error":
            continue
        kept.append(result)
    return kept


def _task_json(run_dir: Path, item: WorkItem) -> Path:
    row_task = item.row_task
    return item_dir(run_dir, variant_id=item.variant_id, task_id=row_task.task_id,
                    suite_id=row_task.suite_id, row_id=row_task.row_id,
                    replicate=item.replicate) / "task.json"  # fmt: skip


def _pool(request: RunRequest, prices: PriceTable) -> ModelPool:
    models = request.models
    cache = None
    if models.cache or models.cache_path is not None:
        cache = ResponseCache(models.cache_path or Path(".assay") / "cache.db",
                              max_age=models.cache_expiry)  # fmt: skip
    settings = PoolSettings(
        parallel=request.options.jobs,
        retry=RetryPolicy(max_retries=models.max_retries),
        cache=cache,
        cache_all=models.cache,
        timeout=models.timeout,
        prices=prices,
    )
    pool = ModelPool(request.registry or default_registry(), settings)
    if request.pool_hook is not None:
        request.pool_hook(pool)
    return pool


def _run(
    plan: Plan,
    record: PlanRecord,
    run_dir: Path,
    request: RunRequest,
    started: datetime,
    *,
    kept: list[EvaluationResult],
    prices: PriceTable,
) -> Reports:
    done = {(r.variant_id, r.task_id, r.replicate_index) for r in kept}
    items = [
        i for i in plan.work_items()
        if (i.variant_id, i.row_task.task_id, i.replicate) not in done
    ]  # fmt: skip
    pool = _pool(request, prices)
    runner = Runner(run_dir, pool, default_criteria(), request.options,
                    on_retry=request.progress.retry)  # fmt: skip
    log_session(run_dir, "start", started)

    async def main() -> tuple[list[EvaluationResult | None], bool]:
        use_pidfd_child_watcher()
        stop_on_sigterm()
        try:
            await pool.start(model_keys(plan))
            if request.options.stage == "run":
                plan.warnings.extend(await check_judges(plan, pool))
            request.progress.start(len(items), already_done=len(kept))
            outcome = await runner.execute(items, request.progress.advance)
            return outcome.results, outcome.interrupted
        finally:
            request.progress.stop()
            runner.close()
            await pool.aclose()
            if pool.settings.cache is not None:
                pool.settings.cache.close()

    try:
        results, interrupted = asyncio.run(main())
    except KeyboardInterrupt:
        results, interrupted = [], True
    ended = datetime.now()
    log_session(run_dir, "end", ended)
    finished = kept + [r for r in results if r is not None]
    if interrupted:
        finished = _reload(run_dir, plan.work_items(), finished)
    meta = _meta(plan, record, run_dir, request, finished, interrupted=interrupted, now=ended)
    return write_reports(run_dir, finished, meta, default_criteria(),
                         junit_path=request.junit_path)  # fmt: skip


async def check_judges(plan: Plan, pool: ModelPool) -> list[str]:
    """Sanity-check every judge of the plan (:func:`assay.qa.check_judge`); a warning, also
    printed at once, for each judge that gets an obvious case wrong."""
    warnings = []
    seen: set[tuple[str, str | None, str | None, str]] = set()
    for key in judge_keys(plan, checked_only=True):
        where = key.base_dir if key.name.startswith("mock/") else ""  # a script per folder
        if (key.name, key.base_url, key.api_key_env, where) in seen:
            continue  # one check per judge endpoint
        seen.add((key.name, key.base_url, key.api_key_env, where))
        check = await check_judge(pool.get(key))
        if check.passed:
            continue
        wrong = [f"{text!r} judged {verdict}" for text, expected, verdict in check.probes
                 if verdict != expected]  # fmt: skip
        warning = (
            f"judge {key.name} failed its sanity check (answers to 'What is the capital of "
            f"France?': {'; '.join(wrong)}): its verdicts on open questions are not a "
            "measurement; use a stronger judge model (qa.judge.model)"
        )
        Console(stderr=True).print(f"[yellow]warning:[/] {escape(warning)}", markup=True)
        warnings.append(warning)
    return warnings


def _reload(
    run_dir: Path, items: list[WorkItem], finished: list[EvaluationResult]
) -> list[EvaluationResult]:
    """After an interruption, every row whose ``task.json`` reached the disk counts."""
    on_disk = finished_results(run_dir, items, retry_errors=False)
    return on_disk if len(on_disk) >= len(finished) else finished


def _meta(
    plan: Plan,
    record: PlanRecord,
    run_dir: Path,
    request: RunRequest,
    results: list[EvaluationResult],
    *,
    interrupted: bool,
    now: datetime,
) -> RunMeta:
    sessions = read_sessions(run_dir)
    first = sessions[0][0] if sessions else now
    return RunMeta(
        run_id=run_dir.name,
        stage=request.options.stage,
        start_time=first,
        end_time=now,
        max_parallel=request.options.jobs,
        command=request.command or sys.argv,
        skipped=plan.skipped,
        selections=[
            TaskSelection(
                task_id=t.task_id, source_file=t.file, dataset=t.dataset, selection=t.selection
            )
            for t in record.tasks
            if t.dataset is not None and t.selection is not None
        ],
        warnings=plan.warnings,
        interrupted=interrupted,
        criteria=record.criteria,
        active_seconds=active_seconds(sessions, results, now),
        sessions=len(sessions),
        planned=record.planned,
        experiment_id=plan.experiment.experiment_id if plan.experiment else None,
        experiment_description=plan.experiment.description if plan.experiment else "",
        variant_ids=list(plan.variants),
    )


def stop_on_sigterm() -> None:
    """Make SIGTERM (``timeout``, ``docker stop``, a cancelled CI job) stop the run like Ctrl-C:
    rows in flight are cancelled and their processes killed, finished rows are kept, reports
    are written. Call inside the running event loop."""
    task = asyncio.current_task()
    if task is not None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)


def active_seconds(
    sessions: list[tuple[datetime, datetime | None]],
    results: list[EvaluationResult],
    now: datetime,
) -> float:
    """Σ over sessions of their active time; a killed session ends at its last finished row."""
    total = 0.0
    for index, (start, end) in enumerate(sessions):
        if end is None:
            limit = sessions[index + 1][0] if index + 1 < len(sessions) else now
            ends = [datetime.fromisoformat(r.completed_at) for r in results]
            inside = [t for t in ends if start <= t <= limit]
            end = max(inside) if inside else start
        total += (end - start).total_seconds()
    return total
