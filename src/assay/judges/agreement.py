"""How well a judge agrees with people: the numbers of ``calibration.json``.

Over the rows that have both a human label and a readable verdict:

- ``agreement``: the share of rows where they are equal, with its Wilson 95% interval;
- ``kappa``: Cohen's κ with its interval (:mod:`assay.metrics.agreement`); for ordered labels
  and integer scales also ``weighted_kappa`` (quadratic weights); for scales ``spearman``
  (Spearman's ρ) and ``mean_absolute_difference``; a continuous scale has no κ (it needs
  categories; the report says so);
- the confusion matrix (human → judge) and per-label precision, recall and F1, the judge's
  verdicts read as predictions of the human labels;
- for binary verdicts ``tpr`` (sensitivity: truly passing rows judged pass) and ``tnr``
  (specificity), each with its Wilson 95% interval (its ``low`` is the lower bound);
- every disagreement, and notes that explain what is undefined (never NaN).

Booleans are shown as ``pass`` / ``fail``; an integer scale's mean over samples is rounded to
the nearest point for κ and the confusion matrix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from assay.metrics.agreement import (
    MIN_ROWS_FOR_INTERVAL,
    Estimate,
    cohen_kappa,
    spearman,
)
from assay.metrics.classification import classification_report
from assay.metrics.intervals import wilson_interval
from assay.spec.judge import VerdictSpec

Value = bool | str | float


@dataclass(frozen=True)
class Compared:
    """One row with both a human label and a verdict."""

    example_id: str
    human: Value
    judge: Value
    reason: str


def shown(value: Value) -> str:
    """A verdict or label as the report writes it: ``pass``/``fail``, a label, a number."""
    if isinstance(value, bool):
        return "pass" if value else "fail"
    if isinstance(value, float):
        return f"{value:g}"
    return value


def categories(verdict: VerdictSpec) -> list[str] | None:
    """The ordered categories of a verdict kind (``None`` for a continuous scale)."""
    if verdict.kind == "binary":
        return ["pass", "fail"]
    if verdict.kind == "labels":
        return list(verdict.labels or [])
    if not verdict.is_integer:
        return None
    assert verdict.min is not None and verdict.max is not None
    return [f"{v:g}" for v in range(int(verdict.min), int(verdict.max) + 1)]


def category(verdict: VerdictSpec, value: Value) -> str:
    """The category a value falls in (an integer scale's mean rounds to the nearest point)."""
    if verdict.kind == "scale" and verdict.is_integer and isinstance(value, float):
        return f"{float(round(value)):g}"
    return shown(value)


def wilson(successes: int, n: int) -> Estimate:
    """``successes/n`` with its Wilson 95% interval (undefined when ``n`` is 0)."""
    method = "Wilson 95%"
    if n == 0:
        return Estimate(None, method=method, reason="0/0: no row to count")
    bounds = wilson_interval(successes, n, 0.95)
    assert bounds is not None
    return Estimate(successes / n, bounds[0], bounds[1], method=method)


def agreement_report(verdict: VerdictSpec, compared: Sequence[Compared]) -> dict[str, Any]:
    """The agreement numbers of ``compared`` (see the module docstring), as JSON data."""
    order = categories(verdict)
    pairs = [(category(verdict, c.human), category(verdict, c.judge)) for c in compared]
    equal = sum(1 for c in compared if category(verdict, c.human) == category(verdict, c.judge))
    report: dict[str, Any] = {
        "rows_compared": len(compared),
        "min_rows_for_interval": MIN_ROWS_FOR_INTERVAL,
        "agreement": wilson(equal, len(compared)).to_json(),
        "notes": [],
    }
    if order is None:
        report["kappa"] = Estimate(
            None, reason="the scale is continuous: κ needs categories (see Spearman's ρ)"
        ).to_json()
    else:
        report["kappa"] = cohen_kappa(pairs, categories=order).to_json()
    if order is not None and (verdict.ordered or verdict.kind == "scale"):
        report["weighted_kappa"] = cohen_kappa(
            pairs, categories=order, weights="quadratic"
        ).to_json()
    if verdict.kind == "scale":
        _numeric(report, compared)
    labels = order or sorted({p for pair in pairs for p in pair})
    _classification(report, pairs, labels)
    if verdict.kind == "binary":
        _binary(report, compared)
    report["notes"] += _notes(verdict, compared, pairs, labels)
    report["disagreements"] = [
        {
            "example_id": c.example_id,
            "human": shown(c.human),
            "judge": shown(c.judge),
            "reason": c.reason,
        }
        | ({"difference": float(c.judge) - float(c.human)} if verdict.kind == "scale" else {})
        for c in compared
        if category(verdict, c.human) != category(verdict, c.judge)
    ]
    return report


def _numeric(report: dict[str, Any], compared: Sequence[Compared]) -> None:
    humans = [float(c.human) for c in compared]
    judged = [float(c.judge) for c in compared]
    report["spearman"] = spearman(humans, judged).to_json()
    differences = [abs(a - b) for a, b in zip(humans, judged, strict=True)]
    report["mean_absolute_difference"] = (
        sum(differences) / len(differences) if differences else None
    )


def _classification(
    report: dict[str, Any], pairs: list[tuple[str, str]], labels: list[str]
) -> None:
    result = classification_report(pairs)
    cells = Counter(pairs)
    report["labels"] = labels
    report["confusion"] = [
        {"human": h, "judge": j, "count": cells[(h, j)]}
        for h in labels
        for j in labels
        if cells[(h, j)]
    ]
    stats = {s.label: s for s in result.per_label}
    report["per_label"] = [
        {
            "label": label,
            "precision": stats[label].precision if label in stats else None,
            "recall": stats[label].recall if label in stats else None,
            "f1": stats[label].f1 if label in stats else None,
            "support": stats[label].support if label in stats else 0,
            "judged": stats[label].tp + stats[label].fp if label in stats else 0,
        }
        for label in labels
    ]


def _binary(report: dict[str, Any], compared: Sequence[Compared]) -> None:
    positives = [c for c in compared if c.human is True]
    negatives = [c for c in compared if c.human is False]
    tp = sum(1 for c in positives if c.judge is True)
    tn = sum(1 for c in negatives if c.judge is False)
    report["tpr"] = wilson(tp, len(positives)).to_json()
    report["tnr"] = wilson(tn, len(negatives)).to_json()
    report["binary_counts"] = {
        "tp": tp,
        "fn": len(positives) - tp,
        "positives": len(positives),
        "tn": tn,
        "fp": len(negatives) - tn,
        "negatives": len(negatives),
    }
    if not positives:
        report["tpr"]["reason"] = "no row is labelled pass, so the true-positive rate is 0/0"
    if not negatives:
        report["tnr"]["reason"] = "no row is labelled fail, so the true-negative rate is 0/0"


def _notes(
    verdict: VerdictSpec,
    compared: Sequence[Compared],
    pairs: list[tuple[str, str]],
    labels: list[str],
) -> list[str]:
    notes = []
    if not compared:
        return ["no row has both a human label and a readable verdict: nothing to compare"]
    if len(compared) < MIN_ROWS_FOR_INTERVAL:
        notes.append(
            f"{len(compared)} row(s) compared, fewer than the {MIN_ROWS_FOR_INTERVAL} "
            "a large-sample interval (κ, ρ) needs: those intervals are withheld"
        )
    human = {h for h, _ in pairs}
    judged = {j for _, j in pairs}
    never = [label for label in labels if label not in human]
    if never and verdict.kind != "scale":
        notes.append(
            "label(s) " + ", ".join(repr(n) for n in never) + " never occur among "
            "the human labels: their recall is undefined"
        )
    if len(judged) == 1 and judged == human:
        notes.append(
            f"the judge and the people gave every row {next(iter(judged))!r}: "
            "there is no variation, so κ is undefined"
        )
        return notes
    if len(judged) == 1:
        notes.append(
            f"the judge gave every row {next(iter(judged))!r}: it does not "
            "discriminate, so κ is at most 0"
        )
    if len(human) == 1:
        notes.append(
            f"the people gave every row {next(iter(human))!r}: agreement only "
            "measures how often the judge says the same, and κ is at most 0"
        )
    return notes
