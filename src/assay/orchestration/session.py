"""The life cycle of a run, new or resumed, up to its finished rows.

A new run (:meth:`RunSession.start`): make the run directory → write ``plan.json``. A resumed
run (:meth:`RunSession.resume`): rebuild the plan from ``plan.json`` with the recorded rows
and store versions, and keep every row whose ``task.json`` is complete (with
``retry_errors``, not those that ended ``ERROR``). Then :meth:`RunSession.execute` (or
:func:`execute_session` from synchronous code): start the run's services
(:func:`assay.orchestration.services.run_services`) → sanity-check the judges → run every
pending work item (``task.json`` written as each row ends) → stop the services. Ctrl-C or
SIGTERM ends the run with its finished rows; the reports are written by
:mod:`assay.reports.session` from the :class:`SessionOutcome`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from assay.criteria.registry import default_criteria
from assay.errors import UsageError
from assay.orchestration.containment import Containment, private_paths, uses_bwrap
from assay.orchestration.datacheck import same_data
from assay.orchestration.plan import Plan, PlanOptions, WorkItem, build_plan
from assay.orchestration.progress import NoProgress, Progress
from assay.orchestration.record import (
    judge_uses,
    plan_record,
    plan_sources,
    replayed_options,
    save_built_tasks,
)
from assay.orchestration.rundir import create_run_dir, point_latest
from assay.orchestration.runfiles import finished_results
from assay.orchestration.runner import (
    Runner,
    RunOptions,
    judge_keys,
    model_keys,
    needs_bridge,
)
from assay.orchestration.services import ModelSettings, build_pool, run_services
from assay.orchestration.signals import stop_on_signals
from assay.providers.pool import ModelPool, ProviderRegistry
from assay.providers.pricing import PriceTable
from assay.qa import check_judge
from assay.results.io import read_json
from assay.results.output import redacted_output
from assay.results.plan_record import PLAN_FILE, PlanRecord, log_session, write_plan
from assay.results.task_result import EvaluationResult
from assay.sandbox.bwrap import BridgeLink
from assay.sandbox.process import pidfd_child_watcher

if TYPE_CHECKING:
    from assay.bridge import Bridge

Warn = Callable[[str], None]


@dataclass
class RunRequest:
    """Everything running a plan needs besides the plan.

    Attributes:
        runs_root: the folder that receives ``<timestamp>/`` (``--run-dir``).
        options: ``jobs``, stage, whether sandboxes are kept.
        progress: told of every finished row and retried call (default: shows nothing).
        junit_path: also write JUnit XML here.
        command: the command line recorded in ``run.json``.
        models: retries, timeout, response cache.
        registry: the model providers (default: local, openai, anthropic, mock).
        retry_errors: a resumed run runs its ``ERROR`` rows again.
        rerun_changed: a resumed run runs again the rows whose dataset content changed
            (:func:`assay.orchestration.datacheck.same_data`), instead of refusing.
        on_warning: called with each warning found while running (a judge that fails its
            sanity check), as it is found; they are also recorded in ``run.json``.
        stop_on_sigterm: SIGTERM, and SIGINT when the process started with it ignored (in
            the background from a script or CI), stop the run like Ctrl-C
            (:mod:`assay.orchestration.signals`; the command line sets it; a library leaves
            the process's signals alone).
    """

    runs_root: Path
    options: RunOptions = field(default_factory=RunOptions)
    progress: Progress = field(default_factory=NoProgress)
    junit_path: Path | None = None
    command: list[str] | None = None
    models: ModelSettings = field(default_factory=ModelSettings)
    registry: ProviderRegistry | None = None
    retry_errors: bool = False
    rerun_changed: bool = False
    on_warning: Warn | None = None
    stop_on_sigterm: bool = False


@dataclass
class SessionOutcome:
    """How one session of a run ended: every finished row of the run (kept and new), whether
    it was interrupted, and when it ended."""

    results: list[EvaluationResult]
    interrupted: bool
    ended: datetime


@dataclass
class RunSession:
    """One invocation on a run directory: a new run, or a resumed one.

    Attributes:
        plan: the work to do.
        record: its ``plan.json``.
        run_dir: the run directory.
        request: how to run it.
        started: when this session started.
        kept: the rows finished before (a resumed run), not run again.
        prices: the price table.
    """

    plan: Plan
    record: PlanRecord
    run_dir: Path
    request: RunRequest
    started: datetime
    kept: list[EvaluationResult]
    prices: PriceTable

    @classmethod
    def start(cls, plan: Plan, options: PlanOptions, request: RunRequest) -> RunSession:
        """A new run of ``plan``: its directory (``runs_root/latest`` pointing at it) and
        ``plan.json``."""
        started = datetime.now()
        run_dir = create_run_dir(request.runs_root, now=started)
        saved = save_built_tasks(run_dir, plan)
        record = plan_record(plan, options, request.options, saved=saved)
        write_plan(run_dir, record, redactor=plan.redactor)
        return cls(plan, record, run_dir, request, started, [], options.prices)

    @classmethod
    def resume(
        cls,
        run_dir: Path,
        request: RunRequest,
        *,
        prices: PriceTable | None = None,
        store_url: str | None = None,
    ) -> RunSession:
        """The unfinished part of the run in ``run_dir``; ``request.options`` takes the
        recorded stage (and keeps sandboxes when the run did).

        Raises:
            UsageError: ``run_dir`` has no ``plan.json``, or a store version's content
                changed, or rows' content changed (without ``request.rerun_changed``).
            UserError: a task file or dataset changed so that the recorded rows are gone.
        """
        started = datetime.now()
        if not (run_dir / PLAN_FILE).is_file():
            raise UsageError(
                f"{run_dir} has no {PLAN_FILE}: it is not a run directory assay can resume"
            )
        record = PlanRecord.model_validate(read_json(run_dir / PLAN_FILE))
        options = replayed_options(record, prices=prices, store_url=store_url)
        plan = build_plan(plan_sources(record), options, request.registry)
        _check_same_store_versions(plan, record)
        _check_same_judges(plan, record)
        request.options.stage = record.stage
        request.options.keep_sandboxes = request.options.keep_sandboxes or record.keep_sandboxes
        kept = finished_results(run_dir, plan.work_items(), retry_errors=request.retry_errors)
        kept, record = same_data(run_dir, plan, record, kept, rerun_changed=request.rerun_changed)
        point_latest(run_dir.parent, run_dir)
        return cls(plan, record, run_dir, request, started, kept, options.prices)

    def pending(self) -> list[WorkItem]:
        """The work items this session runs: every one not kept."""
        done = {(r.variant_id, r.task_id, r.replicate_index) for r in self.kept}
        return [
            i for i in self.plan.work_items()
            if (i.variant_id, i.row_task.task_id, i.replicate) not in done
        ]  # fmt: skip

    async def execute(self) -> SessionOutcome:
        """Run every pending item inside the run's services (see the module docstring);
        never raises for a row's own failure.

        Raises:
            ModelError, UserError: a model could not start (no row ran).
        """
        with (
            stop_on_signals(enabled=self.request.stop_on_sigterm),
            redacted_output(self.plan.redactor),  # progress lines, warnings, bridge errors
        ):
            results, interrupted = await self._run_rows()
        return self.finish(results, interrupted=interrupted)

    async def _run_rows(self) -> tuple[list[EvaluationResult | None], bool]:
        request, items = self.request, self.pending()
        redactor = self.plan.redactor
        log_session(self.run_dir, "start", self.started, redactor=redactor)
        pool = build_pool(request.models, jobs=request.options.jobs, prices=self.prices,
                          registry=request.registry, redactor=redactor)  # fmt: skip
        contained = uses_bwrap(self.plan.definitions)
        services_of_run = run_services(pool, model_keys(self.plan), bridge=needs_bridge(self.plan),
                                       bridge_socket=contained,
                                       on_retry=request.progress.retry)  # fmt: skip
        with pidfd_child_watcher():
            async with services_of_run as services:
                containment = self._containment(services.bridge, pool)
                runner = Runner(self.run_dir, pool, default_criteria(), request.options,
                                on_retry=request.progress.retry, bridge=services.bridge,
                                redactor=redactor, containment=containment)  # fmt: skip
                try:
                    if request.options.stage == "run":
                        warnings = await check_judges(self.plan, services.pool,
                                                      request.on_warning)  # fmt: skip
                        self.plan.warnings.extend(warnings)
                    request.progress.start(len(items), already_done=len(self.kept))
                    outcome = await runner.execute(items, request.progress.advance)
                    return outcome.results, outcome.interrupted
                finally:  # before the services stop (a local server takes a moment to end)
                    request.progress.stop()
                    runner.close()

    def _containment(self, bridge: Bridge | None, pool: ModelPool) -> Containment:
        """The rows' bwrap sandboxes: they reach the bridge through its unix socket, and
        never see the run folder, the store or the response cache."""
        link = None
        if bridge is not None and bridge.socket_path is not None:
            link = BridgeLink(bridge.socket_path, bridge.port)
        cache = pool.settings.cache
        stores = [t.expansion.store.url for t in self.plan.tasks if t.expansion.store is not None]
        private = private_paths(self.run_dir, cache=cache.path if cache is not None else None,
                                store_urls=stores)  # fmt: skip
        return Containment.for_tasks(self.plan.definitions, private=private, bridge=link)

    def finish(
        self, results: list[EvaluationResult | None], *, interrupted: bool
    ) -> SessionOutcome:
        """End the session: log it, and gather every finished row (after an interruption,
        every row whose ``task.json`` reached the disk)."""
        ended = datetime.now()
        log_session(self.run_dir, "end", ended, redactor=self.plan.redactor)
        finished = self.kept + [r for r in results if r is not None]
        if interrupted:
            items = self.plan.work_items()
            on_disk = finished_results(self.run_dir, items, retry_errors=False)
            finished = on_disk if len(on_disk) >= len(finished) else finished
        return SessionOutcome(finished, interrupted, ended)


def execute_session(session: RunSession) -> SessionOutcome:
    """:meth:`RunSession.execute` from synchronous code (its own event loop); Ctrl-C ends
    the session with its finished rows.

    Raises:
        ModelError, UserError: as :meth:`RunSession.execute`.
    """
    try:
        return asyncio.run(session.execute())
    except KeyboardInterrupt:
        return session.finish([], interrupted=True)


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


async def check_judges(plan: Plan, pool: ModelPool, on_warning: Warn | None = None) -> list[str]:
    """Sanity-check every judge of the plan (:func:`assay.qa.check_judge`): a warning for
    each judge that gets an obvious case wrong, also given to ``on_warning`` at once."""
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
        if on_warning is not None:
            on_warning(warning)
        warnings.append(warning)
    return warnings


def check_outputs(runs_root: Path, junit: Path | None) -> None:
    """Refuse output paths that cannot be written, before any row runs.

    Both are written by creating a file in their folder and renaming it, so each folder is
    probed with a temporary file.

    Raises:
        UsageError: ``--run-dir`` is a file, cannot be created or is not writable;
            ``--junit-xml`` is a directory, or its folder cannot be created or written.
    """
    if runs_root.exists() and not runs_root.is_dir():
        raise UsageError(f"--run-dir {runs_root} is a file, not a folder")
    try:
        runs_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--run-dir {runs_root} cannot be created: {exc.strerror}") from None
    _probe(runs_root, f"--run-dir {runs_root}")
    if junit is None:
        return
    if junit.is_dir():
        raise UsageError(f"--junit-xml {junit} is a folder; give a file name")
    try:
        junit.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--junit-xml {junit}: its folder cannot be created: "
                         f"{exc.strerror}") from None  # fmt: skip
    _probe(junit.parent, f"--junit-xml {junit}")


def _probe(folder: Path, what: str) -> None:
    """Create and delete a temporary file in ``folder``.

    Raises:
        UsageError: the folder cannot be written.
    """
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".assay-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{what}: cannot write in {folder}: {exc.strerror or exc}") from None
