"""The life cycle of a run, new or resumed, up to its finished rows.

A new run (:meth:`RunSession.start`): make the run directory → write ``plan.json``. A resumed
run (:meth:`RunSession.resume`): rebuild the plan from ``plan.json`` with the recorded rows
and store versions, and keep every row whose ``task.json`` is complete (with
``retry_errors``, not those that ended ``ERROR``). Then :meth:`RunSession.execute` (or
:func:`execute_session` from synchronous code): start the run's services
(:func:`assay.orchestration.running.services.run_services`) → sanity-check the judges → run every
pending work item (``task.json`` written as each row ends) → stop the services. Ctrl-C or
SIGTERM ends the run with its finished rows; the reports are written by
:mod:`assay.reports.session` from the :class:`SessionOutcome`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TextIO

from assay.errors import AssayError, UsageError
from assay.metrics.clustered import preload
from assay.orchestration.planning.datacheck import same_data
from assay.orchestration.planning.plan import Plan, PlanOptions, WorkItem, build_plan
from assay.orchestration.planning.resume_check import (
    check_resume_options,
    check_same_experiment,
    check_same_tasks,
)
from assay.orchestration.running.executors import (
    ExecutionContext,
    ExecutorChoice,
    PendingItems,
    make_executor,
)
from assay.orchestration.running.progress import NoProgress, Progress, RedactedProgress
from assay.orchestration.running.record import (
    judge_uses,
    mock_scripts,
    plan_record,
    plan_sources,
    replayed_options,
    save_built_tasks,
    write_selection,
)
from assay.orchestration.running.rowfiles import unwritten
from assay.orchestration.running.rundir import (
    create_run_dir,
    item_dir,
    latest_target,
    point_latest,
    withdraw_run_dir,
)
from assay.orchestration.running.runfiles import finished_mask, kept_results
from assay.orchestration.running.runlock import RunLock, lock_run_dir
from assay.orchestration.running.runner import RunOptions
from assay.orchestration.running.services import ModelSettings
from assay.orchestration.running.signals import stop_on_signals
from assay.orchestration.running.stopping import Stopper, StoppingItems, write_stopping
from assay.providers.pool import ProviderRegistry
from assay.providers.pricing import PriceTable
from assay.results.io import check_output_file, check_output_folder
from assay.results.output import console, joined_output
from assay.results.plan_record import PLAN_FILE, PlanRecord, log_session, read_plan, write_plan
from assay.results.selection_file import SELECTION_FILE
from assay.results.task_result import EvaluationResult
from assay.sandbox.process import pidfd_child_watcher

Warn = Callable[[str], None]


@dataclass
class RunRequest:
    """Everything running a plan needs besides the plan.

    Attributes:
        runs_root: the folder that receives ``<timestamp>/`` (``--run-dir``).
        options: ``jobs``, stage, whether sandboxes are kept.
        progress: told of every finished row and retried call (default: shows nothing).
        redact_progress: ``progress`` is the caller's own object: each row it is told of has
            the run's secrets redacted first (assay's own display shows no row's text;
            redacting every row costs about 2 ms). A retried call's error is redacted for
            every display.
        junit_path: also write JUnit XML here.
        command: the command line recorded in ``run.json``.
        models: retries, timeout, response cache.
        registry: the model providers (default: local, openai, anthropic, mock).
        retry_errors: a resumed run runs its ``ERROR`` rows again.
        rerun_changed: a resumed run runs again the rows whose dataset content changed
            (:func:`assay.orchestration.planning.datacheck.same_data`), instead of refusing.
        jobs_given: ``options.jobs`` was asked for; a resumed run without it runs as many
            row-tasks at once as the run recorded.
        on_warning: called with each warning found while running (a judge that fails its
            sanity check), as it is found; they are also recorded in ``run.json``.
        stop_on_sigterm: SIGTERM, and SIGINT when the process started with it ignored (in
            the background from a script or CI), stop the run like Ctrl-C
            (:mod:`assay.orchestration.running.signals`; the command line sets it; a library leaves
            the process's signals alone).
        executor: which executor runs the rows (``local``, ``ray`` and its cluster) and the
            run-wide limits of each model server.
        console: where the run prints besides ``progress`` (the model bridge's server
            errors); it redacts the run's secrets while the run runs
            (:func:`assay.results.output.console`; give ``progress`` the same stream).
    """

    runs_root: Path
    options: RunOptions = field(default_factory=RunOptions)
    progress: Progress = field(default_factory=NoProgress)
    redact_progress: bool = False
    junit_path: Path | None = None
    command: list[str] | None = None
    models: ModelSettings = field(default_factory=ModelSettings)
    registry: ProviderRegistry | None = None
    retry_errors: bool = False
    rerun_changed: bool = False
    jobs_given: bool = True
    on_warning: Warn | None = None
    stop_on_sigterm: bool = False
    executor: ExecutorChoice = field(default_factory=ExecutorChoice)
    console: TextIO = field(default_factory=console)


@dataclass
class SessionOutcome:
    """How one session of a run ended: whether it was interrupted, when, and how many rows
    it finished (the reports read every finished row, kept and new, from the run folder;
    ``unwritten`` are the rows whose files could not be written at all, reported from
    memory)."""

    interrupted: bool
    ended: datetime
    finished: int = 0
    unwritten: list[EvaluationResult] = field(default_factory=list)


@dataclass
class RunSession:
    """One invocation on a run directory: a new run, or a resumed one.

    Attributes:
        plan: the work to do.
        record: its ``plan.json``.
        run_dir: the run directory.
        request: how to run it.
        started: when this session started.
        items: the plan's work items.
        kept: ``1`` for each item finished before (a resumed run), not run again.
        prices: the price table.
    """

    plan: Plan
    record: PlanRecord
    run_dir: Path
    request: RunRequest
    started: datetime
    items: Sequence[WorkItem]
    kept: bytearray
    prices: PriceTable
    unwritten: list[EvaluationResult] = field(default_factory=list)
    lock: RunLock | None = None
    previous_latest: str | None = None
    """What ``latest`` named before this new run took it (``None`` for a resumed run, or
    no earlier run): given back when the run fails before any row ran."""
    fresh: bool = False
    rows_done: int = 0
    """Rows this session finished so far (their files written)."""

    @classmethod
    def start(cls, plan: Plan, options: PlanOptions, request: RunRequest) -> RunSession:
        """A new run of ``plan``: its directory (``runs_root/latest`` pointing at it) and
        ``plan.json``."""
        started = datetime.now()
        previous = latest_target(request.runs_root)
        run_dir = create_run_dir(request.runs_root, now=started)
        lock = lock_run_dir(run_dir, command=request.command, on_warning=request.on_warning)
        saved = save_built_tasks(run_dir, plan)
        record = plan_record(plan, options, request.options, saved=saved,
                             rows_file=SELECTION_FILE)  # fmt: skip
        write_selection(run_dir, plan)
        write_plan(run_dir, record, writer=plan.writer)
        items = plan.work_items()
        return cls(plan, record, run_dir, request, started, items, bytearray(len(items)),
                   options.prices, lock=lock, previous_latest=previous, fresh=True)  # fmt: skip

    @classmethod
    def resume(
        cls,
        run_dir: Path,
        request: RunRequest,
        *,
        prices: PriceTable | None = None,
        store_url: str | None = None,
        given: PlanOptions | None = None,
    ) -> RunSession:
        """The unfinished part of the run in ``run_dir``; ``request.options`` takes the
        recorded stage (and keeps sandboxes when the run did, and its ``jobs`` unless
        ``request.jobs_given``).

        Raises:
            UsageError: ``run_dir`` has no ``plan.json``, or a store version's content
                changed, or rows' content changed (without ``request.rerun_changed``).
            UserError: a task file or dataset changed so that the recorded rows are gone.
        UsageError: another process writes into ``run_dir`` (:func:`lock_run_dir`), or
            ``given`` (the options passed to the resume) differs from the recorded ones
            (:func:`check_resume_options`).
        """
        started = datetime.now()
        if not (run_dir / PLAN_FILE).is_file():
            raise UsageError(
                f"{run_dir} has no {PLAN_FILE}: it is not a run directory assay can resume"
            )
        lock = lock_run_dir(run_dir, command=request.command, on_warning=request.on_warning)
        try:
            return cls._resumed(run_dir, request, started, lock, prices=prices,
                                store_url=store_url, given=given)  # fmt: skip
        except BaseException:
            lock.release()
            raise

    @classmethod
    def _resumed(
        cls,
        run_dir: Path,
        request: RunRequest,
        started: datetime,
        lock: RunLock,
        *,
        prices: PriceTable | None,
        store_url: str | None,
        given: PlanOptions | None,
    ) -> RunSession:
        record = read_plan(run_dir)
        if given is not None:
            check_resume_options(run_dir, record.options, given)
        options = replayed_options(
            record,
            prices=prices,
            store_url=store_url,
            criteria=given.criteria if given is not None else None,
        )
        plan = build_plan(plan_sources(record, criteria=options.criteria), options,
                          request.registry)  # fmt: skip
        _check_same_store_versions(plan, record)
        _check_same_judges(plan, record)
        check_same_tasks(plan, record.tasks)
        check_same_experiment(plan, record.options.experiment_hash)
        request.options.stage = record.stage
        request.options.keep_sandboxes = request.options.keep_sandboxes or record.keep_sandboxes
        if not request.jobs_given:
            request.options.jobs = record.jobs
        items = plan.work_items()
        damaged: list[Path] = []
        kept = finished_mask(run_dir, items, retry_errors=request.retry_errors, damaged=damaged)
        if damaged and request.on_warning is not None:
            shown = ", ".join(str(p.relative_to(run_dir)) for p in damaged[:3])
            request.on_warning(f"{len(damaged)} row(s) whose task.json cannot be read run "
                               f"again ({shown}{', …' if len(damaged) > 3 else ''}): cut short "
                               "by a kill, or damaged since")  # fmt: skip
        drifted, record = same_data(run_dir, plan, record, kept_results(run_dir, items, kept),
                                    rerun_changed=request.rerun_changed)  # fmt: skip
        for position, item in enumerate(items):
            if (item.row_task.suite_id, item.row_task.row_id) in drifted:
                kept[position] = 0  # its content changed: it runs again
        if any(kept):  # rows the old scripts answered stay: the new ones would mix in
            _check_same_scripts(plan, record)
        point_latest(run_dir.parent, run_dir)
        return cls(plan, record, run_dir, request, started, items, kept, options.prices,
                   lock=lock)  # fmt: skip

    def release(self) -> None:
        """Free the run folder's write lock (after the reports are written); idempotent."""
        if self.lock is not None:
            self.lock.release()

    def pending(self) -> PendingItems:
        """The work items this session runs: every one not kept (made when read)."""
        return PendingItems(self.items, self.kept)

    async def execute(self) -> SessionOutcome:
        """Run every pending item inside the run's services (see the module docstring);
        never raises for a row's own failure.

        Raises:
            ModelError, UserError: a model could not start (no row ran).
        """
        with (
            stop_on_signals(enabled=self.request.stop_on_sigterm),
            # progress lines, warnings, bridge errors; sys's own streams are not replaced
            joined_output(self.plan.writer, [self.request.console]),
        ):
            try:
                finished, interrupted = await self._run_rows()
            except BaseException as exc:
                self.release()  # no reports follow: the folder is free again
                if self.fresh and not self.rows_done and isinstance(exc, AssayError):
                    # refused before any row ran (a Ray cluster that does not answer, a
                    # model that cannot start): no folder without run.json is left behind
                    withdraw_run_dir(self.run_dir, previous=self.previous_latest)
                raise
        return self.finish(finished, interrupted=interrupted)

    async def _run_rows(self) -> tuple[int, bool]:
        request, items = self.request, self.pending()
        stopper = Stopper.of(self.plan, self.items, self.kept)
        if stopper is not None:
            stopper.replay(kept_results(self.run_dir, self.items, self.kept))
            items = StoppingItems(items.items, items.kept, stopper)
        log_session(self.run_dir, "start", self.started, writer=self.plan.writer)
        executor = make_executor(request.executor)
        # a retried call's error redacted before any display styles or wraps it (a terminal
        # bar colours `key=value` and folds long lines: the console would see the pieces)
        progress = RedactedProgress(request.progress, self.plan.writer,
                                    rows=request.redact_progress)  # fmt: skip
        context = ExecutionContext(
            plan=self.plan, run_dir=self.run_dir, options=request.options,
            models=request.models, prices=self.prices, registry=request.registry,
            progress=progress, already_done=sum(self.kept),
            on_warning=request.on_warning, limits=request.executor.limits,
            console=request.console,
        )  # fmt: skip
        self.rows_done = 0

        def done(result: EvaluationResult) -> None:  # its files are written: nothing kept
            self.rows_done += 1
            if self.rows_done == 1:  # the reports' interval functions, loaded while the
                preload()  # other rows run (not as the first rows start: that is busy)
            if result.error_message and unwritten(result, self._directory(result)):
                self.unwritten.append(result)
            progress.advance(result)
            if stopper is not None:
                stopper.observe(result)

        with pidfd_child_watcher():
            execution = await executor.execute(context, items, done)
        if stopper is not None:
            write_stopping(self.run_dir, stopper, self.plan.writer)
        self.plan.warnings.extend(execution.warnings)
        return self.rows_done, execution.interrupted

    def _directory(self, result: EvaluationResult) -> Path:
        return item_dir(self.run_dir, variant_id=result.variant_id, task_id=result.task_id,
                        suite_id=result.suite_id, row_id=result.row_id,
                        replicate=result.replicate_index)  # fmt: skip

    def finish(self, finished: int, *, interrupted: bool) -> SessionOutcome:
        """End the session: log it (the reports read every row whose ``task.json`` reached
        the disk, kept and new)."""
        ended = datetime.now()
        log_session(self.run_dir, "end", ended, writer=self.plan.writer)
        return SessionOutcome(interrupted, ended, finished, self.unwritten)


def execute_session(session: RunSession) -> SessionOutcome:
    """:meth:`RunSession.execute` from synchronous code (its own event loop); Ctrl-C ends
    the session with its finished rows.

    Raises:
        ModelError, UserError: as :meth:`RunSession.execute`.
    """
    try:
        return asyncio.run(session.execute())
    except KeyboardInterrupt:
        return session.finish(0, interrupted=True)


def _check_same_judges(plan: Plan, record: PlanRecord) -> None:
    """A resumed run must grade with the judges it started with.

    Raises:
        UsageError: a judge's content hash differs (a judge file edited since).
    """
    now = judge_uses(plan)
    for task_id, uses in record.judges.items():
        current = {use.position: use for use in now.get(task_id, [])}
        for use in uses:
            found = current.get(use.position)
            if found is not None and found.content_hash != use.content_hash:
                raise UsageError(
                    f"judge {use.name} ({use.source}) of task {task_id} has content hash "
                    f"{found.content_hash[:12]} now, but the run started with "
                    f"{use.content_hash[:12]}: its rows would be graded by two judges",
                    hint="restore the judge as it was, or start a new run",
                )


def _check_same_scripts(plan: Plan, record: PlanRecord) -> None:
    """A resumed run that keeps rows must be answered by the ``mock/`` scripts it started
    with (one whose every row runs again, ``--retry-errors`` after an outage, may not).

    Raises:
        UsageError: a script's content differs (edited since), naming it.
    """
    now = mock_scripts(plan)
    for path, started in record.scripts.items():
        found = now.get(path)
        if found is not None and found != started:
            raise UsageError(
                f"mock script {path} has content hash {found[:12]} now, but the run started "
                f"with {started[:12]}: its rows would be answered by two scripts",
                hint="restore the script as it was, or start a new run",
            )


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


def check_outputs(runs_root: Path, junit: Path | None) -> None:
    """Refuse output paths that cannot be written, before any row runs.

    Both are written by creating a file in their folder and renaming it, so each folder is
    probed with a temporary file.

    Raises:
        UsageError: ``--run-dir`` is a file, cannot be created or is not writable;
            ``--junit-xml`` is a directory, or its folder cannot be created or written.
    """
    check_output_folder(runs_root, "--run-dir")
    if junit is not None:
        check_output_file(junit, "--junit-xml")
