"""The QA sample schema: normalization, ToMEval's exact messages, unanswerable rows, routing."""

from __future__ import annotations

import re
from typing import Any

import pytest

from assay.errors import DatasetError
from assay.qa import normalize_sample, route


def row(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "story": "  Anna put the ball in the box.  ",
        "question": " Where is the ball? ",
        "answer": {"correct_answers": ["in the box"], "wrong_answers": ["in the bag"]},
        "meta": {"id": "m1", "ability": ["belief", "first-order"]},
    }
    base.update(overrides)
    return base


def test_normalizes_text_and_lists() -> None:
    sample = normalize_sample(
        row(answer={"correct_answers": "  in the box ", "wrong_answers": [" a ", "", "  ", 3]}),
        index=4,
    )
    assert sample.story == "Anna put the ball in the box."
    assert sample.question == "Where is the ball?"
    assert sample.correct_answers == ("in the box",)
    assert sample.wrong_answers == ("a", "3")


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        # ToMEval str()s these into options "None", "True", "{'a': 1}"; assay refuses them
        ({"correct_answers": ["x"], "wrong_answers": [None]}, "answer.wrong_answers[0] is None"),
        ({"correct_answers": [True]}, "answer.correct_answers[0] is True"),
        ({"correct_answers": "x", "wrong_answers": [{"a": 1}]}, "answer.wrong_answers[0] is {"),
        ({"correct_answers": ["Paris", "Paris"], "wrong_answers": ["Rome"]},
         "lists the option 'Paris' twice"),
        ({"correct_answers": ["Paris"], "wrong_answers": ["Rome", " rome"]},
         "lists the option 'rome' twice"),
        ({"correct_answers": ["Paris"], "wrong_answers": ["PARIS"]},
         "lists 'Paris' as both a correct and a wrong answer"),
    ],
)  # fmt: skip
def test_answers_that_would_make_wrong_options_are_refused(
    answer: dict[str, Any], message: str
) -> None:
    with pytest.raises(DatasetError, match=re.escape(message)) as caught:
        normalize_sample(row(answer=answer), index=0, file="d.jsonl", line=7)
    assert "d.jsonl:7" in str(caught.value)


def test_open_rows_drop_repeated_answers() -> None:
    answers = {"correct_answers": ["Denver Broncos", "denver  broncos", "Broncos"]}
    assert normalize_sample(row(answer=answers), index=0).correct_answers == (
        "Denver Broncos", "Broncos")  # fmt: skip


def test_missing_lists_become_empty() -> None:
    sample = normalize_sample(row(answer={"correct_answers": ["x"]}), index=0)
    assert sample.wrong_answers == ()
    sample = normalize_sample(
        row(answer={"correct_answers": ["x"], "wrong_answers": None}), index=0
    )
    assert sample.wrong_answers == ()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"sample_id": "s-1", "meta": {"id": "m1"}}, "s-1"),
        ({"meta": {"id": "m1"}}, "m1"),
        ({"meta": {}}, "sample_7"),
        ({"sample_id": "", "meta": {"id": "m1"}}, "m1"),  # falsy falls through, as in ToMEval
        ({"sample_id": 0, "meta": {}}, "sample_7"),
        ({"sample_id": 12, "meta": {}}, "12"),
    ],
)
def test_sample_id_sources(data: dict[str, Any], expected: str) -> None:
    assert normalize_sample(row(**data), index=7).sample_id == expected


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"answer": None}, "Each standardized sample must contain an 'answer' object."),
        ({"answer": ["x"]}, "Each standardized sample must contain an 'answer' object."),
        ({"meta": None}, "Each standardized sample must contain a 'meta' object."),
        ({"story": None}, "Each standardized sample must contain a string 'story'."),
        ({"story": 3}, "Each standardized sample must contain a string 'story'."),
        ({"question": ["q"]}, "Each standardized sample must contain a string 'question'."),
        ({"question": "   "}, "Sample m1 is missing question."),
        ({"answer": {"correct_answers": [" ", ""]}}, "Sample m1 is missing correct_answers."),
        ({"answer": {"wrong_answers": ["x"]}}, "Sample m1 is missing correct_answers."),
    ],
)
def test_tomeval_messages(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(DatasetError) as info:
        normalize_sample(row(**overrides), index=0, file="data/qa.jsonl", line=3)
    assert info.value.message == message
    assert str(info.value).startswith("data/qa.jsonl:3: ")


def test_answer_checked_before_meta_and_story() -> None:
    with pytest.raises(DatasetError) as info:
        normalize_sample({"story": None, "meta": None}, index=0)
    assert info.value.message == "Each standardized sample must contain an 'answer' object."


def unanswerable(**meta: Any) -> dict[str, Any]:
    return row(
        answer={"correct_answers": [], "wrong_answers": []},
        meta={"id": "u1", **meta},
    )


def test_unanswerable_row_routes_to_open_unanswerable() -> None:
    sample = normalize_sample(unanswerable(unanswerable=True), index=0)
    assert sample.unanswerable
    assert sample.correct_answers == ()
    assert route(sample) == "open_unanswerable"


def test_unmarked_row_without_answers_is_an_error_with_a_hint() -> None:
    with pytest.raises(DatasetError) as info:
        normalize_sample(unanswerable(), index=0)
    assert info.value.message == "Sample u1 is missing correct_answers."
    assert "meta.unanswerable: true" in (info.value.hint or "")


def test_marked_unanswerable_with_answers_is_an_error() -> None:
    with pytest.raises(DatasetError) as info:
        normalize_sample(row(meta={"id": "u2", "unanswerable": True}), index=0)
    assert info.value.message == (
        "Sample u2 is marked unanswerable (meta.unanswerable: true) but has correct_answers."
    )


def test_unanswerable_flag_must_be_boolean() -> None:
    with pytest.raises(DatasetError) as info:
        normalize_sample(unanswerable(unanswerable="yes"), index=0)
    assert info.value.message == "Sample u1: meta.unanswerable must be true or false, not 'yes'."


def test_answer_both_correct_and_wrong_is_an_error() -> None:
    bad = row(answer={"correct_answers": ["box"], "wrong_answers": ["bag", " box "]})
    with pytest.raises(DatasetError) as info:
        normalize_sample(bad, index=0)
    assert info.value.message == "Sample m1 lists 'box' as both a correct and a wrong answer."


@pytest.mark.parametrize(
    ("correct", "wrong", "expected"),
    [
        (["a"], [], "open"),
        (["a", "b"], [], "open"),  # several accepted answers, no options: open (not ToMEval)
        (["a"], ["b"], "mcq_single"),
        (["a"], ["b", "c", "d"], "mcq_single"),
        (["a", "b"], ["c"], "mcq_multi"),
    ],
)
def test_routing(correct: list[str], wrong: list[str], expected: str) -> None:
    sample = normalize_sample(
        row(answer={"correct_answers": correct, "wrong_answers": wrong}), index=0
    )
    assert route(sample) == expected == sample.prompt_type


def test_meta_is_kept_unchanged() -> None:
    sample = normalize_sample(row(), index=0)
    assert sample.meta == {"id": "m1", "ability": ["belief", "first-order"]}
