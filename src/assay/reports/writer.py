"""Write every report of a run from its row results: suites, ``run.json``/``run.md``, JUnit.

The same function serves ``assay run`` (at the end of the run), ``assay evaluate`` (after
re-grading) and ``assay report`` (rebuilding from the ``task.json`` files), so the reports
never depend on how the results were obtained.

Every file is written through the run's redactor, and the run folder (with the JUnit file)
is then scanned for secrets (:mod:`assay.results.secret_scan`): a secret found is listed in
``run.json`` (``secret_findings``, file and line, never the value) and ``run.md``, and makes
the exit code 1 where it would have been 0, so a leak never passes silently.
"""

from __future__ import annotations

import platform
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter

from assay.criteria.base import CriterionRegistry
from assay.errors import TaskFileError
from assay.orchestration.rundir import suite_dir
from assay.reports.junit import write_junit
from assay.reports.markdown import render_experiment, render_run, render_suite
from assay.reports.qa import render_qa, write_qa_files
from assay.reports.rollup import build_suite, order_key
from assay.results.io import write_json_atomic, write_text_atomic
from assay.results.run import (
    RunSummary,
    SecretFindingRecord,
    SkippedTask,
    SuiteRef,
    TaskRow,
    TaskSelection,
)
from assay.results.secret_scan import SecretFinding, scan_run
from assay.results.secrets import Redactor
from assay.results.status import FinalStatus, RowCounts
from assay.results.suite import SuiteRollup
from assay.results.task_result import EvaluationResult, JudgeCriterionResult, TokenUsage
from assay.spec.criteria import Criterion, CriterionSpec

Stage = Literal["run", "execute", "evaluate", "report"]
_CRITERIA = TypeAdapter(list[Criterion])

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


@dataclass
class RunMeta:
    """Facts about the invocation that the row results do not carry."""

    run_id: str
    stage: Stage
    start_time: datetime
    end_time: datetime
    max_parallel: int
    command: list[str] = field(default_factory=list)
    skipped: list[SkippedTask] = field(default_factory=list)
    selections: list[TaskSelection] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    criteria: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    active_seconds: float | None = None
    sessions: int = 1
    planned: dict[str, int] = field(default_factory=dict)
    experiment_id: str | None = None
    experiment_description: str = ""
    variant_ids: list[str] = field(default_factory=list)


@dataclass
class Reports:
    """What was written, the exit code it implies, and the secrets the scan found."""

    summary: RunSummary
    suites: list[SuiteRollup]
    exit_code: int
    secret_findings: list[SecretFinding] = field(default_factory=list)


def task_json_relpath(result: EvaluationResult) -> str:
    """``<variant>/<suite>/<row>/<NN>/task.json`` (or ``<variant>/<task>/<NN>/…``), POSIX."""
    parts = [result.variant_id]
    if result.suite_id is not None and result.row_id is not None:
        parts += [result.suite_id, result.row_id]
    else:
        parts.append(result.task_id)
    parts += [f"{result.replicate_index:02d}", "task.json"]
    return "/".join(parts)


def suite_criteria(
    suite_id: str, members: Sequence[EvaluationResult], meta: RunMeta
) -> list[CriterionSpec]:
    """The suite's criteria as written (before substitution) when known, else as the first
    row resolved them."""
    raw = meta.criteria.get(suite_id)
    if raw is None:
        raw = members[0].task_config.resolved.get("success_criteria", []) if members else []
    return list(_CRITERIA.validate_python(raw))


def write_reports(
    run_dir: Path,
    results: Sequence[EvaluationResult],
    meta: RunMeta,
    registry: CriterionRegistry,
    *,
    junit_path: Path | None = None,
    redactor: Redactor | None = None,
) -> Reports:
    """Write suites (with ``prediction.jsonl``/``metrics.json`` for QA suites), ``run.json``,
    ``run.md`` (and JUnit XML) for ``results``, every known secret redacted, then scan the
    run folder for secrets (see the module docstring).

    Raises:
        TaskFileError: a QA suite's metrics hook failed; every other file is written first.
    """
    redactor = redactor or Redactor()
    variants = {v: i for i, v in enumerate(meta.variant_ids)}
    ordered = sorted(
        results,
        key=lambda r: (variants.get(r.variant_id, len(variants)), r.variant_id,
                       r.suite_id or r.task_id, order_key(r)),
    )  # fmt: skip
    paths = {id(r): task_json_relpath(r) for r in ordered}
    selections = {s.task_id: s for s in meta.selections}
    groups: dict[tuple[str, str], list[EvaluationResult]] = defaultdict(list)
    for result in ordered:
        if result.suite_id is not None:
            groups[(result.variant_id, result.suite_id)].append(result)
    for key in meta.planned:  # a suite none of whose rows finished still gets its report
        variant, _, suite_id = key.partition("/")
        groups.setdefault((variant, suite_id), [])
    suites: list[SuiteRollup] = []
    refs: list[SuiteRef] = []
    errors: list[TaskFileError] = []
    for (variant, suite_id), members in groups.items():
        chosen = selections.get(suite_id)
        suite = build_suite(
            suite_id=suite_id,
            variant_id=variant,
            results=members,
            criteria=suite_criteria(suite_id, members, meta),
            registry=registry,
            task_json_paths=paths,
            dataset=chosen.dataset if chosen else None,
            selection=chosen.selection if chosen else None,
            rows_planned=meta.planned.get(f"{variant}/{suite_id}"),
        )
        suite.criteria = meta.criteria.get(suite_id)
        folder = suite_dir(run_dir, variant, suite_id)
        qa = write_qa_files(folder, members, warnings=meta.warnings, redactor=redactor)
        if qa is not None and qa.error is not None:
            errors.append(qa.error)
        write_json_atomic(folder / "suite.json", suite, redactor=redactor)
        extra = render_qa(qa.document) if qa is not None and qa.document is not None else ""
        if qa is not None and qa.error is not None:
            extra = ("\n## QA metrics\n\n**Not written**: the metrics hook failed: "
                     f"{qa.error.render()}. Fix it, then `assay report RUN_DIR`.\n")  # fmt: skip
        write_text_atomic(folder / "suite.md", render_suite(suite) + extra, redactor=redactor)
        suites.append(suite)
        refs.append(_suite_ref(suite))
    if meta.experiment_id is not None:
        _write_experiment(run_dir, ordered, paths, meta, redactor)
    exit_code = decide_exit_code(ordered, suites, meta)
    summary = _summary(ordered, suites, refs, meta, paths, exit_code)
    _write_summary(run_dir, summary, redactor)
    if junit_path is not None:
        write_junit(junit_path, ordered, suites, redactor=redactor)
    findings = scan_run(run_dir, redactor, extra_files=[junit_path] if junit_path else [])
    if findings:
        exit_code = secret_exit_code(exit_code)
        summary = summary.model_copy(update={
            "exit_code": exit_code,
            "secret_findings": [SecretFindingRecord(file=f.file, line=f.line, kind=f.kind)
                                for f in findings],
        })  # fmt: skip
        _write_summary(run_dir, summary, redactor)
    if errors:  # every other report is written: fix the hook, then `assay report RUN_DIR`
        raise errors[0]
    return Reports(summary, suites, exit_code, findings)


def secret_exit_code(exit_code: int) -> int:
    """The exit code once a secret was found in a run folder: 1 where it would have been 0;
    a failure (1), an invalid input (2) or an interruption (130) keeps its own code."""
    return EXIT_FAILED if exit_code == EXIT_OK else exit_code


def _write_summary(run_dir: Path, summary: RunSummary, redactor: Redactor) -> None:
    write_json_atomic(run_dir / "run.json", summary, redactor=redactor)
    write_text_atomic(run_dir / "run.md", render_run(summary), redactor=redactor)


def _write_experiment(
    run_dir: Path,
    results: Sequence[EvaluationResult],
    paths: dict[int, str],
    meta: RunMeta,
    redactor: Redactor,
) -> None:
    from assay.reports.experiment import build_experiment  # numpy/scipy: only when needed

    assert meta.experiment_id is not None
    report = build_experiment(
        results,
        paths,
        experiment_id=meta.experiment_id,
        description=meta.experiment_description,
        variant_ids=meta.variant_ids,
        row_ids={s.task_id: s.selection.row_ids for s in meta.selections},
    )
    write_json_atomic(run_dir / "experiment.json", report, redactor=redactor)
    write_text_atomic(run_dir / "experiment.md", render_experiment(report), redactor=redactor)


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
    )


def decide_exit_code(
    results: Sequence[EvaluationResult], suites: Sequence[SuiteRollup], meta: RunMeta
) -> int:
    """DESIGN.md "Exit codes": 130 when this invocation was interrupted; 0 for ``execute``;
    else 1 when a suite is not green (:func:`assay.reports.rollup.suite_result`: a failed
    gate; rows that errored or refused in a suite that does not gate ``completion_rate``;
    any row that did not succeed in a suite without a gate; rows that never ran) or a task
    without a dataset did not succeed, and 0 otherwise. An outage can never pass CI."""
    if meta.interrupted and meta.stage in ("run", "execute"):
        return EXIT_INTERRUPTED
    if meta.stage == "execute":
        return EXIT_OK
    if any(not s.passed for s in suites):
        return EXIT_FAILED
    standalone = [r for r in results if r.suite_id is None]
    if any(r.final_status is not FinalStatus.SUCCESS for r in standalone):
        return EXIT_FAILED
    return EXIT_OK


def macro_pass_rate(
    results: Sequence[EvaluationResult], suites: Sequence[SuiteRollup]
) -> float | None:
    """The mean of the suites' pass rates; each task without a dataset is a suite of its
    replicates; suites that graded nothing are left out (``None`` when none graded)."""
    rates = [s.pass_rate for s in suites if s.pass_rate is not None]
    standalone: dict[tuple[str, str], list[FinalStatus]] = defaultdict(list)
    for result in results:
        if result.suite_id is None:
            standalone[(result.variant_id, result.task_id)].append(result.final_status)
    for statuses in standalone.values():
        rate = RowCounts.of(statuses).pass_rate
        if rate is not None:
            rates.append(rate)
    return sum(rates) / len(rates) if rates else None


def _token_total(results: Sequence[EvaluationResult]) -> TokenUsage:
    total = TokenUsage()
    for result in results:
        usage = result.total_token_usage
        if usage is not None:
            for name in TokenUsage.model_fields:
                setattr(total, name, getattr(total, name) + getattr(usage, name))
    return total


def _summary(
    results: Sequence[EvaluationResult],
    suites: Sequence[SuiteRollup],
    refs: list[SuiteRef],
    meta: RunMeta,
    paths: dict[int, str],
    exit_code: int,
) -> RunSummary:
    from assay import __version__

    counts = RowCounts.of(r.final_status for r in results)
    total = len(results)
    return RunSummary(
        run_id=meta.run_id,
        stage=meta.stage,
        start_time=meta.start_time.isoformat(),
        end_time=meta.end_time.isoformat(),
        total_duration_seconds=meta.active_seconds
        if meta.active_seconds is not None
        else (meta.end_time - meta.start_time).total_seconds(),
        sessions=meta.sessions,
        total_token_usage=_token_total(results),
        tasks_run=total,
        tasks_succeeded=counts.passed,
        tasks_failed=counts.failed,
        tasks_error=counts.error,
        tasks_refused=counts.refused,
        tasks_not_graded=counts.not_graded,
        tasks_graded=counts.graded,
        pass_rate=counts.pass_rate,
        pass_rate_macro=macro_pass_rate(results, suites),
        refusal_rate=counts.refusal_rate,
        error_share=counts.error / total if total else None,
        tasks_token_budget_exceeded=sum(
            1 for r in results if r.final_status is FinalStatus.TOKEN_BUDGET_EXCEEDED
        ),
        tasks_timeout=sum(1 for r in results if r.final_status is FinalStatus.TIMEOUT),
        tasks_cost_budget_exceeded=sum(
            1 for r in results if r.final_status is FinalStatus.COST_BUDGET_EXCEEDED
        ),
        total_cost_usd=sum(r.cost_usd for r in results if r.cost_usd is not None)
        if any(r.cost_usd is not None for r in results)
        else None,
        cost_complete=all(
            r.cost_usd is not None for r in results if r.agent.model_calls and r.total_token_usage
        ),
        rows_usage_from_cli=sum(
            1 for r in results if r.transcript is not None and r.transcript.usage_source == "cli"
        ),
        interrupted=meta.interrupted,
        exit_code=exit_code,
        max_parallel=meta.max_parallel,
        command=meta.command,
        skipped_tasks=meta.skipped,
        selections=meta.selections,
        suites=refs,
        judges=judges_of(results),
        task_criteria=meta.criteria,
        warnings=meta.warnings,
        task_results=[
            TaskRow(
                task_id=r.task_id,
                suite_id=r.suite_id,
                row_id=r.row_id,
                variant_id=r.variant_id,
                replicate_index=r.replicate_index,
                final_status=r.final_status.value,
                weighted_score=r.weighted_score,
                duration_seconds=r.duration_seconds,
                task_json=paths[id(r)],
            )
            for r in results
        ],
        framework_version=__version__,
        environment_info={
            "python": sys.version.split()[0],
            "platform": platform.platform(),
        },
    )


def judges_of(results: Sequence[EvaluationResult]) -> list[dict[str, Any]]:
    """Every judge that graded a row (``JudgeRef`` data: name, version, content hash, source,
    model), each once, in the order first met."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for result in results:
        for item in result.success_criteria_results:
            if isinstance(item, JudgeCriterionResult):
                key = (item.judge.name, item.judge.content_hash)
                seen.setdefault(key, item.judge.model_dump(mode="json"))
    return list(seen.values())
