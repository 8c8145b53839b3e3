"""A criterion's tally guarded: a ``tally()`` (a plugin's, most likely) that raises, answers
what is not ``(MetricTable, dict)``, or gives a metric that is not a finite number is that
criterion's error in its suite's aggregate, naming the class, never the whole run's: the
other criteria and suites keep their reports (as a ``check`` that raises is that criterion's
error on its row, docs/task-files.md "Criteria of your own")."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from assay.criteria.base import Criterion, Tally
from assay.metrics.values import MetricTable
from assay.results.task_result import CriterionResult

T = TypeVar("T")


class GuardedTally:
    """:meth:`Criterion.tally` of ``criterion``, fed and read through guards; ``error`` says
    what failed first (``None`` while nothing did). After a failure it counts nothing more
    and its result is an empty table."""

    def __init__(self, criterion: Criterion) -> None:
        self.owner = f"{type(criterion).__qualname__}.tally()"
        self.error: str | None = None
        self.inner: Tally | None = self._call(criterion.tally)

    def _call(self, action: Callable[[], T]) -> T | None:
        if self.error is not None:
            return None
        try:
            return action()
        except Exception as exc:  # a plugin's code: its failure is this criterion's alone
            self.error = f"{self.owner} failed: {type(exc).__name__}: {exc}"
            return None

    def add(self, item: CriterionResult) -> None:
        """Feed one graded result to the tally."""
        inner = self.inner
        if inner is not None:
            self._call(lambda: inner.add(item))

    def result(self) -> tuple[MetricTable, dict[str, Any]]:
        """The tally's metrics and details; metrics that are not finite numbers are
        undefined (with the reason), non-finite numbers in the details become ``None``."""
        found = self._call(self.inner.result) if self.inner is not None else None
        if found is None:
            return MetricTable(), {}
        table, details = found if isinstance(found, tuple) and len(found) == 2 else (None, None)
        if not isinstance(table, MetricTable) or not isinstance(details, dict):
            self.error = (f"{self.owner} answered {type(found).__name__}, not (MetricTable, "
                          "dict) as Tally.result() does")  # fmt: skip
            return MetricTable(), {}
        for name, value in list(table.values.items()):
            if value is not None and not _finite(value):
                table.set(name, None, f"{self.owner} gave {value!r}, not a finite number")
        return table, _finite_details(details)


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _finite_details(value: Any) -> Any:
    """``value`` with every NaN or infinity (which JSON cannot hold) made ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_details(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_details(v) for v in value]
    return value
