"""Experiment reports: every suite metric of every variant with a 95% interval, and paired
comparisons of every pair of variants on the identical rows.

Intervals: Wilson for proportions over independent rows (pass rate, accuracy with one
replicate); a percentile bootstrap over rows, replicates resampled with their row, for means,
F1 and any proportion with replicates (:mod:`assay.metrics.bootstrap`). Differences are
``b - a`` with a paired bootstrap interval. McNemar's exact test compares per-row pass/fail
(a row passes when it passed in more than half of its graded replicates); the rows that
flipped are listed with links to both ``task.json`` files. A row whose content differs between
the arms (an edited dataset) is never paired: it is left out of every metric and statistic and
listed in ``excluded_rows``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from assay.data.hashing import row_hash
from assay.metrics.bootstrap import Interval, Statistic, bootstrap, difference, macro_f1, ratio
from assay.metrics.intervals import wilson_interval
from assay.metrics.paired import mcnemar_exact
from assay.metrics.passk import suite_pass_k
from assay.results.experiment import (
    ArmDataset,
    Comparison,
    Difference,
    Estimate,
    ExperimentResult,
    FlippedRow,
    McNemarRecord,
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


@dataclass
class Arm:
    """One variant's results on one suite, grouped by row in dataset order."""

    variant_id: str
    suite_id: str
    rows: dict[str, list[EvaluationResult]] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)

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


def group_arms(
    results: Sequence[EvaluationResult], paths: dict[int, str]
) -> dict[tuple[str, str], Arm]:
    """``(variant, suite) → Arm`` for every result that belongs to a suite."""
    arms: dict[tuple[str, str], Arm] = {}
    ordered = sorted(results, key=lambda r: (r.row_index or 0, r.replicate_index))
    for result in ordered:
        if result.suite_id is None or result.row_id is None:
            continue
        key = (result.variant_id, result.suite_id)
        arm = arms.setdefault(key, Arm(result.variant_id, result.suite_id))
        arm.rows.setdefault(result.row_id, []).append(result)
        arm.paths.setdefault(result.row_id, paths.get(id(result), ""))
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
            f1 = MetricSpec(f"{prefix}.macro_f1", 3 * len(labels), False, macro_f1(len(labels)))
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
    found: set[str] = set()
    for arm in arms:
        for results in arm.rows.values():
            for result in results:
                item = _criterion(result, position)
                if isinstance(item, ClassificationCriterionResult):
                    found |= {item.expected_label, item.observed_label}
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
            e, o = labels.index(c.expected_label), labels.index(c.observed_label)
            if e == o:
                counts[e, 0] += 1
            else:
                counts[o, 1] += 1
                counts[e, 2] += 1
        return list(counts.reshape(-1))

    return row


def _matrix(arm: Arm, row_ids: list[str], make_row: RowFn) -> NDArray[np.float64]:
    return np.array([make_row(arm.rows.get(rid, [])) for rid in row_ids], dtype=float)


def estimate(spec: MetricSpec, matrix: NDArray[np.float64], replicates: int) -> Estimate:
    """One metric of one arm, with its interval."""
    rows = matrix.shape[0]
    if spec.proportion and replicates <= 1:
        successes, trials = int(matrix[:, 0].sum()), int(matrix[:, 1].sum())
        value = successes / trials if trials else None
        interval = wilson_interval(successes, trials)
        if interval is None:
            return Estimate(value=None, method="wilson", rows=rows, reason="no graded rows")
        return Estimate(value=value, low=interval[0], high=interval[1], method="wilson", rows=rows)
    found: Interval = bootstrap(matrix, spec.statistic)
    if spec.proportion and found.low is None and found.value is not None:
        return _row_wilson(matrix, found.value)
    return Estimate(value=found.value, low=found.low, high=found.high, method=found.method,
                    rows=rows, reason=found.reason)  # fmt: skip


def _row_wilson(matrix: NDArray[np.float64], value: float) -> Estimate:
    """When a bootstrap cannot see any variation (every row always passes, say), a Wilson
    interval over rows, each row counting once by its majority outcome."""
    graded = matrix[:, 1] > 0
    rows = int(graded.sum())
    successes = int((matrix[graded, 0] * 2 > matrix[graded, 1]).sum())
    interval = wilson_interval(successes, rows)
    if interval is None:
        return Estimate(value=value, method="wilson", rows=rows, reason="no graded rows")
    return Estimate(value=value, low=interval[0], high=interval[1], method="wilson (rows)",
                    rows=rows)  # fmt: skip


def summarise(arm: Arm, row_ids: list[str], specs: list[tuple[MetricSpec, RowFn]]) -> VariantSuite:
    """An arm's metrics with intervals, and pass@k / pass^k when it has replicates."""
    metrics = {
        spec.name: estimate(spec, _matrix(arm, row_ids, make_row), arm.replicates)
        for spec, make_row in specs
    }
    pass_k: dict[str, dict[str, float | int]] = {}
    if arm.replicates > 1:
        counts = [(int(r[1]), int(r[0])) for r in (_pass_row(arm.rows.get(i, [])) for i in row_ids)]
        pass_k = suite_pass_k([(n, c) for n, c in counts if n > 0])
    return VariantSuite(variant_id=arm.variant_id, suite_id=arm.suite_id, rows=len(row_ids),
                        replicates=arm.replicates, metrics=metrics, pass_k=pass_k)  # fmt: skip


def _row_passes(arm: Arm, row_id: str) -> bool | None:
    passes, graded = _pass_row(arm.rows.get(row_id, []))
    return None if graded == 0 else passes * 2 > graded


def compare(
    a: Arm, b: Arm, row_ids: list[str], specs: list[tuple[MetricSpec, RowFn]]
) -> Comparison:
    """Arm ``b`` against arm ``a`` on the same rows."""
    metrics: dict[str, Difference] = {}
    for spec, make_row in specs:
        left, right = _matrix(a, row_ids, make_row), _matrix(b, row_ids, make_row)
        paired = bootstrap(np.hstack([left, right]),
                           difference(spec.statistic, spec.statistic, left.shape[1]))  # fmt: skip
        value_a = spec.statistic(left.sum(axis=0, keepdims=True))[0]
        value_b = spec.statistic(right.sum(axis=0, keepdims=True))[0]
        metrics[spec.name] = Difference(
            a=None if np.isnan(value_a) else float(value_a),
            b=None if np.isnan(value_b) else float(value_b),
            difference=paired.value, low=paired.low, high=paired.high, reason=paired.reason,
        )  # fmt: skip
    return _with_flips(a, b, row_ids, metrics)


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
            hashes[row_id] |= {row_hash(r.row) for r in results if r.row is not None}
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
) -> ExperimentResult:
    """Every variant's metrics per suite, and every pair of variants compared, on the rows
    whose content is the same in every arm (the others are listed in ``excluded_rows``)."""
    arms = group_arms(results, paths)
    by_suite: dict[str, list[Arm]] = defaultdict(list)
    for (_, suite), arm in arms.items():
        by_suite[suite].append(arm)
    report = ExperimentResult(experiment_id=experiment_id, description=description,
                              variant_ids=variant_ids, row_ids=row_ids,
                              datasets=list(datasets))  # fmt: skip
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
        report.variants.extend(summarise(arm, ids, specs) for arm in ordered)
        for i, first in enumerate(ordered):
            for second in ordered[i + 1 :]:
                report.comparisons.append(compare(first, second, ids, specs))
    return report
