"""95% intervals for a suite's headline metrics, from the row index, by the rules
``experiment.json`` uses (``assay.reports.experiment``):

- a proportion over independent rows (pass rate, accuracy, precision/recall of a label,
  completion rate, with one replicate): the Wilson score interval;
- anything else (a mean score, macro-F1, any metric with replicates): a percentile
  bootstrap over rows, a row's replicates resampled together. The viewer draws it over the
  rows' *distinct* contribution vectors (:func:`~assay.metrics.bootstrap.bootstrap_grouped`,
  the same distribution at a cost independent of the number of rows); above
  ``GROUPED_LIMIT`` distinct vectors (continuous scores on a huge suite) a ratio's interval
  is the normal approximation of the ratio estimator, said so in ``method``.

What did not grade (errored rows, criteria that could not evaluate) is outside every
denominator, as in ``suite.json``.
"""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from assay.metrics.bootstrap import Statistic, bootstrap_grouped, macro_f1, ratio
from assay.metrics.intervals import wilson_interval

GROUPED_LIMIT = 5000
_Z = NormalDist().inv_cdf(0.975)


@dataclass(frozen=True)
class Estimate:
    """A metric's value and 95% interval (``low``/``high`` ``None`` with ``reason``)."""

    metric: str
    value: float | None
    low: float | None
    high: float | None
    method: str
    rows: int
    reason: str | None = None


def wilson(metric: str, successes: int, trials: int) -> Estimate:
    """A proportion with its Wilson interval."""
    interval = wilson_interval(successes, trials)
    if interval is None:
        return Estimate(metric, None, None, None, "wilson", 0, "no graded rows")
    return Estimate(metric, successes / trials, interval[0], interval[1], "wilson", trials)


def _vectors(db: sqlite3.Connection, sql: str, params: list[object]) -> Counter[tuple[float, ...]]:
    """``sql`` returns one row of numbers per dataset row, as columns ``c0``, ``c1``; how
    many rows share each vector (counted by SQLite, so only the distinct ones come back)."""
    grouped = f"SELECT c0, c1, COUNT(*) FROM ({sql}) GROUP BY c0, c1"
    return Counter(
        {(float(a or 0), float(b or 0)): int(n) for a, b, n in db.execute(grouped, params)}
    )


def resampled(metric: str, vectors: Counter[tuple[float, ...]], statistic: Statistic,
              *, ratio_columns: bool = True) -> Estimate:  # fmt: skip
    """The bootstrap estimate over rows whose contribution vectors are ``vectors``."""
    rows = sum(vectors.values())
    if not vectors:
        return Estimate(metric, None, None, None, "bootstrap", 0, "no graded rows")
    distinct = np.array(list(vectors), dtype=float)
    counts = np.array(list(vectors.values()), dtype=np.int64)
    if len(vectors) > GROUPED_LIMIT and ratio_columns:
        return _normal_ratio(metric, distinct, counts)
    if len(vectors) > GROUPED_LIMIT:
        return Estimate(metric, None, None, None, "bootstrap", rows,
                        f"over {GROUPED_LIMIT} distinct per-row values; `assay compare` "
                        "bootstraps it row by row")  # fmt: skip
    found = bootstrap_grouped(distinct, counts, statistic)
    return Estimate(metric, found.value, found.low, found.high, found.method, rows, found.reason)


def _normal_ratio(metric: str, distinct: np.ndarray, counts: np.ndarray) -> Estimate:
    """Σa/Σb with the delta-method variance of a ratio estimator over ``n`` rows:
    ``n/(n-1) · Σ (a_i - R b_i)² / (Σ b_i)²``."""
    rows = int(counts.sum())
    top, bottom = float(counts @ distinct[:, 0]), float(counts @ distinct[:, 1])
    if bottom == 0 or rows < 2:
        return Estimate(metric, None, None, None, "normal", rows, "no graded rows")
    value = top / bottom
    residual = distinct[:, 0] - value * distinct[:, 1]
    variance = rows / (rows - 1) * float(counts @ (residual**2)) / bottom**2
    half = _Z * math.sqrt(variance)
    return Estimate(metric, value, max(0.0, value - half), min(1.0, value + half),
                    "normal (ratio estimator)", rows)  # fmt: skip


def _per_row(table: str, scope: str, top: str, bottom: str, replicates: int) -> str:
    """The query of each dataset row's ``[top, bottom]`` (columns ``c0``, ``c1``): one line
    per row-task, or with replicates their sums per row."""
    if replicates <= 1:
        return f"SELECT {top} AS c0, {bottom} AS c1 FROM {table} WHERE {scope}"
    return (f"SELECT SUM({top}) AS c0, SUM({bottom}) AS c1 FROM {table} WHERE {scope} "
            "GROUP BY row_id")  # fmt: skip


def pass_rate(db: sqlite3.Connection, suite: str, variant: str, replicates: int) -> Estimate:
    """Passed over graded rows."""
    scope = "suite = ? AND variant = ? AND category IN ('passed', 'failed')"
    sql = _per_row("rows", scope, "category = 'passed'", "1", replicates)
    return _proportion("pass_rate", _vectors(db, sql, [suite, variant]), replicates)


def criterion_estimates(
    db: sqlite3.Connection,
    suite: str,
    variant: str,
    position: int,
    replicates: int,
    *,
    recorded: Collection[str] = (),
) -> list[Estimate]:
    """The criterion at ``position``: ``mean`` score, and ``accuracy`` and ``macro_f1`` for a
    classification criterion (QA: ``accuracy`` over graded samples); none of ``recorded``
    (the metrics whose interval ``suite.json`` holds: not drawn again)."""
    scope = "suite = ? AND variant = ? AND position = ? AND outcome IN ('pass', 'fail')"
    params: list[object] = [suite, variant, position]
    found = []
    if "mean" not in recorded:
        mean = _vectors(db, _per_row("criteria", scope, "score", "1", replicates), params)
        found.append(resampled("mean", mean, ratio(0, 1)))
    labelled = db.execute(f"SELECT 1 FROM criteria WHERE {scope} AND expected IS NOT NULL "
                          "LIMIT 1", params).fetchone()  # fmt: skip
    qa = db.execute(f"SELECT 1 FROM criteria WHERE {scope} AND qa_correct IS NOT NULL LIMIT 1",
                    params).fetchone()  # fmt: skip
    if labelled:
        if "accuracy" not in recorded:
            sql = _per_row("criteria", scope, "expected = observed", "1", replicates)
            found.append(_proportion("accuracy", _vectors(db, sql, params), replicates))
        found.append(_macro_f1(db, scope, params, replicates))
    elif qa and "accuracy" not in recorded:
        sql = _per_row("criteria", f"{scope} AND qa_correct IS NOT NULL", "qa_correct", "1",
                       replicates)  # fmt: skip
        found.append(_proportion("accuracy", _vectors(db, sql, params), replicates))
    return found


def _proportion(metric: str, vectors: Counter[tuple[float, ...]], replicates: int) -> Estimate:
    if replicates <= 1:
        return wilson(metric, int(sum(v[0] * n for v, n in vectors.items())),
                      int(sum(v[1] * n for v, n in vectors.items())))  # fmt: skip
    return resampled(metric, vectors, ratio(0, 1))


def _macro_f1(
    db: sqlite3.Connection, scope: str, params: list[object], replicates: int
) -> Estimate:
    """Per row, ``[tp, fp, fn]`` of every label seen in the suite; rows are grouped by their
    (expected, observed) pairs first, so only the distinct ones are held."""
    pair = "expected || char(31) || observed"
    per_row = (f"SELECT {pair} AS k FROM criteria WHERE {scope}" if replicates <= 1 else
               f"SELECT group_concat({pair}, char(30)) AS k FROM (SELECT row_id, expected, "
               f"observed FROM criteria WHERE {scope} ORDER BY row_id, expected, observed) "
               "GROUP BY row_id")  # fmt: skip
    keys = Counter({key: int(n) for key, n in db.execute(
        f"SELECT k, COUNT(*) FROM ({per_row}) GROUP BY k", params)})  # fmt: skip
    pairs = {key: [tuple(p.split("\x1f", 1)) for p in key.split("\x1e")] for key in keys}
    labels = sorted({label for found in pairs.values() for pair in found for label in pair})
    where = {label: i for i, label in enumerate(labels)}
    vectors: Counter[tuple[float, ...]] = Counter()
    for key, found in pairs.items():
        cells = [0.0] * (3 * len(labels))
        for expected, observed in found:
            if expected == observed:
                cells[3 * where[expected]] += 1
            else:
                cells[3 * where[observed] + 1] += 1
                cells[3 * where[expected] + 2] += 1
        vectors[tuple(cells)] += keys[key]
    return resampled("macro_f1", vectors, macro_f1(len(labels)), ratio_columns=False)


def label_estimates(confusion: dict[tuple[str, str], int], labels: list[str]) -> list[Estimate]:
    """Wilson intervals of each label's precision (over rows observed as it) and recall
    (over rows expecting it), for one replicate."""
    found = []
    for label in labels:
        tp = confusion.get((label, label), 0)
        predicted = sum(n for (_, o), n in confusion.items() if o == label)
        support = sum(n for (e, _), n in confusion.items() if e == label)
        found.append(wilson(f"precision.{label}", tp, predicted))
        found.append(wilson(f"recall.{label}", tp, support))
    return found
