"""Execute a plan: every work item in its own sandbox, ``-j`` at a time, nothing lost.

Per work item: resolve the row-task → create the sandbox → ``pre_run`` → agent → criteria
(stage ``run``) → ``post_run`` → write ``response.txt``, ``trace.json``, ``task.log`` and,
last and atomically, ``task.json``. A failure of the agent, a model or the sandbox ends that
row ``ERROR`` and the others go on. Results come back in plan order, whatever order rows
finish in.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assay.agents.base import AgentContext, AgentOutcome
from assay.criteria.agent_judge import AgentHost
from assay.criteria.base import GradingContext
from assay.criteria.live import LiveMonitor
from assay.criteria.registry import CriterionRegistry
from assay.data.hashing import row_hash
from assay.errors import AssayError, SandboxError
from assay.orchestration.loading.qa_rows import judge_key
from assay.orchestration.loading.store_rows import trace_reader
from assay.orchestration.loading.task_loader import reference_dir
from assay.orchestration.planning.containment import Containment
from assay.orchestration.planning.expand import RowTask
from assay.orchestration.planning.judging import judge_keys as task_judge_keys_of
from assay.orchestration.planning.plan import Plan, PlannedTask, WorkItem
from assay.orchestration.running.dialog import DialogSetup, run_dialog, simulator_key
from assay.orchestration.running.environment import grading_env, row_env
from assay.orchestration.running.grading import (
    CAPS,
    STOPPED_EARLY,
    final_status,
    grade,
    grading_message,
    row_services,
    weighted_score,
)
from assay.orchestration.running.rowfiles import (
    SANDBOX_DIR,
    FinishedRow,
    clear_attempt,
    disk_full,
    write_finished,
)
from assay.orchestration.running.rundir import item_dir
from assay.providers.base import Model
from assay.providers.managed import OnRetry
from assay.providers.pool import ModelKey, ModelPool
from assay.qa import PredictionRecord, QaItem
from assay.qa.schema import OPEN_TYPES, route
from assay.results.io import Writer
from assay.results.status import FinalStatus
from assay.results.task_result import (
    AgentRecord,
    AttemptRecord,
    CommandResult,
    CriterionResult,
    EvaluationResult,
    TaskConfigRecord,
    TokenUsage,
)
from assay.results.trace import Span, new_trace_id
from assay.results.transcript import TranscriptEvent
from assay.results.transcript_otlp import from_session, from_trace
from assay.sandbox.archive import pack
from assay.sandbox.limit_counts import NOTHING_COUNTED, LimitCounts, launcher_notes
from assay.sandbox.process import (
    container_not_started,
    end_marked_processes,
    error_tail,
    exit_text,
    tail,
)
from assay.sandbox.reaper import RowProcesses
from assay.sandbox.tempdir import Sandbox, own_folder, restore_stand_ins
from assay.sandbox.trees import remove_tree
from assay.spec.criteria import CriterionSpec
from assay.spec.qa import QaJudge
from assay.spec.run_names import runs_beside
from assay.spec.task import TaskDefinition

if TYPE_CHECKING:
    from assay.bridge import Bridge
    from assay.store import Store

Stage = Literal["run", "execute"]
WRITER_THREADS = 2  # rows whose files are written at once, off the event loop


@dataclass
class RunOptions:
    """How to execute: ``jobs`` at a time, which stage, whether to keep sandboxes."""

    jobs: int = 4
    stage: Stage = "run"
    keep_sandboxes: bool = False


@dataclass
class ExecutionResult:
    """Whether the run was interrupted, and how long the rows ran (seconds)."""

    interrupted: bool = False
    seconds: float = 0.0
    stopped: str | None = None
    """Why the run stopped starting rows on its own (the run folder's disk is full)."""


OnDone = Callable[[EvaluationResult], None]


@dataclass
class _Row:
    """Mutable state while one work item runs."""

    item: WorkItem
    task: TaskDefinition
    directory: Path
    started: datetime = field(default_factory=datetime.now)
    clock: float = field(default_factory=time.perf_counter)
    log: list[str] = field(default_factory=list)
    qa: QaItem | None = None
    pre_run: list[CommandResult] = field(default_factory=list)
    post_run: list[CommandResult] = field(default_factory=list)
    post_failure: list[CriterionResult] = field(default_factory=list)

    def note(self, text: str) -> None:
        stamp = datetime.now().strftime("%H:%M:%S.%f")[:-3]
        self.log.append(f"{stamp} {text}")


def needs_directory(task: TaskDefinition) -> bool:
    """False only for an agent that needs no directory (an ``llm`` agent without
    ``response_file``) in a row nothing could observe a directory of: no
    ``pre_run``/``post_run``, no templates, and criteria that read the response alone. Such
    rows skip creating and deleting a directory."""
    if task.agent.needs_directory:
        return True
    if task.pre_run or task.post_run or task.sandbox.template_sources:
        return True
    return any(c.needs_sandbox() for c in task.success_criteria)


def model_keys(plan: Plan) -> list[ModelKey]:
    """The model endpoints the plan's agents use (every variant's), to start before any row."""
    keys: dict[ModelKey, None] = {}
    for planned in plan.tasks:
        for variant in planned.variants:
            agent = plan.criteria.agents.build(variant.definition.agent)
            keys.update(dict.fromkeys(agent.model_keys(planned.loaded.base_dir)))
    keys.update(dict.fromkeys(judge_keys(plan)))
    for planned in plan.tasks:  # dialog mode: the simulated user's model
        for variant in planned.variants:
            dialog = variant.definition.dialog
            if dialog is not None:
                keys[simulator_key(dialog, planned.loaded.base_dir)] = None
    tasks = [v.definition for planned in plan.tasks for v in planned.variants]
    keys.update(dict.fromkeys(task_judge_keys_of(tasks)))
    for planned in plan.tasks:
        for variant in planned.variants:
            for config in variant.definition.agent_graders():
                agent = plan.criteria.agents.build(config)
                keys.update(dict.fromkeys(agent.model_keys(planned.loaded.base_dir)))
    return list(keys)


def needs_bridge(plan: Plan) -> bool:
    """Some variant of some task runs a coding agent whose calls go through the bridge: its
    agent, or one a criterion runs to grade (an ``agent_judge``)."""
    return any(
        config.uses_bridge
        for planned in plan.tasks
        for v in planned.variants
        for config in [v.definition.agent, *v.definition.agent_graders()]
    )


def judge_keys(plan: Plan) -> list[ModelKey]:
    """The judge models of ``qa:`` tasks that ask open questions."""
    return list(dict.fromkeys(key for key, _ in qa_judges(plan)))


def qa_judges(plan: Plan, *, checked_only: bool = False) -> list[tuple[ModelKey, QaJudge]]:
    """Each ``qa.judge`` of the ``qa:`` tasks that ask open questions, once, with its
    model's key (``checked_only``: those whose ``qa.judge.check`` is on)."""
    found: dict[tuple[ModelKey, str | None], tuple[ModelKey, QaJudge]] = {}
    for planned in plan.tasks:
        for variant in planned.variants:
            qa = variant.definition.qa
            if qa is None or qa.judge is None or (checked_only and not qa.judge.check):
                continue
            if _asks_open(planned, qa.as_open):
                key = judge_key(qa.judge, planned.loaded.base_dir)
                asset = qa.judge.asset.content_hash if qa.judge.asset else None
                found.setdefault((key, asset), (key, qa.judge))
    return list(found.values())


def _asks_open(planned: PlannedTask, as_open: bool) -> bool:
    """Some selected row of ``planned`` is an open question (so its judge may be needed)."""
    return any(
        t.qa is not None and route(t.qa, as_open=as_open) in OPEN_TYPES
        for t in planned.expansion.row_tasks
    )


class Runner:
    """Runs work items against a started :class:`ModelPool`.

    Args:
        run_dir: the run directory (on the machine that writes it).
        pool: started models.
        criteria: the criterion registry.
        options: jobs, stage, sandbox keeping.
        folders: where a task folder is on this machine (default: where it is in the plan);
            a node of a cluster runs rows from its copy of the task folders.
        remote: rows run on another machine than the run folder's: a kept sandbox is made
            in the temporary folder and packed into the row's files
            (:class:`~assay.orchestration.running.rowfiles.RowFiles`), never written here.
        writer: the run's writer: the row's files go through it, and the variables whose
            values it redacts are withheld from the row's programs (with every other secret
            variable).
        containment: makes the ``bwrap`` sandbox of the rows whose task asks for one.
    """

    def __init__(
        self,
        run_dir: Path,
        pool: ModelPool,
        criteria: CriterionRegistry,
        options: RunOptions,
        *,
        on_retry: OnRetry | None = None,
        bridge: Bridge | None = None,
        folders: Callable[[Path], Path] | None = None,
        remote: bool = False,
        writer: Writer | None = None,
        containment: Containment | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.writer = writer or Writer.shapes_only()
        self.containment = containment or Containment()
        self.pool = pool
        self.criteria = criteria
        self.options = options
        self.on_retry = on_retry
        self.bridge = bridge
        self.folders = folders or (lambda folder: folder)
        self.remote = remote
        self.base_env = dict(os.environ)
        self._stores: dict[str, Store] = {}
        # what a template_dir never copies: private files, this run and the runs beside it
        self.never_copied = (*self.containment.private, run_dir, *runs_beside(run_dir))

    async def execute(self, items: Iterable[WorkItem], on_done: OnDone) -> ExecutionResult:
        """Run every item, ``jobs`` at a time; stop cleanly when cancelled (Ctrl-C).

        A row's files are written by a writer thread, so a slow disk never holds up the
        event loop (and the model calls of the rows still running). A row that finds the
        disk full stops the run from starting more (they would all be lost): the run ends
        as interrupted, ``stopped`` says why. A row whose files are
        being written when the run is cancelled finishes writing and is counted. Each
        result goes to ``on_done`` as its files are written, and is not kept here.
        """
        started = time.perf_counter()
        queue = iter(items)

        jobs = max(1, self.options.jobs)
        slots = asyncio.Semaphore(jobs)
        loop = asyncio.get_running_loop()

        full: list[str] = []  # a row that found the disk full: no other row is started

        async def worker(threads: ThreadPoolExecutor) -> None:
            for item in queue:
                if full:
                    return
                row, finished = await self.run_row(item, slots)
                written = loop.run_in_executor(
                    threads, write_finished, row.directory, finished, self.writer
                )
                try:
                    await asyncio.shield(written)
                except asyncio.CancelledError:
                    on_done(await written)
                    raise
                result = written.result()
                on_done(result)
                if disk_full(result) and not full:
                    full.append(f"the run stopped starting rows: {result.error_message}; the "
                                "finished rows are kept: free space, then `assay run --resume "
                                "RUN_DIR --retry-errors` runs the rest and the rows the full "
                                "disk failed")  # fmt: skip

        # Twice as many workers as slots: while ``jobs`` rows run their agent and criteria,
        # the others resolve their row or write finished files, so no slot waits on
        # bookkeeping (a model endpoint stays as busy as a bare client would keep it).
        with ThreadPoolExecutor(WRITER_THREADS, thread_name_prefix="assay-writer") as threads:
            workers = [asyncio.create_task(worker(threads)) for _ in range(2 * jobs)]
            interrupted = False
            try:
                await asyncio.gather(*workers)
            except asyncio.CancelledError:
                interrupted = True
                await _cancel(workers)
            except BaseException:
                await _cancel(workers)  # a bug in one worker must not leave the others running
                raise
        return ExecutionResult(interrupted or bool(full), time.perf_counter() - started,
                               stopped=full[0] if full else None)  # fmt: skip

    def _env(self, item: WorkItem, task: TaskDefinition, sandbox: Path | None) -> dict[str, str]:
        return row_env(
            self.base_env,
            task,
            variant_id=item.variant_id,
            replicate=item.replicate,
            sandbox=sandbox,
            task_dir=self.folders(item.row_task.source.base_dir),
            hidden=self.writer.withheld,
        )

    async def run_row(
        self, item: WorkItem, slots: asyncio.Semaphore | None = None
    ) -> tuple[_Row, FinishedRow]:
        """Run one work item to its end, without writing its files (see
        :func:`~assay.orchestration.running.rowfiles.write_finished`); never raises for a row's own
        failure.

        ``slots`` bounds the rows whose sandbox, agent and criteria run at once (``-j``);
        resolving the row happens outside a slot, and the row's ``started_at`` and
        ``duration_seconds`` count from when it has one (never the wait for it). What an
        earlier attempt of the row left in its folder is removed first
        (:func:`~assay.orchestration.running.rowfiles.clear_attempt`; on a node of a cluster
        the driver does it as it writes the row's files). A row without a directory (an
        ``llm`` agent graded on its response) takes no slot: its only shared resource is its model
        endpoint, whose limiter keeps at most ``-j`` calls in flight, so the endpoint stays
        busy while other rows are graded.
        """
        row = self._prepare(item)
        if not self.remote and row.directory.exists():  # a row that runs again starts clean
            await asyncio.to_thread(clear_attempt, row.directory)
        gate: contextlib.AbstractAsyncContextManager[Any] = contextlib.nullcontext()
        if slots is not None and needs_directory(row.task):
            gate = slots
        async with gate:
            row.started, row.clock = datetime.now(), time.perf_counter()  # its own time only
            try:
                finished = await self._execute(row)
            except Exception as exc:  # an unforeseen failure ends this row, not the run
                row.note(f"internal error: {exc!r}")
                row.log.extend(f"  {line}" for line in _traceback(exc))
                failed = AgentOutcome(status="error", error=f"internal error: {exc!r}")
                finished = self._finish(row, failed, [], None)
        return row, finished

    def _prepare(self, item: WorkItem) -> _Row:
        task = item.resolve()
        directory = item_dir(
            self.run_dir,
            variant_id=item.variant_id,
            task_id=task.task_id,
            suite_id=task.suite_id,
            row_id=task.row_id,
            replicate=item.replicate,
        )
        return _Row(item, task, directory, qa=item.qa_item())

    async def _execute(self, row: _Row) -> FinishedRow:
        task, directory = row.task, row.directory
        base_dir = self.folders(row.item.row_task.source.base_dir)
        if not needs_directory(task):
            return await self._in_sandbox(row, None, base_dir)
        kept_at = None if self.remote else self._kept_at(directory)
        # A coding agent reads instruction files (CLAUDE.md, AGENTS.md) from every folder
        # above its working directory: its sandbox is made in the temporary folder and copied
        # into the run folder at the end, never placed under the user's project. On a node of
        # a cluster every kept sandbox is made in the temporary folder and packed.
        moved = kept_at if task.agent.isolated_from_project else None
        try:
            sandbox = Sandbox.create(task.sandbox, base_dir=base_dir,
                                     at=None if moved else kept_at,
                                     exclude=self.never_copied)  # fmt: skip
        except SandboxError as exc:
            row.note(f"sandbox: {exc}")
            return self._finish(row, AgentOutcome(status="error", error=str(exc)), [], None)
        # a stream past max_output_mb is written whole into the row folder; on a node of a
        # cluster into a temporary folder whose logs go with the row's files to the driver
        logs = Path(tempfile.mkdtemp(prefix="assay-logs-")) if self.remote else directory
        sandbox.logs = self.writer.logs(logs, task.sandbox.limits.max_log_bytes)
        try:
            sandbox.groups = self.containment.row_groups(task)
            sandbox.jail = self.containment.jail(task, sandbox.root, base_dir)
            if sandbox.jail is not None:
                user = f" as uid {sandbox.jail.uid}" if sandbox.jail.uid is not None else ""
                row.note(f"sandbox: {task.sandbox_driver}{user}")
            finished = await self._in_sandbox(row, sandbox, base_dir, keep_copy=moved,
                                              packed=self.remote and self._keeping())  # fmt: skip
            return await _with_logs(finished, logs) if self.remote else finished
        except SandboxError as exc:
            row.note(f"sandbox: {exc}")
            return self._finish(row, AgentOutcome(status="error", error=str(exc)), [], sandbox)
        finally:
            if self.remote:
                remove_tree(logs)
            try:  # in a worker thread: ending them may wait, other rows go on meanwhile
                await asyncio.to_thread(_end_processes, sandbox)
            finally:
                if sandbox.jail is not None:
                    sandbox.jail.close()
                if sandbox.root.exists() and not self._keeps(sandbox, directory):
                    sandbox.remove()

    def _replay(self, row_task: RowTask) -> AgentOutcome:
        """A trace-backed row graded without an agent: its final response is the stored
        trace's output (a session's: every trace's input and output, in order), its
        transcript the one the trace recorded, and the stored trace becomes the row's
        ``trace.json``."""
        from assay.store.traces import conversation, final_output  # SQLAlchemy: store tasks

        assert row_task.store is not None and row_task.trace_id is not None
        store = self._stores.get(row_task.store.url)
        if store is None:
            store = self._stores[row_task.store.url] = trace_reader(row_task.store.url)
        try:
            trace = store.get_trace(row_task.trace_id)
        except AssayError as exc:
            return AgentOutcome(status="error", error=f"cannot read the row's trace: {exc}")
        session = row_task.store.pointer_kind == "session"  # graded over every trace of it
        try:
            transcript = from_session(trace) if session else from_trace(trace)
        except (ValueError, TypeError):
            transcript = None
        response = (conversation(trace) if session else final_output(trace)) or ""
        return AgentOutcome(response=response, stored_trace=trace, transcript=transcript)

    def close(self) -> None:
        """Release store handles opened for trace-backed rows."""
        for store in self._stores.values():
            store.close()
        self._stores.clear()

    def _keeps(self, sandbox: Sandbox, directory: Path) -> bool:
        return sandbox.root == directory / SANDBOX_DIR

    def _keeping(self) -> bool:
        return self.options.keep_sandboxes or self.options.stage == "execute"

    def _kept_at(self, directory: Path) -> Path | None:
        """Where a kept sandbox lives (made there from the start), or ``None``."""
        if not self._keeping():
            return None
        return directory / SANDBOX_DIR  # an earlier attempt's is gone (clear_attempt)

    async def _in_sandbox(
        self,
        row: _Row,
        sandbox: Sandbox | None,
        base_dir: Path,
        *,
        keep_copy: Path | None = None,
        packed: bool = False,
    ) -> FinishedRow:
        task, item = row.task, row.item
        env = self._env(item, task, sandbox.root if sandbox else None)
        if sandbox is not None:
            failure = await self._pre_run(row, sandbox, env)
            if failure is not None:  # a sandbox kept in place stays, as on a local run
                outcome = AgentOutcome(status="error", error=failure)
                if packed and not task.agent.isolated_from_project:
                    return await self._packed(row, outcome, [], sandbox)
                return self._finish(row, outcome, [], sandbox)
        root_span = Span(name=f"row {task.task_id}", trace_id=new_trace_id())
        root_span.attributes.update(
            {"assay.task_id": task.task_id, "assay.replicate": item.replicate}
        )
        if task.initial_prompt is not None:
            root_span.attributes["assay.prompt"] = task.initial_prompt
        context = AgentContext(
            prompt=task.initial_prompt,
            sandbox=sandbox.root if sandbox else None,
            base_dir=base_dir,
            timeout=task.run_limits.task_timeout,
            max_total_tokens=task.run_limits.max_total_tokens,
            env=env,
            models=self.pool,
            root_span=root_span,
            replicate=item.replicate,
            on_retry=self.on_retry,
            max_usd=task.run_limits.max_usd,
            bridge=self.bridge,
            label=f"{task.task_id}#{item.replicate:02d}",
            row=item.row_task.row,
            max_turns=task.run_limits.max_turns,
            max_tool_calls=task.run_limits.max_tool_calls,
            max_output_bytes=task.sandbox.limits.max_output_bytes,
            logs=sandbox.logs if sandbox is not None else None,
            jail=sandbox.jail if sandbox is not None else None,
            groups=sandbox.groups if sandbox is not None else None,
            monitor=LiveMonitor.of(
                task.success_criteria, kill_switch=task.run_limits.stop_early,
                gate_threshold=task.run_limits.stop_early_gate_threshold,
            ),
        )  # fmt: skip
        groups = sandbox.groups if sandbox is not None else None
        counts = groups.counts() if groups is not None else NOTHING_COUNTED  # after pre_run
        if not task.agent.answers and item.row_task.trace_id is not None:
            outcome = self._replay(item.row_task)
        elif task.dialog is not None:
            deadline = _Deadline()  # moved on by the time per-turn checks take
            outcome = await _bounded(self._dialog(row, context, sandbox, base_dir, deadline),
                                     context, row, deadline=deadline)  # fmt: skip
        else:
            agent = self.criteria.agents.build(task.agent)
            outcome = await _bounded(agent.run(context), context, row)
        if groups is not None:
            outcome = _limit_reached(outcome, groups, before=counts, row=row)
        elif outcome.status not in ("error", "timeout"):  # docker: its launcher said it
            for note in launcher_notes(outcome.stderr_tail):
                row.note(note)
        root_span.end(error=outcome.error)
        outcome.spans.insert(0, root_span)
        if outcome.transcript is not None:
            row.log.extend(f"  | {line}" for line in outcome.transcript.lines())
        row.note(f"agent {task.agent.type}: {outcome.status}" + (
            f" ({outcome.error})" if outcome.error else ""))  # fmt: skip
        results: list[CriterionResult] = []
        if self.options.stage == "run":
            if sandbox is not None and sandbox.jail is not None:  # the agent has ended
                await asyncio.to_thread(sandbox.jail.settle)
            elif sandbox is not None:  # tempdir: what the agent left running ends now
                await asyncio.to_thread(_end_marked, sandbox)
            _ready_for_grading(outcome, sandbox, task, base_dir)
            grading = self._grading(row, outcome, sandbox, context, base_dir)
            if outcome.status != "error":
                results = await grade(list(task.success_criteria), grading, self.criteria)
            else:  # the row stays ERROR; what the agent left is still worth a look
                read_only: list[CriterionSpec] = [
                    c for c in task.success_criteria if c.graded_after_crash
                ]
                row.post_failure = await grade(read_only, grading, self.criteria)
            for result in [*results, *row.post_failure]:
                row.note(f"criterion {result.criterion_type}: score {result.score:.3f} "
                         f"{_first_line(result.error or result.details)}")  # fmt: skip
        if sandbox is not None:
            await self._post_run(row, sandbox, env)
        if sandbox is not None and packed:
            return await self._packed(row, outcome, results, sandbox)
        if sandbox is not None and keep_copy is not None:
            try:
                return self._finish(row, outcome, results, sandbox.copy_to(keep_copy))
            except OSError as exc:  # the row is graded; only its kept copy is incomplete
                row.note(f"the sandbox could not be kept in the run folder: {exc}")
                remove_tree(keep_copy)
        return self._finish(row, outcome, results, sandbox)

    def _grading(
        self, row: _Row, outcome: AgentOutcome, sandbox: Sandbox | None, context: AgentContext,
        base_dir: Path,
    ) -> GradingContext:  # fmt: skip
        """What the row's criteria read: its sandbox, the agent's response and transcript,
        and what a criterion that runs an agent of its own needs (``agent_judge``)."""
        task = row.task
        reference = reference_dir(task, base_dir)
        return GradingContext(
            sandbox=sandbox, response=outcome.response,
            env=grading_env(context.env, task_dir=base_dir, reference=reference,
                            row=row.item.row_task.row),
            transcript=outcome.transcript, row=row.item.row_task.row, models=self.pool,
            services=row_services(qa_item=row.qa, judge=self._judge(task, base_dir),
                                  task=task, reference=reference,
                                  agents=self._agent_host(context)),
        )  # fmt: skip

    async def _dialog(
        self, row: _Row, context: AgentContext, sandbox: Sandbox | None, base_dir: Path,
        deadline: _Deadline,
    ) -> AgentOutcome:  # fmt: skip
        """Dialog mode (:mod:`assay.orchestration.running.dialog`): the agent and a simulated user
        take turns; with ``check_criteria`` every turn, the row is graded after each one.
        ``assay execute`` grades nothing but for ``stop_on_criteria_pass``: there the criteria
        decide when the dialog ends, so the dialog it keeps is the one ``assay run`` has."""
        task, config = row.task, row.task.dialog
        assert config is not None

        async def check(outcome: AgentOutcome) -> tuple[bool, list[CriterionResult]]:
            begun = time.monotonic()
            try:
                _ready_for_grading(outcome, sandbox, task, base_dir)
                if outcome.status == "error":
                    return False, []
                grading = self._grading(row, outcome, sandbox, context, base_dir)
                results = await grade(list(task.success_criteria), grading, self.criteria)
                passed = final_status(outcome.status, results, graded=True) is FinalStatus.SUCCESS
                return passed, results
            finally:
                deadline.extend(time.monotonic() - begun)

        setup = DialogSetup(
            config=config, description=task.description, opener=task.initial_prompt,
            simulator=self.pool.get(simulator_key(config, base_dir)),
            check=check if self.options.stage == "run" or config.stop_on_criteria_pass
            else None,
        )  # fmt: skip
        outcome = await run_dialog(self.criteria.agents.build(task.agent), context, setup)
        if outcome.simulation is not None:
            for turn in outcome.simulation.turns:
                if turn.settings_put_back:
                    row.note(f"dialog: before exchange {turn.exchange}, put back as at the "
                             f"first: {', '.join(turn.settings_put_back)}")  # fmt: skip
            row.note(f"dialog: {outcome.simulation.total_turns} exchange(s), stopped by "
                     f"{outcome.simulation.stop_reason}")  # fmt: skip
        return outcome

    async def _packed(
        self, row: _Row, outcome: AgentOutcome, results: list[CriterionResult], sandbox: Sandbox
    ) -> FinishedRow:
        """The row with its kept sandbox packed, to be unpacked into the run folder by the
        process that writes it."""
        try:
            archive = await asyncio.to_thread(pack, sandbox.root)
        except SandboxError as exc:
            row.note(f"sandbox: {exc}")
            failed = AgentOutcome(status="error", error=str(exc))
            return self._finish(row, failed, [], None)
        return self._finish(row, outcome, results, None, archive=(archive, str(sandbox.root)))

    def _agent_host(self, context: AgentContext) -> AgentHost:
        """What a criterion that runs a coding agent (``agent_judge``) gets of the row."""
        return AgentHost(agents=self.criteria.agents, pool=self.pool, bridge=self.bridge,
                         base_dir=context.base_dir, label=context.label,
                         replicate=context.replicate)  # fmt: skip

    def _judge(self, task: TaskDefinition, base_dir: Path) -> Model | None:
        if task.qa is None or task.qa.judge is None:
            return None
        return self.pool.get(judge_key(task.qa.judge, base_dir))

    async def _pre_run(self, row: _Row, sandbox: Sandbox, env: dict[str, str]) -> str | None:
        for number, command in enumerate(row.task.pre_run, 1):
            result = await self._command(command.command, command.timeout, sandbox, env,
                                         log_name=f"pre_run-{number}")  # fmt: skip
            row.pre_run.append(result)
            row.note(f"pre_run {command.command!r}: {_ended(result)}")
            unstarted = container_not_started(result.exit_code, result.stderr or "")
            if command.fail_on_error and unstarted is not None:
                return unstarted  # no program of the row ran: not the command's failure
            if command.fail_on_error and result.exit_code != 0:
                why = result.error or exit_text(
                    result.exit_code, stderr=result.stderr or "", limits=sandbox.jail is not None
                )
                said = error_tail(result.stderr or result.stdout)
                return f"pre_run command {command.command!r} {why}" + (f": {said}" if said else "")
        return None

    async def _post_run(self, row: _Row, sandbox: Sandbox, env: dict[str, str]) -> None:
        for number, command in enumerate(row.task.post_run, 1):
            result = await self._command(command.command, command.timeout, sandbox, env,
                                         log_name=f"post_run-{number}")  # fmt: skip
            row.post_run.append(result)
            row.note(f"post_run {command.command!r}: {_ended(result)}")

    @staticmethod
    async def _command(
        command: str, timeout: float, sandbox: Sandbox, env: dict[str, str], *, log_name: str
    ) -> CommandResult:
        result = await sandbox.run(command, env=env, timeout=timeout, log_name=log_name)
        return CommandResult(
            command=command,
            exit_code=result.exit_code,
            stdout=tail(result.shown_stdout),
            stderr=tail(result.stderr),
            duration_seconds=result.seconds,
            error=f"timed out after {timeout:g} s" if result.timed_out else None,
            output_logs=[path.name for path in result.logs],
        )

    def _finish(
        self,
        row: _Row,
        outcome: AgentOutcome,
        results: list[CriterionResult],
        sandbox: Sandbox | None,
        *,
        archive: tuple[bytes, str] | None = None,
    ) -> FinishedRow:
        task, item = row.task, row.item
        status = final_status(outcome.status, results, graded=self.options.stage == "run",
                              early=outcome.early_stop)  # fmt: skip
        kept = archive is not None or (sandbox is not None and self._keeps(sandbox, row.directory))
        result = EvaluationResult(
            task_id=task.task_id,
            suite_id=task.suite_id,
            row_id=task.row_id,
            row_index=item.row_task.row_index,
            replicate_index=item.replicate,
            task_description=task.description,
            variant_id=item.variant_id,
            agent_type=task.agent.type,
            model_used=outcome.model_used,
            started_at=row.started.isoformat(),
            completed_at=datetime.now().isoformat(),
            duration_seconds=time.perf_counter() - row.clock,
            final_status=status,
            weighted_score=weighted_score(results) if results else None,
            success_criteria_results=results,
            post_failure_criteria_results=row.post_failure,
            error_message=_error_message(status, outcome, results),
            agent=AgentRecord(
                exit_code=outcome.exit_code,
                timed_out=outcome.status == "timeout",
                stderr_tail=outcome.stderr_tail,
                model_calls=outcome.model_calls,
                retries=len(outcome.attempts),
                attempts=[AttemptRecord(**vars(a)) for a in outcome.attempts],
                cached=outcome.cached,
                response_chars=len(outcome.response or ""),
                output_dropped_bytes=outcome.output_dropped_bytes,
                output_logs=outcome.output_logs,
                duration_seconds=outcome.seconds,
                stopped_early=outcome.error if outcome.status in STOPPED_EARLY | CAPS else None,
                early_stop=outcome.early_stop,
            ),
            total_token_usage=_usage(outcome),
            cost_usd=outcome.cost_usd,
            transcript=outcome.transcript.summary() if outcome.transcript is not None else None,
            pre_run_results=row.pre_run,
            post_run_results=row.post_run,
            sandbox_path=(
                (row.directory / SANDBOX_DIR).relative_to(self.run_dir).as_posix() if kept else None
            ),
            row=item.row_task.row,
            row_hash=row_hash(item.row_task.row) if item.row_task.row is not None else None,
            qa_record=_qa_record(row.qa, outcome),
            simulation=outcome.simulation,
            task_config=TaskConfigRecord(
                resolved=task.model_dump(mode="json", exclude_none=True),
                source_file=item.row_task.source.display,
                task_dir=str(item.row_task.source.base_dir),
            ),
        )
        return FinishedRow(result, outcome, row.log, archive)


async def _cancel(workers: list[asyncio.Task[None]]) -> None:
    for task in workers:
        task.cancel()
    await asyncio.gather(*workers, return_exceptions=True)


def _error_message(
    status: FinalStatus, outcome: AgentOutcome, results: list[CriterionResult]
) -> str | None:
    """Why a row did not succeed: the agent's error, else a grader's failure."""
    if status is FinalStatus.SUCCESS:
        return None
    return outcome.error or grading_message(status, results)


def _ended(result: CommandResult) -> str:
    """How a ``pre_run``/``post_run`` command ended, for the row's log: ``exit 0``, or its
    error (``timed out after 3 s``) when it has no exit code."""
    if result.exit_code is None:
        return result.error or "no exit code"
    return f"exit {result.exit_code}"


async def _with_logs(finished: FinishedRow, folder: Path) -> FinishedRow:
    """``finished`` with the output logs its programs wrote into ``folder`` packed, for the
    process that writes the run folder (:func:`~assay.orchestration.running.rowfiles.
    write_logs`); a log that cannot be packed is named in the row's log instead."""
    if not any(folder.iterdir()):
        return finished
    try:
        return replace(finished, logs=await asyncio.to_thread(pack, folder))
    except SandboxError as exc:
        return replace(finished, log=[*finished.log, f"output logs: {exc}"])


def _qa_record(item: QaItem | None, outcome: AgentOutcome) -> dict[str, Any] | None:
    """The ``prediction.jsonl`` record of a QA row: the item and what the model answered
    (no content and the error when the agent failed)."""
    if item is None:
        return None
    failed = outcome.status == "error"
    record = PredictionRecord.from_item(
        item,
        content=None if failed else outcome.response,
        model=outcome.model_used,
        error=(outcome.error or "the agent failed") if failed else None,
    )
    return record.model_dump(mode="json")


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def _usage(outcome: AgentOutcome) -> TokenUsage | None:
    if outcome.usage is None:
        return None
    usage = outcome.usage
    return TokenUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        reasoning_tokens=usage.reasoning_tokens,
    )


def _end_processes(sandbox: Sandbox) -> None:
    """End what the row's programs left running: every process in its control groups,
    wherever it went (or, without groups, what its subreaper recorded and what is below it),
    and (outside a jail, whose processes end with it) every process found by the row's
    environment marker or working folder, which also finds one that left the groups."""
    if sandbox.groups is not None:
        sandbox.groups.close()
    if sandbox.jail is None:
        _end_marked(sandbox)


def _end_marked(sandbox: Sandbox) -> None:
    """End every process found by a ``tempdir`` row's environment marker or working folder:
    also once its agent has ended, before the criteria run, so what the agent left running
    (``nohup … &``) cannot change the files they grade, or answer for them (in ``bwrap``
    and ``docker`` the agent's processes end with its sandbox or container)."""
    end_marked_processes(f"ASSAY_SANDBOX={sandbox.root.absolute()}", inside=sandbox.root)


def _traceback(exc: BaseException) -> list[str]:
    """``exc``'s traceback, one line each (the row's log keeps where a bug is)."""
    return "".join(traceback.format_exception(exc)).rstrip("\n").splitlines()


def grace_seconds(timeout: float) -> float:
    """How long past ``run_limits.task_timeout`` an agent (or a dialog) may take to return
    before the row ends it: as long as the timeout itself, at least 15 s and at most 60 s
    (the built-in agents stop themselves at the timeout and then clean up; an agent of
    one's own that never returns must not hold the run)."""
    return min(60.0, max(15.0, timeout))


@dataclass
class _Deadline:
    """The bound :func:`_bounded` set on an agent's work, moved on while a dialog's criteria
    grade it between turns (their time is not the agent's)."""

    timer: asyncio.Timeout | None = None

    def extend(self, seconds: float) -> None:
        when = self.timer.when() if self.timer is not None else None
        if self.timer is not None and when is not None:
            self.timer.reschedule(when + seconds)


async def _bounded(
    work: Awaitable[AgentOutcome], context: AgentContext, row: _Row, *,
    deadline: _Deadline | None = None,
) -> AgentOutcome:  # fmt: skip
    """``work``'s outcome; ``timeout`` when it has not returned :func:`grace_seconds`
    after ``context.timeout`` (it is cancelled; ``deadline`` may move that on); ``error``
    naming the agent type when it raised (an agent of one's own: its traceback goes to the
    row's log), so the row is graded as after a crash; the sandbox's own error (a
    :class:`~assay.errors.SandboxError`: it could not run the agent's program) as it is."""
    grace = grace_seconds(context.timeout)
    timer = asyncio.timeout(context.timeout + grace)
    if deadline is not None:
        deadline.timer = timer
    try:
        async with timer:
            outcome: object = await work
    except SandboxError as exc:  # the row's sandbox could not run it: said as such
        row.note(f"sandbox: {exc}")
        return AgentOutcome(status="error", error=str(exc))
    except Exception as exc:
        if not (isinstance(exc, TimeoutError) and timer.expired()):
            row.note(f"internal error in agent {row.task.agent.type}:")
            row.log.extend(f"  {line}" for line in _traceback(exc))
            return AgentOutcome(status="error", error=f"internal error in agent "
                                f"{row.task.agent.type}: {exc!r}")  # fmt: skip
        return AgentOutcome(status="timeout", error=(
            f"the agent did not return within run_limits.task_timeout ({context.timeout:g} s) "
            f"and {grace:g} s more: ended"))  # fmt: skip
    return _checked_outcome(outcome, row.task.agent.type)


def _checked_outcome(outcome: object, agent: str) -> AgentOutcome:
    """``outcome`` as the row can record it: what is not an :class:`AgentOutcome`, or one
    whose response is not text, is the agent's error, named (an agent of one's own); an
    error without a message gets one."""
    if not isinstance(outcome, AgentOutcome):
        return AgentOutcome(status="error", error=f"internal error in agent {agent}: run() "
                            f"returned {type(outcome).__name__}, not an AgentOutcome")  # fmt: skip
    if outcome.response is not None and not isinstance(outcome.response, str):
        return replace(outcome, status="error", response=None, error=(
            f"internal error in agent {agent}: its response is "
            f"{type(outcome.response).__name__}, not text (str) or None"))  # fmt: skip
    if outcome.status == "error" and not outcome.error:
        return replace(outcome, error=f"agent {agent} ended with an error and no message")
    return outcome


def _limit_reached(
    outcome: AgentOutcome, groups: RowProcesses, *, before: LimitCounts, row: _Row
) -> AgentOutcome:
    """An agent that failed after the row reached a limit while it ran (the kernel killed
    one of its processes for memory, or refused it a process at ``max_pids``, more often
    than the counts ``before``) says so, naming the ``sandbox.limits`` field (as the docker
    driver does), first in its error and as the transcript's last event. An agent that went
    on (a coding agent whose command was killed) keeps its status; the row's log says it."""
    note = groups.limit_note(since=before)
    if note is not None and outcome.status not in ("error", "timeout"):
        row.note(f"{note}; the agent went on")
        return outcome
    if note is None:
        return outcome
    if outcome.transcript is not None:  # the row's log shows it where the agent's error is
        outcome.transcript.add(TranscriptEvent("error", time.time_ns(), text=note))
    return replace(outcome, status="error",
                   error=f"{note}; {outcome.error}" if outcome.error else note)  # fmt: skip


def _ready_for_grading(
    outcome: AgentOutcome, sandbox: Sandbox | None, task: TaskDefinition, base_dir: Path
) -> None:
    """The row's sandbox folder there (an agent that removed it leaves an empty one: its
    criteria find nothing and score 0.0, as on docker), and the task's ``record_cli`` shims
    and ``mock_path_dirs`` as the task wrote them before criteria run
    (:func:`~assay.sandbox.tempdir.restore_stand_ins`); when that fails the row is an
    error, its criteria's commands never run with what the agent left there."""
    if sandbox is None:
        return
    try:
        own_folder(sandbox.root)  # the agent may have removed (or replaced) its folder
    except OSError as exc:
        outcome.status = "error"
        outcome.error = f"the agent removed its sandbox folder, and it cannot be made: {exc}"
        return
    if not (task.sandbox.record_cli or task.sandbox.mock_path_dirs):
        return
    try:
        restore_stand_ins(sandbox.root, task.sandbox, base_dir)
    except (OSError, ValueError) as exc:
        outcome.status = "error"
        outcome.error = (f"cannot write the task's record_cli shims and mock_path_dirs again "
                         f"before grading: {exc}")  # fmt: skip
