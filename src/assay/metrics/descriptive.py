"""Descriptive statistics of per-row scores: count, mean, median, std, min, max.

As in Coder Eval's base aggregate (``reference/originals.md`` §1.4): ``std`` is the
population standard deviation (``statistics.pstdev``), 0.0 for a single row. With no rows
``count`` is 0 and the others are undefined.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from assay.metrics.values import MetricTable

NO_ROWS = "no graded rows"


def describe(scores: Sequence[float]) -> MetricTable:
    """Return count, mean, median, std, min and max of ``scores`` (each in any unit)."""
    table = MetricTable()
    table.set("count", float(len(scores)))
    if not scores:
        for name in ("mean", "median", "std", "min", "max"):
            table.set(name, None, NO_ROWS)
        return table
    table.set("mean", statistics.fmean(scores))
    table.set("median", float(statistics.median(scores)))
    table.set("std", statistics.pstdev(scores) if len(scores) > 1 else 0.0)
    table.set("min", float(min(scores)))
    table.set("max", float(max(scores)))
    return table
