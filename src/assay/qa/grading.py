"""Grade one response to one QA item: rules for choices, rules then the judge for open ones.

Per-sample ``error_reason`` (``reference/originals.md`` §2.4, plus ``extraction_failed``):

=====================  ==============  ================================================
error_reason           is_correct      when
=====================  ==============  ================================================
``None``               ``True``        graded correct
``wrong_answer``       ``False``       graded wrong
``content_none``       ``False``       the response is missing or blank (the answering
                                       model failed or said nothing)
``extraction_failed``  ``False``       a choice question whose response names no option
                                       letter (:mod:`assay.qa.extract`)
``judge_error``        ``None``        the judge gave no parseable verdict after its
                                       retries; kept out of accuracy's denominator
=====================  ==============  ================================================

Choice questions are graded by rule only: ``mcq_single`` is correct iff exactly one letter
was extracted and it is correct; ``mcq_multi`` iff the extracted set equals the correct set.
Open questions are tried by rule first (``graded_by: rule``), then by the judge:

- ``open``: a normalized exact match with an accepted answer is correct (:mod:`assay.qa.rules`;
  the whole response, the last ``\\boxed{}`` and the rest of the line after the last
  "answer:"/"answer is"/"####" are tried); when every accepted answer is a number, the final
  number written decides (GSM8K: ``#### 16`` against ``18`` is wrong by rule); a match with a
  known wrong answer is wrong; an obvious abstention is wrong;
- ``open_unanswerable``: an obvious abstention is correct; a response equal to one of the
  plausible (wrong) answers is wrong; everything else goes to the judge, told that no answer
  exists. ``unanswerable: true`` marks these rows in every result.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from assay.errors import UsageError
from assay.providers.base import Model
from assay.qa.extract import extract_choice
from assay.qa.item import QaItem
from assay.qa.judge import JudgeVerdict, judge_open
from assay.qa.records import PredictionRecord
from assay.qa.rules import is_abstention, matches_any, to_number
from assay.qa.schema import PromptType

ErrorReason = Literal["content_none", "extraction_failed", "judge_error", "wrong_answer"]
GradedBy = Literal["rule", "judge"]
_LAST_BOX = re.compile(r"\\box(?:ed)?\s*\{([^{}]*)\}")
_AFTER = re.compile(r"(?i)(?:\banswer\s*(?:is|:)|####)\s*([^\n]*)")


class SampleResult(BaseModel):
    """The grade of one sample in one replicate (one entry of ``per_sample_results``).

    Attributes:
        sample_id, sample_index, replicate: which sample and replicate (0-based).
        prompt_type: the routing; ``unanswerable`` is ``prompt_type == open_unanswerable``
            (the expected behaviour was to abstain).
        is_correct: ``None`` only on a judge error.
        error_reason: see the module table.
        extracted: choice questions: the extracted letters (``None`` if none).
        extracted_answers: the answer texts behind ``extracted``, through the shuffle.
        graded_by: ``rule`` or ``judge``; ``None`` for ``content_none``.
        rule: which rule decided (an extraction rule, ``exact_match``, ``wrong_match``,
            ``abstention``), when ``graded_by == "rule"``.
        judge_reason, judge_attempts, judge_error: the judge's reason, its calls, and the
            last failure on a judge error.
    """

    model_config = ConfigDict(extra="forbid")

    sample_id: str
    sample_index: int
    replicate: int
    prompt_type: PromptType
    unanswerable: bool = False
    is_correct: bool | None
    error_reason: ErrorReason | None = None
    extracted: list[str] | None = None
    extracted_answers: list[str] | None = None
    graded_by: GradedBy | None = None
    rule: str | None = None
    judge_reason: str | None = None
    judge_attempts: int = 0
    judge_error: str | None = None


def _base(item: QaItem) -> dict[str, object]:
    return {
        "sample_id": item.sample_id,
        "sample_index": item.sample_index,
        "replicate": item.replicate,
        "prompt_type": item.prompt_type,
        "unanswerable": item.unanswerable,
    }


def _verdict(item: QaItem, correct: bool, **details: object) -> SampleResult:
    return SampleResult.model_validate(
        {
            **_base(item),
            "is_correct": correct,
            "error_reason": None if correct else "wrong_answer",
            **details,
        }
    )


def content_none(item: QaItem) -> SampleResult:
    """The result of a missing or blank response."""
    return SampleResult.model_validate(
        {**_base(item), "is_correct": False, "error_reason": "content_none"}
    )


def grade_choice(item: QaItem, response: str | None) -> SampleResult:
    """Grade a ``mcq_single``/``mcq_multi`` response by rule (see the module docstring).

    Raises:
        ValueError: ``item`` is not a choice question.
    """
    if not item.is_choice or item.options is None:
        raise ValueError(f"sample {item.sample_id} is {item.prompt_type}, not a choice question")
    if response is None or not response.strip():
        return content_none(item)
    found = extract_choice(response, item.options.keys())
    if found.extraction_failed:
        return SampleResult.model_validate(
            {**_base(item), "is_correct": False, "error_reason": "extraction_failed"}
        )
    letters = list(found.letters)
    if item.prompt_type == "mcq_multi":
        correct = set(letters) == set(item.correct_letters)
    else:
        correct = len(letters) == 1 and letters[0] in item.correct_letters
    return _verdict(
        item,
        correct,
        extracted=letters,
        extracted_answers=[item.options[letter] for letter in letters],
        graded_by="rule",
        rule=found.rule,
    )


def answer_candidates(response: str) -> list[str]:
    """The texts an exact match tries: the whole response, the last ``\\boxed{}``, and the
    rest of the line after the last "answer is"/"answer:"/"####"."""
    candidates = [response]
    boxes = _LAST_BOX.findall(response)
    if boxes:
        candidates.append(boxes[-1])
    after = _AFTER.findall(response)
    if after:
        candidates.append(after[-1])
    return candidates


def rule_grade_open(item: QaItem, response: str) -> SampleResult | None:
    """The rule grade of an open response, or ``None`` when only the judge can tell."""
    candidates = answer_candidates(response)
    abstained = is_abstention(response)
    if item.unanswerable:
        if abstained:
            return _verdict(item, True, graded_by="rule", rule="abstention")
        if any(matches_any(text, item.wrong_answers) for text in candidates):
            return _verdict(item, False, graded_by="rule", rule="wrong_match")
        return None
    if any(matches_any(text, item.correct_answers) for text in candidates):
        return _verdict(item, True, graded_by="rule", rule="exact_match")
    numeric = _numeric_grade(item, candidates)
    if numeric is not None:
        return numeric
    if any(matches_any(text, item.wrong_answers) for text in candidates):
        return _verdict(item, False, graded_by="rule", rule="wrong_match")
    if abstained:
        return _verdict(item, False, graded_by="rule", rule="abstention")
    return None


def _numeric_grade(item: QaItem, candidates: list[str]) -> SampleResult | None:
    """When every accepted answer is a number, the final number written (after a marker, in a
    box, or the whole response) decides: equal by value is correct, different is wrong."""
    gold = [to_number(answer) for answer in item.correct_answers]
    if not gold or any(number is None for number in gold):
        return None
    for text in reversed(candidates):  # the explicit final answer first
        number = to_number(text)
        if number is not None:
            correct = number in gold
            return _verdict(
                item,
                correct,
                graded_by="rule",
                rule="numeric_match" if correct else "numeric_mismatch",
            )
    return None


def from_verdict(item: QaItem, verdict: JudgeVerdict) -> SampleResult:
    """The result of a judge's verdict (a judge error when it has none)."""
    if verdict.is_correct is None:
        return SampleResult.model_validate(
            {
                **_base(item),
                "is_correct": None,
                "error_reason": "judge_error",
                "graded_by": "judge",
                "judge_attempts": verdict.attempts,
                "judge_error": verdict.error,
            }
        )
    return _verdict(
        item,
        verdict.is_correct,
        graded_by="judge",
        judge_reason=verdict.reason,
        judge_attempts=verdict.attempts,
    )


async def grade_open(
    item: QaItem,
    response: str | None,
    *,
    judge: Model | None,
    retries: int = 2,
    include_story: bool = False,
    rules: bool = True,
) -> SampleResult:
    """Grade an ``open``/``open_unanswerable`` response: rules first, then the judge.

    Args:
        item: the open question.
        response: the model's response (``None``/blank → ``content_none``, no judge call).
        judge: the judge model (started); needed only when the rules cannot decide.
        retries: judge retries on an unparseable reply.
        include_story: show the story to the judge.
        rules: try :func:`rule_grade_open` first (``False``: every response goes to the judge).

    Raises:
        ValueError: ``item`` is a choice question.
        UsageError: the judge is needed but ``judge`` is ``None``.
    """
    if item.is_choice:
        raise ValueError(f"sample {item.sample_id} is {item.prompt_type}, not an open question")
    if response is None or not response.strip():
        return content_none(item)
    if rules:
        decided = rule_grade_open(item, response)
        if decided is not None:
            return decided
    if judge is None:
        raise UsageError(
            f"open question {item.sample_id} needs a judge model, but none is configured",
            hint="set qa.judge.model in the task file (e.g. local/smollm2)",
        )
    verdict = await judge_open(judge, item, response, retries=retries, include_story=include_story)
    return from_verdict(item, verdict)


async def grade_item(
    item: QaItem,
    response: str | None,
    *,
    judge: Model | None = None,
    retries: int = 2,
    include_story: bool = False,
) -> SampleResult:
    """Grade any QA item: :func:`grade_choice` or :func:`grade_open`."""
    if item.is_choice:
        return grade_choice(item, response)
    return await grade_open(
        item, response, judge=judge, retries=retries, include_story=include_story
    )


async def grade_record(
    record: PredictionRecord,
    *,
    judge: Model | None = None,
    retries: int = 2,
    include_story: bool = False,
) -> SampleResult:
    """Grade a ``prediction.jsonl`` record again, without the answering model.

    A record whose answering call failed (``error`` set) grades as ``content_none``.
    """
    content = None if record.error is not None else record.pred.content
    return await grade_item(
        record.to_item(), content, judge=judge, retries=retries, include_story=include_story
    )
