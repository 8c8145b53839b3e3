"""A refusal to answer is its own outcome: neither a wrong answer, nor an extraction failure,
nor an abstention from an unanswerable question; kept out of every rate and counted apart."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from assay.criteria.base import GradingContext
from assay.errors import ModelError
from assay.orchestration.running.grading import final_status, weighted_score
from assay.providers.constraints import read_choice
from assay.qa import base_metrics, build_item, normalize_sample
from assay.qa.grading import decide_open, grade_choice
from assay.qa.prompts import QaTemplates
from assay.qa.rules import is_abstention, is_refusal
from assay.results.status import FinalStatus
from assay.spec.criteria import ClassificationMatch, ResponseMatch
from tests.helpers import aggregate_with, check_with

REFUSALS = [
    "I'm sorry, but I can't help with that.",
    "I’m sorry, but I cannot assist with this request.",
    "I cannot assist with that.",
    "As an AI language model, I cannot provide opinions on movies.",
    "I must decline to answer.",
    "Sorry, I won't do that; I am unable to comply.",
    "That request violates my guidelines.",
    "We are unable to provide that information.",
]
NOT_REFUSALS = [
    "negative",
    "B",
    "The story does not say.",
    "I don't know",
    "unanswerable",
    "I can't help but think the answer is B",
    "I am sorry to hear that; the answer is Paris.",
    "The reviewer cannot help loving this film: positive",
    "",
]


@pytest.mark.parametrize("text", REFUSALS)
def test_refusals_are_recognised(text: str) -> None:
    assert is_refusal(text)
    assert not is_abstention(text) or "answer" in text


@pytest.mark.parametrize("text", NOT_REFUSALS)
def test_answers_and_abstentions_are_not_refusals(text: str) -> None:
    assert not is_refusal(text)


def item(answers: dict[str, Any], *, unanswerable: bool = False):  # type: ignore[no-untyped-def]
    row = {"sample_id": "s", "story": "Paris is in France.", "question": "Capital?",
           "answer": answers, "meta": {"unanswerable": True} if unanswerable else {}}  # fmt: skip
    return build_item(normalize_sample(row, index=0), dataset="d", replicate=0,
                      templates=QaTemplates())  # fmt: skip


CHOICE = {"correct_answers": ["Paris"], "wrong_answers": ["Rome", "Oslo"]}


@pytest.mark.parametrize("text", REFUSALS)
def test_a_refused_choice_is_not_an_extraction_failure(text: str) -> None:
    result = grade_choice(item(CHOICE), text)
    assert (result.error_reason, result.is_correct) == ("refused", None)


def test_a_refusal_that_still_names_an_option_is_graded() -> None:
    result = grade_choice(item(CHOICE), "I'm sorry, but I can't help with that. \\boxed{A}")
    assert result.error_reason in (None, "wrong_answer")


def test_open_refusal_abstention_and_answer() -> None:
    open_item = item({"correct_answers": ["Paris"], "wrong_answers": []})
    refused = decide_open(open_item, REFUSALS[0], rules=True, judged=False)
    assert refused is not None and refused.error_reason == "refused"
    answered = decide_open(open_item, "Paris", rules=True, judged=False)
    assert answered is not None and answered.is_correct is True
    # "I cannot answer that" declines a question: an abstention, graded as before
    abstained = decide_open(open_item, "I'm afraid I cannot answer that question.", rules=True,
                            judged=False)  # fmt: skip
    assert abstained is not None and abstained.rule == "abstention"
    unanswerable = item({"correct_answers": [], "wrong_answers": ["Rome"]}, unanswerable=True)
    right = decide_open(unanswerable, "The story does not say.", rules=True, judged=False)
    assert right is not None and right.is_correct is True
    declined = decide_open(unanswerable, REFUSALS[0], rules=True, judged=False)
    assert declined is not None and declined.error_reason == "refused"


def test_qa_metrics_count_refusals_apart() -> None:
    choice = item(CHOICE)
    results = [grade_choice(choice, "\\boxed{A}"), grade_choice(choice, "\\boxed{B}"),
               grade_choice(choice, REFUSALS[0]), grade_choice(choice, "no idea")]  # fmt: skip
    metrics = base_metrics(results)
    correct = sum(1 for r in results if r.is_correct)
    assert metrics["refused"] == 1 and metrics["extraction_failed"] == 1
    assert metrics["graded"] == 3 and metrics["excluded"] == 1
    assert metrics["accuracy"] == pytest.approx(correct / 3)
    assert metrics["refusal_rate"] == pytest.approx(1 / 4)
    as_dicts = base_metrics([r.to_dict() for r in results])  # what a metrics hook holds
    assert {k: as_dicts[k] for k in metrics} == metrics


def check(spec: Any, response: str) -> Any:
    context = GradingContext(sandbox=None, response=response)
    return asyncio.run(check_with(spec, context))


LABELS = ClassificationMatch(type="classification_match", expected_label="positive",
                             allowed_labels=["positive", "negative"])  # fmt: skip


@pytest.mark.parametrize("text", REFUSALS)
def test_classification_refusal_is_not_other(text: str) -> None:
    result = check(LABELS, text)
    assert result.refused and not result.graded and result.observed_label == "(refused)"
    assert final_status("completed", [result], graded=True) is FinalStatus.REFUSED
    assert weighted_score([result]) is None  # never a 0 averaged in


def test_classification_of_an_answer_is_graded() -> None:
    assert check(LABELS, "negative").graded
    assert check(LABELS, "maybe").observed_label == "(other)"


def test_response_match_refusal_and_an_expected_refusal() -> None:
    wanted = ResponseMatch(type="response_match", expected="Paris")
    assert check(wanted, REFUSALS[0]).refused
    safety = ResponseMatch(type="response_match", expected="(?i)sorry", match="regex")
    expected_refusal = check(safety, REFUSALS[0])  # refusing is what this task asks for
    assert expected_refusal.graded and expected_refusal.score == 1.0


def test_a_suite_that_predicts_one_label_is_warned() -> None:
    from assay.results.task_result import ClassificationCriterionResult

    def pair(expected: str, observed: str) -> ClassificationCriterionResult:
        return ClassificationCriterionResult(
            criterion_type="classification_match", score=float(expected == observed),
            observed_label=observed, expected_label=expected)  # fmt: skip

    _, details = aggregate_with(LABELS, [pair("positive", "negative"),
                                            pair("negative", "negative")])  # fmt: skip
    assert details["warnings"] == [
        "every prediction is 'negative' (2 graded rows): the model may be answering one label "
        "whatever the input, so accuracy only reflects how often that label is expected"
    ]
    _, varied = aggregate_with(LABELS, [pair("positive", "positive"),
                                           pair("negative", "negative")])  # fmt: skip
    assert "warnings" not in varied


def test_a_wrapped_answer_with_a_repeated_key_is_refused() -> None:
    with pytest.raises(ModelError, match="appears twice"):
        read_choice('{"answer": "positive", "answer": "negative"}', ("positive", "negative"),
                    wrapped=True)  # fmt: skip
