"""Roll the row results of one suite (one variant) up into a ``SuiteRollup``.

Counting follows Coder Eval (``reference/originals.md`` §1.4–1.5) with one rule for what did
not grade (:class:`~assay.results.status.RowCounts`): the status categories (passed, failed,
error, refused, not graded) and the rows that never ran sum to ``rows_total``;
``pass_rate = rows_passed / rows_graded`` (``null`` when nothing was graded);
``average_weighted_score`` averages graded rows only. Criteria aggregate **by position**:
result ``i`` of each row belongs to criterion ``i``. A result that did not grade (an error, a
refusal) and a row without that result (errored before grading, not graded, never ran) count
in ``rows_total``, are excluded from the criterion's denominator and from every average, and
are visible through ``completion_rate``, ``rows_excluded`` and the counts in ``details``. A
gate passes when its metric exists and reaches the minimum; a metric never produced fails
its gate. Whether the suite is green follows DESIGN.md "Exit codes" (:func:`suite_result`).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Literal

from assay.criteria.base import CriterionRegistry
from assay.data.substitute import PLACEHOLDER
from assay.metrics.passk import suite_pass_k
from assay.metrics.values import MetricTable
from assay.orchestration.thresholds import check_gate
from assay.results.secrets import clip_head
from assay.results.status import FinalStatus, RowCounts
from assay.results.suite import (
    CriterionAggregate,
    CriterionStat,
    DatasetRecord,
    FailedRowSummary,
    ReplicateRollup,
    SelectionRecord,
    SuiteRollup,
)
from assay.results.task_result import CriterionResult, EvaluationResult, QaCriterionResult
from assay.spec.criteria import CriterionSpec

FAILED_SAMPLE_LIMIT = 20
NOT_GRADED_ERROR = "no row was graded (run `assay evaluate RUN_DIR` to grade them)"
NO_ROWS_ERROR = (
    "no row was graded by this criterion (every row errored, or the criterion could not evaluate)"
)
EMPTY_SUITE_ERROR = "the suite has no rows"


def order_key(result: EvaluationResult) -> tuple[int, int, str]:
    """Dataset order, then replicate: the order of every report."""
    return (result.row_index if result.row_index is not None else -1, result.replicate_index,
            result.task_id)  # fmt: skip


def build_suite(
    *,
    suite_id: str,
    variant_id: str,
    results: Sequence[EvaluationResult],
    criteria: Sequence[CriterionSpec],
    registry: CriterionRegistry,
    task_json_paths: dict[int, str],
    dataset: DatasetRecord | None = None,
    selection: SelectionRecord | None = None,
    rows_planned: int | None = None,
) -> SuiteRollup:
    """The roll-up of ``results`` (every row of one suite in one variant).

    Args:
        suite_id: the task file's ``task_id``.
        variant_id: the variant.
        results: the rows' results, any order (they are sorted into dataset order).
        criteria: the task's criteria, in declaration order.
        registry: checkers, which aggregate their criterion.
        task_json_paths: ``id(result)`` → its ``task.json`` path relative to the run dir.
        dataset: where the rows came from.
        selection: which rows the run selected.
        rows_planned: the work items the run planned for this suite; rows that never ran
            (an interrupted run) count in ``rows_total`` as ``rows_missing``, and the suite
            cannot pass until they do.
    """
    ordered = sorted(results, key=order_key)
    counts = RowCounts.of(r.final_status for r in ordered)
    scores = [r.weighted_score for r in ordered
              if r.final_status.graded and r.weighted_score is not None]  # fmt: skip
    missing = max(0, (rows_planned or 0) - len(ordered))
    aggregates = [
        aggregate_criterion(position, spec, ordered, registry, rows_planned=rows_planned)
        for position, spec in enumerate(criteria)
    ]
    failed = [r for r in ordered if r.final_status.category in ("failed", "error", "refused")]
    gate, reasons = suite_result(criteria, aggregates, counts, missing)
    return SuiteRollup(
        suite_id=suite_id,
        variant_id=variant_id,
        rows_total=len(ordered) + missing,
        rows_missing=missing,
        rows_passed=counts.passed,
        rows_failed=counts.failed,
        rows_error=counts.error,
        rows_refused=counts.refused,
        rows_not_graded=counts.not_graded,
        rows_graded=counts.graded,
        pass_rate=counts.pass_rate,
        refusal_rate=counts.refusal_rate,
        average_weighted_score=statistics.fmean(scores) if scores else None,
        criterion_stats=_criterion_stats(ordered),
        failed_samples=[
            _failed_summary(r, task_json_paths[id(r)]) for r in failed[:FAILED_SAMPLE_LIMIT]
        ],
        failed_samples_total=len(failed),
        criterion_aggregates=aggregates,
        gate=gate,
        passed=not reasons,
        result_reasons=reasons,
        warnings=[w for a in aggregates for w in a.details.get("warnings", [])],
        dataset=dataset,
        selection=selection,
        **_replicate_fields(ordered, criteria, registry),
    )


def suite_result(
    criteria: Sequence[CriterionSpec],
    aggregates: Sequence[CriterionAggregate],
    counts: RowCounts,
    missing: int,
) -> tuple[Literal["passed", "failed", "none"], list[str]]:
    """The suite's gate and why it is not green (empty: green), by DESIGN.md "Exit codes".

    A suite with ``suite_thresholds`` is decided by its gate, except that rows that errored or
    refused make it red unless it gates ``completion_rate`` itself (then that gate decides); a
    suite without thresholds has no gate and is green only when every row succeeded
    (Coder Eval's rule). Rows that never ran make any suite red.
    """
    reasons = [f"{missing} planned row(s) never ran"] if missing else []
    if not any(spec.suite_thresholds for spec in criteria):
        if counts.total > counts.passed:
            reasons.append(f"no gate, and {_not_succeeded(counts)}")
        return "none", reasons
    failed_checks = [
        f"{a.criterion_type}.{c.metric} {_value(c.actual_value)}, needs {c.min_value:g}"
        for a in aggregates
        for c in a.threshold_checks
        if not c.passed
    ]
    gate_errors = [a.error for a in aggregates if a.error and a.threshold_checks]
    passed = all(a.passed for a in aggregates)
    if not passed:
        reasons.append("gate failed: " + "; ".join(failed_checks or gate_errors or ["?"]))
    gates_completion = any("completion_rate" in (s.suite_thresholds or {}) for s in criteria)
    if counts.did_not_grade and not gates_completion:
        reasons.append(f"{_did_not_grade(counts)}, and the suite does not gate completion_rate")
    return ("passed" if passed else "failed"), reasons


def _value(value: float | None) -> str:
    return "was not produced" if value is None else f"{value:.6g}"


def _did_not_grade(counts: RowCounts) -> str:
    parts = [f"{counts.error} row(s) errored"] if counts.error else []
    if counts.refused:
        parts.append(f"{counts.refused} refused")
    return " and ".join(parts)


def _not_succeeded(counts: RowCounts) -> str:
    parts = [f"{counts.failed} failed"] if counts.failed else []
    parts += [f"{counts.error} errored"] if counts.error else []
    parts += [f"{counts.refused} refused"] if counts.refused else []
    parts += [f"{counts.not_graded} not graded"] if counts.not_graded else []
    return f"{', '.join(parts)} (every row must succeed)"


REPLICATE_METRICS = ("accuracy", "macro_f1", "mean")


def _replicate_fields(
    results: Sequence[EvaluationResult],
    criteria: Sequence[CriterionSpec],
    registry: CriterionRegistry,
) -> dict[str, Any]:
    """Per-replicate roll-ups and pass@k / pass^k, when the suite has replicates."""
    replicates = sorted({r.replicate_index for r in results})
    if len(replicates) <= 1:
        return {}
    per: list[ReplicateRollup] = []
    for index in replicates:
        members = [r for r in results if r.replicate_index == index]
        counts = RowCounts.of(r.final_status for r in members)
        metrics = [
            {k: v for k, v in aggregate_criterion(i, spec, members, registry).metrics.items()
             if k in REPLICATE_METRICS}
            for i, spec in enumerate(criteria)
        ]  # fmt: skip
        per.append(ReplicateRollup(
            replicate_index=index, rows_total=len(members), rows_passed=counts.passed,
            rows_graded=counts.graded, pass_rate=counts.pass_rate, criterion_metrics=metrics,
        ))  # fmt: skip
    by_row: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for result in results:
        if result.final_status.graded:
            tally = by_row[result.task_id]
            tally[0] += 1
            tally[1] += result.final_status.category == "passed"
    return {"replicates": len(replicates), "per_replicate": per,
            "pass_k": suite_pass_k([(n, c) for n, c in by_row.values()])}  # fmt: skip


def aggregate_criterion(
    position: int,
    spec: CriterionSpec,
    results: Sequence[EvaluationResult],
    registry: CriterionRegistry,
    *,
    rows_planned: int | None = None,
) -> CriterionAggregate:
    """Aggregate criterion ``position`` over the rows where it evaluated.

    A row counts in the criterion's denominator only when the criterion ran and graded it
    (no ``error``, no refusal). Rows that errored before grading, rows whose criterion could
    not evaluate or met a refusal, and rows that never ran (``rows_planned`` above the
    results) are excluded; they count in ``rows_total`` and lower ``completion_rate``, and
    ``details`` counts ``criterion_errors`` and ``refused`` apart.
    """
    rows_total = max(rows_planned or 0, len(results))
    present = [
        r.success_criteria_results[position]
        for r in results
        if len(r.success_criteria_results) > position
    ]
    skipped = sum(1 for item in present if item.evaluation_status == "skipped")
    present = [item for item in present if item.evaluation_status != "skipped"]
    per_row: list[CriterionResult] = [item for item in present if item.graded]
    table, details = registry.get(spec.type).aggregate(spec, per_row)
    errors = sum(1 for item in present if item.grader_failed)
    refused = sum(1 for item in present if item.refused)
    judge_errors = sum(1 for item in present if (item.error or "").startswith("judge_error"))
    if errors:
        details = {**details, "criterion_errors": errors}
    if judge_errors:
        details = {**details, "judge_errors": judge_errors}
    if refused:
        details = {**details, "refused": refused}
    if skipped:
        details = {**details, "skipped": skipped}
    completion = MetricTable()
    completion.put("completion_rate", len(per_row), rows_total, "the suite has no rows")
    table.merge(completion)
    checks = [check_gate(m, v, table.values) for m, v in (spec.suite_thresholds or {}).items()]
    error = _aggregate_error(results, per_row, gated=bool(checks))
    return CriterionAggregate(
        criterion_type=spec.type,
        description=suite_description(spec.description, present),
        rows_total=rows_total,
        rows_excluded=rows_total - len(per_row),
        metrics=dict(sorted(table.values.items())),
        undefined_metrics=dict(sorted(table.undefined.items())),
        threshold_checks=checks,
        passed=all(c.passed for c in checks) and not (error and checks),
        details=details,
        error=error,
    )


def _aggregate_error(
    results: Sequence[EvaluationResult], per_row: list[CriterionResult], *, gated: bool
) -> str | None:
    if per_row:
        return None
    if not results:
        error = EMPTY_SUITE_ERROR
    elif all(r.final_status is FinalStatus.NOT_GRADED for r in results):
        error = NOT_GRADED_ERROR
    else:
        error = NO_ROWS_ERROR
    return error + (", so its thresholds fail" if gated else "")


def suite_description(template: str, present: Sequence[CriterionResult]) -> str:
    """A criterion's description for the whole suite: the rows' own (substituted) text when
    they all agree, else the template with each ``${row.x}`` shown as ``<x>``."""
    if not PLACEHOLDER.search(template):
        return template
    texts = {item.description for item in present}
    if len(texts) == 1:
        return texts.pop()
    return PLACEHOLDER.sub(lambda match: f"<{match.group(1)}>", template)


def _criterion_stats(results: Sequence[EvaluationResult]) -> list[CriterionStat]:
    by_type: dict[str, list[CriterionResult]] = defaultdict(list)
    for result in results:
        for item in result.success_criteria_results:
            by_type[item.criterion_type].append(item)
    stats = []
    for name, items in sorted(by_type.items()):
        graded = [i.score for i in items if i.graded]
        stats.append(CriterionStat(
            criterion_type=name, rows_evaluated=len(graded),
            average_score=statistics.fmean(graded) if graded else None,
            error_count=sum(1 for i in items if i.grader_failed),
            refused_count=sum(1 for i in items if i.refused),
        ))  # fmt: skip
    return stats


def failure_reasons(result: EvaluationResult) -> list[str]:
    """Why a row did not pass: criteria with an error, a refusal or a score below 1.0."""
    reasons = []
    for item in result.success_criteria_results:
        if item.error:
            reasons.append(f"{item.criterion_type}: {item.error}")
        elif item.refused:
            reasons.append(f"{item.criterion_type}: refused")
        elif item.score < 1.0:
            reasons.append(item.details.splitlines()[0] if item.details else item.criterion_type)
    return reasons


ANSWER_SHOWN = 200


def qa_answer(result: EvaluationResult) -> tuple[str | None, str | None]:
    """A QA row's answer (its extracted letters with their texts, else the response) and
    the expected one (the correct letters with their texts, else the accepted answers)."""
    record = result.qa_record
    if record is None:
        return None, None
    options: dict[str, str] = record.get("options") or {}
    graded = next((c for c in result.success_criteria_results
                   if isinstance(c, QaCriterionResult)), None)  # fmt: skip
    letters = (graded.sample_result.get("extracted") if graded else None) or []
    content = (record.get("pred") or {}).get("content")
    if letters:
        answer: str | None = ", ".join(f"{x}. {options.get(x, '?')}" for x in letters)
    else:
        answer = None if content is None else _shorten(content)
    correct = record.get("correct_letters") or []
    if correct:
        expected: str | None = ", ".join(f"{x}. {options.get(x, '?')}" for x in correct)
    elif record.get("prompt_type") == "open_unanswerable":
        expected = "an abstention (the story does not answer it)"
    else:
        expected = " | ".join(record.get("correct_answers") or []) or None
    return answer, expected


def _shorten(text: str) -> str:
    text = text.strip()
    return clip_head(text, ANSWER_SHOWN)


def _failed_summary(result: EvaluationResult, relpath: str) -> FailedRowSummary:
    answer, expected = qa_answer(result)
    return FailedRowSummary(
        answer=answer,
        expected=expected,
        row_id=result.row_id,
        task_id=result.task_id,
        final_status=result.final_status.value,
        weighted_score=result.weighted_score,
        failure_reasons=failure_reasons(result),
        error_message=result.error_message,
        task_json_relpath=relpath,
        replicate_index=result.replicate_index,
    )
