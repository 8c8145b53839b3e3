"""One request through the bridge: translate it, call the row's model, answer in the CLI's wire.

Every path records a :class:`~assay.bridge.session.CallLog` (and so a ``chat`` span) and
answers in the shape the CLI expects: the protocol's error object on a request that cannot
be translated (400), a refused call (a limit reached, 400), or a model that failed: refused
the request or failed after the bridge's own retries (400 as well, never a 5xx: the bridge
has retried what can be retried, and a 5xx or 429 makes a CLI retry on top of it; Qwen
Code, Pi, OpenCode and Gemini CLI have no setting to turn their retries off). A request for
an ``anthropic/`` model in the Messages wire is passed through untranslated and streamed
back as it arrives (:func:`forward`). A translated call whose tokens or cost cross the row's
budget is counted but not answered (the agent is being stopped and must not act on it); a
passed-through answer has already streamed by then.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from assay.bridge.session import BridgeSession, CallLog, Protocol
from assay.bridge.sse import DONE, EventReader, encode
from assay.errors import ModelError
from assay.providers.base import ModelRequest, ModelResponse
from assay.providers.cache import raw_cache_key
from assay.providers.managed import ManagedModel, OnRetry
from assay.providers.retry import CallRecord, TransientModelError
from assay.providers.wire import WireError
from assay.providers.wire import anthropic as anthropic_wire
from assay.providers.wire import chat as chat_wire
from assay.providers.wire import gemini as gemini_wire
from assay.providers.wire import responses as responses_wire
from assay.providers.wire.anthropic import usage_from_wire
from assay.results.secrets import clip_head

TEXT_KEPT = 2000
"""Characters of an answer's text kept in its call log."""


@dataclass
class Reply:
    """What the server sends: a status and either a JSON body or a stream of bytes."""

    status: int
    body: dict[str, Any] | None = None
    stream: AsyncIterator[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)


def error_reply(protocol: Protocol, status: int, kind: str, message: str) -> Reply:
    """The protocol's own error object (``kind`` in Anthropic's terms: ``invalid_request_error``,
    ``authentication_error``, ``api_error``, ``not_found_error``)."""
    if protocol == "anthropic":
        return Reply(status, anthropic_wire.error_body(kind, message))
    if protocol == "gemini":
        return Reply(status, gemini_wire.error_body(status, message))
    return Reply(status, chat_wire.error_body(kind, message, code=kind))


_DECODE: dict[Protocol, Callable[[Any], ModelRequest]] = {
    "anthropic": anthropic_wire.request_from_wire,
    "chat": chat_wire.request_from_wire,
    "responses": responses_wire.request_from_wire,
    "gemini": gemini_wire.request_from_wire,
}


async def translate(
    protocol: Protocol,
    session: BridgeSession,
    model: ManagedModel,
    body: Any,
    *,
    on_retry: OnRetry | None = None,
    stream: bool | None = None,
    asked_model: str | None = None,
) -> Reply:
    """Answer ``body`` (already parsed JSON) with the session's model, translated both ways.

    ``stream`` and ``asked_model`` are for a protocol that says them in the URL rather than
    the body (Gemini's ``models/{model}:streamGenerateContent``); by default the body's
    ``stream`` and ``model``."""
    log = session.begin(protocol, session.model_key.name)
    try:
        request = _DECODE[protocol](body)
    except (WireError, TypeError, ValueError, OverflowError) as exc:
        return _failed(
            session,
            log,
            protocol,
            400,
            "invalid_request_error",
            f"the bridge cannot translate this request for {model.name}: {exc}",
        )
    asked = request  # as the model gets it: what the wire adds is left out
    request = dataclasses.replace(request, script_vars=dict(session.script_vars))
    again = _not_again(session, asked)
    if again is not None:
        log.refused = True  # no model is asked: not a model call of the row
        return _failed(session, log, protocol, FAILED, "api_error", again)
    record = CallRecord()
    try:
        response = await model.generate(
            request, replicate=session.replicate, record=record, on_retry=on_retry
        )
    except ModelError as exc:
        log.attempts = record.attempts
        _note_failure(session, exc, asked)
        return _failed(session, log, protocol, FAILED, "api_error", str(exc))
    except Exception as exc:  # a provider's bug answers this call, never the whole server
        log.attempts = record.attempts
        return _failed(session, log, protocol, 500, "api_error",
                       f"{model.name}: internal error: {exc!r}")  # fmt: skip
    log.attempts = record.attempts
    _fill(log, response)
    session.end(log)
    if session.stopped is not None and session.stop_message is not None:
        # this call crossed a budget: it is counted, but the agent does not act on it
        return error_reply(protocol, 400, "invalid_request_error", session.stop_message)
    streamed = _streams(body) if stream is None else stream
    if protocol == "responses":
        response = responses_wire.with_namespaces(response, request)
    return _encode(protocol, response, model=asked_model or _model_name(body, session),
                   stream=streamed)  # fmt: skip


def _fill(log: CallLog, response: ModelResponse) -> None:
    log.usage = response.usage
    log.stop_reason = response.finish_reason
    log.tool_calls = [c.name for c in response.tool_calls]
    log.text = clip_head(response.text, TEXT_KEPT)
    log.cached = response.cached


FAILED = 400
"""The status of a call whose model failed (see the module docstring)."""


def _note_failure(session: BridgeSession, exc: ModelError, request: Any) -> None:
    """Remember a call that failed so the row does not call the model for it again: one
    that failed as an outage does (the server down, overloaded, rate-limiting) after the
    bridge's own retries answers every later call of the row; any other failure (the model
    refused the request: a 400) answers the same ``request`` (:func:`request_digest`) sent
    again. Claude Code sends six requests after a failure, whatever its retry setting
    or the status (each dropping a feature a translated model never sees), and a real
    endpoint got each of them (every one retried on top, for an outage)."""
    if isinstance(exc, TransientModelError) or isinstance(exc.__cause__, TransientModelError):
        session.outage = str(exc)
    else:
        session.failed_requests[request_digest(request)] = str(exc)


def _not_again(session: BridgeSession, request: Any) -> str | None:
    """Why this call's ``request`` is answered without the model (:func:`_note_failure`),
    or ``None``; hashed only once a request of the row has failed (every call asks)."""
    if session.outage is not None:
        return (f"{session.outage} (the model was not called again: this row's earlier call "
                "failed after the bridge's retries)")  # fmt: skip
    if not session.failed_requests:
        return None
    failed = session.failed_requests.get(request_digest(request))
    if failed is None:
        return None
    return (f"{failed} (the model was not called again: this row sent the same request "
            "before, and it failed)")  # fmt: skip


def request_digest(request: Any) -> str:
    """SHA-256 of a request: a body's JSON with its keys sorted (passed through as sent), or
    a translated :class:`~assay.providers.base.ModelRequest`'s text (what the model gets:
    two bodies that differ only in what the translation drops are one request)."""
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _failed(
    session: BridgeSession, log: CallLog, protocol: Protocol, status: int, kind: str, why: str
) -> Reply:
    log.status, log.error = status, why
    session.end(log)
    return error_reply(protocol, status, kind, why)


def _streams(body: Any) -> bool:
    return isinstance(body, dict) and bool(body.get("stream"))


def _model_name(body: Any, session: BridgeSession) -> str:
    """The model name answered: the one the CLI asked for (it checks the echo)."""
    asked = body.get("model") if isinstance(body, dict) else None
    return str(asked) if asked else session.model_key.name


def _encode(protocol: Protocol, response: ModelResponse, *, model: str, stream: bool) -> Reply:
    if protocol == "anthropic":
        if not stream:
            return Reply(200, anthropic_wire.response_to_wire(response, model=model))
        events = anthropic_wire.stream_events(response, model=model)
        return Reply(200, stream=_replay([encode(d, event=n) for n, d in events]))
    if protocol == "gemini":
        if not stream:
            return Reply(200, gemini_wire.response_to_wire(response, model=model))
        pieces = gemini_wire.stream_chunks(response, model=model)
        return Reply(200, stream=_replay([encode(c) for c in pieces]))
    if protocol == "responses":
        if not stream:
            return Reply(200, responses_wire.response_to_wire(response, model=model))
        events = responses_wire.stream_events(response, model=model)
        return Reply(200, stream=_replay([encode(d, event=n) for n, d in events]))
    if not stream:
        return Reply(200, chat_wire.response_to_wire(response, model=model))
    chunks = chat_wire.stream_chunks(response, model=model, include_usage=True)
    return Reply(200, stream=_replay([*(encode(c) for c in chunks), DONE]))


async def _replay(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


_HOP_HEADERS = frozenset({"host", "content-length", "connection", "x-api-key", "authorization",
                          "accept-encoding", "transfer-encoding", "keep-alive"})  # fmt: skip
_ANSWER_HEADERS = ("content-type", "request-id", "x-request-id", "anthropic-organization-id")


async def forward(
    session: BridgeSession,
    model: ManagedModel,
    raw: bytes,
    body: Any,
    *,
    headers: dict[str, str],
    query: str,
    on_retry: OnRetry | None = None,
) -> Reply:
    """Pass a Messages request through to an ``anthropic/`` model, untranslated: the body
    as sent (only ``model`` set to the task's model, unless the task left it to the CLI), the
    client's headers (``anthropic-version``, ``anthropic-beta``, …) with the model's key, and
    the answer streamed back byte for byte while its usage is read on the side."""
    name = session.model_key.name.partition("/")[2]
    sent_model = str(body.get("model")) if session.keep_model else name
    log = session.begin("anthropic", f"anthropic/{sent_model}", passthrough=True)
    if not session.keep_model and body.get("model") != name:
        raw = json.dumps({**body, "model": name}, ensure_ascii=False).encode("utf-8")
    sent = {k: v for k, v in headers.items() if k.lower() not in _HOP_HEADERS}
    cache_key = None
    if model.cache is not None:
        cache_key = raw_cache_key(model.identity, raw, replicate=session.replicate)
        hit = model.cache.get_raw(cache_key)
        if hit is not None:
            return _replayed(session, log, hit, sent_model)
    again = _not_again(session, body)  # passed through as sent
    if again is not None:
        log.refused = True  # no model is asked: not a model call of the row
        return _failed(session, log, "anthropic", FAILED, "api_error", again)
    record = CallRecord()
    try:
        forwarded = await model.forward(
            raw, headers=sent, query=query, record=record, on_retry=on_retry
        )
    except ModelError as exc:
        log.attempts = record.attempts
        _note_failure(session, exc, body)
        return _failed(session, log, "anthropic", FAILED, "api_error", str(exc))
    log.attempts = record.attempts
    response = forwarded.response
    log.status = response.status_code
    answer_headers = {k: v for k in _ANSWER_HEADERS if (v := response.headers.get(k))}
    observer = _Observer(log)
    kept: list[bytes] | None = [] if cache_key is not None and response.status_code == 200 else None

    async def stream() -> AsyncIterator[bytes]:
        complete = False
        try:
            async for chunk in response.aiter_bytes():
                observer.feed(chunk)
                if kept is not None:
                    kept.append(chunk)
                yield chunk
            complete = True
        finally:
            observer.finish()
            await forwarded.aclose()
            session.end(log, price_model=sent_model)
            if complete and kept is not None and model.cache is not None and cache_key:
                kind = answer_headers.get("content-type", "text/event-stream")
                model.cache.put_raw(cache_key, kind, b"".join(kept))

    return Reply(response.status_code, stream=stream(), headers=answer_headers)


def _replayed(
    session: BridgeSession, log: CallLog, hit: tuple[str, bytes], sent_model: str
) -> Reply:
    """A passed-through answer from the response cache, sent as it was received."""
    content_type, body = hit
    observer = _Observer(log)
    observer.feed(body)
    observer.finish()
    log.cached = True
    session.end(log, price_model=sent_model)
    return Reply(200, stream=_replay([body]), headers={"content-type": content_type})


class _Observer:
    """Reads a passed-through answer on the side: usage, stop reason, tool names, text.

    A streamed answer is read event by event (``message_start`` carries the input usage,
    ``message_delta`` the output); a plain JSON answer when it is complete.
    """

    def __init__(self, log: CallLog) -> None:
        self.log = log
        self.reader = EventReader()
        self.plain = b""
        self.streamed = False
        self.usage: dict[str, Any] = {}

    def feed(self, chunk: bytes) -> None:
        events = self.reader.feed(chunk)
        if events:
            self.streamed = True
        elif not self.streamed:
            self.plain += chunk
        for _, data in events:
            self._event(data)

    def _event(self, data: str) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            return
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "message_start":
            self.usage.update(event.get("message", {}).get("usage") or {})
        elif kind == "message_delta":
            self.usage.update({k: v for k, v in (event.get("usage") or {}).items() if v})
            self.log.stop_reason = (event.get("delta") or {}).get("stop_reason")
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                self.log.tool_calls.append(str(block.get("name")))
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta" and len(self.log.text) < TEXT_KEPT:
                self.log.text += str(delta.get("text", ""))[: TEXT_KEPT - len(self.log.text)]
        elif kind == "error":
            self.log.error = clip_head(json.dumps(event.get("error")), 500)

    def finish(self) -> None:
        if not self.streamed and self.plain:
            try:
                message = json.loads(self.plain)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("type") == "message":
                decoded = anthropic_wire.response_from_wire(message)
                _fill(self.log, decoded)
            elif isinstance(message, dict) and message.get("type") == "error":
                self.log.error = clip_head(json.dumps(message.get("error")), 500)
            return
        if self.usage:
            self.log.usage = usage_from_wire(self.usage)
