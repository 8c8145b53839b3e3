"""Finished runs from Python: grade again (:func:`evaluate`), rebuild the reports
(:func:`report`), scan for secrets (:func:`check_secrets`), compare two runs
(:func:`compare`), grade a QA prediction file (:func:`evaluate_predictions`)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from assay.agents.base import Agent
from assay.api.option_types import check_types
from assay.api.predictions import (
    PredictionOptions,
    PredictionReport,
)
from assay.api.predictions import (
    evaluate_predictions as grade_prediction_file,
)
from assay.api.regrade import regrade_run
from assay.api.result import RunResult
from assay.api.runs import no_running_loop
from assay.criteria.base import Criterion
from assay.criteria.registry import CriterionRegistry
from assay.errors import Interrupted
from assay.orchestration.loading.secrets import results_writer
from assay.orchestration.planning.datacheck import check_run_dir
from assay.orchestration.planning.options import criteria_registry
from assay.orchestration.running.runlock import lock_run_dir
from assay.orchestration.running.signals import stop_on_signals
from assay.reports.compare import compare_runs, write_comparison
from assay.reports.meta import GRADING_STOPPED
from assay.reports.rebuild import check_secrets as find_secrets
from assay.reports.rebuild import rebuild_reports, report_regraded
from assay.results.experiment import ExperimentResult
from assay.results.io import check_output_file, check_output_folder
from assay.results.run_folder import iter_results, load_run_results, resolve_run_dir
from assay.results.secret_scan import SecretFinding


def evaluate(
    run_dir: str | Path,
    *,
    jobs: int = 4,
    junit_xml: str | Path | None = None,
    criteria: Sequence[type[Criterion]] = (),
    agents: Sequence[type[Agent[Any]]] = (),
    stop_on_sigterm: bool = False,
) -> RunResult:
    """Grade every row of a finished run again, without running its agents, and rewrite its
    reports (``assay evaluate RUN_DIR``; ToMEval's metric stage after ``execute``). Stopped
    by Ctrl-C (or, with ``stop_on_sigterm``, SIGTERM, SIGHUP and a background SIGINT, as a
    run is), the rows graded again so far keep their new grade, the reports are rebuilt over
    every row, and :class:`~assay.errors.Interrupted` says so (with ``stop_on_sigterm``;
    otherwise the cancellation or ``KeyboardInterrupt`` goes on as it came).

    Args:
        run_dir: the run (``runs/latest`` works).
        jobs: rows graded at once.
        junit_xml: also write JUnit XML here.
        criteria: the criterion classes of your own that the run's tasks name (as given to
            :func:`assay.run`).
        agents: the agent classes of your own that the run's tasks name (as given to
            :func:`assay.run`; an installed plugin's are found by their type).
        stop_on_sigterm: take those signals (the command line does; a library leaves its
            process's signals alone).

    Raises:
        PluginError: a class of ``criteria`` is not a criterion (of ``agents``, not an
            agent), or its type is taken.
        UsageError: not a run; an invalid ``task.json``; a criterion or agent type the run
            named that is not here; rows whose criteria read the
            sandbox when the run did not keep sandboxes; rows whose content is not what the
            run recorded (nothing is changed then); ``junit_xml`` cannot be written
            (checked before any row is graded).
        ModelError: a judge could not start.
        UsageError: called inside a running event loop (use :func:`evaluate_async`).
    """
    no_running_loop("evaluate")
    return asyncio.run(evaluate_async(run_dir, jobs=jobs, junit_xml=junit_xml, criteria=criteria,
                                      agents=agents, stop_on_sigterm=stop_on_sigterm))  # fmt: skip


async def evaluate_async(
    run_dir: str | Path,
    *,
    jobs: int = 4,
    junit_xml: str | Path | None = None,
    criteria: Sequence[type[Criterion]] = (),
    agents: Sequence[type[Agent[Any]]] = (),
    stop_on_sigterm: bool = False,
) -> RunResult:
    """:func:`evaluate` for async code.

    Raises:
        UsageError, ModelError: as :func:`evaluate`.
    """
    folder = resolve_run_dir(run_dir)
    if junit_xml is not None:  # before any row is graded again
        check_output_file(Path(junit_xml), "--junit-xml")
    with lock_run_dir(folder, on_warning=_warn):
        warnings = check_run_dir(folder, iter_results(folder), action="assay evaluate")
        started = datetime.now()
        registry = criteria_registry(criteria, agents=agents)
        try:
            with stop_on_signals(enabled=stop_on_sigterm):
                warnings += _printed(await regrade_run(folder, jobs=jobs, criteria=registry))
        except asyncio.CancelledError:  # Ctrl-C or a signal: the reports say what is there
            _regraded(folder, started, jobs, junit_xml, [*warnings, GRADING_STOPPED], registry)
            if not stop_on_sigterm:
                raise  # a library's own cancellation stays one
            raise Interrupted(
                f"{GRADING_STOPPED}; `assay evaluate {folder}` grades every row again"
            ) from None
        return _regraded(folder, started, jobs, junit_xml, warnings, registry)


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _printed(warnings: list[str]) -> list[str]:
    """``warnings``, each printed to stderr too (they are also kept in ``run.json``)."""
    for warning in warnings:
        _warn(warning)
    return warnings


def _regraded(
    folder: Path,
    started: datetime,
    jobs: int,
    junit: str | Path | None,
    warnings: list[str],
    registry: CriterionRegistry | None,
) -> RunResult:
    reports = report_regraded(folder, started=started, jobs=jobs,
                              junit_path=Path(junit) if junit is not None else None,
                              warnings=warnings, criteria=registry)  # fmt: skip
    return RunResult.from_reports(folder, reports)


def report(
    run_dir: str | Path,
    *,
    junit_xml: str | Path | None = None,
    html: bool = False,
    criteria: Sequence[type[Criterion]] = (),
) -> RunResult:
    """Rebuild ``suite.*``, ``run.*`` and ``experiment.*`` (and JUnit XML) from a run's
    ``task.json`` files (``assay report``); rows that never ran are reported missing.

    Args:
        run_dir: the run (``runs/latest`` works).
        junit_xml: also write JUnit XML here.
        html: also write the self-contained ``report.html`` into the run folder
            (``RunResult.html_report``; :func:`assay.view.write_html_report`).
        criteria: the criterion classes of your own that the run's tasks name.

    Raises:
        PluginError: a class of ``criteria`` is not a criterion, or its type is taken.
        UsageError: not a run directory, or an invalid ``task.json``; ``junit_xml`` cannot
            be written (a folder, or its folder cannot be created or written; checked before
            any report is rewritten).
        TaskFileError: a QA suite's metrics hook failed (every other file is written).
    """
    folder = resolve_run_dir(run_dir)
    junit = Path(junit_xml) if junit_xml is not None else None
    if junit is not None:  # before any report is rewritten
        check_output_file(junit, "--junit-xml")
    with lock_run_dir(folder, on_warning=_warn):
        rebuilt = rebuild_reports(folder, junit_path=junit, criteria=criteria_registry(criteria))
        result = RunResult.from_reports(folder, rebuilt)
        if html:
            from assay.view.static_report import write_report_file

            result.html_report = write_report_file(folder)
    return result


def compare(
    run_a: str | Path,
    run_b: str | Path,
    *,
    variant_a: str | None = None,
    variant_b: str | None = None,
    output: str | Path | None = None,
) -> ExperimentResult:
    """Compare run B with run A over the rows they share (``assay compare``): each suite
    metric with its 95% interval, paired differences, McNemar's exact test, flipped rows.

    Args:
        run_a: the first run (A).
        run_b: the second run (B).
        variant_a: which variant of run A, when it has several.
        variant_b: which variant of run B, when it has several.
        output: also write ``compare.json`` and ``compare.md`` into this folder.

    Returns:
        The comparison (the shape of ``experiment.json``);
        :func:`assay.reports.compare.render_comparison` renders it as Markdown.

    Raises:
        UsageError: not a run; an ambiguous or unknown variant; no suite in common; a
            shared suite whose row ids differ (the first ones named); ``output`` is a file,
            or cannot be created or written.
    """
    folder_a, folder_b = resolve_run_dir(run_a), resolve_run_dir(run_b)
    if output is not None:
        check_output_folder(Path(output), "--output")
    results_a, results_b = load_run_results(folder_a), load_run_results(folder_b)
    result = compare_runs(folder_a, results_a, folder_b, results_b, variant_a=variant_a,
                          variant_b=variant_b)  # fmt: skip
    if output is not None:
        writer = results_writer([*results_a, *results_b], os.environ)
        write_comparison(Path(output), result, writer=writer)
    return result


def check_secrets(run_dir: str | Path) -> list[SecretFinding]:
    """Scan a run folder for secrets (``assay report --check-secrets``): the values of the
    environment's secret variables and of the rows' recorded ones, and strings shaped like
    provider keys; writes nothing.

    Returns:
        Each finding by file (relative to the run folder) and line, never the value; empty
        when the folder is clean.

    Raises:
        UsageError: not a run directory.
    """
    return find_secrets(Path(run_dir))


def evaluate_predictions(
    path: str | Path,
    *,
    task: str | Path | None = None,
    judge: str | None = None,
    judge_retries: int | None = None,
    include_story: bool | None = None,
    group_by: str | Sequence[str] = (),
    metrics_hook: str | Path | None = None,
    output: str | Path | None = None,
    jobs: int = 4,
    store: str | None = None,
) -> PredictionReport:
    """Grade a QA ``prediction.jsonl`` (assay's or ToMEval's) and write its
    ``metrics.json`` (``assay evaluate FILE.jsonl``). Settings come from the arguments,
    else ``task``'s ``qa:`` block, else the run the file belongs to, else the defaults.

    Args:
        path: the prediction file.
        task: a task file whose ``qa:`` block gives the settings.
        judge: the judge model for open answers the rules cannot decide.
        judge_retries: retries of an unreadable verdict (0-10).
        include_story: show the judge the story.
        group_by: accuracy per value of this record path (``"meta.ability"``) or these.
        metrics_hook: a file with ``compute_metrics(records, per_sample_results)``.
        output: where ``metrics.json`` goes (default beside ``path``).
        jobs: judge calls in flight.
        store: the store a store judge that ``task``'s ``qa.judge`` names is read from
            (default ``$ASSAY_STORE``, else ``.assay/store.db``).

    Returns:
        ``.output``, ``.document`` (``avg_metrics``, ``all_metrics`` per replicate:
        ``accuracy`` in [0, 1] with its Wilson 95% ``accuracy_ci``, counts, groups) and
        ``.records``.

    Raises:
        DatasetError: a missing file or a line that is not a prediction record.
        TaskFileError: the metrics hook failed. UsageError: bad settings, an open
            question with neither rules nor a judge, or a call inside a running event loop.
    """
    no_running_loop("evaluate_predictions", has_async=False)
    given = check_types("evaluate_predictions", {
        "task": task, "judge": judge, "judge_retries": judge_retries,
        "include_story": include_story, "group_by": group_by, "metrics_hook": metrics_hook,
        "output": output, "jobs": jobs, "store": store,
    })  # fmt: skip
    options = PredictionOptions(
        task=_optional_path(given["task"]), judge_model=given["judge"],
        judge_retries=given["judge_retries"], include_story=given["include_story"],
        group_by=given["group_by"], metrics_hook=_optional_path(given["metrics_hook"]),
        output=_optional_path(given["output"]), jobs=given["jobs"] or 4, store=given["store"],
    )  # fmt: skip
    return grade_prediction_file(Path(path), options)


def _optional_path(value: str | Path | None) -> Path | None:
    return Path(value) if value is not None else None
