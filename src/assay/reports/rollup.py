"""Roll the row results of one suite (one variant) up into a ``SuiteRollup``, one row at a
time (:class:`SuiteTally`), in memory that does not grow with the rows.

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
its gate. Whether the suite is green follows the exit codes (docs/suites-and-gates.md)
(:func:`~assay.reports.suite_rules.suite_result`).

Every number is the same whatever order the rows arrive in: counts, exact sums
(:mod:`assay.metrics.streaming`) and each criterion's tally; the failed samples are the
first :data:`FAILED_SAMPLE_LIMIT` in dataset order. pass@k needs each row's replicates
together: :meth:`SuiteTally.add_pass_k` is fed in a second pass over the suite's rows, only
for a suite that has replicates.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.criteria.registry import CriterionRegistry
from assay.metrics.passk import suite_pass_k
from assay.metrics.streaming import ExactSum
from assay.metrics.values import MetricTable
from assay.orchestration.loading.thresholds import gate_checks
from assay.reports.cluster_tally import ClusterTally
from assay.reports.guarded_tally import GuardedTally
from assay.reports.suite_rules import (
    FAILED_SAMPLE_LIMIT,
    aggregate_error,
    failed_summary,
    failure_reasons,
    order_key,
    suite_description,
    suite_result,
    task_json_relpath,
)
from assay.results.status import FinalStatus, RowCounts
from assay.results.suite import (
    CriterionAggregate,
    CriterionStat,
    DatasetRecord,
    FailedRowSummary,
    IntervalRecord,
    ReplicateRollup,
    SelectionRecord,
    SuiteRollup,
)
from assay.results.task_result import CriterionResult, EvaluationResult
from assay.spec.criteria import CriterionSpec

__all__ = [
    "FAILED_SAMPLE_LIMIT",
    "SuiteTally",
    "aggregate_criterion",
    "build_suite",
    "failure_reasons",
    "order_key",
]

REPLICATE_METRICS = ("accuracy", "macro_f1", "mean")
Paths = Callable[[EvaluationResult], str]


class _Counts:
    """Rows per status category."""

    def __init__(self) -> None:
        self.by: dict[str, int] = dict.fromkeys(
            ("passed", "failed", "error", "refused", "not_graded"), 0
        )
        self.limits: dict[FinalStatus, int] = {}

    def add(self, status: FinalStatus) -> None:
        self.by[status.category] += 1
        if status.limit is not None:
            self.limits[status] = self.limits.get(status, 0) + 1

    def counts(self) -> RowCounts:
        return RowCounts(**self.by)

    def limit_warnings(self) -> list[str]:
        """One line per limit rows ran into: they are failures graded on what the agent
        left (Coder Eval's rule), so a gate on ``completion_rate`` does not see them."""
        return [
            f"{count} row(s) ended {status.value} (run_limits.{status.limit}): failures graded "
            "on what the agent left, not errors (a model that did not answer in time is a "
            "wrong answer); raise the limit if it cut rows short"
            for status, count in sorted(self.limits.items())
        ]


class CriterionCount:
    """One criterion (by position) over a suite's rows: its checker's tally of the graded
    results, and the results that did not grade."""

    def __init__(self, spec: CriterionSpec, registry: CriterionRegistry) -> None:
        self.spec = spec
        self.tally = GuardedTally(registry.bind(spec))
        self.present = 0
        self.graded = 0
        self.errors = 0
        self.judge_errors = 0
        self.refused = 0
        self.skipped = 0
        self.texts: set[str] = set()

    def add(self, item: CriterionResult) -> None:
        """Count one row's result of this criterion (a skipped one only as skipped)."""
        if item.evaluation_status == "skipped":
            self.skipped += 1
            return
        self.present += 1
        self.judge_errors += (item.error or "").startswith("judge_error")
        if len(self.texts) < 2:
            self.texts.add(item.description)
        self.errors += item.grader_failed
        self.refused += item.refused
        if item.graded:
            self.graded += 1
            self.tally.add(item)

    def aggregate(
        self,
        *,
        rows: int,
        not_graded: int,
        rows_planned: int | None,
        intervals: dict[str, IntervalRecord] | None = None,
    ) -> CriterionAggregate:
        """The criterion's aggregate over ``rows`` rows (``not_graded`` of them not graded
        yet), and the rows planned but never run; ``intervals`` are its cluster-robust
        intervals (:class:`~assay.reports.cluster_tally.ClusterTally`)."""
        spec = self.spec
        rows_total = max(rows_planned or 0, rows)
        table, details = self.tally.result()
        if self.errors:
            details = {**details, "criterion_errors": self.errors}
        if self.judge_errors:
            details = {**details, "judge_errors": self.judge_errors}
        if self.refused:
            details = {**details, "refused": self.refused}
        if self.skipped:
            details = {**details, "skipped": self.skipped}
        completion = MetricTable()
        completion.put("completion_rate", self.graded, rows_total, "the suite has no rows")
        table.merge(completion)
        checks = gate_checks(spec, table.values, intervals)
        error = aggregate_error(rows=rows, not_graded=not_graded, graded=self.graded,
                                gated=bool(checks), failed=self.tally.error)  # fmt: skip
        return CriterionAggregate(
            criterion_type=spec.type,
            description=suite_description(spec.description, self.texts),
            rows_total=rows_total,
            rows_excluded=rows_total - self.graded,
            metrics=dict(sorted(table.values.items())),
            undefined_metrics=dict(sorted(table.undefined.items())),
            threshold_checks=checks,
            passed=all(c.passed for c in checks) and not (error and checks),
            details=details,
            error=error,
            intervals=intervals or {},
        )


@dataclass
class _CriterionStat:
    """``criterion_stats`` of one criterion (by its position in ``success_criteria``)."""

    criterion_type: str
    seen: int = 0
    scores: ExactSum = field(default_factory=ExactSum)
    errors: int = 0
    refused: int = 0


class _Rows:
    """A group of rows (the suite, or one replicate): counts and each criterion's count."""

    def __init__(self, criteria: Sequence[CriterionSpec], registry: CriterionRegistry) -> None:
        self.rows = 0
        self.counts = _Counts()
        self.positions = [CriterionCount(spec, registry) for spec in criteria]

    def add(self, result: EvaluationResult) -> None:
        self.rows += 1
        self.counts.add(result.final_status)
        items = result.success_criteria_results
        for position, count in enumerate(self.positions):
            if len(items) > position:
                count.add(items[position])

    def aggregates(
        self,
        rows_planned: int | None = None,
        intervals: Callable[[int], dict[str, IntervalRecord]] | None = None,
    ) -> list[CriterionAggregate]:
        not_graded = self.counts.by["not_graded"]
        return [c.aggregate(rows=self.rows, not_graded=not_graded, rows_planned=rows_planned,
                            intervals=intervals(i) if intervals else None)
                for i, c in enumerate(self.positions)]  # fmt: skip


class SuiteTally:
    """A suite's roll-up, counted one row at a time (see the module docstring).

    Args:
        criteria: the task's criteria, in declaration order.
        registry: checkers, whose tallies aggregate their criterion.
        paths: a result → its ``task.json`` path relative to the run folder.
        cluster_field: the row field that clusters the rows for the intervals (``None``: a
            row and its replicates are one cluster).
        sequence: a run that stopped when decided: ``(suite, row)`` → its place in the
            stopping test's order; the intervals are then confidence sequences
            (:class:`~assay.reports.cluster_tally.ClusterTally`).
    """

    def __init__(
        self,
        criteria: Sequence[CriterionSpec],
        registry: CriterionRegistry,
        *,
        paths: Paths = task_json_relpath,
        cluster_field: str | None = None,
        sequence: Mapping[tuple[str, str], int] | None = None,
    ) -> None:
        self.criteria = list(criteria)
        self.registry = registry
        self.paths = paths
        self.all = _Rows(self.criteria, registry)
        self.scores = ExactSum()
        self.stats: list[_CriterionStat] = [_CriterionStat(c.type) for c in self.criteria]
        self.failed: list[tuple[tuple[int, int, str], FailedRowSummary]] = []
        self.failed_total = 0
        self.replicates: dict[int, _Rows] = {}
        self.pass_k_rows: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.clustered = ClusterTally(cluster_field, sequence=sequence)
        self.stopped: Counter[str] = Counter()

    @property
    def has_replicates(self) -> bool:
        """More than one replicate index was seen (pass@k then needs a second pass)."""
        return len(self.replicates) > 1

    def add(self, result: EvaluationResult) -> None:
        """Count one row of the suite."""
        self.all.add(result)
        self.clustered.add(result)
        if result.final_status.graded and result.weighted_score is not None:
            self.scores.add(result.weighted_score)
        for position, item in enumerate(result.success_criteria_results):
            if position == len(self.stats):  # a row graded by more criteria than declared
                self.stats.append(_CriterionStat(item.criterion_type))
            stat = self.stats[position]
            stat.seen += 1
            if item.graded:
                stat.scores.add(item.score)
            stat.errors += item.grader_failed
            stat.refused += item.refused
        replicate = self.replicates.get(result.replicate_index)
        if replicate is None:
            replicate = self.replicates[result.replicate_index] = _Rows(self.criteria,
                                                                       self.registry)  # fmt: skip
        replicate.add(result)
        if result.final_status.category in ("failed", "error", "refused"):
            self._add_failed(result)
        agent = result.agent
        if agent.early_stop is not None:
            self.stopped[agent.early_stop.reason] += 1
        elif agent.stopped_early is not None:
            self.stopped["max_tool_calls"] += 1

    def _add_failed(self, result: EvaluationResult) -> None:
        self.failed_total += 1
        key = order_key(result)
        if len(self.failed) == FAILED_SAMPLE_LIMIT and key >= self.failed[-1][0]:
            return
        at = bisect.bisect_right([k for k, _ in self.failed], key)
        self.failed.insert(at, (key, failed_summary(result, self.paths(result))))
        del self.failed[FAILED_SAMPLE_LIMIT:]

    def add_pass_k(self, result: EvaluationResult) -> None:
        """Count one row-task replicate for pass@k (second pass, suites with replicates)."""
        if result.final_status.graded:
            tally = self.pass_k_rows[result.task_id]
            tally[0] += 1
            tally[1] += result.final_status.category == "passed"

    def build(
        self,
        *,
        suite_id: str,
        variant_id: str,
        dataset: DatasetRecord | None = None,
        selection: SelectionRecord | None = None,
        rows_planned: int | None = None,
    ) -> SuiteRollup:
        """The ``SuiteRollup`` of the rows counted (see :func:`build_suite`)."""
        counts = self.all.counts.counts()
        missing = max(0, (rows_planned or 0) - self.all.rows)
        aggregates = self.all.aggregates(rows_planned, self.clustered.criterion_intervals)
        gate, reasons = suite_result(self.criteria, aggregates, counts, missing)
        return SuiteRollup(
            suite_id=suite_id,
            variant_id=variant_id,
            rows_total=self.all.rows + missing,
            rows_missing=missing,
            rows_passed=counts.passed,
            rows_failed=counts.failed,
            rows_error=counts.error,
            rows_refused=counts.refused,
            rows_not_graded=counts.not_graded,
            rows_graded=counts.graded,
            pass_rate=counts.pass_rate,
            refusal_rate=counts.refusal_rate,
            average_weighted_score=self.scores.mean(),
            criterion_stats=self._criterion_stats(),
            failed_samples=[summary for _, summary in self.failed],
            failed_samples_total=self.failed_total,
            criterion_aggregates=aggregates,
            gate=gate,
            passed=not reasons,
            result_reasons=reasons,
            warnings=[
                *(w for a in aggregates for w in a.details.get("warnings", [])),
                *self.all.counts.limit_warnings(),
            ],
            dataset=dataset,
            selection=selection,
            intervals=self.clustered.suite_intervals(),
            cluster_field=self.clustered.cluster_field,
            stopped_early=dict(sorted(self.stopped.items())),
            **self._replicate_fields(),
        )

    def _criterion_stats(self) -> list[CriterionStat]:
        """One line per criterion a row met, each over the rows it graded, ordered by type
        (as Coder Eval's list), then by place."""
        stats = sorted(enumerate(self.stats), key=lambda pair: (pair[1].criterion_type, pair[0]))
        return [
            CriterionStat(
                criterion_type=stat.criterion_type,
                criterion_index=position,
                rows_evaluated=stat.scores.count,
                average_score=stat.scores.mean(),
                error_count=stat.errors,
                refused_count=stat.refused,
            )
            for position, stat in stats
            if stat.seen
        ]

    def _replicate_fields(self) -> dict[str, Any]:
        """Per-replicate roll-ups and pass@k / pass^k, when the suite has replicates."""
        if not self.has_replicates:
            return {}
        per: list[ReplicateRollup] = []
        for index, group in sorted(self.replicates.items()):
            counts = group.counts.counts()
            metrics = [{k: v for k, v in a.metrics.items() if k in REPLICATE_METRICS}
                       for a in group.aggregates()]  # fmt: skip
            per.append(ReplicateRollup(
                replicate_index=index, rows_total=group.rows, rows_passed=counts.passed,
                rows_graded=counts.graded, pass_rate=counts.pass_rate, criterion_metrics=metrics,
            ))  # fmt: skip
        rows = [(n, c) for n, c in self.pass_k_rows.values()]
        return {"replicates": len(self.replicates), "per_replicate": per,
                "pass_k": suite_pass_k(rows)}  # fmt: skip


def build_suite(
    *,
    suite_id: str,
    variant_id: str,
    results: Iterable[EvaluationResult],
    criteria: Sequence[CriterionSpec],
    registry: CriterionRegistry,
    task_json_paths: dict[int, str] | None = None,
    dataset: DatasetRecord | None = None,
    selection: SelectionRecord | None = None,
    rows_planned: int | None = None,
) -> SuiteRollup:
    """The roll-up of ``results`` (every row of one suite in one variant), through a
    :class:`SuiteTally`.

    Args:
        suite_id: the task file's ``task_id``.
        variant_id: the variant.
        results: the rows' results, any order.
        criteria: the task's criteria, in declaration order.
        registry: checkers, which aggregate their criterion.
        task_json_paths: ``id(result)`` → its ``task.json`` path relative to the run dir
            (default: where the run folder's layout puts it).
        dataset: where the rows came from.
        selection: which rows the run selected.
        rows_planned: the work items the run planned for this suite; rows that never ran
            (an interrupted run) count in ``rows_total`` as ``rows_missing``, and the suite
            cannot pass until they do.
    """
    paths: Paths = task_json_relpath
    if task_json_paths is not None:
        known = task_json_paths
        paths = lambda result: known[id(result)]  # noqa: E731
    tally = SuiteTally(criteria, registry, paths=paths,
                       cluster_field=dataset.cluster_field if dataset else None)  # fmt: skip
    rows = list(results)
    for result in rows:
        tally.add(result)
    if tally.has_replicates:
        for result in rows:
            tally.add_pass_k(result)
    return tally.build(suite_id=suite_id, variant_id=variant_id, dataset=dataset,
                       selection=selection, rows_planned=rows_planned)  # fmt: skip


def aggregate_criterion(
    position: int,
    spec: CriterionSpec,
    results: Sequence[EvaluationResult],
    registry: CriterionRegistry,
    *,
    rows_planned: int | None = None,
) -> CriterionAggregate:
    """Aggregate criterion ``position`` over the rows where it evaluated (see the module
    docstring for what is excluded and counted apart)."""
    count = CriterionCount(spec, registry)
    not_graded = 0
    for result in results:
        not_graded += result.final_status is FinalStatus.NOT_GRADED
        if len(result.success_criteria_results) > position:
            count.add(result.success_criteria_results[position])
    return count.aggregate(rows=len(results), not_graded=not_graded, rows_planned=rows_planned)
