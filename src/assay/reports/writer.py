"""Write every report of a run from its row results: suites, ``run.json``/``run.md``, JUnit.

The same function serves ``assay run`` (at the end of the run), ``assay evaluate`` (after
re-grading) and ``assay report`` (rebuilding from the ``task.json`` files), so the reports
never depend on how the results were obtained.

Every file is written through the run's writer, and the run folder (with the JUnit file)
is then scanned for secrets (:mod:`assay.results.secret_scan`): a secret found is listed in
``run.json`` (``secret_findings``, file and line, never the value) and ``run.md``, and makes
the exit code 1 where it would have been 0, so a leak never passes silently.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from pathlib import Path

from assay.criteria.registry import CriterionRegistry
from assay.errors import TaskFileError, UsageError
from assay.orchestration.running.rundir import suite_dir
from assay.reports.junit import JunitWriter
from assay.reports.markdown import render_experiment, render_run, render_suite
from assay.reports.meta import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    GRADING_STOPPED,
    Reports,
    RunMeta,
    Source,
    Stage,
    suite_criteria,
)
from assay.reports.qa import render_qa, write_qa_files
from assay.reports.run_tally import RunTally, spilled
from assay.reports.spill import SortedLines
from assay.reports.suite_rules import task_json_relpath
from assay.results.io import Writer
from assay.results.run import RunSummary, SecretFindingRecord, SuiteRef, TaskSelection
from assay.results.run_file import write_run_json
from assay.results.selection_file import listed_tasks
from assay.results.status import FinalStatus
from assay.results.suite import SuiteRollup
from assay.results.task_result import EvaluationResult
from assay.spec.run_names import EXPERIMENT_JSON, EXPERIMENT_MD, RUN_JSON, RUN_MD

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "Reports",
    "RunMeta",
    "Source",
    "Stage",
    "decide_exit_code",
    "secret_exit_code",
    "suite_criteria",
    "task_json_relpath",
    "write_reports",
]


def write_reports(
    run_dir: Path,
    results: Iterable[EvaluationResult] | Source,
    meta: RunMeta,
    registry: CriterionRegistry,
    *,
    junit_path: Path | None = None,
    writer: Writer | None = None,
) -> Reports:
    """Write suites (with ``prediction.jsonl``/``metrics.json`` for QA suites), ``run.json``,
    ``run.md`` (and JUnit XML) for ``results``: a list, or a function that reads the rows
    again each time it is called (:func:`assay.results.run_folder.iter_results` of the
    run folder), for runs of any size. The rows are counted as they come
    (:class:`~assay.reports.rollup.SuiteTally`, :class:`RunTally`) and listed in report order
    through a sorted spill (:class:`~assay.reports.spill.SortedLines`); only a suite with
    replicates (pass@k) is read a second time. QA suites and experiments keep a compact copy
    of their rows (their metrics need every row at once). Every file goes through ``writer``
    (the run's: its secrets redacted), then the run folder is scanned for secrets (see the
    module docstring).

    Raises:
        TaskFileError: a QA suite's metrics hook failed; every other file is written first.
        UsageError: a report could not be written (the disk is full).
    """
    writer = writer if writer is not None else Writer.shapes_only()
    source: Source = results if callable(results) else _listed(list(results))
    with SortedLines() as lines:
        tally = RunTally(meta, registry)
        for result in source():
            tally.add(result, lines)
        if any(t.has_replicates for t in tally.suites.values()):
            for result in source():
                suite = tally.suites.get((result.variant_id, result.suite_id or ""))
                if suite is not None and suite.has_replicates:
                    suite.add_pass_k(result)
        try:
            return _write(run_dir, tally, lines, meta, junit_path, writer)
        except OSError as exc:  # a full disk, a folder made read-only: said, not a traceback
            raise UsageError(
                f"cannot write the reports into {run_dir}: {exc}",
                hint="the finished rows are kept: free space (or make the folder "
                "writable), then `assay report RUN_DIR` writes the reports, and "
                "`assay run --resume RUN_DIR --retry-errors` runs what never ran or could "
                "not be saved",
            ) from None


def _listed(results: list[EvaluationResult]) -> Source:
    return lambda: results


def _write(
    run_dir: Path,
    tally: RunTally,
    lines: SortedLines,
    meta: RunMeta,
    junit_path: Path | None,
    writer: Writer,
) -> Reports:
    selections = {s.task_id: s for s in meta.selections}
    suites: list[SuiteRollup] = []
    errors: list[TaskFileError] = []
    for variant, suite_id in tally.suite_order():
        chosen = selections.get(suite_id)
        counted = tally.suite(variant, suite_id)
        suite = counted.build(suite_id=suite_id, variant_id=variant,
                              dataset=chosen.dataset if chosen else None,
                              selection=chosen.selection if chosen else None,
                              rows_planned=meta.planned.get(f"{variant}/{suite_id}"))  # fmt: skip
        suite.criteria = meta.criteria.get(suite_id)
        suite.warnings += _task_file_warnings(meta.warnings, chosen, suite.warnings)
        folder = suite_dir(run_dir, variant, suite_id)
        qa = write_qa_files(folder, tally.qa_rows.get((variant, suite_id), []),
                            warnings=meta.warnings, writer=writer)  # fmt: skip
        if qa is not None and qa.error is not None:
            errors.append(qa.error)
            suite.passed = False  # its metrics were not written: it cannot be green
            suite.result_reasons.append("the QA metrics hook failed (metrics.json not written)")
        writer.json(folder / "suite.json", suite)
        extra = render_qa(qa.document) if qa is not None and qa.document is not None else ""
        if qa is not None and qa.error is not None:
            extra = ("\n## QA metrics\n\n**Not written**: the metrics hook failed: "
                     f"{qa.error.render()}. Fix it, then `assay report RUN_DIR`.\n")  # fmt: skip
        writer.text(folder / "suite.md", render_suite(suite) + extra)
        suites.append(suite)
    if meta.experiment_id is not None:
        _write_experiment(run_dir, tally.kept, {id(r): task_json_relpath(r) for r in tally.kept},
                          meta, writer)  # fmt: skip
    exit_code = decide_exit_code(tally.standalone_results(), suites, meta)
    if errors:  # the exit the run will have (a hook failure is invalid input), recorded so
        exit_code = EXIT_INVALID
    summary = tally.summary(suites, [_suite_ref(s) for s in suites], exit_code)
    _write_summary(run_dir, summary, tally, lines, writer)
    if junit_path is not None:
        _write_junit(junit_path, tally, lines, suites, writer)
    findings = writer.scan(run_dir, extra_files=[junit_path] if junit_path else [])
    if findings:
        exit_code = secret_exit_code(exit_code)
        summary = summary.model_copy(update={
            "exit_code": exit_code,
            "secret_findings": [SecretFindingRecord(file=f.file, line=f.line, kind=f.kind)
                                for f in findings],
        })  # fmt: skip
        _write_summary(run_dir, summary, tally, lines, writer)
    if errors:  # every other report is written: fix the hook, then `assay report RUN_DIR`
        raise errors[0]
    return Reports(summary, suites, exit_code, findings)


def secret_exit_code(exit_code: int) -> int:
    """The exit code once a secret was found in a run folder: 1 where it would have been 0;
    a failure (1), an invalid input (2) or an interruption (130) keeps its own code."""
    return EXIT_FAILED if exit_code == EXIT_OK else exit_code


def _write_summary(
    run_dir: Path, summary: RunSummary, tally: RunTally, lines: SortedLines, writer: Writer
) -> None:
    """``run.json`` with its rows in report order (one per line), and ``run.md``."""
    rows = (spilled(line)[1] for line in lines.sorted())
    write_run_json(run_dir / RUN_JSON, summary, rows, writer=writer)
    shown = summary.model_copy(update={"task_results": tally.standalone_rows})
    writer.text(run_dir / RUN_MD, render_run(shown))


def _write_junit(
    path: Path,
    tally: RunTally,
    lines: SortedLines,
    suites: Sequence[SuiteRollup],
    writer: Writer,
) -> None:
    """The JUnit XML, one test suite per (variant, suite or task) in report order."""
    gates = {(s.variant_id, s.suite_id): s for s in suites}
    with writer.open(path) as out:  # in place whole, or not at all
        junit = JunitWriter(out)
        rows = (spilled(line) for line in lines.sorted())
        for (variant, name), cases in itertools.groupby(rows, key=lambda r: r[0]):
            junit.suite(variant, name, tally.junit[(variant, name)], (c[2] for c in cases),
                         gates.get((variant, name)))  # fmt: skip
        junit.close()


def _write_experiment(
    run_dir: Path,
    results: Sequence[EvaluationResult],
    paths: dict[int, str],
    meta: RunMeta,
    writer: Writer,
) -> None:
    from assay.orchestration.running.stopping import read_stopping
    from assay.reports.experiment import build_experiment  # numpy/scipy
    from assay.reports.judged import add_judged_differences

    assert meta.experiment_id is not None
    listed = listed_tasks(run_dir, meta.selections)
    report = build_experiment(
        results,
        paths,
        experiment_id=meta.experiment_id,
        description=meta.experiment_description,
        variant_ids=meta.variant_ids,
        row_ids={task_id: chosen.selection.row_ids for task_id, chosen in listed.items()},
        cluster_fields={
            task_id: chosen.dataset.cluster_field for task_id, chosen in listed.items()
        },
        sequence=meta.sequence,
    )
    add_judged_differences(report, lambda variant, suite: run_dir / variant / suite / "suite.json")
    report.stopping = read_stopping(run_dir)
    writer.json(run_dir / EXPERIMENT_JSON, report)
    writer.text(run_dir / EXPERIMENT_MD, render_experiment(report))


def _task_file_warnings(
    warnings: list[str], chosen: TaskSelection | None, known: list[str]
) -> list[str]:
    """The run's warnings about the suite's own task file (``FILE:LINE: …``: a criterion
    ``--skip-unsupported`` left out with its gates, a field without effect), so a CI that
    reads only ``suite.json`` sees them too."""
    if chosen is None:
        return []
    source = Path(chosen.source_file).as_posix()

    def names_it(warning: str) -> bool:  # (a warning names the file as the command line did)
        named = warning.partition(":")[0]
        return bool(named) and (source == named or source.endswith("/" + named.lstrip("./")))

    return [w for w in dict.fromkeys(warnings) if names_it(w) and w not in known]


def _suite_ref(suite: SuiteRollup) -> SuiteRef:
    failed = [
        f"{agg.criterion_type}.{check.metric}"
        for agg in suite.criterion_aggregates
        for check in agg.threshold_checks
        if not check.passed
    ]
    return SuiteRef(
        suite_id=suite.suite_id,
        variant_id=suite.variant_id,
        passed=suite.passed,
        gate=suite.gate,
        failed_gates=failed,
        reasons=suite.result_reasons,
        suite_json=f"{suite.variant_id}/{suite.suite_id}/suite.json",
        awaiting_grading=suite.awaiting_grading,
    )


def decide_exit_code(
    results: Iterable[EvaluationResult], suites: Sequence[SuiteRollup], meta: RunMeta
) -> int:
    """The exit codes of the docs: 130 when this invocation was interrupted (a run, or an
    ``assay evaluate`` stopped while grading: :data:`GRADING_STOPPED`); for a suite
    whose rows await ``assay evaluate`` (:attr:`SuiteRollup.awaiting_grading`: ``assay
    execute``, no gate to decide) 1 when a row errored or refused and the suite does not
    gate ``completion_rate``, or a row never ran; for any other suite 1 when it is not
    green (:func:`assay.reports.rollup.suite_result`: a failed gate; rows that errored or
    refused in a suite that does not gate ``completion_rate``; any row that did not succeed
    in a suite without a gate; rows that never ran); 1 when a task without a dataset did
    not succeed (``NOT_GRADED`` aside); else 0. The rule follows the rows, not the command,
    so an executed run graded since and resumed exits as its reports read. An outage can
    never pass CI."""
    if meta.interrupted and meta.stage in ("run", "execute"):
        return EXIT_INTERRUPTED
    if meta.stage == "evaluate" and GRADING_STOPPED in meta.warnings:
        return EXIT_INTERRUPTED
    if any(_awaiting_broken(s) if s.awaiting_grading else not s.passed for s in suites):
        return EXIT_FAILED
    standalone = [r for r in results if r.suite_id is None]
    if any(r.final_status not in (FinalStatus.SUCCESS, FinalStatus.NOT_GRADED)
           for r in standalone):  # fmt: skip
        return EXIT_FAILED
    return EXIT_OK


def _awaiting_broken(suite: SuiteRollup) -> bool:
    """A suite not graded yet is red when rows never ran, or errored or refused where it
    does not gate ``completion_rate``."""
    return bool(suite.rows_missing or ((suite.rows_error or suite.rows_refused)
                                       and not _gates_completion(suite)))  # fmt: skip


def _gates_completion(suite: SuiteRollup) -> bool:
    """The suite gates ``completion_rate`` itself (its criteria as the run recorded them), so
    that gate, not each errored row, decides whether it is green."""
    return any("completion_rate" in (c.get("suite_thresholds") or {}) for c in suite.criteria or [])
