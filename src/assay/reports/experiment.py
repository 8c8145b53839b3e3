"""Experiment reports: every suite metric of every variant with a 95% interval, and paired
comparisons of every pair of variants on the identical rows.

Intervals are cluster-robust (:mod:`assay.metrics.clustered`): a row's replicates are one
cluster, and the task's ``dataset.cluster_field`` (QA: the story) puts rows that share a value
in one. Means, pass rates and accuracies, and their paired differences ``b - a``, get the CR1
standard error with a ``cluster t`` interval (a proportion on fewer than 30 clusters: the
exact Korn–Graubard one); macro F1 a percentile bootstrap over clusters
(:mod:`assay.metrics.bootstrap`). McNemar's exact test compares per-row pass/fail
(a row passes when it passed in more than half of its graded replicates); the rows that
flipped are listed with links to both ``task.json`` files. A row whose content differs between
the arms (an edited dataset) is never paired: it is left out of every metric and statistic and
listed in ``excluded_rows``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from assay.data.hashing import row_hash
from assay.metrics.bootstrap import Statistic, bootstrap, difference, macro_f1, ratio
from assay.metrics.clustered import (
    ClusteredEstimate,
    cluster_of,
    clustered_difference,
    clustered_mean,
    detectable_difference,
    t_test_p,
)
from assay.metrics.multiplicity import Adjustment, adjust_p_values
from assay.metrics.paired import mcnemar_exact
from assay.metrics.passk import suite_pass_k
from assay.reports.cluster_tally import sequence_record
from assay.results.experiment import (
    ArmDataset,
    Comparison,
    Difference,
    Estimate,
    ExperimentResult,
    FlippedRow,
    McNemarRecord,
    SequentialRecord,
    VariantSuite,
)
from assay.results.task_result import (
    ClassificationCriterionResult,
    CriterionResult,
    EvaluationResult,
    QaCriterionResult,
)

FLIPPED_LIMIT = 20
RowFn = Callable[[list[EvaluationResult]], list[float]]
Sequenced = tuple[str, Mapping[tuple[str, str], int]]
"""A stopped run's suite and its rows' places in the stopping test's order."""


@dataclass
class Arm:
    """One variant's results on one suite, grouped by row in dataset order."""

    variant_id: str
    suite_id: str
    rows: dict[str, list[EvaluationResult]] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)
    clusters: dict[str, Hashable] = field(default_factory=dict)

    @property
    def replicates(self) -> int:
        """The largest number of replicates of a row."""
        return max((len(v) for v in self.rows.values()), default=0)


@dataclass(frozen=True)
class MetricSpec:
    """How to turn a row's results into a contribution vector, and the statistic over sums."""

    name: str
    columns: int
    proportion: bool
    statistic: Statistic
    pooled: bool = True
    """``Σ column 0 / Σ column 1`` (a mean or a rate): a cluster-robust interval; else a
    bootstrap over clusters."""


def group_arms(
    results: Sequence[EvaluationResult],
    paths: dict[int, str],
    cluster_fields: Mapping[str, str | None] | None = None,
) -> dict[tuple[str, str], Arm]:
    """``(variant, suite) → Arm`` for every result that belongs to a suite; each row's
    cluster is its ``cluster_fields[suite]`` value (:func:`~assay.metrics.clustered.cluster_of`),
    or the row itself."""
    fields = cluster_fields or {}
    arms: dict[tuple[str, str], Arm] = {}
    ordered = sorted(results, key=lambda r: (r.row_index or 0, r.replicate_index))
    for result in ordered:
        if result.suite_id is None or result.row_id is None:
            continue
        key = (result.variant_id, result.suite_id)
        arm = arms.setdefault(key, Arm(result.variant_id, result.suite_id))
        arm.rows.setdefault(result.row_id, []).append(result)
        arm.paths.setdefault(result.row_id, paths.get(id(result), ""))
        if result.row_id not in arm.clusters:
            field_name = fields.get(result.suite_id)
            arm.clusters[result.row_id] = cluster_of(result.row, field_name, result.row_id)
    return arms


def _graded(results: list[EvaluationResult]) -> list[EvaluationResult]:
    return [r for r in results if r.final_status.graded]


def metric_specs(arms: Sequence[Arm]) -> list[tuple[MetricSpec, RowFn]]:
    """The metrics to estimate on these arms (the same for every arm of a suite)."""
    specs: list[tuple[MetricSpec, RowFn]] = [
        (MetricSpec("pass_rate", 2, True, ratio(0, 1)), _pass_row)
    ]
    sample = next((r for arm in arms for rs in arm.rows.values() for r in rs
                   if r.success_criteria_results), None)  # fmt: skip
    if sample is None:
        return specs
    types = [c.criterion_type for c in sample.success_criteria_results]
    for position, kind in enumerate(types):
        prefix = kind if types.count(kind) == 1 else f"{kind}#{position}"
        specs.append((MetricSpec(f"{prefix}.mean", 2, False, ratio(0, 1)),
                      _mean_row(position)))  # fmt: skip
        if isinstance(sample.success_criteria_results[position], ClassificationCriterionResult):
            labels = _labels(arms, position)
            specs.append((MetricSpec(f"{prefix}.accuracy", 2, True, ratio(0, 1)),
                          _accuracy_row(position)))  # fmt: skip
            f1 = MetricSpec(f"{prefix}.macro_f1", 3 * len(labels), False, macro_f1(len(labels)),
                            pooled=False)  # fmt: skip
            specs.append((f1, _f1_row(position, labels)))
        elif isinstance(sample.success_criteria_results[position], QaCriterionResult):
            specs.append((MetricSpec(f"{prefix}.accuracy", 2, True, ratio(0, 1)),
                          _qa_accuracy_row(position)))  # fmt: skip
    return specs


def _qa_accuracy_row(position: int) -> RowFn:
    """QA accuracy: correct over graded samples (judge and answer errors are outside it)."""

    def row(results: list[EvaluationResult]) -> list[float]:
        verdicts = [
            c.sample_result.get("is_correct")
            for c in (_criterion(r, position) for r in results)
            if isinstance(c, QaCriterionResult) and c.sample_result
        ]
        graded = [v for v in verdicts if v is not None]
        return [float(sum(1 for v in graded if v)), float(len(graded))]

    return row


def _labels(arms: Sequence[Arm], position: int) -> list[str]:
    """The classes of a paired macro-F1: every label a graded row expected, in any arm (one
    set for every arm, as scikit-learn's ``labels=``); a label only predicted (an answer
    outside them, ``(other)``) is no class of its own: it is the expected label's miss. Each
    arm's own label set (the suite's ``macro_f1``) would average the arms over different
    labels, and the difference could take the wrong sign."""
    found: set[str] = set()
    for arm in arms:
        for results in arm.rows.values():
            for result in results:
                item = _criterion(result, position)
                if isinstance(item, ClassificationCriterionResult):
                    found.add(item.expected_label)
    return sorted(found)


def _criterion(result: EvaluationResult, position: int) -> CriterionResult | None:
    """The row's result of criterion ``position`` when it graded (no error, no refusal)."""
    items = result.success_criteria_results
    return items[position] if position < len(items) and items[position].graded else None


def _pass_row(results: list[EvaluationResult]) -> list[float]:
    graded = _graded(results)
    return [sum(1.0 for r in graded if r.final_status.category == "passed"), float(len(graded))]


def _mean_row(position: int) -> RowFn:
    def row(results: list[EvaluationResult]) -> list[float]:
        items = [c for c in (_criterion(r, position) for r in results) if c is not None]
        return [sum(c.score for c in items), float(len(items))]

    return row


def _accuracy_row(position: int) -> RowFn:
    def row(results: list[EvaluationResult]) -> list[float]:
        items = [c for c in (_criterion(r, position) for r in results)
                 if isinstance(c, ClassificationCriterionResult)]  # fmt: skip
        return [sum(1.0 for c in items if c.expected_label == c.observed_label), float(len(items))]

    return row


def _f1_row(position: int, labels: list[str]) -> RowFn:
    def row(results: list[EvaluationResult]) -> list[float]:
        counts = np.zeros((len(labels), 3))
        for c in (_criterion(r, position) for r in results):
            if not isinstance(c, ClassificationCriterionResult):
                continue
            e = labels.index(c.expected_label)
            if c.observed_label == c.expected_label:
                counts[e, 0] += 1
                continue
            counts[e, 2] += 1
            if c.observed_label in labels:
                counts[labels.index(c.observed_label), 1] += 1
        return list(counts.reshape(-1))

    return row


def _matrix(arm: Arm, row_ids: list[str], make_row: RowFn) -> NDArray[np.float64]:
    return np.array([make_row(arm.rows.get(rid, [])) for rid in row_ids], dtype=float)


def cluster_matrix(
    matrix: NDArray[np.float64], row_ids: list[str], clusters: Mapping[str, Hashable]
) -> dict[Hashable, NDArray[np.float64]]:
    """Sum the rows of ``matrix`` (one per id of ``row_ids``) by cluster."""
    out: dict[Hashable, NDArray[np.float64]] = {}
    for index, row_id in enumerate(row_ids):
        key = clusters.get(row_id, ("row", row_id))
        found = out.get(key)
        out[key] = matrix[index].copy() if found is None else found + matrix[index]
    return out


def estimate(
    spec: MetricSpec, matrix: NDArray[np.float64], row_ids: list[str],
    clusters: Mapping[str, Hashable], *, sequence: Sequenced | None = None,
) -> Estimate:  # fmt: skip
    """One metric of one arm, with its interval (clustered by row and ``clusters``); for a
    run that stopped when decided (``sequence``: its suite, and ``(suite, row)`` → the place
    the stopping test heard the row), a rate's or mean's interval is the confidence sequence
    of :func:`~assay.reports.cluster_tally.sequence_record` over the clusters, as in the
    suites' reports."""
    rows = matrix.shape[0]
    if spec.pooled and sequence is not None:
        suite, order = sequence
        graded: dict[Hashable, list[float]] = {}
        places: dict[Hashable, int] = {}
        for i, row_id in enumerate(row_ids):
            if matrix[i, 1] > 0:  # a cluster's rows are one value, heard with its first row
                cluster = clusters.get(row_id, row_id)
                total = graded.setdefault(cluster, [0.0, 0.0])
                total[0], total[1] = total[0] + float(matrix[i, 0]), total[1] + float(matrix[i, 1])
                place = order.get((suite, row_id), len(order))
                places[cluster] = min(place, places.get(cluster, place))
        held = sequence_record(graded, places)
        return Estimate(value=held.value, low=held.low, high=held.high, method=held.method,
                        rows=rows, reason=held.reason, clusters=held.clusters)  # fmt: skip
    by_cluster = cluster_matrix(matrix, row_ids, clusters)
    if spec.pooled:
        found = clustered_mean({k: [float(v[0]), float(v[1])] for k, v in by_cluster.items()},
                               proportion=spec.proportion, unit=True)  # fmt: skip
        return _from_clustered(found, rows)
    sums = _graded_clusters(by_cluster, spec.columns)
    interval = bootstrap(sums, spec.statistic)
    reason = interval.reason.replace("rows", "clusters") if interval.reason else None
    return Estimate(value=interval.value, low=interval.low, high=interval.high,
                    method="bootstrap (clusters)", rows=rows, reason=reason,
                    clusters=len(sums))  # fmt: skip


def _graded_clusters(
    by_cluster: dict[Hashable, NDArray[np.float64]], columns: int
) -> NDArray[np.float64]:
    """The clusters' sums, without the clusters that graded nothing (a row that never ran or
    only errored is outside the bootstrap, as it is outside every denominator)."""
    kept = [v for v in by_cluster.values() if np.any(v)]
    return np.array(kept) if kept else np.zeros((0, columns))


def _from_clustered(found: ClusteredEstimate, rows: int) -> Estimate:
    return Estimate(value=found.value, low=found.low, high=found.high, method=found.method,
                    rows=rows, reason=found.reason, se=found.se,
                    clusters=found.clusters)  # fmt: skip


def summarise(
    arm: Arm, row_ids: list[str], specs: list[tuple[MetricSpec, RowFn]],
    order: Mapping[tuple[str, str], int] | None = None,
) -> VariantSuite:  # fmt: skip
    """An arm's metrics with intervals, and pass@k / pass^k when it has replicates (``order``:
    a run that stopped when decided, see :func:`estimate`)."""
    sequence = (arm.suite_id, order) if order is not None else None
    metrics = {
        spec.name: estimate(
            spec, _matrix(arm, row_ids, make_row), row_ids, arm.clusters, sequence=sequence
        )
        for spec, make_row in specs
    }
    pass_k: dict[str, dict[str, float | int]] = {}
    if arm.replicates > 1:
        counts = [(int(r[1]), int(r[0])) for r in (_pass_row(arm.rows.get(i, [])) for i in row_ids)]
        pass_k = suite_pass_k([(n, c) for n, c in counts if n > 0])
    return VariantSuite(variant_id=arm.variant_id, suite_id=arm.suite_id, rows=len(row_ids),
                        rows_ran=sum(1 for i in row_ids if arm.rows.get(i)),
                        replicates=arm.replicates, metrics=metrics, pass_k=pass_k)  # fmt: skip


def _row_passes(arm: Arm, row_id: str) -> bool | None:
    passes, graded = _pass_row(arm.rows.get(row_id, []))
    return None if graded == 0 else passes * 2 > graded


def compare(
    a: Arm, b: Arm, row_ids: list[str], specs: list[tuple[MetricSpec, RowFn]]
) -> Comparison:
    """Arm ``b`` against arm ``a`` on the same rows (and clusters)."""
    metrics: dict[str, Difference] = {}
    clusters = {**a.clusters, **b.clusters}
    for spec, make_row in specs:
        left, right = _matrix(a, row_ids, make_row), _matrix(b, row_ids, make_row)
        value_a = spec.statistic(left.sum(axis=0, keepdims=True))[0]
        value_b = spec.statistic(right.sum(axis=0, keepdims=True))[0]
        metrics[spec.name] = _difference(spec, left, right, row_ids, clusters).model_copy(
            update={"a": None if np.isnan(value_a) else float(value_a),
                    "b": None if np.isnan(value_b) else float(value_b)})  # fmt: skip
    return _with_flips(a, b, row_ids, metrics).model_copy(
        update={"sequential": replay_sequential(a, b, row_ids)}
    )


REPLAY_SEED = 20261204


def replay_sequential(
    a: Arm, b: Arm, row_ids: list[str], *, alpha: float = 0.05, seed: int = REPLAY_SEED
) -> SequentialRecord | None:
    """The stopping rule (:func:`assay.metrics.sequential.decide`) over the rows graded in
    both arms, each row's difference of pass fractions, in a seeded random order; rows that
    share a cluster are one difference, the mean of theirs (the test's guarantee needs
    independent differences); ``None`` with no such row."""
    from assay.metrics.sequential import decide

    clusters = {**a.clusters, **b.clusters}
    grouped: dict[Hashable, list[float]] = {}
    for row_id in row_ids:
        (pa, na), (pb, nb) = _pass_row(a.rows.get(row_id, [])), _pass_row(b.rows.get(row_id, []))
        if na and nb:
            grouped.setdefault(clusters.get(row_id, row_id), []).append(pb / nb - pa / na)
    if not grouped:
        return None
    values = [sum(found) / len(found) for found in grouped.values()]
    unit = "clusters" if len(values) < sum(len(found) for found in grouped.values()) else "rows"
    order = np.random.default_rng(seed).permutation(len(values))
    found = decide(np.array(values)[order], alpha=alpha)
    low = None if np.isnan(found.low) else found.low
    high = None if np.isnan(found.high) else found.high
    return SequentialRecord(decision=found.decision, rows=found.rows, of_rows=len(values),
                            low=low, high=high, alpha=alpha, seed=seed, unit=unit,
                            reason=found.reason(a.variant_id, b.variant_id, unit=unit))  # fmt: skip


def _difference(
    spec: MetricSpec, left: NDArray[np.float64], right: NDArray[np.float64],
    row_ids: list[str], clusters: Mapping[str, Hashable],
) -> Difference:  # fmt: skip
    """The paired difference of one metric: cluster-robust when pooled, else a bootstrap over
    clusters with both arms' sums resampled together."""
    by_cluster = cluster_matrix(np.hstack([left, right]), row_ids, clusters)
    width = left.shape[1]
    if spec.pooled:
        found = clustered_difference(
            {k: [float(v[0]), float(v[1])] for k, v in by_cluster.items()},
            {k: [float(v[width]), float(v[width + 1])] for k, v in by_cluster.items()},
        )
        low, high = found.low, found.high  # a difference of values in [0, 1] is in [-1, 1]
        return Difference(a=None, b=None, difference=found.value,
                          low=None if low is None else max(-1.0, low),
                          high=None if high is None else min(1.0, high),
                          reason=found.reason, method=found.method, se=found.se,
                          clusters=found.clusters, p_value=t_test_p(found),
                          detectable=detectable_difference(found))  # fmt: skip
    sums = _graded_clusters(by_cluster, 2 * width)
    paired = bootstrap(sums, difference(spec.statistic, spec.statistic, width))
    reason = paired.reason.replace("rows", "clusters") if paired.reason else None
    return Difference(a=None, b=None, difference=paired.value, low=paired.low, high=paired.high,
                      reason=reason, method="bootstrap (clusters)",
                      clusters=len(sums))  # fmt: skip


def _with_flips(a: Arm, b: Arm, row_ids: list[str], metrics: dict[str, Difference]) -> Comparison:
    up: list[FlippedRow] = []
    down: list[FlippedRow] = []
    for row_id in row_ids:
        left, right = _row_passes(a, row_id), _row_passes(b, row_id)
        if left is None or right is None or left == right:
            continue
        flipped = FlippedRow(row_id=row_id, a_task_json=a.paths.get(row_id, ""),
                             b_task_json=b.paths.get(row_id, ""))  # fmt: skip
        (up if right else down).append(flipped)
    test = mcnemar_exact(len(down), len(up))
    return Comparison(
        suite_id=a.suite_id, variant_a=a.variant_id, variant_b=b.variant_id, rows=len(row_ids),
        metrics=metrics, mcnemar=McNemarRecord(a_only=test.a_only, b_only=test.b_only,
                                               p_value=test.p_value),
        became_pass=up[:FLIPPED_LIMIT], became_fail=down[:FLIPPED_LIMIT],
        became_pass_total=len(up), became_fail_total=len(down),
    )  # fmt: skip


def content_mismatches(arms: Sequence[Arm]) -> list[str]:
    """Rows whose content (the row each ``task.json`` ran) is not the same in every arm."""
    hashes: dict[str, set[str]] = defaultdict(set)
    for arm in arms:
        for row_id, results in arm.rows.items():
            hashes[row_id] |= {r.row_hash or row_hash(r.row) for r in results
                               if r.row is not None}  # fmt: skip
    return [row_id for row_id, found in hashes.items() if len(found) > 1]


def build_experiment(
    results: Sequence[EvaluationResult],
    paths: dict[int, str],
    *,
    experiment_id: str,
    description: str,
    variant_ids: list[str],
    row_ids: dict[str, list[str]],
    datasets: Sequence[ArmDataset] = (),
    cluster_fields: Mapping[str, str | None] | None = None,
    adjustment: Adjustment = "holm",
    alpha: float = 0.05,
    sequence: Mapping[tuple[str, str], int] | None = None,
) -> ExperimentResult:
    """Every variant's metrics per suite, and every pair of variants compared, on the rows
    whose content is the same in every arm (the others are listed in ``excluded_rows``).

    ``cluster_fields`` (suite → row field, from each suite's ``DatasetRecord``) clusters the
    rows; without it each row (with its replicates) is a cluster. ``adjustment`` (``holm``,
    ``bonferroni``, ``none``) adjusts each suite's p-values for multiplicity; a difference
    survives when its adjusted p-value is at most ``alpha``. ``sequence``: a run that
    stopped when decided (:func:`assay.orchestration.running.stopping.stopping_facts`):
    each variant's rates and means then have the confidence sequence's interval, and no
    difference gets a "survives" verdict (its rows were chosen by looking at them)."""
    arms = group_arms(results, paths, cluster_fields)
    by_suite: dict[str, list[Arm]] = defaultdict(list)
    for (_, suite), arm in arms.items():
        by_suite[suite].append(arm)
    report = ExperimentResult(experiment_id=experiment_id, description=description,
                              variant_ids=variant_ids, row_ids=row_ids,
                              datasets=list(datasets), adjustment=adjustment,
                              alpha=alpha)  # fmt: skip
    for suite, suite_arms in by_suite.items():
        differ = set(content_mismatches(suite_arms))
        ids = [i for i in row_ids.get(suite) or list(suite_arms[0].rows) if i not in differ]
        if differ:
            order = row_ids.get(suite) or list(suite_arms[0].rows)
            report.excluded_rows[suite] = sorted(differ, key=lambda i: (
                order.index(i) if i in order else len(order), i))  # fmt: skip
        specs = metric_specs(suite_arms)
        ordered = sorted(suite_arms, key=lambda a: variant_ids.index(a.variant_id)
                         if a.variant_id in variant_ids else len(variant_ids))  # fmt: skip
        report.variants.extend(summarise(arm, ids, specs, sequence) for arm in ordered)
        pairs = [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1 :]]
        comparisons = adjust_family([compare(first, second, ids, specs)
                                     for first, second in pairs], adjustment, alpha)  # fmt: skip
        if sequence is not None:  # rows ran until the test decided: no fixed-sample verdict
            comparisons = [_without_verdicts(c) for c in comparisons]
        report.comparisons.extend(comparisons)
    return report


def _without_verdicts(comparison: Comparison) -> Comparison:
    """``comparison`` with no "survives" verdict (its fixed-sample p-values kept for
    reference): a run that stopped when decided chose its rows by looking at them."""
    metrics = {name: d.model_copy(update={"survives": None})
               for name, d in comparison.metrics.items()}  # fmt: skip
    mcnemar = comparison.mcnemar.model_copy(update={"survives": None})
    return comparison.model_copy(update={"metrics": metrics, "mcnemar": mcnemar})


def adjust_family(
    comparisons: list[Comparison], adjustment: Adjustment, alpha: float
) -> list[Comparison]:
    """The comparisons of one suite with ``p_adjusted`` and ``survives`` filled in: every
    difference's p-value one family, every McNemar p-value another.

    A family counts each hypothesis once: metrics of one pair of arms that are the same
    test (the same arms' values, difference, standard error, clusters and p-value: the pass
    rate and the mean and accuracy of a task's only criterion, read from the same per-row
    outcomes) share one adjusted p-value instead of tripling it."""
    tests: dict[tuple[object, ...], list[tuple[Comparison, str]]] = {}
    for index, comparison in enumerate(comparisons):
        for name, d in comparison.metrics.items():
            if d.p_value is not None:
                key = (index, d.a, d.b, d.difference, d.se, d.clusters, d.p_value, d.method)
                tests.setdefault(key, []).append((comparison, name))
    first = [same[0] for same in tests.values()]
    adjusted = adjust_p_values([c.metrics[n].p_value or 0.0 for c, n in first], adjustment)
    for same, value in zip(tests.values(), adjusted, strict=True):
        for comparison, name in same:
            found = comparison.metrics[name]
            comparison.metrics[name] = found.model_copy(
                update={"p_adjusted": value, "survives": value <= alpha}
            )
    mcnemar = adjust_p_values([c.mcnemar.p_value for c in comparisons], adjustment)
    for comparison, value in zip(comparisons, mcnemar, strict=True):
        comparison.mcnemar = comparison.mcnemar.model_copy(
            update={"p_adjusted": value, "survives": value <= alpha}
        )
    return comparisons
