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

from typing import Any

from assay.criteria.base import GradingContext, read_text
from assay.metrics.classification import classification_report
from assay.metrics.descriptive import describe
from assay.metrics.values import MetricTable
from assay.qa.rules import is_refusal
from assay.results.task_result import ClassificationCriterionResult, CriterionResult
from assay.spec.criteria import ClassificationMatch, CriterionSpec

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


class ClassificationAggregate:
    """The classification overlay: score statistics plus accuracy, macro/weighted/micro F1,
    per-label precision/recall/F1 and the confusion matrix over the rows'
    ``(expected_label, observed_label)`` pairs (:class:`ClassificationCriterionResult`)."""

    def aggregate(
        self, spec: CriterionSpec, results: list[CriterionResult]
    ) -> tuple[MetricTable, dict[str, Any]]:
        """Score statistics plus classification metrics over the classification results."""
        table = describe([r.score for r in results])
        pairs = [
            (r.expected_label, r.observed_label)
            for r in results
            if isinstance(r, ClassificationCriterionResult)
        ]
        report = classification_report(pairs)
        table.merge(report.table)
        details = report.details()
        warning = one_label_warning([observed for _, observed in pairs],
                                    expected_varies=len({e for e, _ in pairs}) > 1)  # fmt: skip
        if warning is not None:
            details["warnings"] = [warning]
        return table, details


class ClassificationChecker(ClassificationAggregate):
    """Grades ``classification_match`` and aggregates classification metrics."""

    type_name = "classification_match"

    async def check(self, spec: ClassificationMatch, context: GradingContext) -> CriterionResult:
        """Compare the observed label with the expected one."""
        text = read_text(spec.path, context)
        observed = canonical_label(
            text.value, spec.allowed_labels, case_sensitive=spec.case_sensitive
        )
        expected = expected_label(spec)
        refused = observed == OTHER_LABEL and expected != OTHER_LABEL and is_refusal(text.value)
        if refused:
            observed = REFUSED_LABEL
        return ClassificationCriterionResult(
            criterion_type=spec.type,
            description=spec.description,
            score=1.0 if observed == expected else 0.0,
            details=f"observed={observed!r}, expected={expected!r}",
            evaluation_status="refused" if refused else "evaluated",
            pass_threshold=spec.pass_threshold,
            gating=spec.gating,
            weight=spec.weight,
            observed_label=observed,
            expected_label=expected,
        )


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
