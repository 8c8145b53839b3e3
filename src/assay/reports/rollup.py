"""Roll the row results of one suite (one variant) up into a ``SuiteRollup``.

Counting follows Coder Eval (``reference/originals.md`` §1.4–1.5): the four status categories
sum to ``rows_total``; ``pass_rate = rows_passed / rows_graded`` (``null`` when nothing was
graded). Criteria aggregate **by position**: result ``i`` of each row belongs to criterion
``i``. Rows without that result (errored before grading, or not graded) are counted in
``rows_total``, excluded from the criterion's denominator, and visible through
``completion_rate`` and ``rows_excluded``. A gate passes when its metric exists and reaches
the minimum; a metric never produced fails its gate.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from assay.criteria.base import CriterionRegistry
from assay.metrics.passk import suite_pass_k
from assay.metrics.values import MetricTable
from assay.orchestration.thresholds import check_gate
from assay.results.status import FinalStatus
from assay.results.suite import (
    CriterionAggregate,
    CriterionStat,
    DatasetRecord,
    FailedRowSummary,
    ReplicateRollup,
    SelectionRecord,
    SuiteRollup,
)
from assay.results.task_result import CriterionResult, EvaluationResult
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
    counts = _counts(ordered)
    graded = counts["passed"] + counts["failed"]
    scores = [r.weighted_score for r in ordered if r.weighted_score is not None]
    missing = max(0, (rows_planned or 0) - len(ordered))
    aggregates = [
        aggregate_criterion(position, spec, ordered, registry, rows_planned=rows_planned)
        for position, spec in enumerate(criteria)
    ]
    failed = [r for r in ordered if r.final_status.category in ("failed", "error")]
    return SuiteRollup(
        suite_id=suite_id,
        variant_id=variant_id,
        rows_total=len(ordered) + missing,
        rows_missing=missing,
        rows_passed=counts["passed"],
        rows_failed=counts["failed"],
        rows_error=counts["error"],
        rows_not_graded=counts["not_graded"],
        rows_graded=graded,
        pass_rate=counts["passed"] / graded if graded else None,
        average_weighted_score=statistics.fmean(scores) if scores else None,
        criterion_stats=_criterion_stats(ordered),
        failed_samples=[
            _failed_summary(r, task_json_paths[id(r)]) for r in failed[:FAILED_SAMPLE_LIMIT]
        ],
        failed_samples_total=len(failed),
        criterion_aggregates=aggregates,
        passed=all(a.passed for a in aggregates) and missing == 0,
        dataset=dataset,
        selection=selection,
        **_replicate_fields(ordered, criteria, registry),
    )


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
        counts = _counts(members)
        graded = counts["passed"] + counts["failed"]
        metrics = [
            {k: v for k, v in aggregate_criterion(i, spec, members, registry).metrics.items()
             if k in REPLICATE_METRICS}
            for i, spec in enumerate(criteria)
        ]  # fmt: skip
        per.append(ReplicateRollup(
            replicate_index=index, rows_total=len(members), rows_passed=counts["passed"],
            rows_graded=graded, pass_rate=counts["passed"] / graded if graded else None,
            criterion_metrics=metrics,
        ))  # fmt: skip
    by_row: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for result in results:
        if result.final_status.category in ("passed", "failed"):
            tally = by_row[result.task_id]
            tally[0] += 1
            tally[1] += result.final_status.category == "passed"
    return {"replicates": len(replicates), "per_replicate": per,
            "pass_k": suite_pass_k([(n, c) for n, c in by_row.values()])}  # fmt: skip


def _counts(results: Sequence[EvaluationResult]) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "error": 0, "not_graded": 0}
    for result in results:
        counts[result.final_status.category] += 1
    return counts


def aggregate_criterion(
    position: int,
    spec: CriterionSpec,
    results: Sequence[EvaluationResult],
    registry: CriterionRegistry,
    *,
    rows_planned: int | None = None,
) -> CriterionAggregate:
    """Aggregate criterion ``position`` over the rows where it evaluated.

    A row counts in the criterion's denominator only when the criterion ran and evaluated
    (no ``error``). Rows that errored before grading, rows whose criterion could not evaluate
    and rows that never ran (``rows_planned`` above the results) are excluded; they count in
    ``rows_total`` and lower ``completion_rate``.
    """
    rows_total = max(rows_planned or 0, len(results))
    present = [
        r.success_criteria_results[position]
        for r in results
        if len(r.success_criteria_results) > position
    ]
    per_row: list[CriterionResult] = [item for item in present if item.error is None]
    table, details = registry.get(spec.type).aggregate(spec, per_row)
    if len(per_row) < len(present):
        details = {**details, "criterion_errors": len(present) - len(per_row)}
    completion = MetricTable()
    completion.put("completion_rate", len(per_row), rows_total, "the suite has no rows")
    table.merge(completion)
    checks = [check_gate(m, v, table.values) for m, v in (spec.suite_thresholds or {}).items()]
    error = _aggregate_error(results, per_row, gated=bool(checks))
    return CriterionAggregate(
        criterion_type=spec.type,
        description=spec.description,
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


def _criterion_stats(results: Sequence[EvaluationResult]) -> list[CriterionStat]:
    by_type: dict[str, list[CriterionResult]] = defaultdict(list)
    for result in results:
        for item in result.success_criteria_results:
            by_type[item.criterion_type].append(item)
    return [
        CriterionStat(
            criterion_type=name,
            rows_evaluated=len(items),
            average_score=statistics.fmean(i.score for i in items) if items else None,
            error_count=sum(1 for i in items if i.error),
        )
        for name, items in sorted(by_type.items())
    ]


def failure_reasons(result: EvaluationResult) -> list[str]:
    """Why a row did not pass: criteria with an error or a score below 1.0."""
    reasons = []
    for item in result.success_criteria_results:
        if item.error:
            reasons.append(f"{item.criterion_type}: {item.error}")
        elif item.score < 1.0:
            reasons.append(item.details.splitlines()[0] if item.details else item.criterion_type)
    return reasons


def _failed_summary(result: EvaluationResult, relpath: str) -> FailedRowSummary:
    return FailedRowSummary(
        row_id=result.row_id,
        task_id=result.task_id,
        final_status=result.final_status.value,
        weighted_score=result.weighted_score,
        failure_reasons=failure_reasons(result),
        error_message=result.error_message,
        task_json_relpath=relpath,
        replicate_index=result.replicate_index,
    )
