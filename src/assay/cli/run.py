"""``assay run`` and ``assay execute`` (new or ``--resume``): parse the flags, call
:func:`assay.api.run` / :func:`assay.api.resume`, print the summary, exit with its code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from assay.cli.shared import options as o
from assay.cli.shared.common import user_errors, warn
from assay.errors import UsageError


def execute_command(
    tasks: list[str] | None, chosen: dict[str, Any], session: dict[str, Any], *, resume: str | None
) -> None:
    """Run (or resume) with ``chosen`` plan keywords and ``session`` keywords; print the
    summary; exit with the run's code (2 on invalid input)."""
    from assay import api
    from assay.cli.shared.render import print_reports
    from assay.reports.progress import make_progress

    session.update(progress=make_progress(quiet=session.pop("quiet")), on_warning=warn,
                   command=["assay", *sys.argv[1:]], stop_on_sigterm=True)  # fmt: skip
    with user_errors():
        if resume is not None:
            if tasks:
                raise UsageError("--resume takes the task files from the run; give no tasks")
            session.pop("run_dir")
            session.pop("stage")
            result = api.resume(resume, **chosen, **session)
        else:
            result = api.run(tasks, **chosen, **session)
    print_reports(result)
    raise typer.Exit(result.exit_code)


def run(
    tasks: o.TaskArgs = None,
    sample: o.Sample = None,
    sample_per_stratum: o.PerStratum = None,
    split: o.Split = None,
    tags: o.Tags = None,
    exclude_tags: o.ExcludeTags = None,
    include_skipped: o.IncludeSkipped = False,
    skip_unsupported: o.SkipUnsupported = False,
    repeats: o.Repeats = None,
    jobs: o.RunJobs = None,
    run_dir: o.RunsRoot = Path("runs"),
    junit_xml: o.Junit = None,
    html: o.Html = False,
    keep_sandboxes: o.Keep = False,
    quiet: o.Quiet = False,
    max_retries: o.MaxRetries = 4,
    timeout: o.Timeout = None,
    cache: o.Cache = False,
    cache_expiry: o.CacheExpiry = None,
    resume: o.Resume = None,
    retry_errors: o.RetryErrors = False,
    rerun_changed: o.RerunChanged = False,
    prices: o.Prices = None,
    experiment: o.ExperimentOpt = None,
    set_: o.SetOpt = None,
    model: o.ModelOpt = None,
    store: o.StoreOpt = None,
    executor: o.ExecutorOpt = "local",
    ray_address: o.RayAddress = None,
    ray_files: o.RayFiles = "ship",
    max_connections: o.MaxConnections = None,
    max_rate: o.MaxRate = None,
    stop_when_decided: o.StopWhenDecided = False,
) -> None:
    """Run agents on every selected row, grade them, and write the reports."""
    chosen = o.selection(sample, sample_per_stratum, split, tags, exclude_tags, include_skipped,
                       repeats, prices=prices, experiment=experiment, sets=set_, model=model,
                       store=store, skip_unsupported=skip_unsupported) | (
                           {"stop_when_decided": True} if stop_when_decided else {})  # fmt: skip
    session = {"stage": "run", "run_dir": run_dir, **_jobs(jobs), "junit_xml": junit_xml,
               "html": html, "keep_sandboxes": keep_sandboxes, "quiet": quiet,
               "max_retries": max_retries, "timeout": timeout, "cache": cache,
               "cache_expiry": cache_expiry,
               **_executor(executor, ray_address, ray_files, max_connections,
                           max_rate)}  # fmt: skip
    _resume_options(session, resume, retry_errors=retry_errors, rerun_changed=rerun_changed)
    execute_command(tasks, chosen, session, resume=resume)


def _resume_options(
    session: dict[str, Any], resume: str | None, *, retry_errors: bool, rerun_changed: bool
) -> None:
    """Add ``--resume``'s own flags to ``session``; ``--rerun-changed`` without it is an error."""
    if resume is not None:
        session.update(retry_errors=retry_errors, rerun_changed=rerun_changed)
    elif rerun_changed:
        with user_errors():
            raise UsageError("--rerun-changed goes with --resume RUN_DIR: it runs again the "
                             "rows of that run whose dataset content changed")  # fmt: skip


def _jobs(jobs: int | None) -> dict[str, int]:
    """``--max-parallel`` when given: without it a new run takes 4, a resume the run's own."""
    return {} if jobs is None else {"jobs": jobs}


def _executor(
    executor: str, address: str | None, files: str, connections: int | None, rate: float | None
) -> dict[str, Any]:
    """The executor keywords of :func:`assay.api.run` (checked there)."""
    return {"executor": executor, "ray_address": address, "ray_files": files,
            "max_connections": connections, "max_rate": rate}  # fmt: skip


def execute(
    tasks: o.TaskArgs = None,
    sample: o.Sample = None,
    sample_per_stratum: o.PerStratum = None,
    split: o.Split = None,
    tags: o.Tags = None,
    exclude_tags: o.ExcludeTags = None,
    include_skipped: o.IncludeSkipped = False,
    skip_unsupported: o.SkipUnsupported = False,
    repeats: o.Repeats = None,
    jobs: o.RunJobs = None,
    run_dir: o.RunsRoot = Path("runs"),
    quiet: o.Quiet = False,
    max_retries: o.MaxRetries = 4,
    timeout: o.Timeout = None,
    cache: o.Cache = False,
    cache_expiry: o.CacheExpiry = None,
    resume: o.Resume = None,
    retry_errors: o.RetryErrors = False,
    rerun_changed: o.RerunChanged = False,
    prices: o.Prices = None,
    experiment: o.ExperimentOpt = None,
    set_: o.SetOpt = None,
    model: o.ModelOpt = None,
    store: o.StoreOpt = None,
    executor: o.ExecutorOpt = "local",
    ray_address: o.RayAddress = None,
    ray_files: o.RayFiles = "ship",
    max_connections: o.MaxConnections = None,
    max_rate: o.MaxRate = None,
) -> None:
    """Run agents only (rows NOT_GRADED, sandboxes kept); grade later with `assay evaluate`."""
    chosen = o.selection(sample, sample_per_stratum, split, tags, exclude_tags, include_skipped,
                       repeats, prices=prices, experiment=experiment, sets=set_, model=model,
                       store=store, skip_unsupported=skip_unsupported)  # fmt: skip
    session = {"stage": "execute", "run_dir": run_dir, **_jobs(jobs), "keep_sandboxes": True,
               "quiet": quiet, "max_retries": max_retries, "timeout": timeout, "cache": cache,
               "cache_expiry": cache_expiry,
               **_executor(executor, ray_address, ray_files, max_connections,
                           max_rate)}  # fmt: skip
    _resume_options(session, resume, retry_errors=retry_errors, rerun_changed=rerun_changed)
    execute_command(tasks, chosen, session, resume=resume)
