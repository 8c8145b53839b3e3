"""``assay evaluate`` and ``assay report``: grade a finished run again, or rebuild its reports.

``evaluate`` re-runs every row's criteria from its ``response.txt`` and kept sandbox (a copy,
so the kept one stays as the agent left it), with the row's own environment, and rewrites its
``task.json``; it refuses, changing nothing, when criteria need sandboxes the run did not
keep. ``report`` rebuilds ``suite.*``, ``run.*`` and JUnit XML from the ``task.json`` files.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from assay.agents.base import OutcomeStatus
from assay.criteria.base import CriterionRegistry, GradingContext, needs_sandbox
from assay.criteria.registry import default_criteria
from assay.errors import UsageError
from assay.orchestration.grading import final_status, grade, weighted_score
from assay.orchestration.qa_rows import judge_key
from assay.orchestration.runner import SANDBOX_DIR, Stage, row_env
from assay.providers.pool import ModelKey, ModelPool, PoolSettings, default_registry
from assay.qa import PredictionRecord
from assay.qa.schema import OPEN_TYPES
from assay.reports.writer import Reports, RunMeta, write_reports
from assay.results.io import read_json, write_model_atomic
from assay.results.plan_record import PLAN_FILE, PlanRecord
from assay.results.run import RunSummary, TaskSelection
from assay.results.status import FinalStatus
from assay.results.task_result import EvaluationResult
from assay.sandbox.process import use_pidfd_child_watcher
from assay.sandbox.tempdir import Sandbox
from assay.spec.qa import QaJudge
from assay.spec.task import TaskDefinition

ModelT = TypeVar("ModelT", bound=BaseModel)
REPLICATE_DIR = re.compile(r"^\d{2,}$")


def task_json_paths(run_dir: Path) -> list[Path]:
    """Every row's ``task.json``, found where the layout puts them (never inside a kept
    sandbox): ``<variant>/<suite>/<row>/<NN>/`` and ``<variant>/<task>/<NN>/``."""
    found: list[Path] = []
    for variant in sorted(p for p in run_dir.iterdir() if p.is_dir()):
        for entry in sorted(p for p in variant.iterdir() if p.is_dir()):
            found += _replicates(entry)
            for row in sorted(p for p in entry.iterdir() if p.is_dir()):
                if not REPLICATE_DIR.match(row.name):
                    found += _replicates(row)
    return found


def _replicates(folder: Path) -> list[Path]:
    return [
        child / "task.json"
        for child in sorted(folder.iterdir())
        if REPLICATE_DIR.match(child.name) and (child / "task.json").is_file()
    ]


def load_task_json(path: Path) -> EvaluationResult:
    """One ``task.json``.

    Raises:
        UsageError: the file is not a valid ``task.json`` (named, with what to do).
    """
    try:
        return EvaluationResult.model_validate(read_json(path))
    except (ValueError, OSError) as exc:
        reason = str(exc).splitlines()[0]
        raise UsageError(
            f"{path} is not a valid task.json ({reason})",
            hint="delete it and run `assay run --resume RUN_DIR` to run that row again",
        ) from None


def load_results(run_dir: Path) -> list[EvaluationResult]:
    """Every ``task.json`` of the run in ``run_dir``."""
    return [load_task_json(path) for path in task_json_paths(run_dir)]


def load_run_results(run_dir: Path) -> list[EvaluationResult]:
    """Like :func:`load_results`, refusing a run without any row.

    Raises:
        UsageError: no ``task.json`` at all.
    """
    results = load_results(run_dir)
    if not results:
        raise UsageError(f"no task.json under {run_dir}: is it a run directory?")
    return results


def resolve_run_dir(argument: str) -> Path:
    """A run directory given by path (``runs/latest`` works).

    Raises:
        UsageError: not a directory; a folder of runs (``runs/``) rather than one run; or a
            folder that holds no run.
    """
    path = Path(argument)
    if not path.is_dir():
        raise UsageError(f"run directory not found: {argument}")
    path = path.resolve()
    if (path / PLAN_FILE).is_file() or (path / "run.json").is_file():
        return path
    runs = [
        p.name
        for p in path.iterdir()
        if not p.is_symlink() and ((p / PLAN_FILE).is_file() or (p / "run.json").is_file())
    ]
    if runs:
        raise UsageError(
            f"{argument} is a folder of {len(runs)} runs, not one run",
            hint=f"pass one of them, e.g. {Path(argument) / 'latest'}",
        )
    raise UsageError(f"{argument} is not a run directory (no plan.json or run.json)")


def previous_meta(run_dir: Path, stage: Stage | str) -> RunMeta:
    """The run's recorded facts for a new report: from ``plan.json`` (what it set out to do:
    selections, planned rows, criteria, experiment) and ``run.json`` (how it went)."""
    now = datetime.now()
    summary = _read_model(run_dir / "run.json", RunSummary)
    plan = _read_model(run_dir / PLAN_FILE, PlanRecord)
    criteria = dict(plan.criteria) if plan else {}
    criteria.update(summary.task_criteria if summary else {})
    for path in run_dir.glob("*/*/suite.json"):
        data = read_json(path)
        if data.get("criteria") is not None:
            criteria.setdefault(data["suite_id"], data["criteria"])
    selections = summary.selections if summary else []
    if not selections and plan is not None:
        selections = [
            TaskSelection(
                task_id=t.task_id, source_file=t.file, dataset=t.dataset, selection=t.selection
            )
            for t in plan.tasks
            if t.dataset is not None and t.selection is not None
        ]
    experiment = _experiment(run_dir)
    return RunMeta(
        run_id=run_dir.name,
        stage=stage,  # type: ignore[arg-type]
        start_time=datetime.fromisoformat(summary.start_time) if summary else now,
        end_time=datetime.fromisoformat(summary.end_time) if summary else now,
        max_parallel=summary.max_parallel if summary else (plan.jobs if plan else 1),
        command=summary.command if summary else [],
        skipped=summary.skipped_tasks if summary else [],
        selections=selections,
        warnings=summary.warnings if summary else [],
        criteria=criteria,
        interrupted=summary.interrupted if summary else plan is not None,
        active_seconds=summary.total_duration_seconds if summary else None,
        sessions=summary.sessions if summary else 1,
        planned=plan.planned if plan else {},
        experiment_id=experiment[0] if experiment else None,
        experiment_description=experiment[1] if experiment else "",
        variant_ids=list(plan.variants) if plan else [],
    )


def _read_model(path: Path, model: type[ModelT]) -> ModelT | None:
    if not path.is_file():
        return None
    try:
        return model.model_validate(read_json(path))
    except (ValueError, OSError):
        return None


def _experiment(run_dir: Path) -> tuple[str, str] | None:
    path = run_dir / "experiment.json"
    if not path.is_file():
        return None
    data = read_json(path)
    return str(data.get("experiment_id", "")), str(data.get("description", ""))


def rebuild_reports(run_dir: Path, *, junit_path: Path | None = None) -> Reports:
    """``assay report``: write every report again from the ``task.json`` files (a run that
    planned rows but finished none reports them all missing)."""
    results = load_results(run_dir)
    meta = previous_meta(run_dir, "report")
    if not results and not meta.planned:
        raise UsageError(f"no task.json under {run_dir}: is it a run directory?")
    meta.stage = "report"
    return write_reports(run_dir, results, meta, default_criteria(), junit_path=junit_path)


_KEEP_STATUS: dict[FinalStatus, OutcomeStatus] = {
    FinalStatus.ERROR: "error",
    FinalStatus.BUILD_FAILED: "error",
    FinalStatus.TIMEOUT: "timeout",
    FinalStatus.TOKEN_BUDGET_EXCEEDED: "token_budget",
    FinalStatus.COST_BUDGET_EXCEEDED: "cost_budget",
}


def agent_status(result: EvaluationResult) -> OutcomeStatus:
    """How the row's agent ended, as recorded: an ``ERROR`` row whose agent finished but
    whose grader failed (a judge error) is graded again."""
    if any(c.grader_failed for c in result.success_criteria_results):
        return "completed"
    return _KEEP_STATUS.get(result.final_status, "completed")


def evaluate_run(run_dir: Path, *, jobs: int, junit_path: Path | None = None) -> Reports:
    """``assay evaluate``: grade every row again from its response and kept sandbox.

    Raises:
        UsageError: no ``task.json`` under ``run_dir``, or rows whose criteria read the sandbox
            but the run did not keep sandboxes (nothing is changed then).
    """
    paths = task_json_paths(run_dir)
    if not paths:
        raise UsageError(f"no task.json under {run_dir}: is it a run directory?")
    rows = [(p, load_task_json(p)) for p in paths]
    _check_sandboxes_kept(run_dir, rows)
    started = datetime.now()
    registry = default_criteria()
    pool = ModelPool(default_registry(), PoolSettings(parallel=max(1, jobs)))

    async def regrade(
        path: Path, result: EvaluationResult, limit: asyncio.Semaphore
    ) -> EvaluationResult:
        async with limit:
            return await _regrade_one(path, result, registry, pool)

    async def main() -> list[EvaluationResult]:
        use_pidfd_child_watcher()
        limit = asyncio.Semaphore(max(1, jobs))
        try:
            await pool.start(judge_keys([r for _, r in rows]))
            return list(await asyncio.gather(*(regrade(p, r, limit) for p, r in rows)))
        finally:
            await pool.aclose()

    results = asyncio.run(main())
    meta = previous_meta(run_dir, "evaluate")
    meta.start_time, meta.end_time, meta.max_parallel = started, datetime.now(), jobs
    return write_reports(run_dir, results, meta, registry, junit_path=junit_path)


def _check_sandboxes_kept(run_dir: Path, rows: list[tuple[Path, EvaluationResult]]) -> None:
    missing = []
    for path, result in rows:
        if agent_status(result) == "error":
            continue
        task = TaskDefinition.model_validate(result.task_config.resolved)
        kept = (path.parent / SANDBOX_DIR).is_dir()
        if not kept and any(needs_sandbox(c) for c in task.success_criteria):
            missing.append(path.parent.relative_to(run_dir).as_posix())
    if missing:
        raise UsageError(
            f"{len(missing)} row(s) have criteria that read the sandbox, but the run did not "
            f"keep it (first: {missing[0]}); nothing was changed",
            hint="run `assay execute` (or `assay run --keep-sandboxes`) to keep sandboxes, "
            "then `assay evaluate`; `assay report` rebuilds reports without grading",
        )


def judge_keys(results: list[EvaluationResult]) -> list[ModelKey]:
    """The judge models that open QA rows need, to start once before grading."""
    keys: dict[ModelKey, None] = {}
    for result in results:
        record = result.qa_record
        qa = result.task_config.resolved.get("qa")
        if record is None or not qa or not qa.get("judge"):
            continue
        if record.get("prompt_type") in OPEN_TYPES and agent_status(result) != "error":
            judge = QaJudge.model_validate(qa["judge"])
            keys[judge_key(judge, Path(result.task_config.task_dir or "."))] = None
    return list(keys)


def _qa_context(result: EvaluationResult, task: TaskDefinition, pool: ModelPool) -> dict[str, Any]:
    """The QA item and judge a ``qa:`` row is graded with (from its recorded record)."""
    if result.qa_record is None or task.qa is None:
        return {}
    judge = task.qa.judge
    base_dir = Path(result.task_config.task_dir or ".")
    return {
        "qa_item": PredictionRecord.model_validate(result.qa_record).to_item(),
        "judge": pool.get(judge_key(judge, base_dir)) if judge is not None else None,
        "judge_settings": judge,
    }


async def _regrade_one(
    path: Path, result: EvaluationResult, registry: CriterionRegistry, pool: ModelPool
) -> EvaluationResult:
    status_of_agent = agent_status(result)
    if status_of_agent == "error":
        return result
    task = TaskDefinition.model_validate(result.task_config.resolved)
    directory = path.parent
    response_file = directory / "response.txt"
    response = None
    if response_file.exists():
        with response_file.open(encoding="utf-8", newline="") as handle:
            response = handle.read()
    kept = directory / SANDBOX_DIR
    scratch: Sandbox | None = None
    if kept.is_dir():
        scratch = Sandbox(kept).copy_to(Path(tempfile.mkdtemp(prefix="assay-eval-")) / "sandbox")
    try:
        env = row_env(
            dict(os.environ),
            task,
            variant_id=result.variant_id,
            replicate=result.replicate_index,
            sandbox=scratch.root if scratch else None,
            task_dir=Path(result.task_config.task_dir) if result.task_config.task_dir else None,
        )
        context = GradingContext(
            sandbox=scratch, response=response, env=env, **_qa_context(result, task, pool)
        )
        criteria = await grade(list(task.success_criteria), context, registry)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch.root.parent, ignore_errors=True)
    status = final_status(status_of_agent, criteria, graded=True)
    updated = result.model_copy(
        update={
            "success_criteria_results": criteria,
            "final_status": status,
            "weighted_score": weighted_score(criteria) if criteria else None,
            "error_message": _message(status, result, criteria),
        }
    )
    write_model_atomic(path, updated)
    return updated


def _message(status: FinalStatus, result: EvaluationResult, criteria: list[Any]) -> str | None:
    """The row's error message after grading again: a grader's failure, or the agent's."""
    if status is FinalStatus.SUCCESS:
        return None
    failed: str | None = next((c.error for c in criteria if c.grader_failed and c.error), None)
    if failed is not None:
        return failed
    previous = result.error_message
    was_grader = any(c.grader_failed for c in result.success_criteria_results)
    return None if was_grader else previous
