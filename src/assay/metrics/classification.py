"""Classification metrics over ``(expected, observed)`` label pairs.

Definitions (the field's standard ones, as scikit-learn computes them with
``labels`` = the sorted union of expected and observed labels):

- per label ``l``: ``precision.l = TP/(TP+FP)``, ``recall.l = TP/(TP+FN)``,
  ``f1.l = 2TP/(2TP+FP+FN)``, ``support`` = rows expecting ``l``;
- ``accuracy`` = matching pairs / pairs;
- ``macro_f1`` = unweighted mean of ``f1.l``; ``weighted_f1`` = mean weighted by support;
  ``micro_f1`` = ``2ΣTP/(2ΣTP+ΣFP+ΣFN)`` (equal to accuracy for single-label data).

Where a denominator is 0 (a label never predicted has no precision, a label never expected
has no recall, an empty suite has no accuracy) the value is ``None`` and the reason is kept;
scikit-learn's ``zero_division=np.nan`` gives the same cells. ``f1.l`` is always defined for
a label in the union. Metric names match Coder Eval's (``reference/originals.md`` §1.4).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from assay.metrics.values import MetricTable

NO_PAIRS = "no graded rows"


@dataclass(frozen=True)
class LabelStats:
    """Counts and scores of one label. ``precision``/``recall`` are ``None`` when undefined."""

    label: str
    tp: int
    fp: int
    fn: int
    support: int
    precision: float | None
    recall: float | None
    f1: float


@dataclass
class ClassificationReport:
    """Everything :func:`classification_report` computes.

    Attributes:
        labels: the sorted union of expected and observed labels.
        per_label: one :class:`LabelStats` per label, in ``labels`` order.
        confusion: ``(expected, observed) → count`` for every non-empty cell.
        table: the flat metrics (``accuracy``, ``macro_f1``, ``precision.<l>``, …).
        total: the number of pairs.
    """

    labels: list[str]
    per_label: list[LabelStats]
    confusion: dict[tuple[str, str], int]
    table: MetricTable
    total: int
    extra: dict[str, Any] = field(default_factory=dict)

    def details(self) -> dict[str, Any]:
        """The JSON ``details`` of a classification aggregate (Coder Eval's shape)."""
        return {
            "labels": self.labels,
            "per_label": [
                {
                    "label": s.label,
                    "precision": s.precision,
                    "recall": s.recall,
                    "f1": s.f1,
                    "support": s.support,
                }
                for s in self.per_label
            ],
            "confusion": [
                {"expected": e, "observed": o, "count": n}
                for (e, o), n in sorted(self.confusion.items())
            ],
            "total_pairs": self.total,
        }


def classification_report(pairs: Sequence[tuple[str, str]]) -> ClassificationReport:
    """Compute per-label precision/recall/F1, accuracy, macro/weighted/micro F1 and confusion.

    Args:
        pairs: ``(expected_label, observed_label)`` for each graded row.
    """
    return report_from_confusion(Counter(pairs))


def report_from_confusion(confusion: Counter[tuple[str, str]]) -> ClassificationReport:
    """:func:`classification_report` of the pairs counted in ``confusion`` (``(expected,
    observed) → rows``): everything depends on the counts only, so a suite is counted as
    its rows arrive."""
    confusion = +confusion  # cells with a positive count
    labels = sorted({e for e, _ in confusion} | {o for _, o in confusion})
    expected: Counter[str] = Counter()
    observed: Counter[str] = Counter()
    for (e, o), n in confusion.items():
        expected[e] += n
        observed[o] += n
    table = MetricTable()
    per_label: list[LabelStats] = []
    for label in labels:
        stats = _label_stats(label, confusion[(label, label)], expected[label], observed[label])
        per_label.append(stats)
        table.put(f"precision.{label}", stats.tp, stats.tp + stats.fp, _never("predicted", label))
        table.put(f"recall.{label}", stats.tp, stats.tp + stats.fn, _never("expected", label))
        table.set(f"f1.{label}", stats.f1)
    total = sum(confusion.values())
    correct = sum(n for (e, o), n in confusion.items() if e == o)
    table.put("accuracy", correct, total, NO_PAIRS)
    # Averages are summed as exact fractions and rounded once, so a gate set at the exact
    # value (``weighted_f1: 0.75`` on a suite whose weighted F1 is 3/4) passes.
    f1 = [_f1_fraction(s) for s in per_label]
    table.put("macro_f1", sum(f1, Fraction(0)), len(per_label), NO_PAIRS)
    weighted = sum((f * s.support for f, s in zip(f1, per_label, strict=True)), Fraction(0))
    table.put("weighted_f1", weighted, total, NO_PAIRS)
    tp = sum(s.tp for s in per_label)
    fp = sum(s.fp for s in per_label)
    fn = sum(s.fn for s in per_label)
    table.put("micro_f1", 2 * tp, 2 * tp + fp + fn, NO_PAIRS)
    return ClassificationReport(labels, per_label, dict(confusion), table, total)


def _label_stats(label: str, tp: int, support: int, predicted: int) -> LabelStats:
    fp = predicted - tp
    fn = support - tp
    return LabelStats(
        label=label,
        tp=tp,
        fp=fp,
        fn=fn,
        support=support,
        precision=tp / predicted if predicted else None,
        recall=tp / support if support else None,
        f1=2 * tp / (2 * tp + fp + fn),
    )


def _f1_fraction(stats: LabelStats) -> Fraction:
    return Fraction(2 * stats.tp, 2 * stats.tp + stats.fp + stats.fn)


def _never(what: str, label: str) -> str:
    return f"0/0: label '{label}' was never {what}"
