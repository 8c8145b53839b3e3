"""``qa``: grade a QA row, and the suite's QA metrics.

A row of a ``qa:`` task carries its :class:`~assay.qa.item.QaItem` (prompt, shuffled
options, correct and wrong answers). Choice questions are graded by the extracted letters
mapped back through the shuffle; open questions by the rules, then the judge
(:mod:`assay.qa.grading`). Score 1.0 when correct, else 0.0. A judge without a verdict after
its retries is a criterion error (``judge_error``): the row ends ``ERROR``, outside every
denominator, never counted wrong; a refusal (``refused``) ends it ``REFUSED``, likewise.

The suite aggregate (over rows whose grade exists) adds ``accuracy`` (= correct / graded,
the same number as ``metrics.json``'s accuracy over all replicates pooled), its Wilson 95%
interval in the details, and the rates of ``extraction_failed`` and ``content_none``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

from assay.criteria.base import (
    Criterion,
    CriterionError,
    GradingContext,
    ScoreTally,
    Service,
    Tally,
)
from assay.criteria.classification import OneLabel
from assay.errors import UsageError
from assay.metrics.intervals import wilson_interval
from assay.metrics.values import MetricTable
from assay.providers.base import Model, Usage
from assay.qa.grading import SampleResult, grade_choice, grade_open, refused
from assay.qa.item import QaItem
from assay.qa.judge import JudgeSubject, JudgeVerdict, OpenJudge
from assay.qa.open_judge import open_judge
from assay.results.task_result import CriterionResult, QaCriterionResult
from assay.spec.criteria import QaCriterion
from assay.spec.qa import QaJudge

NO_ITEM = (
    "criterion 'qa' grades rows of a task with a qa: block, and this row has no QA item "
    "(was its task.json written by an older assay?)"
)

QA_ITEM: Service[QaItem] = Service("the row's QA item")
"""The row's QA item (prompt, shuffled options, answers), offered for a ``qa:`` row."""
QA_JUDGE: Service[Model] = Service("the started judge model of qa.judge")
"""The started judge model of a ``qa:`` task with ``qa.judge``."""
QA_JUDGE_SETTINGS: Service[QaJudge] = Service("the task's qa.judge block")
"""That ``qa.judge`` block (its built-in judge's settings, or its resolved judge asset; the
rules)."""


class QaRowCriterion(QaCriterion, Criterion):
    """Grades ``qa`` criteria and aggregates QA accuracy."""

    check_seconds: ClassVar[float | None] = None  # the judge's calls have their own timeouts

    async def check(self, context: GradingContext) -> CriterionResult:
        """Grade the response to the row's QA item.

        Raises:
            CriterionError: the row has no QA item, or an open question needs a judge and
                the task has none.
        """
        item = context.need(QA_ITEM)
        if item is None:
            raise CriterionError(NO_ITEM)
        settings = context.need(QA_JUDGE_SETTINGS)
        if context.refusal() is not None:  # the provider declined: no answer to grade
            return to_criterion_result(self, refused(item))
        try:
            if item.is_choice:
                return to_criterion_result(self, grade_choice(item, context.response))
            return await self._open(item, settings, context)
        except UsageError as exc:
            raise CriterionError(
                f"{exc.message} ({exc.hint})" if exc.hint else exc.message
            ) from None

    async def _open(
        self, item: QaItem, settings: QaJudge | None, context: GradingContext
    ) -> QaCriterionResult:
        """An open question: the rules, then the judge, with what the judge's calls used."""
        judge = open_judge(settings, context.need(QA_JUDGE))
        spent = SpentJudge(judge) if judge is not None else None
        result = await grade_open(item, context.response, open_judge=spent,
                                  rules=settings.rules if settings else True)  # fmt: skip
        usage = spent.usage if spent is not None else Usage()
        cost = _cost(usage, settings, context) if usage.total_tokens else None
        return to_criterion_result(self, result, judge_tokens=usage.total_tokens,
                                   judge_cost_usd=cost)  # fmt: skip

    def tally(self) -> Tally:
        """Score statistics, accuracy, and the rates of unreadable and empty answers."""
        return QaTally()

    def metric_names(self) -> set[str] | None:
        """The base metrics and ``accuracy``."""
        return (super().metric_names() or set()) | {"accuracy"}


class QaTally(ScoreTally):
    """Scores, outcomes, prompt types, and the chosen letters' one-label warning."""

    def __init__(self) -> None:
        super().__init__()
        self.graded = 0
        self.correct = 0
        self.reasons: Counter[str] = Counter()
        self.prompt_types: Counter[str] = Counter()
        self.chosen = OneLabel()
        self.some_answer_wrong = False

    def add(self, result: CriterionResult) -> None:
        """Count one row."""
        super().add(result)
        if not isinstance(result, QaCriterionResult):
            return
        self.graded += 1
        self.correct += result.is_correct is True
        self.reasons[result.error_reason or "correct"] += 1
        self.prompt_types[result.prompt_type] += 1
        if result.sample_result.get("extracted"):
            self.chosen.add(",".join(result.sample_result["extracted"]))
            self.some_answer_wrong |= not result.is_correct

    def result(self) -> tuple[MetricTable, dict[str, Any]]:
        """The scores' statistics, accuracy and the outcome rates, with details."""
        table, _ = super().result()
        correct, graded, reasons = self.correct, self.graded, self.reasons
        none = "0/0: no graded QA row"
        table.put("accuracy", correct, graded, none)
        table.put("extraction_failed_rate", reasons["extraction_failed"], graded, none)
        table.put("content_none_rate", reasons["content_none"], graded, none)
        bounds = wilson_interval(correct, graded, 0.95)
        details: dict[str, Any] = {
            "correct": correct,
            "graded": graded,
            "outcomes": dict(sorted(reasons.items())),
            "by_prompt_type": dict(sorted(self.prompt_types.items())),
            "accuracy_ci": {"low": bounds[0], "high": bounds[1], "confidence": 0.95}
            if bounds
            else None,
        }
        # one letter chosen everywhere, and some of those were wrong: the correct letters vary
        warning = self.chosen.warning(what="choice answer", expected_varies=self.some_answer_wrong)
        if warning is not None:
            details["warnings"] = [warning]
        return table, details


@dataclass
class SpentJudge:
    """An open-answer judge that adds up the tokens of the calls behind its verdicts."""

    judge: OpenJudge
    usage: Usage = field(default_factory=Usage)

    async def __call__(self, item: JudgeSubject, response: str) -> JudgeVerdict:
        """``judge``'s verdict, its calls' tokens added to :attr:`usage`."""
        verdict = await self.judge(item, response)
        self.usage = self.usage + verdict.usage
        return verdict


def _cost(usage: Usage, settings: QaJudge | None, context: GradingContext) -> float | None:
    """What ``usage`` of the ``qa.judge`` model cost (``None``: no price for it)."""
    if settings is None or context.models is None:
        return None
    model = settings.asset.definition.model if settings.asset is not None else settings.model
    price = context.models.price(model) if model else None
    return price.cost(usage) if price is not None else None


def to_criterion_result(
    spec: QaCriterion, result: SampleResult, *, judge_tokens: int = 0,
    judge_cost_usd: float | None = None,
) -> QaCriterionResult:  # fmt: skip
    """The criterion result of one graded sample (``judge_tokens``, ``judge_cost_usd``: what
    the judge's calls on it used and cost)."""
    judge_error = result.error_reason == "judge_error"
    status = "error" if judge_error else "refused" if result.error_reason == "refused" else (
        "evaluated")  # fmt: skip
    return QaCriterionResult(
        criterion_type=spec.type,
        description=spec.description,
        score=1.0 if result.is_correct else 0.0,
        details=describe_result(result),
        error=f"judge_error: {result.judge_error}" if judge_error else None,
        evaluation_status=status,
        pass_threshold=spec.pass_threshold,
        gating=spec.gating,
        weight=spec.weight,
        sample_id=result.sample_id,
        prompt_type=result.prompt_type,
        is_correct=result.is_correct,
        error_reason=result.error_reason,
        sample_result=result.to_dict(),
        judge_tokens=judge_tokens,
        judge_cost_usd=judge_cost_usd,
    )


def describe_result(result: SampleResult) -> str:
    """One line saying how the sample was graded."""
    if result.error_reason == "content_none":
        return "content_none: the response is empty"
    if result.error_reason == "extraction_failed":
        return "extraction_failed: the response names no option letter"
    if result.error_reason == "judge_error":
        return f"judge_error after {result.judge_attempts} attempt(s)"
    if result.error_reason == "refused":
        return "refused: the response declines to answer"
    verdict = "correct" if result.is_correct else "wrong_answer"
    if result.extracted is not None:
        return f"{verdict}: chose {','.join(result.extracted)} ({result.rule})"
    if result.graded_by == "judge":
        return f"{verdict} (judge: {result.judge_reason or 'no reason'})"
    return f"{verdict} (rule: {result.rule})"
