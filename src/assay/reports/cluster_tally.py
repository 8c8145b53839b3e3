"""Cluster-robust intervals of a suite's rates and means, counted one row at a time.

For ``suite.json``: the pass rate, and for each criterion (by position) the mean of its score
and, for classification and QA criteria, its accuracy (a judge's: its pass rate over the
verdicts), each with a cluster-robust standard
error and 95% interval (:mod:`assay.metrics.clustered`). A row's replicates are one cluster;
rows whose ``cluster_field`` values are equal are one cluster. What did not grade (an error, a
refusal) adds nothing: it is outside every denominator, as in the suite's own counts. Memory
grows with the number of clusters.

A run that stopped when decided (``experiment.stop``) chose its rows by looking at them, so a
fixed-size interval would not hold; its intervals are instead the anytime-valid confidence
sequence of each metric (:func:`assay.metrics.sequential.mean_confidence_sequence`) over the
clusters' means (a row's replicates, and a ``cluster_field`` cluster's rows, averaged) in the
order the stopping test heard them, as at the row the run stopped; ``method`` then says
``confidence sequence``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.metrics.clustered import ClusteredEstimate, ClusterSums, cluster_of
from assay.results.suite import IntervalRecord
from assay.results.task_result import (
    ClassificationCriterionResult,
    CriterionResult,
    EvaluationResult,
    JudgeCriterionResult,
    QaCriterionResult,
)

Contribution = Callable[[EvaluationResult], tuple[float, float]]
RowKey = tuple[str, str]
SEQUENCE = "confidence sequence"


def pass_contribution(result: EvaluationResult) -> tuple[float, float]:
    """``(passed, graded)`` of one replicate."""
    if not result.final_status.graded:
        return 0.0, 0.0
    return float(result.final_status.category == "passed"), 1.0


def _item(result: EvaluationResult, position: int) -> CriterionResult | None:
    items = result.success_criteria_results
    return items[position] if position < len(items) and items[position].graded else None


def mean_contribution(position: int) -> Contribution:
    """``(score, 1)`` of criterion ``position`` when it graded, else ``(0, 0)``."""

    def contribution(result: EvaluationResult) -> tuple[float, float]:
        item = _item(result, position)
        return (0.0, 0.0) if item is None else (item.score, 1.0)

    return contribution


def judged_pass_contribution(position: int) -> Contribution:
    """``(passed, 1)`` of a judge's verdict (score at least the criterion's
    ``pass_threshold``), else ``(0, 0)``: a judge error is outside the denominator."""

    def contribution(result: EvaluationResult) -> tuple[float, float]:
        item = _item(result, position)
        if not isinstance(item, JudgeCriterionResult) or item.verdict is None:
            return 0.0, 0.0
        return float(item.score >= item.pass_threshold), 1.0

    return contribution


def accuracy_contribution(position: int) -> Contribution:
    """``(correct, 1)`` of a classification or QA criterion that graded, else ``(0, 0)``; a QA
    sample without a verdict (a judge error) is outside the denominator."""

    def contribution(result: EvaluationResult) -> tuple[float, float]:
        item = _item(result, position)
        if isinstance(item, ClassificationCriterionResult):
            return float(item.expected_label == item.observed_label), 1.0
        if isinstance(item, QaCriterionResult) and item.sample_result:
            verdict = item.sample_result.get("is_correct")
            return (0.0, 0.0) if verdict is None else (float(bool(verdict)), 1.0)
        return 0.0, 0.0

    return contribution


@dataclass
class _Metric:
    contribution: Contribution
    proportion: bool
    sums: ClusterSums = field(default_factory=ClusterSums)
    rows: ClusterSums = field(default_factory=ClusterSums)
    """Per row ``(suite, row)``: kept only for a run that stopped when decided."""


@dataclass
class ClusterTally:
    """Per-cluster sums of the pass rate and of each criterion's mean and accuracy.

    Args:
        cluster_field: the row field whose equal values are one cluster (``None``: each row,
            with its replicates, is one).
        sequence: a run that stopped when decided: ``(suite, row)`` → its place in the
            stopping test's order (the module docstring); ``None`` otherwise.
    """

    cluster_field: str | None = None
    sequence: Mapping[RowKey, int] | None = None
    suite: dict[str, _Metric] = field(default_factory=dict)
    criteria: dict[int, dict[str, _Metric]] = field(default_factory=dict)
    places: dict[tuple[str, Hashable], int] = field(default_factory=dict)
    """A stopped run: ``(suite, cluster)`` → the place of its first row in :attr:`sequence`."""

    def __post_init__(self) -> None:
        self.suite["pass_rate"] = _Metric(pass_contribution, True)

    def add(self, result: EvaluationResult) -> None:
        """Count one replicate of a row."""
        cluster = self._cluster(result)
        for position, item in enumerate(result.success_criteria_results):
            metrics = self.criteria.get(position)
            if metrics is None:
                metrics = self.criteria[position] = {"mean": _Metric(mean_contribution(position),
                                                                     False)}  # fmt: skip
            if "accuracy" not in metrics and isinstance(
                item, ClassificationCriterionResult | QaCriterionResult
            ):
                metrics["accuracy"] = _Metric(accuracy_contribution(position), True)
            if "pass_rate" not in metrics and isinstance(item, JudgeCriterionResult):
                metrics["pass_rate"] = _Metric(judged_pass_contribution(position), True)
        for metric in [*self.suite.values(), *(m for ms in self.criteria.values()
                                               for m in ms.values())]:  # fmt: skip
            total, count = metric.contribution(result)
            metric.sums.add(cluster, total, count)
            if self.sequence is not None:
                metric.rows.add((result.suite_id or "", cluster), total, count)
        if self.sequence is not None:
            key, row = (
                (result.suite_id or "", cluster),
                (result.suite_id or "", result.row_id or ""),
            )
            place = self.sequence.get(row, len(self.sequence))
            self.places[key] = min(place, self.places.get(key, place))

    def _cluster(self, result: EvaluationResult) -> Hashable:
        row_id = result.row_id if result.row_id is not None else result.task_id
        return cluster_of(result.row, self.cluster_field, row_id)

    def suite_intervals(self) -> dict[str, IntervalRecord]:
        """``{"pass_rate": …}``."""
        return {name: self._interval(m) for name, m in self.suite.items()}

    def criterion_intervals(self, position: int) -> dict[str, IntervalRecord]:
        """``{"mean": …, "accuracy": …}`` of criterion ``position`` (empty if never seen)."""
        return {name: self._interval(m) for name, m in self.criteria.get(position, {}).items()}

    def _interval(self, metric: _Metric) -> IntervalRecord:
        if self.sequence is not None:
            return sequence_record(metric.rows.totals, self.places)
        return record(metric.sums.estimate(proportion=metric.proportion, unit=True))


def record(found: ClusteredEstimate) -> IntervalRecord:
    """The ``suite.json`` form of an estimate."""
    return IntervalRecord(value=found.value, low=found.low, high=found.high, se=found.se,
                          method=found.method, observations=found.observations,
                          clusters=found.clusters, reason=found.reason)  # fmt: skip


def sequence_record(rows: Mapping[Any, list[float]], order: Mapping[Any, int]) -> IntervalRecord:
    """The confidence sequence (95%) of the mean of the clusters' means (``cluster → [total,
    count]``; a row with its replicates, or a ``cluster_field`` cluster), taken in ``order``
    (one outside it after those in it, by key), as after the last: ``value`` the mean of the
    clusters' means, ``clusters`` their number."""
    import numpy as np

    from assay.metrics.sequential import mean_confidence_sequence

    last = len(order)
    keyed = sorted(rows.items(), key=lambda item: (order.get(item[0], last), str(item[0])))
    means = [total / count for _, (total, count) in keyed]
    observations = int(sum(count for _, (_, count) in keyed))
    if not means:
        return IntervalRecord(value=None, method=SEQUENCE, observations=0, clusters=0,
                              reason="no graded value")  # fmt: skip
    low, high = mean_confidence_sequence(np.asarray(means, dtype=float))
    value = sum(means) / len(means)
    if math.isnan(low[-1]):
        return IntervalRecord(value=value, method=SEQUENCE, observations=observations,
                              clusters=len(means), reason="every mean was rejected")  # fmt: skip
    return IntervalRecord(value=value, low=float(low[-1]), high=float(high[-1]),
                          method=SEQUENCE, observations=observations,
                          clusters=len(means))  # fmt: skip
