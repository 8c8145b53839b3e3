"""Grade a finished run again without running its agents (``assay evaluate RUN_DIR``).

Every row's criteria run again from its ``response.txt`` and kept sandbox (a copy, so the
kept one stays as the agent left it), with the row's own environment (the host's without its
secrets, as in the run), and its ``task.json`` is rewritten, every known secret redacted;
nothing changes when criteria need sandboxes the run did not keep. The reports are then
rebuilt by :func:`assay.reports.rebuild.report_regraded`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.agents.base import OutcomeStatus
from assay.criteria.agent_judge import AgentHost
from assay.criteria.base import GradingContext, Service
from assay.criteria.registry import CriterionRegistry, default_criteria
from assay.errors import SandboxError, UsageError
from assay.orchestration.loading.qa_rows import judge_key
from assay.orchestration.loading.secrets import results_writer
from assay.orchestration.loading.task_loader import reference_dir
from assay.orchestration.planning.containment import (
    Containment,
    ImageKey,
    content_id,
    image_identity,
    image_key,
    is_contained,
    needs_bridge_socket,
    private_paths,
    refuse_other_images,
    shown_folders,
)
from assay.orchestration.planning.judging import judge_keys as task_judge_keys
from assay.orchestration.running.environment import grading_env, row_env
from assay.orchestration.running.executors.base import bridge_link
from assay.orchestration.running.grading import (
    final_status,
    grade,
    grading_message,
    row_services,
    weighted_score,
)
from assay.orchestration.running.rowfiles import SANDBOX_DIR
from assay.orchestration.running.services import RunServices, run_services
from assay.providers.pool import ModelKey, ModelPool, PoolSettings, default_registry
from assay.qa import PredictionRecord
from assay.qa.schema import OPEN_TYPES
from assay.results.io import LogFolder, Writer, read_json, read_text_as_written
from assay.results.output import console, joined_output
from assay.results.plan_record import PLAN_FILE, read_plan
from assay.results.run_folder import load_task_json, scan_task_jsons
from assay.results.secrets import MARKER_PREFIX
from assay.results.status import FinalStatus
from assay.results.task_result import CriterionResult, EvaluationResult
from assay.results.transcript import Transcript
from assay.results.transcript_otlp import from_session
from assay.sandbox.process import pidfd_child_watcher
from assay.sandbox.tempdir import Sandbox, restore_stand_ins
from assay.sandbox.trees import remove_tree
from assay.spec.judge_criteria import LlmJudge
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
    whose grader failed (a judge error) is graded again; an agent a live verdict ended stays
    ``early_stop`` (its row passes on its armed criteria)."""
    stopped: OutcomeStatus = "early_stop" if result.agent.early_stop is not None else "completed"
    if any(c.grader_failed for c in result.success_criteria_results):
        return stopped
    return _KEEP_STATUS.get(result.final_status, stopped)


async def regrade_run(
    run_dir: Path, *, jobs: int, criteria: CriterionRegistry | None = None
) -> list[str]:
    """Grade every row of ``run_dir`` again from its response and kept sandbox, rewriting
    each ``task.json``; returns warnings (:class:`RedactedAnswers`). The rows are read
    twice, one at a time (first to check that they can be graded and to find their judges,
    then to grade them), so a run of any size is graded in memory that does not grow with
    it.

    Raises:
        UsageError: no ``task.json`` under ``run_dir``, a file that is not a valid
            ``task.json``, or rows whose criteria read the sandbox but the run did not keep
            sandboxes (nothing is changed then).
        ModelError, UserError: a judge model could not start.
        PluginError: a criterion plugin the rows name cannot be loaded.

    ``criteria`` is the registry of criterion types (the built-ins and installed plugins by
    default).
    """
    queue = iter(scan_task_jsons(run_dir))
    redacted = RedactedAnswers()
    async with grading_session(run_dir, jobs=jobs, criteria=criteria) as session:

        async def worker() -> None:
            for path in queue:
                await _regrade_one(path, load_task_json(path), session, answers=redacted)

        await asyncio.gather(*(worker() for _ in range(max(1, jobs))))
    return redacted.warnings()


@dataclass(frozen=True)
class GradingSession:
    """What grading a finished run's rows again needs, started once (see
    :func:`grading_session`): the criterion types, the models and model bridge, the run's
    secrets, and the containment its ``bwrap``/``docker`` rows ran in."""

    registry: CriterionRegistry
    services: RunServices
    writer: Writer
    containment: Containment

    async def grade(
        self, path: Path, result: EvaluationResult, specs: list[Any] | None = None
    ) -> list[CriterionResult]:
        """Grade the row whose ``task.json`` is ``path`` (its recorded ``result``) again with
        ``specs`` (default: its task's criteria), on a copy of its kept sandbox; nothing of
        the row's folder changes but its criteria's output logs."""
        task = task_of(result, self.registry)
        directory = path.parent
        response = read_text_as_written(directory / "response.txt")
        kept = directory / SANDBOX_DIR
        scratch: Sandbox | None = None
        if kept.is_dir():
            limits = task.sandbox.limits  # the run's cap on what is kept, and its logs
            source = Sandbox(kept, max_output_bytes=limits.max_output_bytes,
                             logs=_criterion_logs(directory, task, self.writer))  # fmt: skip
            scratch = source.copy_to(Path(tempfile.mkdtemp(prefix="assay-eval-")) / "sandbox")
        try:
            task_dir = Path(result.task_config.task_dir or ".")
            if scratch is not None:  # a bwrap task's commands run contained again
                scratch.jail = self.containment.jail(task, scratch.root, task_dir)
                try:
                    restore_stand_ins(scratch.root, task.sandbox, task_dir)
                except (OSError, ValueError) as exc:
                    raise SandboxError(
                        f"cannot write the task's record_cli shims and mock_path_dirs again: {exc}"
                    ) from exc
            context = self._context(result, task, task_dir, scratch, response, directory)
            chosen = list(task.success_criteria) if specs is None else specs
            return await grade(chosen, context, self.registry)
        finally:
            if scratch is not None:
                if scratch.jail is not None:
                    scratch.jail.close()
                remove_tree(scratch.root.parent)

    def _context(
        self, result: EvaluationResult, task: TaskDefinition, task_dir: Path,
        scratch: Sandbox | None, response: str | None, directory: Path,
    ) -> GradingContext:  # fmt: skip
        env = row_env(
            dict(os.environ),
            task,
            variant_id=result.variant_id,
            replicate=result.replicate_index,
            sandbox=scratch.root if scratch else None,
            task_dir=Path(result.task_config.task_dir) if result.task_config.task_dir else None,
            hidden=self.writer.withheld,
        )
        reference = reference_dir(task, task_dir)
        services = self.services
        host = None  # an agent_judge's coding agent: only when the bridge was started for one
        if services.bridge is not None:
            host = AgentHost(agents=self.registry.agents, pool=services.pool,
                             bridge=services.bridge, base_dir=task_dir,
                             label=f"{result.task_id}#{result.replicate_index:02d}",
                             replicate=result.replicate_index)  # fmt: skip
        return GradingContext(
            sandbox=scratch, response=response, transcript=read_transcript(directory),
            env=grading_env(env, task_dir=task_dir, reference=reference, row=result.row),
            row=result.row,
            models=services.pool,
            services=_services(result, task, services.pool, reference, host),
        )  # fmt: skip


@contextlib.asynccontextmanager
async def grading_session(
    run_dir: Path, *, jobs: int, criteria: CriterionRegistry | None = None
) -> AsyncIterator[GradingSession]:
    """The services grading ``run_dir``'s rows again needs, started for the block: its
    judges' models, the model bridge when a coding agent grades (``agent_judge``; on a unix
    socket for a ``bwrap`` row), the containment its contained rows ran in; the rows are
    checked first (:func:`_checked`).

    Raises:
        UsageError, ModelError, UserError, PluginError: as :func:`regrade_run`.
    """
    registry = criteria or default_criteria()
    scan, contained, writer = _checked(run_dir, registry)
    pool = ModelPool(default_registry(), PoolSettings(parallel=max(1, jobs)))
    with pidfd_child_watcher():
        socket, out = needs_bridge_socket(contained), console()
        with joined_output(writer, [out]):  # the bridge's errors, redacted
            async with run_services(pool, list(scan.keys), bridge=scan.bridge,
                                    bridge_socket=socket, log_stream=out) as services:  # fmt: skip
                containment = Containment.for_tasks(
                    contained, private=private_paths(run_dir, cache=None,
                                                     task_dirs=scan.task_dirs if contained
                                                     else ()),
                    bridge=bridge_link(services.bridge), check=True, images=scan.images,
                )  # fmt: skip
                yield GradingSession(registry, services, writer, containment)


@dataclass
class RedactedAnswers:
    """Rows whose ``response.txt`` holds a redaction marker: ``assay evaluate`` grades the
    text as written, so a criterion that matched a secret or token in the answer the run
    graded in memory can grade it differently (``docs/secrets.md``)."""

    rows: int = 0
    changed: list[str] = field(default_factory=list)

    def add(self, response: str | None, before: EvaluationResult, after: EvaluationResult) -> None:
        """Count one regraded row: the ``response.txt`` it was graded on, its result before
        and after."""
        if response is not None and MARKER_PREFIX in response:
            self.rows += 1
            if before.weighted_score != after.weighted_score:
                self.changed.append(f"{after.task_id}#{after.replicate_index:02d}")

    def warnings(self) -> list[str]:
        """One warning when a row's answer holds redacted text, naming the rows whose score
        changed."""
        if not self.rows:
            return []
        changed = (f"; {len(self.changed)} of them scored differently than in the run: "
                   + ", ".join(sorted(self.changed)[:5])
                   + (" ..." if len(self.changed) > 5 else "")) if self.changed else ""  # fmt: skip
        return [
            f"{self.rows} row(s)' response.txt hold redacted text ([redacted:...]); "
            "assay evaluate grades the answer as written, so a criterion that matched a "
            "secret or token in it can grade differently than the run did" + changed
        ]


@dataclass
class _Scan:
    """What one pass over a run's rows found (:func:`_checked`)."""

    registry: CriterionRegistry
    rows: int = 0
    keys: dict[ModelKey, None] = field(default_factory=dict)
    suites: dict[tuple[str, str], TaskDefinition] = field(default_factory=dict)
    missing: int = 0
    first_missing: str = ""
    lost: int = 0
    first_lost: str = ""
    bridge: bool = False
    images: dict[ImageKey, str] = field(default_factory=dict)
    """The content id of each ``docker`` image the rows ran in (:func:`_check_images`)."""
    task_dirs: set[Path] = field(default_factory=set)
    """The folders shown to the rows (their task files', ``read_only``, ``extra_mounts``):
    the run folders in them are hidden from rows."""

    def add(self, run_dir: Path, path: Path, result: EvaluationResult) -> None:
        """Count one row: its judges, its suite's task, a sandbox its criteria need."""
        self.rows += 1
        self.keys.update(
            dict.fromkeys([*judge_keys([result]), *criterion_judge_keys([result], self.registry)])
        )
        suite = (result.variant_id, result.suite_id or result.task_id)
        if suite not in self.suites:  # a suite's rows share their driver and graders: one each
            self.suites[suite] = task_of(result, self.registry)
            self.graders(self.suites[suite], Path(result.task_config.task_dir or "."))
            if result.task_config.task_dir:
                base = Path(result.task_config.task_dir)
                self.task_dirs.update(shown_folders(self.suites[suite], base))
        if agent_status(result) == "error":
            return
        if result.agent.response_chars and not (path.parent / "response.txt").is_file():
            self.lost += 1
            self.first_lost = self.first_lost or path.parent.relative_to(run_dir).as_posix()
        if (path.parent / SANDBOX_DIR).is_dir():
            return
        task = task_of(result, self.registry)  # this row's own
        if any(c.needs_sandbox() for c in task.success_criteria):
            self.missing += 1
            self.first_missing = self.first_missing or path.parent.relative_to(run_dir).as_posix()

    def graders(self, task: TaskDefinition, base_dir: Path) -> None:
        """Note the models of the coding agents ``task``'s criteria run to grade
        (``agent_judge``), and whether they call them through the model bridge."""
        for spec in task.success_criteria:
            for config in spec.graders():
                agent = self.registry.agents.build(config)
                self.keys.update(dict.fromkeys(agent.model_keys(base_dir)))
                self.bridge = self.bridge or config.uses_bridge


def task_of(result: EvaluationResult, registry: CriterionRegistry) -> TaskDefinition:
    """The row's task as it recorded it, its criteria and agent as ``registry``'s classes
    (an installed plugin's loaded when the run's task names its type).

    Raises:
        UsageError: it names a criterion or agent type ``registry`` does not have, or it is
            not valid with the classes here.
    """
    resolved = result.task_config.resolved
    criteria = resolved.get("success_criteria")
    if isinstance(criteria, list):
        registry.require(c.get("type") for c in criteria if isinstance(c, dict))
    model = registry.model_for(resolved)  # an agent type of a plugin loads it
    agent = resolved.get("agent")
    if isinstance(agent, dict) and isinstance(agent.get("type"), str):
        registry.agents.get(agent["type"])  # unknown here: named, with what would add it
    try:
        return model.model_validate(resolved)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UsageError(
            f"row {result.task_id}: the task it recorded is not valid here ({where}: "
            f"{first['msg']})",
            hint="grade it where the run's criteria and agents are as they were",
        ) from None


def _checked(
    run_dir: Path, registry: CriterionRegistry
) -> tuple[_Scan, list[TaskDefinition], Writer]:
    """The scan of the rows (the models they need, how many, whether a coding agent grades
    them), the first row's task of each suite that runs in a ``bwrap`` sandbox or ``docker``
    container, and the writer of the secrets the rows' tasks know
    (:func:`~assay.orchestration.loading.secrets.results_writer`), after checking that
    every row whose criteria read the sandbox has it; every ``task.json`` is read once.

    Raises:
        UsageError: no rows; rows whose sandbox the run did not keep, or whose answer
            (``response.txt``) is gone (the first named).
    """
    scan = _Scan(registry)

    def rows() -> Iterator[EvaluationResult]:
        for path in scan_task_jsons(run_dir):
            result = load_task_json(path)
            scan.add(run_dir, path, result)
            yield result

    writer = results_writer(rows(), os.environ, run_dir=run_dir)
    if not scan.rows:
        raise UsageError(f"no task.json under {run_dir}: is it a run directory?")
    if scan.missing:
        raise UsageError(
            f"{scan.missing} row(s) have criteria that read the sandbox, but the run did not "
            f"keep it (first: {scan.first_missing}); nothing was changed",
            hint="run `assay execute` (or `assay run --keep-sandboxes`) to keep sandboxes, "
            "then `assay evaluate`; `assay report` rebuilds reports without grading",
        )
    if scan.lost:
        raise UsageError(
            f"{scan.lost} row(s) answered in the run, but their response.txt is gone "
            f"(first: {scan.first_lost}/response.txt); grading them would call a missing answer "
            "wrong, so nothing was changed",
            hint="restore the files (or run the rows again: `assay run --resume` after "
            "removing their task.json); `assay report` rebuilds reports without grading",
        )
    contained = [t for t in scan.suites.values() if is_contained(t)]
    scan.images = _check_images(run_dir, scan.suites)
    return scan, contained, writer


def _check_images(
    run_dir: Path, suites: dict[tuple[str, str], TaskDefinition]
) -> dict[ImageKey, str]:
    """A ``docker`` task's rows (``suites``: each variant's and suite's recorded task) are
    graded in the image the run ran them in (``plan.json``'s record): its content id, by
    :func:`~assay.orchestration.planning.containment.image_key`.

    Raises:
        UsageError: the image is another one now (its Dockerfile or tag changed since the
            run, and the engine no longer holds the one it ran in), naming both.
    """
    if not (run_dir / PLAN_FILE).is_file():
        return {}
    recorded = {task.task_id: task for task in read_plan(run_dir).tasks if task.images}
    images = {}
    for (variant, suite), definition in suites.items():
        task = recorded.get(suite)
        if task is None or variant not in task.images:
            continue
        base = Path(task.base_dir) if task.base_dir else Path(task.file).parent
        now = image_identity(definition, base, started=task.images[variant])
        if now is not None:
            refuse_other_images(task.task_id, task.file, {variant: now}, task.images,
                                task=definition)  # fmt: skip
            content = content_id(now)
            if content is not None:
                images[image_key(definition, base)] = content
    return images


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


def criterion_judge_keys(
    results: list[EvaluationResult], registry: CriterionRegistry
) -> list[ModelKey]:
    """The models of the judge criteria (``llm_judge`` and its kin) of rows that will be
    graded again."""
    judges = {name for name in registry.types if issubclass(registry.get(name), LlmJudge)}
    tasks: dict[str, TaskDefinition] = {}
    for result in results:
        if agent_status(result) == "error":
            continue
        criteria = result.task_config.resolved.get("success_criteria") or []
        if any(isinstance(c, dict) and c.get("type") in judges for c in criteria):
            key = repr(criteria)
            if key not in tasks:
                tasks[key] = task_of(result, registry)
    return task_judge_keys(tasks.values())


def _services(
    result: EvaluationResult,
    task: TaskDefinition,
    pool: ModelPool,
    reference: Path | None,
    host: AgentHost | None,
) -> dict[Service[Any], Any]:
    """What the row offers its criteria: the QA item and judge a ``qa:`` row is graded with
    (from its recorded record), the task's reference folder, the coding-agent services an
    ``agent_judge`` runs its agent with."""
    if result.qa_record is None or task.qa is None:
        return row_services(qa_item=None, judge=None, task=task, reference=reference,
                            agents=host)  # fmt: skip
    judge = task.qa.judge
    base_dir = Path(result.task_config.task_dir or ".")
    return row_services(
        qa_item=PredictionRecord.model_validate(result.qa_record).to_item(),
        judge=pool.get(judge_key(judge, base_dir)) if judge is not None else None,
        task=task, reference=reference, agents=host,
    )  # fmt: skip


async def _regrade_one(
    path: Path, result: EvaluationResult, session: GradingSession, *, answers: RedactedAnswers
) -> EvaluationResult:
    status_of_agent = agent_status(result)
    if status_of_agent == "error":
        return result
    criteria = await session.grade(path, result)
    status = final_status(status_of_agent, criteria, graded=True, early=result.agent.early_stop)
    updated = result.model_copy(
        update={
            "success_criteria_results": criteria,
            "final_status": status,
            "weighted_score": weighted_score(criteria) if criteria else None,
            "error_message": _message(status, result, criteria),
        }
    )
    session.writer.model(path, updated)
    response = read_text_as_written(path.parent / "response.txt")
    answers.add(response, result, updated)
    return updated


def _criterion_logs(directory: Path, task: TaskDefinition, writer: Writer) -> LogFolder:
    """Where the criteria's commands write a stream past ``sandbox.limits.max_output_mb``
    (``command-N.stdout.log``... in the row's folder, as in the run): the earlier grading's
    logs are removed first, since the grading they belonged to is replaced."""
    for stale in directory.glob("command-*.std*.log"):
        stale.unlink(missing_ok=True)
    return writer.logs(directory, task.sandbox.limits.max_log_bytes)


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
