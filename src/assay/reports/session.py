"""The reports of a run session (``assay run`` / ``execute``, new or resumed): its facts
(:class:`RunMeta`) from the plan, ``plan.json`` and ``sessions.jsonl``, then every report,
read from the run folder: every row's ``task.json``, kept and new, one at a time."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from assay.orchestration.running.session import RunSession, SessionOutcome
from assay.orchestration.running.stopping import stopping_facts
from assay.reports.writer import Reports, RunMeta, write_reports
from assay.results.plan_record import read_sessions
from assay.results.run_folder import iter_results
from assay.results.task_result import EvaluationResult


def write_session_reports(session: RunSession, outcome: SessionOutcome) -> Reports:
    """Write ``suite.*``, ``run.*`` (``experiment.*``, JUnit XML) over every finished row.

    Raises:
        TaskFileError: a QA suite's metrics hook failed; every other file is written first.
    """
    meta = session_meta(session, outcome)
    run_dir, missing = session.run_dir, outcome.unwritten

    def rows() -> Iterator[EvaluationResult]:
        yield from iter_results(run_dir)
        yield from missing  # rows without files, said so (a resumed run runs them again)

    return write_reports(run_dir, rows, meta, session.plan.criteria,
                         junit_path=session.request.junit_path,
                         writer=session.plan.writer)  # fmt: skip


def session_meta(session: RunSession, outcome: SessionOutcome) -> RunMeta:
    """What ``run.json`` says about the run beyond its rows: stage, times (each session's
    active time), command, selections, warnings, planned rows, experiment."""
    plan, record, request = session.plan, session.record, session.request
    sessions = read_sessions(session.run_dir)
    first = sessions[0][0] if sessions else outcome.ended
    planned, sequence = stopping_facts(session.run_dir, record.planned)
    return RunMeta(
        run_id=session.run_dir.name,
        stage=request.options.stage,
        start_time=first,
        end_time=outcome.ended,
        max_parallel=request.options.jobs,
        command=request.command or sys.argv,
        skipped=plan.skipped,
        selections=record.selections(),
        warnings=plan.warnings,
        interrupted=outcome.interrupted,
        criteria=record.criteria,
        session_times=sessions,
        sessions=len(sessions),
        planned=planned,
        sequence=sequence,
        experiment_id=plan.experiment.experiment_id if plan.experiment else None,
        experiment_description=plan.experiment.description if plan.experiment else "",
        variant_ids=list(plan.variants),
    )
