"""Grading one response: rule grading of choices, rules then the judge for open answers,
error reasons, and grading a prediction record again without the answering model."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from assay.errors import UsageError
from assay.providers.mock import MockModel, MockRule
from assay.qa import (
    PredictionRecord,
    QaItem,
    build_item,
    grade_choice,
    grade_item,
    grade_open,
    grade_record,
    is_abstention,
    normalize_answer,
    normalize_sample,
)

GOOD = '{"is_correct": true, "reason": "same meaning"}'
BAD = '{"is_correct": false, "reason": "different"}'


def item(
    correct: list[str], wrong: list[str], *, unanswerable: bool = False, as_open: bool = False
) -> QaItem:
    row = {
        "sample_id": "s1",
        "story": "story",
        "question": "question?",
        "answer": {"correct_answers": correct, "wrong_answers": wrong},
        "meta": {"unanswerable": unanswerable},
    }
    sample = normalize_sample(row, index=3)
    return build_item(sample, dataset="d", replicate=1, shuffle=False, as_open=as_open)


def judge(default: str | None = GOOD, **kw: Any) -> MockModel:
    return MockModel(name="mock/judge", default=default, **kw)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


SINGLE = item(["right"], ["w1", "w2", "w3"])  # unshuffled: A right, B-D wrong
MULTI = item(["r1", "r2"], ["w1", "w2"])  # A, B right


def test_single_correct() -> None:
    result = grade_choice(SINGLE, "\\boxed{A}")
    assert result.is_correct is True and result.error_reason is None
    assert result.extracted == ["A"] and result.extracted_answers == ["right"]
    assert (result.graded_by, result.rule) == ("rule", "boxed")
    assert (result.sample_id, result.sample_index, result.replicate) == ("s1", 3, 1)
    assert result.prompt_type == "mcq_single"


def test_single_wrong() -> None:
    result = grade_choice(SINGLE, "Answer: C")
    assert result.is_correct is False and result.error_reason == "wrong_answer"
    assert result.extracted_answers == ["w2"]


def test_single_with_two_letters_is_wrong_even_if_one_is_right() -> None:
    result = grade_choice(SINGLE, "\\boxed{A, B}")
    assert result.is_correct is False and result.error_reason == "wrong_answer"
    assert result.extracted == ["A", "B"]


@pytest.mark.parametrize(
    ("text", "correct"),
    [
        ("\\boxed{A,B}", True),
        ("\\boxed{B, A}", True),
        ("\\boxed{A}", False),
        ("\\boxed{A,B,C}", False),
        ("Answer: A and B", True),
    ],
)
def test_multi_needs_the_exact_set(text: str, correct: bool) -> None:
    result = grade_choice(MULTI, text)
    assert result.is_correct is correct
    assert result.error_reason == (None if correct else "wrong_answer")


@pytest.mark.parametrize("text", [None, "", "  \n"])
def test_empty_response_is_content_none(text: str | None) -> None:
    result = grade_choice(SINGLE, text)
    assert (result.is_correct, result.error_reason, result.graded_by) == (
        False,
        "content_none",
        None,
    )


def test_unextractable_response_is_extraction_failed_not_a_wrong_letter() -> None:
    result = grade_choice(SINGLE, "A good answer needs more thought.")
    assert result.is_correct is False
    assert result.error_reason == "extraction_failed"
    assert result.extracted is None


def test_grade_choice_refuses_open_items_and_grade_open_choice_items() -> None:
    with pytest.raises(ValueError):
        grade_choice(item(["x"], []), "A")
    with pytest.raises(ValueError):
        run(grade_open(SINGLE, "A", judge=None))


def test_as_open_asks_a_choice_sample_without_options() -> None:
    assert OPEN.prompt_type == "open" and OPEN.options is None
    assert OPEN.wrong_answers == ("1969",)
    assert "Options:" not in OPEN.prompt


# asked as an open question although it has a wrong answer (TruthfulQA-style)
OPEN = item(["December 1972", "14 December 1972 UTC"], ["1969"], as_open=True)


@pytest.mark.parametrize(
    ("response", "correct", "rule"),
    [
        ("December 1972", True, "exact_match"),
        ("december, 1972.", True, "exact_match"),
        ("The answer is December 1972.", True, "exact_match"),
        ("\\boxed{14 December 1972 UTC}", True, "exact_match"),
        ("1969", False, "wrong_match"),
        ("I don't know.", False, "abstention"),
    ],
)
def test_open_rules_decide_without_the_judge(response: str, correct: bool, rule: str) -> None:
    model = judge(default=None)  # would raise if called
    result = run(grade_open(OPEN, response, judge=model))
    assert (result.is_correct, result.graded_by, result.rule) == (correct, "rule", rule)
    assert model.calls == 0


def test_open_goes_to_the_judge_when_rules_cannot_tell() -> None:
    model = judge(default=BAD)
    result = run(grade_open(OPEN, "It was the early seventies", judge=model))
    assert (result.is_correct, result.error_reason, result.graded_by) == (
        False,
        "wrong_answer",
        "judge",
    )
    assert result.judge_reason == "different" and result.judge_attempts == 1
    assert model.calls == 1


def test_rules_can_be_turned_off() -> None:
    model = judge(default=BAD)
    result = run(grade_open(OPEN, "December 1972", judge=model, rules=False))
    assert result.graded_by == "judge" and result.is_correct is False


def test_judge_error_is_not_wrong() -> None:
    model = judge(default="not json")
    result = run(grade_open(OPEN, "the early seventies", judge=model, retries=1))
    assert result.is_correct is None
    assert result.error_reason == "judge_error"
    assert result.judge_attempts == 2
    assert result.judge_error is not None


def test_open_empty_response_is_content_none_without_a_judge() -> None:
    result = run(grade_open(OPEN, "  ", judge=None))
    assert result.error_reason == "content_none"


def test_open_without_a_judge_the_rules_are_final() -> None:
    result = run(grade_open(OPEN, "the early seventies", judge=None))
    assert (result.is_correct, result.error_reason) == (False, "wrong_answer")
    assert (result.graded_by, result.rule) == ("rule", "no_match")
    right = run(grade_open(OPEN, "December 1972", judge=None))
    assert right.is_correct is True and right.rule == "exact_match"


def test_open_without_rules_or_judge_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as info:
        run(grade_open(OPEN, "the early seventies", judge=None, rules=False))
    assert info.value.message == "open question s1 needs a judge model, but none is configured"


UNANSWERABLE = item([], ["Rollo"], unanswerable=True)


@pytest.mark.parametrize(
    "response",
    [
        "The story does not say.",
        "unanswerable",
        "It cannot be determined from the story.",
        "Unknown.",
        "There is not enough information to answer.",
    ],
)
def test_abstaining_on_an_unanswerable_question_is_correct(response: str) -> None:
    result = run(grade_open(UNANSWERABLE, response, judge=None))
    assert result.is_correct is True and result.rule == "abstention"
    assert result.unanswerable is True and result.prompt_type == "open_unanswerable"


def test_answering_an_unanswerable_question_with_the_plausible_answer_is_wrong() -> None:
    result = run(grade_open(UNANSWERABLE, "Rollo", judge=None))
    assert result.is_correct is False and result.rule == "wrong_match"


def test_other_answers_to_an_unanswerable_question_go_to_the_judge() -> None:
    model = MockModel(
        name="mock/judge",
        rules=[MockRule(re.compile("CANNOT be answered"), reply=BAD)],
        default=GOOD,
    )
    result = run(grade_open(UNANSWERABLE, "Charles the Simple", judge=model))
    assert result.is_correct is False and result.graded_by == "judge"
    assert result.unanswerable is True


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I don't know", True),
        ("The story doesn’t mention it.", True),
        ("The passage does not specify when this happened.", True),
        ("It is not mentioned, but probably in 1066.", False),  # hedged: the judge decides
        ("Tomb of the Unknown Soldier", False),
        ("France", False),
        (" ".join(["word"] * 30) + " unanswerable", False),  # too long to be obvious
    ],
)
def test_abstention_detector(text: str, expected: bool) -> None:
    assert is_abstention(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("The Beatles!", "beatles"), ("14,000", "14000"), ("$1,875.", "1875"), ("An  apple", "apple")],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_grade_item_dispatches() -> None:
    assert run(grade_item(SINGLE, "(A)")).is_correct is True
    assert run(grade_item(OPEN, "December 1972")).is_correct is True


def test_grade_record_regrades_from_the_record_alone() -> None:
    record = PredictionRecord.from_item(SINGLE, content="Clearly **A**.")
    again = PredictionRecord.model_validate_json(record.to_json_line())
    result = run(grade_record(again))
    assert result.is_correct is True and result.rule == "bold"
    failed = PredictionRecord.from_item(SINGLE, content=None, error="HTTP 500")
    failed_result = run(grade_record(failed))
    assert (failed_result.error_reason, failed_result.is_correct) == ("answer_error", None)


GSM = item(["18"], [])
THOUSANDS = item(["14,000"], [])


@pytest.mark.parametrize(
    ("target", "response", "correct", "rule"),
    [
        (GSM, "9 * 2 = 18. #### 18", True, "exact_match"),
        (GSM, "16 - 3 - 4 = 9 eggs, 9 * 2 = 18 dollars.\n#### 16", False, "numeric_mismatch"),
        (GSM, "The answer is $18.00.", True, "numeric_match"),
        (GSM, "\\boxed{18.0}", True, "numeric_match"),
        (GSM, "17", False, "numeric_mismatch"),
        (THOUSANDS, "#### 14000", True, "exact_match"),
        (THOUSANDS, "The answer is 14,000.", True, "exact_match"),
        (THOUSANDS, "#### 14,500", False, "numeric_mismatch"),
        (GSM, "#### 1.8", False, "numeric_mismatch"),  # not "18" once punctuation goes
        (GSM, "#### -18", False, "numeric_mismatch"),
        (GSM, "1-8", False, "no_match"),
        (GSM, "6 * 3 = 18", True, "last_number_match"),
        (GSM, "18 dollars", True, "last_number_match"),
        (item(["144"], []), "14.4", False, "numeric_mismatch"),
        (item(["144"], []), "1.44", False, "numeric_mismatch"),
        (item(["1.5"], []), "15", False, "numeric_mismatch"),
        (item(["-3"], []), "#### 3", False, "numeric_mismatch"),
        (item(["1,000"], []), "1.000", False, "numeric_mismatch"),
        (item(["1,000"], []), "10,00", False, "no_match"),
        # the stated answer wins over numbers written after it
        (GSM, "The answer is 18. That took 3 steps.", True, "numeric_match"),
        (GSM, "Answer: 18 (after 3 days)", True, "numeric_match"),
        (GSM, "Answer: **18**, in 3 steps", True, "numeric_match"),
        (GSM, "The answer is 20. That took 18 steps.", False, "no_match"),  # stated, wrong
        (GSM, "The final answer is 18, after the 3 steps above.", True, "numeric_match"),
        (GSM, "Answer: 17 (not 3)", False, "no_match"),  # a stated miss still goes on
        (item(["0.5"], []), "Answer: 1/2 of it", False, "no_match"),  # no lead: a fraction
        # typeset numbers: the minus sign, a currency after the sign, spaced thousands
        (item(["-5"], []), "\u22125", True, "exact_match"),
        (item(["-5"], []), "It was \u22125 outside", True, "last_number_match"),
        (item(["-5"], []), "-$5", True, "numeric_match"),
        (item(["-5"], []), "$-5.00", True, "numeric_match"),
        (item(["1000000"], []), "1\u2009000\u2009000", True, "exact_match"),
        (item(["1000"], []), "1\u00a0000", True, "exact_match"),
        (item(["1000"], []), "1\u202f000 apples", True, "last_number_match"),
        (item(["1000"], []), "1\u00a00000", False, "no_match"),  # four digits: not a group
    ],
)
def test_numeric_answers_are_compared_by_value(
    target: QaItem, response: str, correct: bool, rule: str
) -> None:
    result = run(grade_open(target, response, judge=None))
    assert (result.is_correct, result.graded_by, result.rule) == (correct, "rule", rule)


def test_a_numeric_gold_with_no_number_written_goes_to_the_judge() -> None:
    model = judge(default=BAD)
    result = run(grade_open(GSM, "eighteen dollars", judge=model))
    assert result.graded_by == "judge" and model.calls == 1


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("18", "18"),
        ("$1,875.", "1875"),
        ("-3.50", "-3.50"),
        ("40%", "40"),
        (".5", "0.5"),
        ("18 eggs", None),
        ("1,00", None),
        ("", None),
        ("$", None),
        ("-", None),
    ],
)
def test_to_number(text: str, value: str | None) -> None:
    from decimal import Decimal

    from assay.qa.rules import to_number

    assert to_number(text) == (None if value is None else Decimal(value))


@pytest.mark.parametrize(
    ("gold", "response"),
    [("-5 degrees", "5 degrees"), ("3/4", "34"), ("12:30", "1230"), ("3.14", "314")],
)
def test_text_answers_keep_the_punctuation_that_changes_a_number(gold: str, response: str) -> None:
    assert normalize_answer(gold) != normalize_answer(response)
    result = run(grade_open(item([gold], []), response, judge=None))
    assert result.is_correct is False


def test_a_different_last_number_goes_to_the_judge() -> None:
    model = judge(default=GOOD)
    result = run(grade_open(GSM, "9 * 2 = 18 dollars, minus 2 is 16", judge=model))
    assert result.graded_by == "judge" and model.calls == 1
