"""The LLM judge of open answers: messages, structured verdict, strict parsing, retries.

The judge sees the question, the accepted answers, the known wrong answers and the response
(optionally the story) and answers JSON of :data:`VERDICT_SCHEMA`,
``{"is_correct": bool, "reason": str}``, requested through the model's structured-output
constraint (:class:`~assay.providers.base.JsonSchema`: a grammar on llama.cpp,
``response_format`` on OpenAI-compatible endpoints). Every text is inserted literally
(concatenation, never ``str.format``), so a response containing ``{braces}`` or ``${...}``
reaches the judge unchanged. The prompt follows ToMEval's current open-question judge
(``reference/originals.md`` §2.4) with a ``reason`` added.

For ``open_unanswerable`` items the judge is told that the story does not answer the
question: a response that says so is correct, any specific answer is wrong.

The reply is read by the judges' one reader (:mod:`assay.judges.verdict`: one JSON object,
alone or in one Markdown code fence; a repeated key or NaN refused) and then strictly
(:class:`JudgeReply`: exactly the two keys, a JSON boolean and a string). An unparseable
reply, or a judge endpoint that fails, is retried up to ``retries`` more times
(:func:`assay.judges.verdict.ask_json`): after an unparseable reply the retry shows the judge
its reply and what was wrong with it (so a deterministic judge at temperature 0 does not
simply repeat itself); after a failed call the request is sent again.
After the last attempt the verdict is a judge error (``is_correct is None``), which accuracy
keeps out of its denominator, visibly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from string import Template
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from assay.judges.verdict import ask_json, json_object, repair
from assay.providers.base import Message, Model, Usage

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "is_correct": {"type": "boolean"},
        "reason": {"type": "string", "maxLength": 300},
    },
    "required": ["is_correct", "reason"],
    "additionalProperties": False,
}

JUDGE_SYSTEM = (
    "You grade answers to questions. You compare a model response with reference answers "
    "and reply with one JSON object only."
)


class JudgeReply(BaseModel):
    """The judge's JSON, validated strictly: ``is_correct`` (bool) and ``reason`` (a string;
    left out by the ``{"is_correct": true}`` of ToMEval's own judge prompt), nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    is_correct: StrictBool
    reason: StrictStr | None = None


@dataclass(frozen=True)
class JudgeVerdict:
    """The outcome of judging one response.

    Attributes:
        is_correct: the verdict; ``None`` when every attempt failed (a judge error).
        reason: the judge's one-sentence reason (``None`` on a judge error).
        attempts: model calls made (1 to ``retries + 1``).
        error: why the last attempt failed, on a judge error.
        raw: the judge's last raw reply, if any.
        usage: the tokens of every call it made.
    """

    is_correct: bool | None
    reason: str | None = None
    attempts: int = 0
    error: str | None = None
    raw: str | None = None
    usage: Usage = field(default_factory=Usage)

    @property
    def judge_error(self) -> bool:
        """No parseable verdict after all attempts."""
        return self.is_correct is None


class JudgeSubject(Protocol):
    """What the judge reads from an item (a :class:`~assay.qa.item.QaItem` or a
    :class:`~assay.qa.records.PredictionRecord` converted to one)."""

    @property
    def story(self) -> str: ...
    @property
    def question(self) -> str: ...
    @property
    def correct_answers(self) -> tuple[str, ...]: ...
    @property
    def wrong_answers(self) -> tuple[str, ...]: ...
    @property
    def prompt_type(self) -> str: ...


def judge_messages(
    item: JudgeSubject,
    response: str,
    *,
    include_story: bool = False,
    template: str | None = None,
) -> tuple[Message, ...]:
    """The system and user messages asking the judge about ``response``.

    Args:
        item: the question, its accepted and known wrong answers, its story.
        response: the model's response, inserted literally.
        include_story: also show the story (off by default, as in ToMEval's current judge).
        template: the task's own judge prompt (``qa.judge.prompt``, checked at load by
            :func:`assay.spec.qa.check_judge_template`); its placeholders are filled in one
            pass (``string.Template``), so text in the response is never read as one.
    """
    if template is not None:
        return (Message("system", JUDGE_SYSTEM), Message("user", _filled(template, item, response)))
    parts = ["You are grading a response to a question by comparing it with reference answers."]
    if include_story and item.story:
        parts.append("Story:\n" + item.story)
    parts.append("Question:\n" + item.question)
    if item.prompt_type == "open_unanswerable":
        parts.append(
            "This question CANNOT be answered from the story: no correct answer exists.\n"
            "Plausible but unsupported answers (must NOT be given):\n" + _json(item.wrong_answers)
        )
    else:
        parts.append("Accepted correct answers:\n" + _json(item.correct_answers))
        parts.append("Known wrong answers (must NOT match these):\n" + _json(item.wrong_answers))
    parts.append("Model response:\n" + response)
    parts.append(_instructions(item.prompt_type == "open_unanswerable"))
    return (Message("system", JUDGE_SYSTEM), Message("user", "\n\n".join(parts)))


def _filled(template: str, item: JudgeSubject, response: str) -> str:
    """``template`` with the item's fields and the response; the reply format appended when
    the template does not ask for ``is_correct`` itself."""
    text = Template(template).substitute(
        question=item.question,
        story=item.story,
        correct_answers=_json(item.correct_answers),
        wrong_answers=_json(item.wrong_answers),
        prompt_type=item.prompt_type,
        response=response,
    )
    if "is_correct" in template:
        return text
    return text + "\n\n" + _instructions(item.prompt_type == "open_unanswerable")


def _instructions(unanswerable: bool) -> str:
    head = (
        'Output ONLY a JSON object: {"is_correct": true or false, "reason": "one short sentence"}\n'
    )
    if unanswerable:
        return head + (
            "Mark is_correct as true ONLY if the model response says that the question cannot "
            "be answered from the story (the story does not say, the answer is unknown).\n"
            "Mark is_correct as false if the model response gives any specific answer."
        )
    return head + (
        "Mark is_correct as true ONLY if the model response semantically matches at least one "
        "accepted correct answer.\n"
        "Mark is_correct as false if the model response matches a known wrong answer, "
        "contradicts the correct answers, or is irrelevant.\n"
        "Minor wording differences are acceptable."
    )


def _json(items: tuple[str, ...]) -> str:
    return json.dumps(list(items), ensure_ascii=False)


def parse_verdict(text: str) -> JudgeReply:
    """Parse a judge reply strictly (:func:`assay.judges.verdict.json_object`, then exactly
    the two keys).

    Raises:
        ValueError: not one JSON object, a key given twice, a missing or extra key, or a
            non-boolean ``is_correct`` (``pydantic.ValidationError`` is a ``ValueError``).
    """
    return _reply(json_object(text))


def _reply(data: dict[str, Any]) -> JudgeReply:
    return JudgeReply.model_validate(data, strict=True)


REPLY_SHAPE = '{"is_correct": true or false, "reason": "one short sentence"}'


async def judge_open(
    model: Model,
    item: JudgeSubject,
    response: str,
    *,
    retries: int = 2,
    include_story: bool = False,
    max_tokens: int = 200,
    template: str | None = None,
) -> JudgeVerdict:
    """Ask ``model`` whether ``response`` answers ``item``; never raises on a bad reply.

    Args:
        model: any assay model (started by the caller).
        item: the open question being judged.
        response: the model's response, passed literally.
        retries: extra attempts after an unparseable reply or a failed call (``>= 0``).
        include_story: show the story to the judge.
        max_tokens: generated-token budget per attempt.
        template: the task's own judge prompt (:func:`judge_messages`).

    Returns:
        A verdict, or a judge error (``is_correct is None``) after ``retries + 1`` failures.
    """
    messages = judge_messages(item, response, include_story=include_story, template=template)
    outcome = await ask_json(model, messages, schema=VERDICT_SCHEMA, read=_reply,
                             retries=retries, max_tokens=max_tokens,
                             reply_shape=REPLY_SHAPE)  # fmt: skip
    if outcome.value is None:
        return JudgeVerdict(None, None, outcome.attempts, outcome.error, outcome.raw,
                            outcome.usage)  # fmt: skip
    reply = outcome.value
    return JudgeVerdict(reply.is_correct, reply.reason, outcome.attempts, None, outcome.raw,
                        outcome.usage)  # fmt: skip


class OpenJudge(Protocol):
    """A judge of open answers: :class:`PromptJudge` (the built-in prompt, or the task's
    ``qa.judge.prompt``) or :class:`assay.qa.open_judge.AssetJudge` (a judge asset)."""

    async def __call__(self, item: JudgeSubject, response: str) -> JudgeVerdict: ...


@dataclass(frozen=True)
class PromptJudge:
    """The built-in QA judge on ``model`` (:func:`judge_open` with these settings)."""

    model: Model
    retries: int = 2
    include_story: bool = False
    max_tokens: int = 200
    template: str | None = None

    async def __call__(self, item: JudgeSubject, response: str) -> JudgeVerdict:
        """The verdict on ``response`` (a judge error after the retries; never raises)."""
        return await judge_open(self.model, item, response, retries=self.retries,
                                include_story=self.include_story,
                                max_tokens=self.max_tokens, template=self.template)  # fmt: skip


def repair_messages(first: tuple[Message, ...], reply: str, problem: str) -> tuple[Message, ...]:
    """The conversation of a retry: the question, the unusable reply, and a request to
    answer again with the JSON object only."""
    return repair(first, reply, problem, REPLY_SHAPE)


@dataclass(frozen=True)
class JudgeCheck:
    """The outcome of :func:`check_judge`: each probe's expected and given verdict.

    Attributes:
        passed: every probe got the expected verdict.
        probes: ``(response, expected, verdict)`` per probe (``verdict`` ``None`` on a judge
            error).
    """

    passed: bool
    probes: tuple[tuple[str, bool, bool | None], ...]


@dataclass(frozen=True)
class _Probe:
    story: str = ""
    question: str = "What is the capital of France?"
    correct_answers: tuple[str, ...] = ("Paris",)
    wrong_answers: tuple[str, ...] = ()
    prompt_type: str = "open"


_PROBES: tuple[tuple[str, bool], ...] = (
    ("Paris", True),
    ("The capital of France is Paris.", True),
    ("Berlin", False),
    ("I like turtles.", False),
)


async def check_judge(
    model: Model, *, retries: int = 2, open_judge: OpenJudge | None = None
) -> JudgeCheck:
    """Ask ``model`` to judge four obvious cases (two right, two wrong answers to "What is
    the capital of France?") before trusting it. A judge that accepts "Berlin" grades noise;
    record the check beside the metrics rather than reporting its accuracy as a measurement
    (SmolLM2-135M accepts every response). ``open_judge``: ask that judge (the task's own
    prompt, or a judge asset: :func:`assay.qa.open_judge.open_judge`) instead of the built-in
    prompt on ``model``.
    """
    asker = open_judge or PromptJudge(model, retries=retries)
    results = []
    for response, expected in _PROBES:
        verdict = await asker(_Probe(), response)
        results.append((response, expected, verdict.is_correct))
    passed = all(expected == given for _, expected, given in results)
    return JudgeCheck(passed=passed, probes=tuple(results))
