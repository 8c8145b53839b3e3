"""Reports written again for a finished run: ``assay report`` rebuilds them from the
``task.json`` files, ``assay evaluate`` after grading the rows again. The run's recorded facts
come from ``plan.json`` (what it set out to do) and ``run.json`` (how it went)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

from assay.criteria.registry import CriterionRegistry, default_criteria
from assay.errors import UsageError
from assay.orchestration.loading.secrets import results_writer
from assay.orchestration.planning.datacheck import check_run_dir
from assay.orchestration.running.stopping import stopping_facts
from assay.reports.meta import GRADING_STOPPED
from assay.reports.writer import Reports, RunMeta, Stage, write_reports
from assay.results.io import Writer, read_json, read_model
from assay.results.plan_record import PLAN_FILE, PlanRecord, read_sessions
from assay.results.run import RunSummary
from assay.results.run_file import read_summary
from assay.results.run_folder import has_results, iter_results, resolve_run_dir, scan_task_jsons
from assay.results.secret_scan import SecretFinding
from assay.results.task_result import EvaluationResult


def previous_meta(run_dir: Path, stage: Stage) -> RunMeta:
    """The run's recorded facts for a new report: from ``plan.json`` (what it set out to do:
    selections, planned rows, criteria, experiment) and ``run.json`` (how it went)."""
    now = datetime.now()
    summary = _summary(run_dir)
    plan = read_model(run_dir / PLAN_FILE, PlanRecord)
    criteria = dict(plan.criteria) if plan else {}
    criteria.update(summary.task_criteria if summary else {})
    for path in run_dir.glob("*/*/suite.json"):  # rewritten by this report: one that cannot
        try:  # be read (a damaged file) adds nothing plan.json and run.json do not say
            data = read_json(path)
            if isinstance(data, dict) and data.get("criteria") is not None:
                criteria.setdefault(str(data["suite_id"]), data["criteria"])
        except (OSError, ValueError, KeyError):
            continue
    selections = summary.selections if summary else []
    if not selections and plan is not None:
        selections = plan.selections()
    experiment = _experiment(run_dir)
    planned, sequence = stopping_facts(run_dir, dict(plan.planned) if plan else {})
    # without run.json (a killed run), or with one older than the last session (a report
    # between two kills): the sessions, each killed one ended at its last finished row
    logged = read_sessions(run_dir)
    sessions = logged if summary is None or len(logged) > summary.sessions else None
    stale = bool(sessions) and summary is not None  # run.json's figures are of fewer sessions
    return RunMeta(
        run_id=run_dir.name,
        stage=stage,
        start_time=_started(summary, sessions, now),
        end_time=datetime.fromisoformat(summary.end_time) if summary and not stale else now,
        max_parallel=summary.max_parallel if summary else (plan.jobs if plan else 1),
        command=summary.command if summary else [],
        skipped=summary.skipped_tasks if summary else [],
        selections=selections,
        warnings=summary.warnings if summary else [],
        criteria=criteria,
        interrupted=(
            summary.interrupted
            if summary and not stale
            else plan is not None
            if not sessions
            else sessions[-1][1] is None
        ),
        active_seconds=summary.total_duration_seconds if summary and not stale else None,
        session_times=sessions or None,
        sessions=summary.sessions if summary and not stale else max(len(sessions or ()), 1),
        planned=planned,
        sequence=sequence,
        experiment_id=experiment[0] if experiment else None,
        experiment_description=experiment[1] if experiment else "",
        variant_ids=list(plan.variants) if plan else [],
    )


def _started(
    summary: RunSummary | None,
    sessions: list[tuple[datetime, datetime | None]] | None,
    now: datetime,
) -> datetime:
    """When the run began: ``run.json``'s start, else its first session's, else ``now``."""
    if summary is not None:
        return datetime.fromisoformat(summary.start_time)
    return sessions[0][0] if sessions else now


def _summary(run_dir: Path) -> RunSummary | None:
    """``run.json`` without its rows (``None``: missing or not valid)."""
    try:
        return read_summary(run_dir / "run.json")
    except (OSError, ValueError):
        return None


def _experiment(run_dir: Path) -> tuple[str, str] | None:
    path = run_dir / "experiment.json"
    if not path.is_file():
        return None
    data = read_json(path)
    return str(data.get("experiment_id", "")), str(data.get("description", ""))


def rebuild_reports(
    run_dir: Path, *, junit_path: Path | None = None, criteria: CriterionRegistry | None = None
) -> Reports:
    """``assay report``: write every report again from the ``task.json`` files (a run that
    planned rows but finished none reports them all missing); ``criteria``: the criterion
    types of the run (default: the built-ins and installed plugins).

    Raises:
        UsageError: no ``task.json`` and no plan (not a run), an invalid ``task.json``, or
            rows whose content is not what the run recorded
            (:func:`assay.orchestration.planning.datacheck.check_run_dir`).
        TaskFileError: a QA suite's metrics hook failed; every other file is written first.
    """
    meta = previous_meta(run_dir, "report")
    if not meta.planned and not has_results(run_dir):
        raise UsageError(f"no task.json under {run_dir}: is it a run directory?")
    meta.stage = "report"
    checked = check_run_dir(run_dir, iter_results(run_dir), action="assay report")
    meta.warnings = list(dict.fromkeys([*meta.warnings, *checked]))  # once, however often run
    return write_reports(run_dir, lambda: iter_results(run_dir), meta,
                         criteria or default_criteria(),
                         junit_path=junit_path, writer=_writer(run_dir))  # fmt: skip


def _writer(run_dir: Path) -> Writer:
    """The writer of the environment's secrets and the rows' recorded ones (rows read one
    at a time)."""
    return results_writer(iter_results(run_dir), os.environ, run_dir=run_dir)


def check_secrets(run_dir: Path) -> list[SecretFinding]:
    """``assay report --check-secrets``: the secrets in the run folder (the environment's and
    the rows' recorded ones, and key-shaped strings); changes nothing. A ``task.json`` that
    cannot be read is scanned all the same.

    Raises:
        UsageError: ``run_dir`` is not a run directory.
    """
    folder = resolve_run_dir(run_dir)

    def readable() -> Iterator[EvaluationResult]:
        for path in scan_task_jsons(folder):
            try:
                yield EvaluationResult.model_validate(read_json(path))
            except (ValueError, OSError):
                continue

    return results_writer(readable(), os.environ, run_dir=folder).scan(folder)


def report_regraded(
    run_dir: Path,
    *,
    started: datetime,
    jobs: int,
    junit_path: Path | None = None,
    warnings: Sequence[str] = (),
    criteria: CriterionRegistry | None = None,
) -> Reports:
    """The reports of a run whose rows were graded again (``assay evaluate``: each
    ``task.json`` rewritten), the re-grading having started at ``started`` with ``jobs``
    rows at once. ``warnings`` replace an earlier evaluate's :data:`GRADING_STOPPED` (pass
    it again when this one was stopped too: ``run.json`` then exits 130).

    Raises:
        TaskFileError: a QA suite's metrics hook failed; every other file is written first.
    """
    meta = previous_meta(run_dir, "evaluate")
    meta.start_time, meta.end_time, meta.max_parallel = started, datetime.now(), jobs
    carried = (w for w in meta.warnings if w != GRADING_STOPPED)  # this grading replaces it
    meta.warnings = list(dict.fromkeys([*carried, *warnings]))
    return write_reports(run_dir, lambda: iter_results(run_dir), meta,
                         criteria or default_criteria(),
                         junit_path=junit_path, writer=_writer(run_dir))  # fmt: skip
