"""The open-answer judge: literal messages, strict verdict parsing, retries, judge errors.

Scripted replies come from assay's ``mock`` provider (a real provider); one test uses the
real local model.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from typing import Any

import pytest

from assay.providers.base import JsonSchema, ModelRequest, Usage
from assay.providers.mock import MockModel, MockRule
from assay.qa import (
    VERDICT_SCHEMA,
    JudgeVerdict,
    QaItem,
    build_item,
    check_judge,
    judge_messages,
    judge_open,
    normalize_sample,
    parse_verdict,
)
from assay.qa.judge import JudgeReply

GOOD = '{"is_correct": true, "reason": "matches December 1972"}'
BAD = '{"is_correct": false, "reason": "a different date"}'


def open_item(*, unanswerable: bool = False, wrong: list[str] | None = None) -> QaItem:
    answer: dict[str, Any] = {
        "correct_answers": [] if unanswerable else ["14 December 1972 UTC", "December 1972"],
        "wrong_answers": wrong or [],
    }
    row = {
        "sample_id": "nq-1",
        "story": "Apollo 17 {left} the Moon.",
        "question": "when was the last time anyone was on the moon",
        "answer": answer,
        "meta": {"unanswerable": unanswerable},
    }
    sample = normalize_sample(row, index=0)
    return build_item(sample, dataset="nq", replicate=0, as_open=True)


def scripted(
    *rules: tuple[str, str], default: str | None = None, error: str | None = None
) -> MockModel:
    compiled = [MockRule(re.compile(pattern), reply=reply) for pattern, reply in rules]
    if error is not None:
        compiled.append(MockRule(re.compile("."), error=error))
    return MockModel(name="mock/judge", rules=compiled, default=default)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_messages_carry_everything_literally() -> None:
    nasty = 'It was {year} ${row.answer} \\boxed{1972} "quoted" %s {0}'
    system, user = judge_messages(open_item(wrong=["1969"]), nasty)
    assert system.role == "system" and user.role == "user"
    assert "Model response:\n" + nasty + "\n\n" in user.content
    assert "when was the last time anyone was on the moon" in user.content
    assert '["14 December 1972 UTC", "December 1972"]' in user.content
    assert 'Known wrong answers (must NOT match these):\n["1969"]' in user.content
    assert "Apollo 17" not in user.content  # no story unless asked
    _, with_story = judge_messages(open_item(), nasty, include_story=True)
    assert "Story:\nApollo 17 {left} the Moon." in with_story.content


def test_unanswerable_messages_say_no_answer_exists() -> None:
    _, user = judge_messages(open_item(unanswerable=True, wrong=["1972"]), "It was 1972.")
    assert "CANNOT be answered from the story" in user.content
    assert "says that the question cannot be answered" in user.content
    assert "Accepted correct answers" not in user.content
    assert '["1972"]' in user.content


def test_verdict_is_requested_as_json_schema() -> None:
    class Recorder(MockModel):
        """The mock provider, keeping the requests it was sent."""

        def __init__(self) -> None:
            super().__init__(name="mock/judge", default=GOOD)
            self.requests: list[ModelRequest] = []

        async def generate(self, request: ModelRequest) -> Any:
            self.requests.append(request)
            return replace(await super().generate(request), usage=Usage(30, 7))

    model = Recorder()
    verdict = run(judge_open(model, open_item(), "December 1972"))
    (request,) = model.requests
    assert request.constraint == JsonSchema(VERDICT_SCHEMA)
    assert request.temperature == 0.0
    assert verdict == JudgeVerdict(True, "matches December 1972", 1, None, GOOD, Usage(30, 7))


def test_a_response_with_braces_reaches_the_judge_unchanged() -> None:
    response = "{is_correct: true} ${row.answer} {story}"
    model = scripted((re.escape("Model response:\n" + response + "\n\n"), GOOD))
    assert run(judge_open(model, open_item(), response)).is_correct is True


@pytest.mark.parametrize(
    ("text", "is_correct", "reason"),
    [
        (GOOD, True, "matches December 1972"),
        ("  " + GOOD + "\n", True, "matches December 1972"),
        ("```json\n" + GOOD + "\n```", True, "matches December 1972"),
        ("```\n" + BAD + "\n```", False, "a different date"),
        ('{"reason": "r", "is_correct": false}', False, "r"),
        ('{"is_correct": true, "reason": ""}', True, ""),
    ],
)
def test_parse_accepts(text: str, is_correct: bool, reason: str) -> None:
    reply = parse_verdict(text)
    assert (reply.is_correct, reply.reason) == (is_correct, reason)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yes",
        '{"is_correct": "true", "reason": "r"}',  # a string is not a boolean
        '{"is_correct": 1, "reason": "r"}',
        '{"reason": "r"}',  # no verdict (a reply without reason is ToMEval's own shape)
        '{"is_correct": true, "reason": "r", "score": 1}',  # an extra key
        '{"is_correct": true, "reason": 5}',
        '[{"is_correct": true, "reason": "r"}]',
        'The answer is correct. {"is_correct": true, "reason": "r"}',
        '{"is_correct": true, "reason": "r"',  # truncated
    ],
)
def test_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_verdict(text)


def test_garbage_then_a_valid_reply_succeeds_on_retry() -> None:
    # the retry shows the judge its unreadable reply; the script answers that one properly
    model = scripted(("could not be read", BAD), default="Sure! It's correct.")
    verdict = run(judge_open(model, open_item(), "1969", retries=2))
    assert verdict.is_correct is False
    assert verdict.reason == "a different date"
    assert verdict.attempts == 2
    assert model.calls == 2


def test_garbage_every_time_is_a_judge_error_after_the_retries() -> None:
    model = scripted(default='{"is_correct": "maybe"}')
    verdict = run(judge_open(model, open_item(), "December 1972", retries=2))
    assert verdict.is_correct is None and verdict.judge_error
    assert verdict.attempts == 3 and model.calls == 3
    assert verdict.error is not None and verdict.error.startswith("unparseable verdict: ")
    assert verdict.raw == '{"is_correct": "maybe"}'


def test_retries_zero_means_one_attempt() -> None:
    model = scripted(default="no json here")
    verdict = run(judge_open(model, open_item(), "x", retries=0))
    assert verdict.judge_error and verdict.attempts == 1 and model.calls == 1


def test_a_failing_judge_endpoint_is_a_judge_error_not_an_exception() -> None:
    model = scripted(error="HTTP 503")
    verdict = run(judge_open(model, open_item(), "December 1972", retries=1))
    assert verdict.judge_error and verdict.attempts == 2
    assert verdict.error == "judge call failed: mock/judge: scripted error: HTTP 503"


def test_negative_retries_are_refused() -> None:
    with pytest.raises(ValueError):
        run(judge_open(scripted(default=GOOD), open_item(), "x", retries=-1))


def test_check_judge_catches_a_judge_that_accepts_everything() -> None:
    check = run(check_judge(scripted(default=GOOD)))
    assert check.passed is False
    assert [(response, given) for response, _, given in check.probes] == [
        ("Paris", True),
        ("The capital of France is Paris.", True),
        ("Berlin", True),
        ("I like turtles.", True),
    ]


def test_check_judge_passes_a_judge_that_discriminates() -> None:
    model = scripted((r"Model response:\n[^\n]*Paris", GOOD), default=BAD)
    check = run(check_judge(model))
    assert check.passed is True
    assert all(expected == given for _, expected, given in check.probes)


def test_check_judge_fails_on_judge_errors() -> None:
    check = run(check_judge(scripted(default="nope"), retries=0))
    assert check.passed is False
    assert {given for _, _, given in check.probes} == {None}


@pytest.mark.local_model
def test_real_local_judge_returns_a_parseable_verdict() -> None:
    from assay.providers.local import LocalModel

    async def ask() -> list[JudgeVerdict]:
        model = LocalModel(name="local/smollm2", parallel=1)
        try:
            await model.start()
            item = open_item()
            return [
                await judge_open(model, item, "It was in December 1972, on Apollo 17.", retries=2),
                await judge_open(model, open_item(unanswerable=True), "The story doesn't {say}."),
            ]
        finally:
            await model.aclose()

    for verdict in run(ask()):
        assert verdict.is_correct in (True, False), verdict.error
        assert isinstance(verdict.reason, str)
        assert 1 <= verdict.attempts <= 3


@pytest.mark.parametrize("key", sorted(JudgeReply.model_fields))
@pytest.mark.parametrize("first_true", [True, False])
def test_a_verdict_with_a_repeated_key_is_refused_not_last_wins(key: str, first_true: bool) -> None:
    values = {"is_correct": ("true", "false"), "reason": ('"a"', '"b"')}[key]
    first, second = values if first_true else values[::-1]
    other = '"reason": "r"' if key == "is_correct" else '"is_correct": true'
    text = f'{{"{key}": {first}, {other}, "{key}": {second}}}'
    with pytest.raises(ValueError, match=f"the key '{key}' appears twice"):
        parse_verdict(text)


def test_a_judge_that_repeats_a_key_every_time_is_a_judge_error() -> None:
    model = scripted(default='{"is_correct": false, "reason": "r", "is_correct": true}')
    verdict = run(judge_open(model, open_item(), "December 1972", retries=1))
    assert verdict.is_correct is None and verdict.judge_error and verdict.attempts == 2
    assert verdict.error == (
        "unparseable verdict: the key 'is_correct' appears twice, so the verdict is ambiguous"
    )
