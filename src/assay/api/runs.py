"""Plan and run tasks from Python: :func:`plan`, :func:`run` / :func:`run_async` and
:func:`resume` / :func:`resume_async`, the calls behind ``assay plan``, ``assay run``,
``assay execute`` and ``assay run --resume``."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TextIO, TypedDict, Unpack

from assay.agents.base import Agent
from assay.api.options import OPTION_GROUPS, Execution, ModelCalls, Outputs, Selection, flat_options
from assay.api.result import RunResult
from assay.api.tasks import task
from assay.criteria.base import Criterion
from assay.criteria.registry import CriterionRegistry
from assay.errors import Interrupted, UsageError
from assay.orchestration.loading.task_loader import LoadedTask
from assay.orchestration.planning.options import Overrides, plan_options
from assay.orchestration.planning.plan import Plan, PlanOptions, TaskSource, build_plan
from assay.orchestration.running.executors import EXECUTORS, ExecutorChoice, ExecutorKind
from assay.orchestration.running.progress import NoProgress, Progress
from assay.orchestration.running.runner import RunOptions
from assay.orchestration.running.services import ModelSettings
from assay.orchestration.running.session import (
    RunRequest,
    RunSession,
    SessionOutcome,
    Warn,
    check_outputs,
    execute_session,
)
from assay.providers.cache import parse_duration
from assay.providers.limits import EndpointLimits
from assay.reports.progress import make_progress
from assay.reports.session import write_session_reports
from assay.results.output import RedactingStream, console
from assay.results.run_folder import existing_run_dir
from assay.spec.task import TaskDefinition

TaskInput = str | Path | LoadedTask | TaskDefinition | Mapping[str, Any]
Tasks = TaskInput | Sequence[TaskInput] | None


class SelectionKeywords(TypedDict, total=False):
    """The keyword options that choose what runs, shared by :func:`plan`, :func:`run`
    and :func:`resume` (which only checks them against the run's).

    Keys:
        sample: run a uniform sample of N rows of each dataset (seed 0; ``--sample``).
        sample_per_stratum: keep up to N rows per stratum (``dataset.stratify_field``).
        split: keep only rows whose ``split_field`` equals this.
        tags: run only tasks with one of these tags; exclude_tags: skip tasks with one.
        include_skipped: also run tasks marked ``skip: true``.
        skip_unsupported: leave out the criteria of a type assay does not have (a newer
            Coder Eval's, a plugin not installed here), each named in a warning; without it
            such a task file is refused.
        repeats: replicates per row-task.
        experiment: an experiment file, or NAME for ``experiments/NAME.yaml``.
        overrides: task fields to override in every variant: ``{"agent.temperature": 0.7}``
            or ``["agent.temperature=0.7"]`` (``-D``).
        model: use this model in every variant (``agent.model``).
        store: the dataset store URL (default ``$ASSAY_STORE``, else ``.assay/store.db``).
        prices: a YAML file of model → ``{input_per_mtok, output_per_mtok}`` (USD).
        criteria: criterion classes of your own (:class:`assay.criteria.Criterion`
            subclasses) that the tasks may name by their ``type``, beside the built-ins and
            the installed ``assay.criteria`` plugins.
        agents: agent types of your own (:class:`assay.agents.Agent` subclasses, each with
            its config model) that the tasks may name as ``agent: {type: ...}``, beside the
            built-ins and the installed ``assay.agents`` plugins.
        selection: the options above that choose rows as one :class:`assay.Selection`
            (not the store, prices, criteria or agents).
    """

    selection: Selection
    sample: int | None
    sample_per_stratum: int | None
    split: str | None
    tags: Sequence[str]
    exclude_tags: Sequence[str]
    include_skipped: bool
    skip_unsupported: bool
    repeats: int | None
    experiment: str | Path | None
    overrides: Overrides | None
    model: str | None
    store: str | None
    prices: str | Path | None
    criteria: Sequence[type[Criterion]]
    agents: Sequence[type[Agent[Any]]]


class PlanKeywords(SelectionKeywords, total=False):
    """The keyword options of :func:`plan` (and of :func:`run`): those of
    :class:`SelectionKeywords`, and

    Keys:
        rows: run exactly these row ids, per task id: ``{"sentiment": ["r1", "r3"]}``.
        stop_when_decided: stop scheduling rows once the experiment is decided (its
            ``stop`` rule, or the default one: ``assay.spec.experiment.StopRule``).
    """

    rows: Mapping[str, Sequence[str]] | None
    stop_when_decided: bool


class SessionKeywords(TypedDict, total=False):
    """The keyword options of running rows (:func:`run` and :func:`resume`).

    Keys:
        jobs: row-tasks running at once, and model calls in flight per server (default 4;
            :func:`resume` without it: as many as the run recorded).
        junit_xml: also write JUnit XML here (one case per row-task and per suite gate).
        keep_sandboxes: keep each row's sandbox in the run folder.
        max_retries: retries per model call (default 4; 0 = none).
        timeout: seconds per model request.
        cache: cache every model's answers in ``.assay/cache.db``.
        cache_expiry: ignore cached answers older than this (``"7d"``, ``"12h"``, or seconds).
        progress: ``True`` shows a progress bar (stderr), or give a
            :class:`~assay.orchestration.running.progress.Progress`; default nothing.
        on_warning: called with each warning as it is found (they are also in
            ``RunResult.warnings``).
        command: the command line to record in ``run.json`` (default ``sys.argv``).
        stop_on_sigterm: SIGTERM, and SIGINT when the process started with it ignored,
            stop the run like Ctrl-C (for a command line; a library leaves its process's
            signals alone by default).
        executor: ``"local"`` (default: this process) or ``"ray"`` (the nodes of a Ray
            cluster; needs ``assay[distributed]``). Results, reports and exit code are the
            same whichever ran the rows.
        ray_address: the Ray cluster, ``"host:port"`` or ``"auto"``; ``None`` starts a local
            Ray instance for the run and stops it at the end.
        ray_files: ``"ship"`` (default: the task folders are sent to every node) or
            ``"shared"`` (every node sees them at the same paths).
        max_connections: calls in flight at once per model server, across the whole run
            (every node of a cluster); default: only ``jobs``.
        max_rate: calls started per second per model server, across the whole run.
        html: also write the self-contained ``report.html`` into the run folder
            (``RunResult.html_report``).
        execution, model_calls, outputs: the options above grouped as one
            :class:`assay.Execution` (jobs, executor, Ray, limits, sandboxes kept, SIGTERM),
            :class:`assay.ModelCalls` (retries, timeout, cache) and :class:`assay.Outputs`
            (JUnit, HTML, progress, warnings, command); see :mod:`assay.api.options`.
    """

    execution: Execution
    model_calls: ModelCalls
    outputs: Outputs
    jobs: int
    junit_xml: str | Path | None
    keep_sandboxes: bool
    max_retries: int
    timeout: float | None
    cache: bool
    cache_expiry: str | float | None
    progress: bool | Progress
    on_warning: Warn | None
    command: list[str] | None
    stop_on_sigterm: bool
    executor: ExecutorKind
    ray_address: str | None
    ray_files: Literal["ship", "shared"]
    max_connections: int | None
    max_rate: float | None
    html: bool


class RunKeywords(PlanKeywords, SessionKeywords, total=False):
    """The keyword options of :func:`run`: those of :class:`PlanKeywords` and
    :class:`SessionKeywords`, and

    Keys:
        run_dir: the folder that receives ``<timestamp>/`` (default ``runs``).
        stage: ``"run"`` (default) or ``"execute"`` (agents only: rows ``NOT_GRADED``,
            sandboxes kept; grade later with :func:`assay.evaluate`).
    """

    run_dir: str | Path
    stage: Literal["run", "execute"]


class ResumeKeywords(SessionKeywords, SelectionKeywords, total=False):
    """The keyword options of :func:`resume`: those of :class:`SessionKeywords` and of
    :class:`SelectionKeywords` (as below), and

    Keys:
        retry_errors: run the rows that ended ``ERROR`` again.
        rerun_changed: run again exactly the rows whose dataset content changed since the run
            recorded it (otherwise such a run is refused, naming them).
        prices: a price file (as for :func:`run`); store: the store the run used.
        sample, sample_per_stratum, split, tags, exclude_tags, include_skipped,
            skip_unsupported, repeats, experiment, overrides, model, stop_when_decided: as
            for :func:`run`,
            only to check them: a resumed run runs with its recorded options, and one
            given with another value is refused (``UsageError`` naming the option, the run's
            value and the given one).
        criteria, agents: the run's own criterion and agent classes, as given to :func:`run`.
    """

    retry_errors: bool
    rerun_changed: bool
    stop_when_decided: bool


_PLAN_KEYS = frozenset(PlanKeywords.__annotations__) - set(OPTION_GROUPS)
_RESUME_CHECKED = frozenset(_PLAN_KEYS - {"store", "prices", "rows"})


def _flat(verb: str, keywords: type, options: Mapping[str, Any]) -> Any:
    """``options`` with its option objects as flat keywords, checked against ``keywords``
    (a ``TypedDict`` of the verb's keywords; see :func:`assay.api.options.flat_options`)."""
    names = set(keywords.__annotations__)
    return flat_options(verb, options, known=names - set(OPTION_GROUPS),
                        groups=[group for group in OPTION_GROUPS if group in names])  # fmt: skip


def plan(tasks: Tasks = None, **options: Unpack[PlanKeywords]) -> Plan:
    """Load, expand and select every task, and resolve each variant: what :func:`run` would
    do, running nothing (``assay plan``).

    Args:
        tasks: task files, folders (searched recursively), globs, tasks loaded with
            :func:`assay.load_task` or built with :func:`assay.task`, or a list of them;
            ``None``: ``tasks/``.
        **options: see :class:`PlanKeywords`.

    Returns:
        The plan: ``.tasks`` (each expanded, with its row-tasks and variants),
        ``.work_items()`` (row-task × variant × replicate), ``.warnings``, ``.skipped``.

    Raises:
        UserError: exactly the inputs ``assay run`` refuses (a task file, a dataset, a
            selector, an unknown model provider, a missing API key), naming file, line,
            field and row.
    """
    return _built_plan(tasks, plan_options(**_flat("plan", PlanKeywords, options)))


def _built_plan(tasks: Tasks, options: PlanOptions) -> Plan:
    """The plan of ``tasks`` a new run (or ``plan()``) makes, with the warnings of the
    options a caller gave (a resume's plan has its own, recorded)."""
    built = build_plan(_sources(tasks, options.criteria), options)
    built.warnings.extend(_fixed_row_warnings(options))
    return built


def _fixed_row_warnings(options: PlanOptions) -> list[str]:
    """A warning for each task whose rows ``rows=`` names while ``sample``,
    ``sample_per_stratum`` or ``split`` is given too: the named rows run, the selector is
    not applied to that task (it still chooses the rows of the tasks ``rows`` leaves out)."""
    selectors = options.selectors
    given = [f"{name}={value!r}" for name, value in (
        ("sample", selectors.sample), ("sample_per_stratum", selectors.sample_per_stratum),
        ("split", selectors.split)) if value is not None]  # fmt: skip
    if not given:
        return []
    return [
        f"rows names the rows of task {task_id!r}: {' and '.join(given)} not applied to it "
        f"(the {len(set(ids))} row(s) named run)"
        for task_id, ids in options.fixed_rows.items()
    ]


def run(tasks: Tasks = None, **options: Unpack[RunKeywords]) -> RunResult:
    """Run and grade every selected row, write the reports, and return the result
    (``assay run``). Ctrl-C stops the run with its finished rows kept and reported
    (``RunResult.interrupted``, exit code 130); :func:`resume` finishes it.

    Args:
        tasks: as for :func:`plan`.
        **options: see :class:`RunKeywords`.

    Returns:
        The run: folder, suites with metrics and gates, exit code, rows.

    Raises:
        UserError: invalid input, as :func:`plan`, or an output folder that cannot be
            written; nothing runs then.
        ModelError: a model could not start (no row ran).
        UsageError: called inside a running event loop (use :func:`run_async`).
    """
    no_running_loop("run")
    flat: RunKeywords = _flat("run", RunKeywords, options)
    session = _new_session(tasks, flat)
    return _reported(session, execute_session(session), html=flat.get("html", False))


async def run_async(tasks: Tasks = None, **options: Unpack[RunKeywords]) -> RunResult:
    """:func:`run` for async code (a notebook, a service): same options, same result.

    Raises:
        UserError, ModelError: as :func:`run`.
    """
    flat: RunKeywords = _flat("run_async", RunKeywords, options)
    session = _new_session(tasks, flat)
    return _reported(session, await session.execute(), html=flat.get("html", False))


def resume(run_dir: str | Path, **options: Unpack[ResumeKeywords]) -> RunResult:
    """Finish an interrupted run (``assay run --resume``): its recorded plan, rows and store
    versions; every finished row kept, the rest run, the reports rebuilt over all rows.

    Raises:
        UsageError: not a run directory assay can resume.
        UserError: a task file or dataset changed so that the recorded rows are gone, or rows'
            content changed (without ``rerun_changed``, naming them).
        ModelError: a model could not start.
    """
    no_running_loop("resume")
    flat: ResumeKeywords = _flat("resume", ResumeKeywords, options)
    session = _resumed_session(run_dir, flat)
    return _reported(session, execute_session(session), html=flat.get("html", False))


async def resume_async(run_dir: str | Path, **options: Unpack[ResumeKeywords]) -> RunResult:
    """:func:`resume` for async code.

    Raises:
        UserError, ModelError: as :func:`resume`.
    """
    flat: ResumeKeywords = _flat("resume_async", ResumeKeywords, options)
    session = _resumed_session(run_dir, flat)
    return _reported(session, await session.execute(), html=flat.get("html", False))


def _new_session(tasks: Tasks, options: RunKeywords) -> RunSession:
    """Options are checked in the command line's order: plan options, run options, the
    tasks, then the output folders."""
    selected: dict[str, Any] = {k: v for k, v in options.items() if k in _PLAN_KEYS}
    plan_opts = plan_options(**selected)
    stage = options.get("stage", "run")
    request = _request(Path(options.get("run_dir", "runs")), options, stage=stage)
    built = _built_plan(tasks, plan_opts)
    warn = options.get("on_warning")
    for warning in built.warnings:
        if warn is not None:
            warn(warning)
    check_outputs(request.runs_root, request.junit_path)
    return RunSession.start(built, plan_opts, request)


def _resumed_session(run_dir: str | Path, options: ResumeKeywords) -> RunSession:
    if not isinstance(run_dir, (str, Path)):
        raise TypeError(f"resume() takes the run folder as a path (str or pathlib.Path), not "
                        f"{type(run_dir).__name__}")  # fmt: skip
    prices = plan_options(prices=options.get("prices")).prices
    request = _request(Path(run_dir).parent, options, stage="run")
    request.retry_errors = options.get("retry_errors", False)
    request.rerun_changed = options.get("rerun_changed", False)
    checked: dict[str, Any] = {k: v for k, v in options.items() if k in _RESUME_CHECKED}
    given = plan_options(**checked)
    folder = existing_run_dir(run_dir)
    request.runs_root = folder.parent
    check_outputs(request.runs_root, request.junit_path)
    return RunSession.resume(folder, request, prices=prices, store_url=options.get("store"),
                             given=given)  # fmt: skip


def _request(
    runs_root: Path, options: SessionKeywords, *, stage: Literal["run", "execute"]
) -> RunRequest:
    given = options.get("jobs")
    jobs = 4 if given is None else given
    if jobs < 1:
        raise UsageError(f"jobs must be at least 1, got {jobs}")
    keep = options.get("keep_sandboxes", False) or stage == "execute"
    junit = options.get("junit_xml")
    out = console()  # what the run prints, its secrets redacted; sys.stderr left alone
    return RunRequest(
        runs_root=runs_root,
        options=RunOptions(jobs=jobs, stage=stage, keep_sandboxes=keep),
        jobs_given=given is not None,
        progress=_progress(options.get("progress", False), out),
        redact_progress=not _prints_redacted(options.get("progress", False)),
        junit_path=Path(junit) if junit is not None else None,
        command=options.get("command"),
        models=_model_settings(options),
        on_warning=options.get("on_warning"),
        stop_on_sigterm=options.get("stop_on_sigterm", False),
        executor=_executor(options),
        console=out,
    )


def _executor(options: SessionKeywords) -> ExecutorChoice:
    kind = options.get("executor", "local")
    if kind not in EXECUTORS:
        raise UsageError(f"unknown executor {kind!r}; choose one of {', '.join(EXECUTORS)}",
                         field="executor (--executor)")  # fmt: skip
    address, files = options.get("ray_address"), options.get("ray_files", "ship")
    if kind != "ray" and (address is not None or files != "ship"):
        raise UsageError("ray_address and ray_files (--ray-address, --ray-files) need "
                         "executor='ray' (--executor ray)")  # fmt: skip
    if files not in ("ship", "shared"):
        raise UsageError(f"ray_files must be 'ship' or 'shared', got {files!r}")
    limits = EndpointLimits(max_connections=options.get("max_connections"),
                            max_rate=options.get("max_rate"))  # fmt: skip
    return ExecutorChoice(kind=kind, address=address, limits=limits, files=files)


def _model_settings(options: SessionKeywords) -> ModelSettings:
    expiry = options.get("cache_expiry")
    if isinstance(expiry, str):
        try:
            expiry = parse_duration(expiry)
        except ValueError as exc:
            raise UsageError(str(exc), field="cache_expiry (--cache-expiry)") from None
    if expiry is not None and expiry <= 0:
        raise UsageError(f"cache_expiry must be a positive duration, got {expiry:g} seconds",
                         field="cache_expiry (--cache-expiry)")  # fmt: skip
    cache = options.get("cache", False) or bool(expiry)
    retries, timeout = options.get("max_retries", 4), options.get("timeout")
    if retries < 0:
        raise UsageError(f"max_retries must be 0 or more, got {retries}")
    if timeout is not None and timeout <= 0:
        raise UsageError(f"timeout must be a positive number of seconds, got {timeout}")
    return ModelSettings(max_retries=retries, timeout=timeout, cache=cache,
                         cache_expiry=expiry)  # fmt: skip


def _prints_redacted(choice: bool | Progress) -> bool:
    """Whether the progress asked for needs no redacted copy of each row: assay's own
    display (``True``, or one made by the command line) prints through a redacting stream,
    and ``NoProgress`` prints nothing; a caller's own object is told redacted text."""
    if isinstance(choice, bool | NoProgress):
        return True
    return isinstance(getattr(choice, "stream", None), RedactingStream)


def _progress(choice: bool | Progress, stream: TextIO) -> Progress:
    if choice is True:
        return make_progress(stream)
    if choice is False:
        return NoProgress()
    return choice


def _reported(session: RunSession, outcome: SessionOutcome, *, html: bool) -> RunResult:
    try:
        try:
            reports = write_session_reports(session, outcome)
        except KeyboardInterrupt:
            raise Interrupted(
                f"while writing the reports of {session.run_dir}: every finished row is kept; "
                f"`assay report {session.run_dir}` writes them"
            ) from None
        result = RunResult.from_reports(session.run_dir, reports)
        if html:
            from assay.view.static_report import write_report_file

            result.html_report = write_report_file(session.run_dir)
        return result
    finally:
        session.release()


def _sources(tasks: Tasks, criteria: CriterionRegistry | None) -> list[TaskSource]:
    """Task files, folders and globs as paths; tasks built from a definition (naming the
    types of ``criteria``)."""
    if tasks is None:
        return []
    many = tasks if isinstance(tasks, Sequence) and not isinstance(tasks, str) else [tasks]
    out: list[TaskSource] = []
    for item in many:
        if isinstance(item, (TaskDefinition, Mapping)):
            out.append(task(item, criteria=criteria or ()))
        elif isinstance(item, (str, Path, LoadedTask)):
            out.append(item)
        else:
            raise UsageError(
                f"a task is a path, a loaded task, a TaskDefinition or a dict of task fields, "
                f"not {type(item).__name__}"
            )
    return out


def no_running_loop(name: str, *, has_async: bool = True) -> None:
    """``asyncio.run`` cannot start inside a running event loop.

    Raises:
        UsageError: there is one (a notebook cell, an async function); the hint names the
            async form, or a thread when there is none.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    hint = (
        f"use `await assay.{name}_async(...)` there (a notebook cell can await directly)"
        if has_async
        else f"run it in a thread there: `await asyncio.to_thread(assay.{name}, ...)`"
    )
    raise UsageError(f"assay.{name}() was called inside a running event loop", hint=hint)
