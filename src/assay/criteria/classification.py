"""``classification_match``: one label against the expected one, and suite classification metrics.

Rules (``reference/originals.md`` §1.6): the text is stripped; unless ``case_sensitive`` it
takes the casing of the matching allowed label; empty or missing text is ``(none)``; text
outside the allowed labels is ``(other)``. An empty ``expected_label`` expects ``(none)``.
A response outside the labels that declines the task (:func:`assay.qa.rules.is_refusal`) is
``(refused)``: the criterion did not grade it (``evaluation_status`` ``refused``), so it is kept
out of every metric and counted apart.
The suite aggregate adds accuracy, macro/weighted/micro F1, per-label precision/recall/F1 and
the confusion matrix over ``(expected, observed)`` pairs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

from assay.criteria.base import Criterion, GradingContext, ScoreTally, Tally, read_text
from assay.metrics.classification import report_from_confusion
from assay.metrics.values import MetricTable
from assay.qa.rules import is_refusal
from assay.results.task_result import ClassificationCriterionResult, CriterionResult
from assay.spec.criteria import ClassificationMatch

NONE_LABEL = "(none)"
OTHER_LABEL = "(other)"
REFUSED_LABEL = "(refused)"


def canonical_label(text: str | None, allowed: list[str], *, case_sensitive: bool) -> str:
    """The label ``text`` stands for: an allowed label, ``(none)`` or ``(other)``."""
    value = (text or "").strip()
    if not value:
        return NONE_LABEL
    if case_sensitive:
        return value if value in allowed else OTHER_LABEL
    folded = value.casefold()
    for label in allowed:
        if label.casefold() == folded:
            return label
    return OTHER_LABEL


def expected_label(spec: ClassificationMatch) -> str:
    """The expected label in the allowed casing; ``(none)`` when empty."""
    value = spec.expected_label.strip()
    if not value:
        return NONE_LABEL
    label = canonical_label(value, spec.allowed_labels, case_sensitive=spec.case_sensitive)
    return value if label == OTHER_LABEL else label


CLASSIFICATION_METRICS = ("accuracy", "macro_f1", "weighted_f1", "micro_f1")
PER_LABEL = ("precision", "recall", "f1")
SPECIAL_LABELS = (NONE_LABEL, OTHER_LABEL)


def labelled_metric_names(base: set[str], labels: list[str]) -> set[str]:
    """``base`` plus the classification overlay's names: accuracy, macro/weighted/micro F1,
    and ``precision.<label>``, ``recall.<label>``, ``f1.<label>`` for each of ``labels``."""
    per_label = {f"{kind}.{label}" for kind in PER_LABEL for label in labels}
    return base | set(CLASSIFICATION_METRICS) | per_label


class ClassificationMatchCriterion(ClassificationMatch, Criterion):
    """Grades ``classification_match`` and aggregates classification metrics."""

    graded_after_crash: ClassVar[bool] = True
    has_labels: ClassVar[bool] = True

    def tally(self) -> Tally:
        """The classification overlay: score statistics plus accuracy, macro/weighted/micro
        F1, per-label precision/recall/F1 and the confusion matrix over the rows'
        ``(expected_label, observed_label)`` pairs (:class:`ClassificationTally`)."""
        return ClassificationTally()

    def metric_names(self) -> set[str] | None:
        """The base metrics and the overlay's over the allowed labels, ``(none)`` and
        ``(other)``; ``None`` while a label is a ``${row.x}`` placeholder."""
        labels = [*self.allowed_labels, *SPECIAL_LABELS]
        if any("${" in label for label in labels):
            return None
        return labelled_metric_names(super().metric_names() or set(), labels)

    async def check(self, context: GradingContext) -> CriterionResult:
        """Compare the observed label with the expected one."""
        text = read_text(self.path, context)
        observed = canonical_label(
            text.value, self.allowed_labels, case_sensitive=self.case_sensitive
        )
        expected = expected_label(self)
        provider = self.path is None and context.refusal() is not None
        refused = provider or (observed == OTHER_LABEL and expected != OTHER_LABEL
                               and is_refusal(text.value))  # fmt: skip
        if refused:
            observed = REFUSED_LABEL
        return ClassificationCriterionResult(
            criterion_type=self.type,
            description=self.description,
            score=1.0 if observed == expected else 0.0,
            details=f"observed={observed!r}, expected={expected!r}",
            evaluation_status="refused" if refused else "evaluated",
            pass_threshold=self.pass_threshold,
            gating=self.gating,
            weight=self.weight,
            observed_label=observed,
            expected_label=expected,
        )


class OneLabel:
    """What :func:`one_label_warning` needs of a stream of predictions: how many, the first,
    whether two differ."""

    def __init__(self) -> None:
        self.count = 0
        self.first: str | None = None
        self.varied = False

    def add(self, label: str) -> None:
        """Count one prediction."""
        self.count += 1
        if self.first is None:
            self.first = label
        elif label != self.first:
            self.varied = True

    def warning(self, *, expected_varies: bool, what: str = "prediction") -> str | None:
        """:func:`one_label_warning` of the predictions added."""
        if self.varied or self.first is None:
            return None
        return one_label_warning([self.first] * self.count, expected_varies=expected_varies,
                                 what=what)  # fmt: skip


class ClassificationTally(ScoreTally):
    """Scores, the confusion counts, and what the one-label warning needs."""

    def __init__(self) -> None:
        super().__init__()
        self.confusion: Counter[tuple[str, str]] = Counter()
        self.observed = OneLabel()

    def add(self, result: CriterionResult) -> None:
        """Count one row's score and, for a classification result, its label pair."""
        super().add(result)
        if isinstance(result, ClassificationCriterionResult):
            self.confusion[(result.expected_label, result.observed_label)] += 1
            self.observed.add(result.observed_label)

    def result(self) -> tuple[MetricTable, dict[str, Any]]:
        """The scores' statistics, then the classification report (and its warning)."""
        table, _ = super().result()
        report = report_from_confusion(self.confusion)
        table.merge(report.table)
        details = report.details()
        expected = {e for e, _ in self.confusion}
        warning = self.observed.warning(expected_varies=len(expected) > 1)
        if warning is not None:
            details["warnings"] = [warning]
        return table, details


def one_label_warning(
    predictions: list[str], *, expected_varies: bool, what: str = "prediction"
) -> str | None:
    """A warning when every prediction (at least two) is the same label while the expected
    labels vary: the model may answer one label whatever the input, and accuracy then
    measures how often that label is expected, not the model."""
    if len(predictions) < 2 or len(set(predictions)) != 1 or not expected_varies:
        return None
    return (
        f"every {what} is {predictions[0]!r} ({len(predictions)} graded rows): the model may "
        "be answering one label whatever the input, so accuracy only reflects how often that "
        "label is expected"
    )
