"""Descriptive statistics of per-row scores: count, mean, median, std, min, max.

As in Coder Eval's base aggregate (``reference/originals.md`` §1.4): ``std`` is the
population standard deviation (``statistics.pstdev``), 0.0 for a single row. With no rows
``count`` is 0 and the others are undefined. The numbers are computed from a stream
(:class:`~assay.metrics.streaming.ScoreStats`), equal to the standard library's over the
whole list.
"""

from __future__ import annotations

from collections.abc import Iterable

from assay.metrics.streaming import ScoreStats
from assay.metrics.values import MetricTable

NO_ROWS = "no graded rows"


def describe(scores: Iterable[float]) -> MetricTable:
    """Return count, mean, median, std, min and max of ``scores`` (each in any unit)."""
    stats = ScoreStats()
    for score in scores:
        stats.add(score)
    return describe_stats(stats)


def describe_stats(stats: ScoreStats) -> MetricTable:
    """:func:`describe` of the scores ``stats`` has seen."""
    table = MetricTable()
    table.set("count", float(stats.count))
    if not stats.count:
        for name in ("mean", "median", "std", "min", "max"):
            table.set(name, None, NO_ROWS)
        return table
    table.set("mean", stats.mean())
    table.set("median", stats.median())
    table.set("std", stats.pstdev())
    table.set("min", float(stats.low))
    table.set("max", float(stats.high))
    return table
