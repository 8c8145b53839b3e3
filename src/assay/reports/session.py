"""The reports of a run session (``assay run`` / ``execute``, new or resumed): its facts
(:class:`RunMeta`) from the plan, ``plan.json`` and ``sessions.jsonl``, then every report."""

from __future__ import annotations

import sys
from datetime import datetime

from assay.criteria.registry import default_criteria
from assay.orchestration.session import RunSession, SessionOutcome
from assay.reports.writer import Reports, RunMeta, write_reports
from assay.results.plan_record import read_sessions
from assay.results.run import TaskSelection
from assay.results.task_result import EvaluationResult


def write_session_reports(session: RunSession, outcome: SessionOutcome) -> Reports:
    """Write ``suite.*``, ``run.*`` (``experiment.*``, JUnit XML) over every finished row.

    Raises:
        TaskFileError: a QA suite's metrics hook failed; every other file is written first.
    """
    meta = session_meta(session, outcome)
    return write_reports(session.run_dir, outcome.results, meta, default_criteria(),
                         junit_path=session.request.junit_path,
                         redactor=session.plan.redactor)  # fmt: skip


def session_meta(session: RunSession, outcome: SessionOutcome) -> RunMeta:
    """What ``run.json`` says about the run beyond its rows: stage, times (each session's
    active time), command, selections, warnings, planned rows, experiment."""
    plan, record, request = session.plan, session.record, session.request
    sessions = read_sessions(session.run_dir)
    first = sessions[0][0] if sessions else outcome.ended
    return RunMeta(
        run_id=session.run_dir.name,
        stage=request.options.stage,
        start_time=first,
        end_time=outcome.ended,
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
        interrupted=outcome.interrupted,
        criteria=record.criteria,
        active_seconds=active_seconds(sessions, outcome.results, outcome.ended),
        sessions=len(sessions),
        planned=record.planned,
        experiment_id=plan.experiment.experiment_id if plan.experiment else None,
        experiment_description=plan.experiment.description if plan.experiment else "",
        variant_ids=list(plan.variants),
    )


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
