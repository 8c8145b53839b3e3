"""Reading a judge's verdict: every kind of bad reply is read correctly or is a judge error
with the raw reply kept; the judge's messages; samples combined into one verdict.

Scripted replies come from assay's ``mock`` provider (a real provider)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from pydantic import ValidationError

from assay.judges.grade import judge_case
from assay.judges.prompt import (
    JudgeCase,
    judge_messages,
    read_verdict,
    reply_schema,
)
from assay.judges.verdict import VerdictProblem, json_object
from assay.providers.mock import MockModel, MockRule
from assay.spec.criteria import LlmJudge
from assay.spec.judge import JudgeDefinition, VerdictSpec

BINARY = VerdictSpec()
LABELS = VerdictSpec(kind="labels", labels=["good", "ok", "bad"], pass_labels=["good"])
SCALE = VerdictSpec(kind="scale", min=1, max=10)
UNIT = VerdictSpec(kind="scale", min=0, max=1)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def scripted(*rules: tuple[str, str], default: str | None = None) -> MockModel:
    compiled = [MockRule(re.compile(pattern, re.DOTALL), reply=reply) for pattern, reply in rules]
    return MockModel(name="mock/judge", rules=compiled, default=default)


def definition(verdict: VerdictSpec = BINARY, **fields: Any) -> JudgeDefinition:
    return JudgeDefinition(model="mock/judge", rubric="Q: ${row.q}\nIs it right?",
                           verdict=verdict, **fields)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"reason": "r", "verdict": true}', {"reason": "r", "verdict": True}),
        ('  {"reason": "r", "verdict": false}\n', {"reason": "r", "verdict": False}),
        ('```json\n{"reason": "r", "verdict": true}\n```', {"reason": "r", "verdict": True}),
        ('```\n{"reason": "r", "verdict": true}\n```', {"reason": "r", "verdict": True}),
    ],
)
def test_one_object_alone_or_in_one_fence_is_read(text: str, expected: dict[str, Any]) -> None:
    assert json_object(text) == expected


@pytest.mark.parametrize(
    ("text", "finish", "problem"),
    [
        ("", None, "the reply is empty"),
        ("The answer is right, so I say yes.", None, "the reply holds no JSON object"),
        ('Here is my verdict: {"reason": "r", "verdict": true}', None,
         "the reply has text around the JSON object; reply with the object only"),
        ('{"reason": "r", "verdict": true} I hope this helps.', None,
         "the reply has text after the JSON object; reply with the object only"),
        ('{"reason": "the answer is corr', None, "the JSON object is cut off or malformed"),
        ('{"reason": "the answer is corr', "length",
         "the reply was cut off at max_tokens before the JSON object ended"),
        ('{"verdict": true, "reason": "r", "verdict": false}', None,
         "the key 'verdict' appears twice, so the verdict is ambiguous"),
        ('{"reason": "r", "score": NaN}', None,
         "NaN is not valid JSON; write null or a string instead"),
        ('{"reason": "r", "score": Infinity}', None,
         "Infinity is not valid JSON; write null or a string instead"),
        ('{"reason": "r", "score": 1e999}', None,
         "the number 1e999 is too large for a float; write it as a string"),
        ('[{"reason": "r", "verdict": true}]', None, "the reply is a JSON list, not an object"),
        ("I'm sorry, but I can't help with grading this.", None,
         "the judge refused: I'm sorry, but I can't help with grading this."),
        ("This content violates the policy.", "refusal",
         "the judge refused: This content violates the policy."),
    ],
)  # fmt: skip
def test_each_unreadable_reply_says_why(text: str, finish: str | None, problem: str) -> None:
    with pytest.raises(VerdictProblem) as caught:
        json_object(text, finish_reason=finish)
    assert str(caught.value) == problem


@pytest.mark.parametrize(
    ("verdict", "data", "value"),
    [
        (BINARY, {"reason": "r", "verdict": True}, True),
        (BINARY, {"rationale": "Coder Eval's name", "verdict": False}, False),
        (BINARY, {"reason": "r", "verdict": False, "confidence": 0.9}, False),  # extra key
        (LABELS, {"reason": "r", "label": "ok"}, "ok"),
        (LABELS, {"reason": "r", "label": " GOOD "}, "good"),  # one label, any case
        (SCALE, {"reason": "r", "score": 7}, 7.0),
        (SCALE, {"reason": "r", "score": 7.0}, 7.0),
        (UNIT, {"reason": "r", "score": 0.25}, 0.25),
    ],
)
def test_verdicts_of_each_kind_are_read(
    verdict: VerdictSpec, data: dict[str, Any], value: Any
) -> None:
    assert read_verdict(verdict, data).value == value


@pytest.mark.parametrize(
    ("verdict", "data", "problem"),
    [
        (BINARY, {"reason": "r"}, "the reply has no 'verdict' (keys: ['reason'])"),
        (BINARY, {"verdict": True}, "the reply has no 'reason'"),
        (BINARY, {"reason": 3, "verdict": True}, "reason must be a string, not int"),
        (BINARY, {"reason": "r", "verdict": "true"}, "verdict: 'true' is not true or false"),
        (BINARY, {"reason": "r", "verdict": 1}, "verdict: 1 is not true or false"),
        (LABELS, {"reason": "r", "label": "great"},
         "label: 'great' is not one of the labels ['good', 'ok', 'bad']"),
        (SCALE, {"reason": "r", "score": 11}, "score: 11 is outside the scale 1..10"),
        (SCALE, {"reason": "r", "score": 0}, "score: 0 is outside the scale 1..10"),
        (SCALE, {"reason": "r", "score": 6.5}, "score 6.5 is not a whole number on this integer "
         "scale"),
        (SCALE, {"reason": "r", "score": True}, "score: True is not a number"),
        (SCALE, {"reason": "r", "score": "7"}, "score: '7' is not a number"),
        (UNIT, {"reason": "r", "score": 1e999}, "score inf is not a finite number"),
    ],
)  # fmt: skip
def test_verdicts_outside_their_kind_are_refused(
    verdict: VerdictSpec, data: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValueError) as caught:
        read_verdict(verdict, data)
    assert str(caught.value) == problem


def test_the_reply_schema_puts_the_reason_first_and_bounds_the_verdict() -> None:
    schema = reply_schema(SCALE)
    assert list(schema["properties"]) == ["reason", "score"]
    assert schema["properties"]["score"] == {"type": "integer", "minimum": 1, "maximum": 10}
    assert reply_schema(LABELS)["properties"]["label"]["enum"] == ["good", "ok", "bad"]
    assert reply_schema(UNIT)["properties"]["score"]["type"] == "number"
    assert schema["additionalProperties"] is False


def test_a_bad_reply_is_retried_with_what_was_wrong() -> None:
    model = scripted(("appears twice", '{"reason": "fixed", "verdict": true}'),
                     default='{"verdict": true, "reason": "r", "verdict": false}')  # fmt: skip
    outcome = run(judge_case(model, definition(), JudgeCase(row={"q": "x"}, response="y")))
    assert outcome.value is True and outcome.reason == "fixed"
    assert outcome.attempts == 2 and model.calls == 2


def test_an_unreadable_verdict_after_the_retries_is_a_judge_error_with_its_raw_reply() -> None:
    model = scripted(default="Sure! Looks correct to me.")
    outcome = run(judge_case(model, definition(retries=2), JudgeCase(row={"q": "x"})))
    assert outcome.judge_error and outcome.value is None
    assert outcome.attempts == 3
    assert outcome.error == "unparseable verdict: the reply holds no JSON object"
    assert outcome.raw == "Sure! Looks correct to me."


def test_a_failing_judge_endpoint_is_a_judge_error() -> None:
    model = MockModel(name="mock/judge", rules=[MockRule(re.compile("."), error="HTTP 503")])
    outcome = run(judge_case(model, definition(retries=1), JudgeCase(row={"q": "x"})))
    assert outcome.judge_error
    assert outcome.error == "judge call failed: mock/judge: scripted error: HTTP 503"


def test_a_huge_raw_reply_is_kept_cut() -> None:
    model = scripted(default="x" * 10_000)
    outcome = run(judge_case(model, definition(retries=0), JudgeCase(row={"q": "x"})))
    assert outcome.raw is not None and outcome.raw.endswith("… [6000 more characters]")


def test_samples_take_the_majority_and_report_self_agreement() -> None:
    replies = iter(['{"reason": "a", "verdict": true}', '{"reason": "b", "verdict": false}',
                    '{"reason": "c", "verdict": true}'])  # fmt: skip
    model = _sequence(replies)
    outcome = run(judge_case(model, definition(samples=3), JudgeCase(row={"q": "x"})))
    assert outcome.value is True and outcome.reason == "a"
    assert outcome.self_agreement == pytest.approx(1 / 3)
    assert [s.value for s in outcome.samples] == [True, False, True]


def test_tied_samples_are_a_judge_error() -> None:
    model = _sequence(iter(['{"reason": "a", "verdict": true}',
                            '{"reason": "b", "verdict": false}']))  # fmt: skip
    outcome = run(judge_case(model, definition(samples=2), JudgeCase(row={"q": "x"})))
    assert outcome.judge_error
    assert outcome.error == (
        "the 2 readable samples tied (True: 1, False: 1); use an odd number of samples"
    )


def test_unreadable_samples_are_left_out_of_the_majority() -> None:
    model = _sequence(iter(["nonsense", '{"reason": "b", "verdict": false}',
                            '{"reason": "c", "verdict": false}']))  # fmt: skip
    outcome = run(judge_case(model, definition(samples=3, retries=0), JudgeCase(row={"q": "x"})))
    assert outcome.value is False and outcome.self_agreement == 1.0
    assert outcome.samples[0].error == ("unparseable verdict: the reply holds no JSON object")


def test_scale_samples_take_the_mean_and_report_their_spread() -> None:
    model = _sequence(iter(['{"reason": "a", "score": 2}', '{"reason": "b", "score": 4}',
                            '{"reason": "c", "score": 9}']))  # fmt: skip
    outcome = run(judge_case(model, definition(SCALE, samples=3), JudgeCase(row={"q": "x"})))
    assert outcome.value == pytest.approx(5.0)
    assert outcome.reason == "b"  # the sample nearest the mean
    assert outcome.spread == pytest.approx(((9 + 1 + 16) / 3) ** 0.5)


def _sequence(replies: Any) -> MockModel:
    """A model answering each call with the next reply (samples arrive concurrently)."""

    class Sequence(MockModel):
        async def generate(self, request: Any) -> Any:
            self.default = next(replies)
            return await super().generate(request)

    return Sequence(name="mock/judge", rules=[], default="")


def test_messages_fill_placeholders_once_and_literally() -> None:
    judge = JudgeDefinition(
        model="mock/judge",
        rubric="Question: ${row.q}\nAnswer: ${response}\nFiles: ${files}",
        few_shot=[{"row": {"q": "2+2?"}, "response": "4", "verdict": True, "reason": "right"}],
    )
    case = JudgeCase(row={"q": "Capital of ${row.x}?"}, response="It is ${row.q} {braces}",
                     files=(("out.txt", "hello"),), transcript="tool Write(out.txt)")  # fmt: skip
    messages = judge_messages(judge, case)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert json.loads(messages[2].content) == {"reason": "right", "verdict": True}
    last = messages[-1].content
    assert "Question: Capital of ${row.x}?" in last
    assert "Answer: It is ${row.q} {braces}" in last
    assert "Files: File: out.txt\n```\nhello\n```" in last
    assert "Response to grade" not in last  # the rubric placed the response itself
    assert "What the agent did:\ntool Write(out.txt)" in last  # not placed: appended
    assert last.endswith(
        '{"reason": "one or two sentences", "verdict": true or false}. '
        "verdict is true when the response meets the rubric, else false."
    )


def test_the_response_is_appended_when_the_rubric_does_not_place_it() -> None:
    messages = judge_messages(definition(), JudgeCase(row={"q": "x"}, response=""))
    assert "Response to grade:\n(the response is empty)" in messages[-1].content
    left_out = judge_messages(definition(), JudgeCase(row={"q": "x"}, response="secret"),
                              include_response=False)  # fmt: skip
    assert "secret" not in left_out[-1].content


@pytest.mark.parametrize(("rubric", "message"), [
    ("Review: ${row.text", "the rubric has '${row.text' without its closing '}': close it, or "
     "write $${ for a literal ${"),
    ("Said: ${respons} ${row.text}", "the rubric's placeholder ${respons} is not one of "
     "${row.<field>}, ${response}, ${files}, ${transcript}, ${dialog}: did you mean "
     "${response}? (write $${ for a literal ${; an upper-case ${NAME} is left as written)"),
    ("Q: ${ row.text } ${response}", "the rubric's placeholder ${ row.text } is not one of "
     "${row.<field>}, ${response}, ${files}, ${transcript}, ${dialog}: did you mean "
     "${row.text}? (write $${ for a literal ${; an upper-case ${NAME} is left as written)"),
])  # fmt: skip
def test_a_placeholder_the_judge_would_get_as_text_is_refused(rubric: str, message: str) -> None:
    """A broken placeholder once reached the judge as literal text, the row's value missing."""
    with pytest.raises(ValidationError) as caught:
        JudgeDefinition(model="mock/judge", rubric=rubric)
    assert caught.value.errors()[0]["msg"] == f"Value error, {message}"
    with pytest.raises(ValidationError, match=r"did you mean|without its closing"):
        LlmJudge.model_validate({"type": "llm_judge", "prompt": rubric})


def test_a_literal_placeholder_is_written_with_two_dollars() -> None:
    judge = JudgeDefinition(model="mock/judge", rubric="Uses $${home}? ${response}")
    last = judge_messages(judge, JudgeCase(response="echo $HOME"))[-1].content
    assert "Uses ${home}? echo $HOME" in last


def test_an_upper_case_shell_variable_is_left_as_written() -> None:
    """Coder Eval leaves every ``${…}`` but ``${row.X}`` as written; a judge prompt about
    shell scripts quoting ``${HOME}`` was refused (found by a break-test)."""
    judge = JudgeDefinition(model="mock/judge", rubric='Uses "${HOME}", not /root? ${response}')
    last = judge_messages(judge, JudgeCase(response="cd ${HOME}"))[-1].content
    assert 'Uses "${HOME}", not /root? cd ${HOME}' in last
    LlmJudge.model_validate({"type": "llm_judge", "prompt": "Quotes ${PATH_1}? ${response}"})


def test_a_verdict_passes_by_the_judge_alone_only_where_the_judge_says() -> None:
    binary = VerdictSpec(kind="binary")
    labels = VerdictSpec(kind="labels", labels=["good", "fair", "bad"], pass_labels=["good"])
    open_labels = VerdictSpec(kind="labels", labels=["good", "bad"])
    scale = VerdictSpec(kind="scale", min=1, max=5)
    assert (binary.passes(True), binary.passes(False)) == (True, False)
    assert (labels.passes("good"), labels.passes("fair")) == (True, False)
    assert open_labels.passes("good") is None and scale.passes(5.0) is None
