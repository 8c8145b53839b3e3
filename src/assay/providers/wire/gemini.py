"""The Gemini API's ``generateContent`` / ``streamGenerateContent`` (what the Gemini CLI
sends), both ways.

Shapes from Google's Gemini API reference ("Generating content", ``GenerateContentRequest``
and ``GenerateContentResponse``): ``contents`` are turns with ``role`` ``user`` or
``model`` and ``parts``: ``{text}`` (``thought: true`` marks reasoning, left out),
``{functionCall: {name, args, id?}}``, ``{functionResponse: {name, response, id?}}``;
``systemInstruction: {parts}``; ``tools: [{functionDeclarations: [{name, description,
parameters | parametersJsonSchema}]}]``; ``toolConfig.functionCallingConfig`` (``mode``
``AUTO`` / ``ANY`` / ``NONE``, ``allowedFunctionNames``); ``generationConfig``
(``temperature``, ``topP``, ``maxOutputTokens``, ``stopSequences``, ``seed``,
``responseMimeType`` with ``responseJsonSchema`` or ``responseSchema``). A response has
``candidates[0].content.parts`` and ``finishReason`` (``STOP``, ``MAX_TOKENS``, …) and
``usageMetadata`` (``promptTokenCount`` including ``cachedContentTokenCount``,
``candidatesTokenCount``, ``thoughtsTokenCount`` apart, ``totalTokenCount``). Streamed
(``?alt=sse``), it is a series of ``data:`` lines, each a whole ``GenerateContentResponse``
holding the next parts, with no end marker.

The model is named by the URL (``models/{model}:generateContent``), not the body. A function
call without an ``id`` (older clients) gets one from its turn and position, and a
``functionResponse`` without one answers the latest unanswered call of its name.
"""

from __future__ import annotations

import json
from typing import Any

from assay.providers.base import (
    JsonSchema,
    Message,
    ModelRequest,
    ModelResponse,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)
from assay.providers.wire.common import WireError, new_id
from assay.results.transcript import PROVIDER_REFUSALS

FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "max_tokens": "MAX_TOKENS"}
"""assay's finish reasons → Gemini's ``finishReason`` (anything else: ``STOP``)."""

STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
          404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL",
          502: "UNAVAILABLE", 503: "UNAVAILABLE"}  # fmt: skip


def request_from_wire(body: Any) -> ModelRequest:
    """A ``generateContent`` request body → :class:`ModelRequest`.

    Raises:
        WireError: no ``contents`` list, or a malformed turn, part, tool or setting.
    """
    if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
        raise WireError("contents: a generateContent request needs a 'contents' list")
    messages: list[Message] = []
    system = _parts_text(body.get("systemInstruction"), "systemInstruction")
    if system:
        messages.append(Message("system", system))
    pending: dict[str, list[str]] = {}
    for index, turn in enumerate(body["contents"]):
        messages.append(_message(turn, f"contents[{index}]", pending))
    config = body.get("generationConfig") or {}
    if not isinstance(config, dict):
        raise WireError("generationConfig must be an object")
    stop = config.get("stopSequences") or ()
    return ModelRequest(
        messages=tuple(messages),
        temperature=float(config.get("temperature", 1.0)),
        max_tokens=int(config.get("maxOutputTokens") or 8192),
        top_p=config.get("topP"),
        stop=(stop,) if isinstance(stop, str) else tuple(stop),
        seed=config.get("seed"),
        constraint=_constraint(config),
        tools=tuple(_tools(body.get("tools"))),
        tool_choice=_choice(body.get("toolConfig")),
    )


def _parts(turn: Any, where: str) -> list[Any]:
    parts = turn.get("parts") if isinstance(turn, dict) else None
    if not isinstance(parts, list):
        raise WireError(f"{where}: a turn needs a 'parts' list")
    return parts


def _parts_text(turn: Any, where: str) -> str:
    if turn is None:
        return ""
    if isinstance(turn, str):
        return turn
    texts = []
    for index, part in enumerate(_parts(turn, where)):
        if not isinstance(part, dict):
            raise WireError(f"{where}.parts[{index}]: a part must be an object")
        if isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
    return "\n".join(texts)


def _message(turn: Any, where: str, pending: dict[str, list[str]]) -> Message:
    role = turn.get("role", "user") if isinstance(turn, dict) else None
    if role not in ("user", "model", "function"):
        raise WireError(f"{where}: role must be 'user' or 'model', got {role!r}")
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for index, part in enumerate(_parts(turn, where)):
        here = f"{where}.parts[{index}]"
        if not isinstance(part, dict):
            raise WireError(f"{here}: a part must be an object")
        if isinstance(part.get("text"), str):
            if not part.get("thought"):
                texts.append(part["text"])
        elif "functionCall" in part:
            calls.append(_call(part["functionCall"], here, f"{where}-{index}", pending))
        elif "functionResponse" in part:
            results.append(_result(part["functionResponse"], here, pending))
        else:
            kind = next(iter(part), "part")
            texts.append(f"[{kind} omitted]")
    if role == "model":
        if results:
            raise WireError(f"{where}: a model turn cannot carry a functionResponse")
        return Message("assistant", "\n".join(texts), tuple(calls))
    if calls:
        raise WireError(f"{where}: a user turn cannot carry a functionCall")
    return Message("user", "\n".join(texts), tool_results=tuple(results))


def _call(raw: Any, where: str, fallback: str, pending: dict[str, list[str]]) -> ToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise WireError(f"{where}: a functionCall needs 'name'")
    call_id = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else None
    call_id = call_id or f"call_{fallback.replace('[', '').replace(']', '')}"
    pending.setdefault(raw["name"], []).append(call_id)
    return ToolCall(call_id, raw["name"], json.dumps(raw.get("args") or {}, ensure_ascii=False))


def _result(raw: Any, where: str, pending: dict[str, list[str]]) -> ToolResult:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise WireError(f"{where}: a functionResponse needs 'name'")
    waiting = pending.get(raw["name"]) or []
    call_id = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else None
    if call_id is None:
        if not waiting:
            raise WireError(f"{where}: a functionResponse for '{raw['name']}' answers no call")
        call_id = waiting[-1]
    if call_id in waiting:
        waiting.remove(call_id)
    response = raw.get("response")
    failed = isinstance(response, dict) and "error" in response and "output" not in response
    return ToolResult(call_id, _output(response), is_error=failed)


def _output(response: Any) -> str:
    """A function response as the text the model reads: ``output`` (or ``error``, or
    ``content``) when it is a string, else the JSON of the whole value."""
    if isinstance(response, dict):
        for key in ("output", "error", "content"):
            if isinstance(response.get(key), str) and len(response) == 1:
                return str(response[key])
    if isinstance(response, str):
        return response
    return json.dumps(response, ensure_ascii=False)


def _tools(raw: Any) -> list[Tool]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise WireError("tools must be a list")
    tools: list[Tool] = []
    for index, group in enumerate(raw):
        if not isinstance(group, dict):
            raise WireError(f"tools[{index}] must be an object")
        declarations = group.get("functionDeclarations") or []
        if not isinstance(declarations, list):
            raise WireError(f"tools[{index}].functionDeclarations must be a list")
        for number, spec in enumerate(declarations):
            if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
                raise WireError(f"tools[{index}].functionDeclarations[{number}] needs 'name'")
            parameters = spec.get("parametersJsonSchema") or spec.get("parameters")
            tools.append(Tool(spec["name"], str(spec.get("description") or ""),
                              _json_schema(parameters) if parameters else None))  # fmt: skip
    return tools


def _json_schema(schema: Any) -> Any:
    """Gemini's OpenAPI-style schema (``type: OBJECT``) as JSON Schema (``type: object``)."""
    if isinstance(schema, dict):
        out = {key: _json_schema(value) for key, value in schema.items()}
        if isinstance(out.get("type"), str):
            out["type"] = out["type"].lower()
        return out
    if isinstance(schema, list):
        return [_json_schema(item) for item in schema]
    return schema


def _choice(raw: Any) -> str | None:
    config = (raw or {}).get("functionCallingConfig") if isinstance(raw, dict) else None
    if not isinstance(config, dict):
        return None
    mode = str(config.get("mode") or "AUTO").upper()
    allowed = config.get("allowedFunctionNames") or []
    if mode == "NONE":
        return "none"
    if mode == "ANY":
        return str(allowed[0]) if len(allowed) == 1 else "required"
    return "auto"


def _constraint(config: dict[str, Any]) -> JsonSchema | None:
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if config.get("responseMimeType") == "application/json" and isinstance(schema, dict):
        return JsonSchema(_json_schema(schema))
    return None


def usage_to_wire(usage: Usage | None) -> dict[str, Any]:
    """Gemini's ``usageMetadata`` (cached input inside the prompt count, reasoning apart
    from the candidates' count, as Gemini reports them)."""
    usage = usage or Usage()
    visible = usage.output_tokens - usage.reasoning_tokens
    out: dict[str, Any] = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": visible,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    }
    if usage.cache_read_tokens:
        out["cachedContentTokenCount"] = usage.cache_read_tokens
    if usage.reasoning_tokens:
        out["thoughtsTokenCount"] = usage.reasoning_tokens
    return out


def usage_from_wire(raw: Any) -> Usage | None:
    """Gemini's ``usageMetadata`` → :class:`Usage`; ``None`` when absent."""
    if not isinstance(raw, dict):
        return None
    thoughts = int(raw.get("thoughtsTokenCount") or 0)
    return Usage(
        input_tokens=int(raw.get("promptTokenCount") or 0),
        output_tokens=int(raw.get("candidatesTokenCount") or 0) + thoughts,
        cache_read_tokens=int(raw.get("cachedContentTokenCount") or 0),
        reasoning_tokens=thoughts,
    )


def _parts_to_wire(text: str, calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    for call in calls:
        args = call.input if isinstance(call.input, dict) else {"input": call.input}
        parts.append({"functionCall": {"id": call.id, "name": call.name, "args": args}})
    return parts


def finish_reason(response: ModelResponse) -> str:
    """Gemini's ``finishReason`` of ``response`` (a tool call ends with ``STOP``)."""
    return FINISH.get(response.finish_reason or "stop", "STOP")


def response_to_wire(
    response: ModelResponse, *, model: str, response_id: str | None = None
) -> dict[str, Any]:
    """A :class:`ModelResponse` → a ``GenerateContentResponse``."""
    parts = _parts_to_wire(response.text, response.tool_calls) or [{"text": ""}]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts},
                        "finishReason": finish_reason(response), "index": 0}],
        "usageMetadata": usage_to_wire(response.usage),
        "modelVersion": model,
        "responseId": response_id or new_id("resp"),
    }  # fmt: skip


def stream_chunks(
    response: ModelResponse, *, model: str, response_id: str | None = None
) -> list[dict[str, Any]]:
    """The ``GenerateContentResponse`` chunks that stream ``response``: its text, then each
    function call, the last chunk carrying ``finishReason`` and ``usageMetadata``."""
    answer_id = response_id or new_id("resp")
    pieces = _parts_to_wire(response.text, response.tool_calls) or [{"text": ""}]
    chunks = []
    for index, part in enumerate(pieces):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": model,
                                 "responseId": answer_id}  # fmt: skip
        if index == len(pieces) - 1:
            candidate["finishReason"] = finish_reason(response)
            chunk["usageMetadata"] = usage_to_wire(response.usage)
        chunks.append(chunk)
    return chunks


def error_body(status: int, message: str) -> dict[str, Any]:
    """Google's error object: ``{"error": {"code", "message", "status"}}``."""
    return {"error": {"code": status, "message": message, "status": STATUS.get(status, "UNKNOWN")}}


def request_to_wire(request: ModelRequest) -> dict[str, Any]:
    """The ``contents``, ``systemInstruction``, ``tools`` and ``toolConfig`` of a
    ``generateContent`` body for ``request`` (generation settings are the caller's to add).

    Raises:
        WireError: a completion request.
    """
    if request.messages is None:
        raise WireError("a generateContent request needs messages")
    body: dict[str, Any] = {"contents": []}
    names = {c.id: c.name for m in request.messages for c in m.tool_calls}
    system = [m.content for m in request.messages if m.role == "system"]
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n".join(system)}]}
    for message in request.messages:
        if message.role == "system":
            continue
        if message.role == "assistant":
            parts = _parts_to_wire(message.content, message.tool_calls)
            body["contents"].append({"role": "model", "parts": parts or [{"text": ""}]})
            continue
        parts = [{"functionResponse": {"id": r.call_id, "name": names.get(r.call_id, "tool"),
                                       "response": {"error" if r.is_error else "output":
                                                    r.output}}}
                 for r in message.tool_results]  # fmt: skip
        if message.content or not parts:
            parts.append({"text": message.content})
        body["contents"].append({"role": "user", "parts": parts})
    if request.tools:
        declarations = [{"name": t.name, "description": t.description,
                         "parametersJsonSchema": t.parameters or {"type": "object"}}
                        for t in request.tools]  # fmt: skip
        body["tools"] = [{"functionDeclarations": declarations}]
        body["toolConfig"] = {"functionCallingConfig": _choice_to_wire(request.tool_choice)}
    return body


def _choice_to_wire(choice: str | None) -> dict[str, Any]:
    if choice == "none":
        return {"mode": "NONE"}
    if choice == "required":
        return {"mode": "ANY"}
    if choice in (None, "auto"):
        return {"mode": "AUTO"}
    return {"mode": "ANY", "allowedFunctionNames": [choice]}


def response_from_wire(data: Any) -> ModelResponse:
    """A ``GenerateContentResponse`` → :class:`ModelResponse`.

    Raises:
        WireError: no ``candidates[0].content.parts``.
    """
    try:
        candidate = data["candidates"][0]
        blocked = candidate.get("finishReason") in PROVIDER_REFUSALS and not candidate.get(
            "content"
        )  # a blocked answer comes without content
        parts = [] if blocked else candidate["content"]["parts"]
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise WireError(f"the response has no candidate content: {exc!r}") from exc
    message = _message({"role": "model", "parts": parts}, "candidates[0].content", {})
    reason = str(candidate.get("finishReason") or "STOP")
    return ModelResponse(
        text=message.content,
        usage=usage_from_wire(data.get("usageMetadata")),
        finish_reason="length"
        if reason == "MAX_TOKENS"
        else (reason if reason in PROVIDER_REFUSALS else "stop"),
        model=data.get("modelVersion"),
        tool_calls=message.tool_calls,
    )


__all__ = [
    "error_body",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
    "stream_chunks",
    "usage_from_wire",
    "usage_to_wire",
]
