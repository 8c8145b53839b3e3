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
``answer_error``       ``None``        the answering model never answered (its call failed
                                       after retries, the agent crashed); kept out of
                                       accuracy's denominator, like a row that never ran
``refused``            ``None``        the response declines the task ("I'm sorry, but I
                                       can't help with that": :func:`assay.qa.rules.
                                       is_refusal`) where it would otherwise be graded
                                       wrong; kept out of accuracy and counted apart
                                       (``refused``, ``refusal_rate``), neither a wrong
                                       answer nor an extraction failure
=====================  ==============  ================================================

ToMEval counts a failed answering call as ``content_none`` (wrong); assay keeps it out of
accuracy, so a provider outage cannot lower a model's score, and shows it as
``answer_errors`` (resume the run with ``--retry-errors`` to answer those samples).

Choice questions are graded by rule only: ``mcq_single`` is correct iff exactly one letter
was extracted and it is correct; ``mcq_multi`` iff the extracted set equals the correct set.
Open questions are tried by rule first (``graded_by: rule``), then by the judge; without a
judge the rules are final and a response they cannot match is wrong (``rule: no_match``,
the exact-match grading of SQuAD and NQ-open):

- ``open``: a normalized exact match with an accepted answer is correct (:mod:`assay.qa.rules`;
  the whole response, the last ``\\boxed{}`` and the rest of the line after the last
  "answer:"/"answer is"/"####" are tried; numbers keep their sign and decimal point, so
  ``14.4`` never matches ``144``); when every accepted answer is a number, a candidate that is
  a number decides by value (GSM8K: ``#### 16`` against ``18`` is wrong by rule,
  ``numeric_match``/``numeric_mismatch``); failing that, the number a marker's line starts
  with ("The answer is 18. That took 3 steps.") is correct when equal; then the last number written
  ("12 * 12 = 144", "144 apples") is correct when equal (``last_number_match``) and otherwise
  left to the judge; a match with a known wrong answer is wrong; an obvious abstention is
  wrong;
- ``open_unanswerable``: an obvious abstention is correct; a response equal to one of the
  plausible (wrong) answers is wrong; everything else goes to the judge, told that no answer
  exists. ``unanswerable: true`` marks these rows in every result.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from decimal import Decimal
from operator import attrgetter
from typing import Any, ClassVar, Literal, Protocol

from pydantic import ConfigDict, TypeAdapter

from assay.errors import UsageError
from assay.providers.base import Model
from assay.qa.extract import extract_choice
from assay.qa.item import QaItem
from assay.qa.judge import JudgeVerdict, OpenJudge, PromptJudge
from assay.qa.records import PredictionRecord
from assay.qa.rules import is_abstention, is_refusal, last_number, matches_any, to_number
from assay.qa.schema import PromptType

ErrorReason = Literal[
    "content_none", "extraction_failed", "judge_error", "wrong_answer", "answer_error", "refused"
]
GradedBy = Literal["rule", "judge"]
_LAST_BOX = re.compile(r"\\box(?:ed)?\s*\{([^{}]*)\}")
_AFTER = re.compile(r"(?i)(?:\banswer\s*(?:is|:)|####)\s*([^\n]*)")
_LEAD = re.compile(  # a number at the start (after bold marks), not a fraction, time or date
    r"^[\s*]*([-+\u2212]?\s*\$?\s*[-+\u2212]?\d+(?:,\d{3})*(?:\.\d+)?%?)(?![\w/:]|[.,]\d)"
)


@dataclass(slots=True)
class SampleResult:
    """The grade of one sample in one replicate (one entry of ``per_sample_results``).

    A slotted dataclass, not a pydantic model and not frozen: ``assay evaluate`` builds one
    per prediction (100,000 and more), and validation (or a frozen ``__init__``, four times
    slower) would cost more than the grading. Treat it as immutable.

    Attributes:
        sample_id, sample_index, replicate: which sample and replicate (0-based).
        prompt_type: the routing; ``unanswerable`` is ``prompt_type == open_unanswerable``
            (the expected behaviour was to abstain).
        is_correct: ``None`` on a judge error or an answer error.
        error_reason: see the module table.
        extracted: choice questions: the extracted letters (``None`` if none).
        extracted_answers: the answer texts behind ``extracted``, through the shuffle.
        graded_by: ``rule`` or ``judge``; ``None`` for ``content_none``.
        rule: which rule decided (an extraction rule, ``exact_match``, ``numeric_match``,
            ``numeric_mismatch``, ``last_number_match``, ``wrong_match``, ``abstention``,
            ``no_match``), when ``graded_by == "rule"``.
        judge_reason, judge_attempts, judge_error: the judge's reason, its calls, and the
            last failure on a judge error.
    """

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    sample_id: str
    sample_index: int
    replicate: int
    prompt_type: PromptType
    unanswerable: bool
    is_correct: bool | None
    error_reason: ErrorReason | None = None
    extracted: list[str] | None = None
    extracted_answers: list[str] | None = None
    graded_by: GradedBy | None = None
    rule: str | None = None
    judge_reason: str | None = None
    judge_attempts: int = 0
    judge_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``per_sample_results`` (every value is JSON-native)."""
        return dict(zip(_FIELDS, _VALUES(self), strict=True))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SampleResult:
        """Validate a ``per_sample_results`` entry (as written by :meth:`to_dict`).

        Raises:
            pydantic.ValidationError: a missing or unknown key, or a value of the wrong type.
        """
        return _ADAPTER.validate_python(dict(data))


_FIELDS = tuple(field.name for field in fields(SampleResult))
_VALUES = attrgetter(*_FIELDS)  # every field's value as one tuple, in C
_ADAPTER: TypeAdapter[SampleResult] = TypeAdapter(SampleResult)


class Graded(Protocol):
    """What grading reads from a sample: a :class:`QaItem`, or a ``prediction.jsonl`` record
    as it is (``assay evaluate`` grades records without building items)."""

    @property
    def sample_id(self) -> str: ...
    @property
    def sample_index(self) -> int: ...
    @property
    def replicate(self) -> int: ...
    @property
    def prompt_type(self) -> PromptType: ...
    @property
    def unanswerable(self) -> bool: ...
    @property
    def is_choice(self) -> bool: ...
    @property
    def options(self) -> Mapping[str, str] | None: ...
    @property
    def correct_letters(self) -> Sequence[str]: ...
    @property
    def correct_answers(self) -> Sequence[str]: ...
    @property
    def wrong_answers(self) -> Sequence[str]: ...


def _base(item: Graded) -> dict[str, Any]:
    return {
        "sample_id": item.sample_id,
        "sample_index": item.sample_index,
        "replicate": item.replicate,
        "prompt_type": item.prompt_type,
        "unanswerable": item.unanswerable,
    }


def _verdict(item: Graded, correct: bool, **details: Any) -> SampleResult:
    return SampleResult(
        **{
            **_base(item),
            "is_correct": correct,
            "error_reason": None if correct else "wrong_answer",
            **details,
        }
    )


def content_none(item: Graded) -> SampleResult:
    """The result of a missing or blank response."""
    return SampleResult(**{**_base(item), "is_correct": False, "error_reason": "content_none"})


def refused(item: Graded) -> SampleResult:
    """The result of a response that declines the task (kept out of accuracy)."""
    return SampleResult(**{**_base(item), "is_correct": None, "error_reason": "refused"})


def answer_error(item: Graded) -> SampleResult:
    """The result of a sample the answering model never answered (kept out of accuracy)."""
    return SampleResult(**{**_base(item), "is_correct": None, "error_reason": "answer_error"})


def grade_choice(item: Graded, response: str | None) -> SampleResult:
    """Grade a ``mcq_single``/``mcq_multi`` response by rule (see the module docstring).

    Raises:
        ValueError: ``item`` is not a choice question.
    """
    if not item.is_choice or item.options is None:
        raise ValueError(f"sample {item.sample_id} is {item.prompt_type}, not a choice question")
    if response is None or not response.strip():
        return content_none(item)
    found = extract_choice(response, frozenset(item.options))  # keys are upper-case letters
    if found.extraction_failed and is_refusal(response):
        return refused(item)
    if found.extraction_failed:
        return SampleResult(
            **{**_base(item), "is_correct": False, "error_reason": "extraction_failed"}
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


def stated_number(response: str) -> Decimal | None:
    """The number the rest of the line after the last "answer is"/"answer:"/"####" starts
    with ("The answer is 18. That took 3 steps." → 18), or ``None``."""
    after = _AFTER.findall(response)
    lead = _LEAD.match(after[-1]) if after else None
    return to_number(lead.group(1)) if lead is not None else None


def rule_grade_open(item: Graded, response: str) -> SampleResult | None:
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
    numeric = _numeric_grade(item, candidates, response)
    if numeric is not None:
        return numeric
    if any(matches_any(text, item.wrong_answers) for text in candidates):
        return _verdict(item, False, graded_by="rule", rule="wrong_match")
    if abstained:
        return _verdict(item, False, graded_by="rule", rule="abstention")
    return None


def _numeric_grade(item: Graded, candidates: list[str], response: str) -> SampleResult | None:
    """When every accepted answer is a number, the final number written (after a marker, in a
    box, or the whole response) decides: equal by value is correct, different is wrong; then
    the number a marker names with more text after it (:func:`stated_number`) decides when
    equal, and defers when not; then the last number written, when equal."""
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
    stated = stated_number(response)  # only here: most responses are decided above
    if stated is not None:  # the answer the response names: a later number never overrules it
        if stated in gold:
            return _verdict(item, True, graded_by="rule", rule="numeric_match")
        return None  # "The answer is 20. That took 18 steps.": the judge (or no_match) decides
    for text in reversed(candidates):  # "12 * 12 = 144", "144 apples": the last number
        number = last_number(text)
        if number is not None:
            if number in gold:
                return _verdict(item, True, graded_by="rule", rule="last_number_match")
            return None  # prose around a different number: the judge (or no_match) decides
    return None


def from_verdict(item: Graded, verdict: JudgeVerdict) -> SampleResult:
    """The result of a judge's verdict (a judge error when it has none)."""
    if verdict.is_correct is None:
        return SampleResult(
            **{
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
    judge: Model | None = None,
    retries: int = 2,
    include_story: bool = False,
    rules: bool = True,
    max_tokens: int = 200,
    template: str | None = None,
    open_judge: OpenJudge | None = None,
) -> SampleResult:
    """Grade an ``open``/``open_unanswerable`` response: rules first, then the judge.

    Args:
        item: the open question.
        response: the model's response (``None``/blank → ``content_none``, no judge call).
        judge: the judge model (started), asked when the rules cannot decide; ``None``: the
            rules are final (an undecided response is wrong, ``rule: no_match``).
        retries: judge retries on an unparseable reply.
        include_story: show the story to the judge.
        rules: try :func:`rule_grade_open` first (``False``: every response goes to the judge).
        max_tokens: the judge's token budget per verdict.
        template: the task's own judge prompt (``qa.judge.prompt``).
        open_judge: the judge to ask instead of the built-in one on ``judge`` (a judge
            asset's: :func:`assay.qa.open_judge.open_judge`); the four settings above are
            the built-in judge's and do not apply to it.

    Raises:
        ValueError: ``item`` is a choice question.
        UsageError: ``rules`` is ``False`` and ``judge`` is ``None`` (nothing can grade).
    """
    if item.is_choice:
        raise ValueError(f"sample {item.sample_id} is {item.prompt_type}, not an open question")
    asker = open_judge
    if asker is None and judge is not None:
        asker = PromptJudge(judge, retries=retries, include_story=include_story,
                            max_tokens=max_tokens, template=template)  # fmt: skip
    decided = decide_open(item, response, rules=rules, judged=asker is not None)
    if decided is not None or asker is None:
        assert decided is not None
        return decided
    assert response is not None
    return from_verdict(item, await asker(item, response))


def decide_open(
    item: Graded, response: str | None, *, rules: bool, judged: bool
) -> SampleResult | None:
    """The grade of an open response that needs no judge call, or ``None`` when the judge
    must decide (``judged``: a judge is available).

    Raises:
        UsageError: ``rules`` is ``False`` and there is no judge.
    """
    if response is None or not response.strip():
        return content_none(item)
    decided = rule_grade_open(item, response) if rules else None
    wrong_or_open = not (decided and decided.is_correct)
    if wrong_or_open and is_refusal(response) and not is_abstention(response):
        return refused(item)  # "I cannot answer that" stays an abstention
    if decided is not None:
        return decided
    if judged:
        return None
    if rules:
        return _verdict(item, False, graded_by="rule", rule="no_match")
    raise UsageError(
        f"open question {item.sample_id} needs a judge model, but none is configured",
        hint="set qa.judge.model in the task file (e.g. local/smollm2)",
    )


async def grade_item(
    item: QaItem,
    response: str | None,
    *,
    judge: Model | None = None,
    retries: int = 2,
    include_story: bool = False,
    rules: bool = True,
) -> SampleResult:
    """Grade any QA item: :func:`grade_choice` or :func:`grade_open`."""
    if item.is_choice:
        return grade_choice(item, response)
    return await grade_open(
        item, response, judge=judge, retries=retries, include_story=include_story, rules=rules
    )


async def grade_record(
    record: PredictionRecord,
    *,
    judge: Model | None = None,
    retries: int = 2,
    include_story: bool = False,
    rules: bool = True,
) -> SampleResult:
    """Grade a ``prediction.jsonl`` record again, without the answering model.

    A record whose answering call failed (``error`` set) is an ``answer_error``.
    """
    item = record.to_item()
    if record.error is not None:
        return answer_error(item)
    return await grade_item(
        item,
        record.pred.content,
        judge=judge,
        retries=retries,
        include_story=include_story,
        rules=rules,
    )
