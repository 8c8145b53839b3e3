"""Reading a judge's reply: one strict JSON object, and the retries that ask again.

Every LLM judge of assay (the ``llm_judge`` criterion, the QA judge of open answers, a
calibration) answers JSON of a schema, requested through the model's structured-output
constraint (:class:`~assay.providers.base.JsonSchema`: a grammar on llama.cpp,
``response_format`` on OpenAI-compatible servers, a forced tool on Anthropic). The reply is
read strictly by :func:`json_object`:

- exactly one JSON object, alone or inside one Markdown code fence (```` ```json … ``` ````);
- a key given twice, ``NaN`` or ``Infinity`` (or a number that overflows to it), a list,
  prose around the object, an empty or cut-off reply (``finish_reason`` ``length``) are each
  a :class:`VerdictProblem` saying so;
- a reply without JSON that reads as a refusal ("I can't help with that") is named one.

:func:`ask_json` sends the request and, after an unreadable reply, asks again up to
``retries`` more times, showing the judge its reply and what was wrong with it (so a judge
at temperature 0 does not just repeat itself); after a failed call it sends the request
again. It never raises for a bad reply or a failed endpoint: the outcome then carries the
last problem and the raw reply, and the caller records a ``judge_error`` (never a 0, never a
pass).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from assay.data.jsonl import parse_json_strict
from assay.errors import ModelError
from assay.providers.base import JsonSchema, Message, Model, ModelRequest, Usage

T = TypeVar("T")

_FENCE = re.compile(r"^```[A-Za-z]*[ \t]*\r?\n?(.*?)\r?\n?```$", re.DOTALL)
_REFUSAL = re.compile(
    r"\b(I\s*(?:can(?:no|')t|cannot|won'?t|will not|am unable|'m unable|am not able|'m not "
    r"able|would rather not|'d rather not|prefer not|must decline|decline|refuse)|I'm sorry|"
    r"I am sorry|as an AI)\b",
    re.IGNORECASE,
)
RAW_KEPT = 4000
"""Characters of a raw reply kept in results."""


class VerdictProblem(ValueError):
    """Why a reply is not a readable verdict (one short sentence)."""


def json_object(text: str, *, finish_reason: str | None = None) -> dict[str, Any]:
    """The one JSON object of a judge's reply (see the module docstring), parsed by the one
    strict JSON reader (:func:`assay.data.jsonl.parse_json_strict`: no repeated key, no
    NaN or Infinity, no number that overflows).

    Raises:
        VerdictProblem: what is wrong with the reply.
    """
    body = text.strip()
    if finish_reason == "refusal":
        raise VerdictProblem(f"the judge refused: {_short(body) or 'no reason given'}")
    if not body:
        raise VerdictProblem("the reply is empty")
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = parse_json_strict(body)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and body.startswith(("{", "[")):
            raise VerdictProblem(
                "the reply has text after the JSON object; reply with the object only"
            ) from None
        raise _unreadable(body, finish_reason) from None
    except ValueError as exc:
        key = getattr(exc, "key", None)  # assay.data.jsonl's duplicate-key error
        if key is not None:
            raise VerdictProblem(
                f"the key '{key}' appears twice, so the verdict is ambiguous"
            ) from None
        raise VerdictProblem(str(exc).splitlines()[0]) from None
    if not isinstance(value, dict):
        raise VerdictProblem(f"the reply is a JSON {type(value).__name__}, not an object")
    return value


def _unreadable(body: str, finish_reason: str | None) -> VerdictProblem:
    if finish_reason == "length":
        return VerdictProblem("the reply was cut off at max_tokens before the JSON object ended")
    if body.startswith("{"):
        return VerdictProblem("the JSON object is cut off or malformed")
    if "{" not in body and _REFUSAL.search(body):
        return VerdictProblem(f"the judge refused: {_short(body)}")
    if "{" in body:
        return VerdictProblem(
            "the reply has text around the JSON object; reply with the object only"
        )
    return VerdictProblem("the reply holds no JSON object")


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class Attempted(Generic[T]):
    """The outcome of :func:`ask_json`.

    Attributes:
        value: the read verdict, or ``None`` when every attempt failed.
        attempts: model calls made (1 to ``retries + 1``).
        error: why the last attempt failed (``None`` on success).
        raw: the last raw reply (cut to :data:`RAW_KEPT` characters), if any.
        usage: tokens of every call made.
    """

    value: T | None
    attempts: int
    error: str | None = None
    raw: str | None = None
    usage: Usage = field(default_factory=Usage)


Reader = Callable[[dict[str, Any]], T]
"""Turns the reply's JSON object into a verdict, raising ``ValueError`` with the reason."""


async def ask_json(
    model: Model,
    messages: tuple[Message, ...],
    *,
    schema: dict[str, Any],
    read: Reader[T],
    retries: int,
    max_tokens: int,
    temperature: float = 0.0,
    seed: int | None = None,
    reply_shape: str,
) -> Attempted[T]:
    """Ask ``model`` for a JSON verdict and read it with ``read``; never raises for a bad
    reply or a failed call.

    Args:
        model: a started model.
        messages: the conversation (system, examples, the case).
        schema: the JSON schema of the reply (sent as the request's constraint).
        read: turns the parsed object into the verdict (``ValueError``: unreadable).
        retries: extra attempts after an unreadable reply or a failed call (``>= 0``).
        max_tokens: generated-token budget per attempt.
        temperature: sampling temperature.
        seed: the request's seed (distinct samples of one case use distinct seeds).
        reply_shape: the object to ask for again after an unreadable reply, e.g.
            ``{"reason": "...", "verdict": true or false}``.

    Raises:
        ValueError: ``retries < 0``.
    """
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    current, error, raw, usage = messages, "no attempt made", None, Usage()
    for attempt in range(retries + 1):
        request = ModelRequest(
            messages=current,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            constraint=JsonSchema(schema),
        )
        try:
            response = await model.generate(request)
        except ModelError as exc:
            error, raw, current = f"judge call failed: {exc}", None, messages
            continue
        usage = usage + (response.usage or Usage())
        raw = response.text
        try:
            value = read(json_object(raw, finish_reason=response.finish_reason))
        except ValueError as exc:
            error = f"unparseable verdict: {first_line(exc)}"
            current = repair(messages, raw, error, reply_shape)
            continue
        return Attempted(value, attempt + 1, None, _kept(raw), usage)
    return Attempted(None, retries + 1, error, _kept(raw), usage)


def _kept(raw: str | None) -> str | None:
    if raw is None or len(raw) <= RAW_KEPT:
        return raw
    return raw[:RAW_KEPT] + f"… [{len(raw) - RAW_KEPT} more characters]"


def repair(first: tuple[Message, ...], reply: str, problem: str, shape: str) -> tuple[Message, ...]:
    """The conversation of a retry: the case, the unusable reply, and a request to answer
    again with the JSON object only."""
    return (
        *first,
        Message("assistant", reply),
        Message(
            "user",
            f"Your reply could not be read ({problem}). Reply again with only the "
            f"JSON object {shape}.",
        ),
    )


def first_line(exc: Exception) -> str:
    """The first line of an exception's message (a pydantic error: its first problem)."""
    errors = getattr(exc, "errors", None)
    if callable(errors) and not isinstance(exc, VerdictProblem):
        try:
            first = errors()[0]
        except (TypeError, IndexError, AttributeError):
            first = None
        if isinstance(first, dict):
            where = ".".join(str(p) for p in first.get("loc", ())) or "reply"
            return f"{where}: {first.get('msg', '')}"
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__
