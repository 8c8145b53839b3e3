"""Grade a finished run again without running its agents (``assay evaluate RUN_DIR``).

Every row's criteria run again from its ``response.txt`` and kept sandbox (a copy, so the
kept one stays as the agent left it), with the row's own environment (the host's without its
secrets, as in the run), and its ``task.json`` is rewritten, every known secret redacted;
nothing changes when criteria need sandboxes the run did not keep. The reports are then
rebuilt by :func:`assay.reports.rebuild.report_regraded`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from assay.agents.base import OutcomeStatus
from assay.criteria.base import CriterionRegistry, GradingContext, needs_sandbox
from assay.criteria.registry import default_criteria
from assay.errors import UsageError
from assay.orchestration.containment import Containment, private_paths
from assay.orchestration.environment import row_env
from assay.orchestration.grading import final_status, grade, grading_message, weighted_score
from assay.orchestration.judging import judge_keys as task_judge_keys
from assay.orchestration.qa_rows import judge_key
from assay.orchestration.runfiles import load_task_json, task_json_paths
from assay.orchestration.runner import SANDBOX_DIR
from assay.orchestration.secrets import results_redactor
from assay.orchestration.services import run_services
from assay.providers.pool import ModelKey, ModelPool, PoolSettings, default_registry
from assay.qa import PredictionRecord
from assay.qa.schema import OPEN_TYPES
from assay.results.io import read_json, write_model_atomic
from assay.results.secrets import Redactor
from assay.results.status import FinalStatus
from assay.results.task_result import EvaluationResult
from assay.results.transcript import Transcript
from assay.results.transcript_otlp import from_session
from assay.sandbox.process import pidfd_child_watcher
from assay.sandbox.tempdir import Sandbox
from assay.spec.qa import QaJudge
from assay.spec.task import TaskDefinition


def read_transcript(directory: Path) -> Transcript | None:
    """The transcript a row recorded in its ``trace.json`` (``None`` without one)."""
    path = directory / "trace.json"
    if not path.is_file():
        return None
    try:
        return from_session(read_json(path))
    except (ValueError, TypeError):
        return None


_KEEP_STATUS: dict[FinalStatus, OutcomeStatus] = {
    FinalStatus.ERROR: "error",
    FinalStatus.BUILD_FAILED: "error",
    FinalStatus.TIMEOUT: "timeout",
    FinalStatus.TOKEN_BUDGET_EXCEEDED: "token_budget",
    FinalStatus.COST_BUDGET_EXCEEDED: "cost_budget",
    FinalStatus.MAX_TURNS_EXHAUSTED: "max_turns",
}


def agent_status(result: EvaluationResult) -> OutcomeStatus:
    """How the row's agent ended, as recorded: an ``ERROR`` row whose agent finished but
    whose grader failed (a judge error) is graded again."""
    if any(c.grader_failed for c in result.success_criteria_results):
        return "completed"
    return _KEEP_STATUS.get(result.final_status, "completed")


async def regrade_run(run_dir: Path, *, jobs: int) -> list[EvaluationResult]:
    """Grade every row of ``run_dir`` again from its response and kept sandbox, rewriting
    each ``task.json``; returns the rows in the run's order.

    Raises:
        UsageError: no ``task.json`` under ``run_dir``, a file that is not a valid
            ``task.json``, or rows whose criteria read the sandbox but the run did not keep
            sandboxes (nothing is changed then).
        ModelError, UserError: a judge model could not start.
    """
    paths = task_json_paths(run_dir)
    if not paths:
        raise UsageError(f"no task.json under {run_dir}: is it a run directory?")
    rows = [(p, load_task_json(p)) for p in paths]
    _check_sandboxes_kept(run_dir, rows)
    tasks = [TaskDefinition.model_validate(r.task_config.resolved) for _, r in rows]
    containment = Containment.for_tasks(tasks, private=private_paths(run_dir, cache=None),
                                        check=True)  # fmt: skip
    registry = default_criteria()
    pool = ModelPool(default_registry(), PoolSettings(parallel=max(1, jobs)))
    limit = asyncio.Semaphore(max(1, jobs))
    redactor = results_redactor([r for _, r in rows], os.environ)

    async def regrade(path: Path, result: EvaluationResult) -> EvaluationResult:
        async with limit:
            return await _regrade_one(path, result, registry, pool, redactor, containment)

    results = [r for _, r in rows]
    with pidfd_child_watcher():
        async with run_services(pool, [*judge_keys(results), *criterion_judge_keys(results)]):
            return list(await asyncio.gather(*(regrade(p, r) for p, r in rows)))


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


def criterion_judge_keys(results: list[EvaluationResult]) -> list[ModelKey]:
    """The models of the ``llm_judge`` criteria of rows that will be graded again."""
    tasks: dict[str, TaskDefinition] = {}
    for result in results:
        if agent_status(result) == "error":
            continue
        criteria = result.task_config.resolved.get("success_criteria") or []
        if any(isinstance(c, dict) and c.get("type") == "llm_judge" for c in criteria):
            key = repr(criteria)
            if key not in tasks:
                tasks[key] = TaskDefinition.model_validate(result.task_config.resolved)
    return task_judge_keys(tasks.values())


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
    path: Path,
    result: EvaluationResult,
    registry: CriterionRegistry,
    pool: ModelPool,
    redactor: Redactor,
    containment: Containment,
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
        task_dir = Path(result.task_config.task_dir or ".")
        if scratch is not None:  # a bwrap task's commands run contained again
            scratch.jail = containment.jail(task, scratch.root, task_dir)
        env = row_env(
            dict(os.environ),
            task,
            variant_id=result.variant_id,
            replicate=result.replicate_index,
            sandbox=scratch.root if scratch else None,
            task_dir=Path(result.task_config.task_dir) if result.task_config.task_dir else None,
            hidden=redactor.names,
        )
        context = GradingContext(
            sandbox=scratch, response=response, env=env, transcript=read_transcript(directory),
            row=result.row, models=pool, **_qa_context(result, task, pool),
        )  # fmt: skip
        criteria = await grade(list(task.success_criteria), context, registry)
    finally:
        if scratch is not None:
            if scratch.jail is not None:
                scratch.jail.close()
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
    write_model_atomic(path, updated, redactor=redactor)
    return updated


def _message(status: FinalStatus, result: EvaluationResult, criteria: list[Any]) -> str | None:
    """The row's error message after grading again: why grading did not grade it, or the
    agent's."""
    if status is FinalStatus.SUCCESS:
        return None
    message = grading_message(status, criteria)
    if message is not None:
        return message
    was_grader = any(not c.graded for c in result.success_criteria_results)
    return None if was_grader else result.error_message
