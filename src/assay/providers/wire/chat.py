"""OpenAI Chat Completions (``POST /v1/chat/completions``), both ways.

Shapes from OpenAI's API reference ("Create chat completion", "The chat completion chunk
object"): ``messages`` with roles ``system`` / ``developer`` / ``user`` / ``assistant``
(``tool_calls``: ``{id, type: function, function: {name, arguments}}``) / ``tool``
(``tool_call_id``, ``content``); ``tools`` (``{type: function, function: {name,
description, parameters}}``; ``{type: custom, custom: {name, description, format}}``),
``tool_choice``, ``max_tokens`` / ``max_completion_tokens``, ``temperature``, ``top_p``,
``stop``, ``seed``, ``response_format`` (a JSON schema becomes the answer constraint),
``stream`` and ``stream_options.include_usage``. A response has ``choices[0].message`` and
``finish_reason`` (``stop``, ``length``, ``tool_calls``) and ``usage`` (``prompt_tokens``
including ``prompt_tokens_details.cached_tokens``, ``completion_tokens`` including
``completion_tokens_details.reasoning_tokens``). Streamed, it is ``chat.completion.chunk``
objects, then ``[DONE]``.

Consecutive ``tool`` messages become the tool results of one user message (the shape of
:class:`assay.providers.base.Message`), and back.
"""

from __future__ import annotations

import time
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
from assay.providers.wire.common import WireError, json_arguments, new_id, stop_reason, text_of


def request_from_wire(body: Any) -> ModelRequest:
    """A Chat Completions request body → :class:`ModelRequest`.

    Raises:
        WireError: no ``messages`` list, or a malformed message, tool or tool call.
    """
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise WireError("messages: a chat completion request needs a 'messages' list")
    messages: list[Message] = []
    for index, raw in enumerate(body["messages"]):
        _add_message(messages, raw, f"messages[{index}]")
    stop = body.get("stop")
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 4096
    return ModelRequest(
        messages=tuple(messages),
        temperature=float(body.get("temperature", 1.0)),
        max_tokens=int(max_tokens),
        top_p=body.get("top_p"),
        stop=(stop,) if isinstance(stop, str) else tuple(stop or ()),
        seed=body.get("seed"),
        constraint=_constraint(body.get("response_format")),
        tools=tuple(_tools(body.get("tools"))),
        tool_choice=_choice_from(body.get("tool_choice")),
    )


def _add_message(messages: list[Message], raw: Any, where: str) -> None:
    if not isinstance(raw, dict):
        raise WireError(f"{where}: a message must be an object")
    role = raw.get("role")
    if role in ("system", "developer"):
        messages.append(Message("system", text_of(raw.get("content"), where=where)))
    elif role == "user":
        messages.append(Message("user", text_of(raw.get("content"), where=where)))
    elif role == "assistant":
        calls = tuple(_call(c, f"{where}.tool_calls[{i}]")
                      for i, c in enumerate(raw.get("tool_calls") or []))  # fmt: skip
        messages.append(Message("assistant", text_of(raw.get("content"), where=where), calls))
    elif role == "tool":
        if not isinstance(raw.get("tool_call_id"), str):
            raise WireError(f"{where}: a tool message needs 'tool_call_id'")
        result = ToolResult(raw["tool_call_id"], text_of(raw.get("content"), where=where))
        previous = messages[-1] if messages else None
        if previous is not None and previous.role == "user" and previous.tool_results:
            messages[-1] = Message("user", previous.content,
                                   tool_results=(*previous.tool_results, result))  # fmt: skip
        else:
            messages.append(Message("user", "", tool_results=(result,)))
    else:
        raise WireError(f"{where}: unknown role {role!r}")


def _call(raw: Any, where: str) -> ToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        raise WireError(f"{where}: a tool call needs 'id'")
    if raw.get("type") == "custom":
        custom = raw.get("custom") or {}
        return ToolCall(raw["id"], str(custom.get("name")), str(custom.get("input", "")),
                        kind="custom")  # fmt: skip
    function = raw.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise WireError(f"{where}: a tool call needs function.name")
    return ToolCall(raw["id"], function["name"], json_arguments(function.get("arguments", "")))


def _tools(raw: Any) -> list[Tool]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise WireError("tools must be a list")
    tools = []
    for index, tool in enumerate(raw):
        kind = tool.get("type") if isinstance(tool, dict) else None
        spec = tool.get(kind) if isinstance(tool, dict) and kind else None
        if (
            kind not in ("function", "custom")
            or not isinstance(spec, dict)
            or not isinstance(spec.get("name"), str)
        ):
            raise WireError(f"tools[{index}] must be {{type: function, function: {{name, ...}}}}")
        if kind == "function":
            tools.append(Tool(spec["name"], str(spec.get("description") or ""),
                              spec.get("parameters")))  # fmt: skip
        else:
            tools.append(Tool(spec["name"], str(spec.get("description") or ""), kind="custom",
                              format=spec.get("format")))  # fmt: skip
    return tools


def _choice_from(raw: Any) -> str | None:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict):
        spec = raw.get("function") or raw.get("custom") or {}
        return str(spec.get("name")) if isinstance(spec, dict) else None
    return None


def _constraint(raw: Any) -> JsonSchema | None:
    if isinstance(raw, dict) and raw.get("type") == "json_schema":
        schema = (raw.get("json_schema") or {}).get("schema")
        if isinstance(schema, dict):
            return JsonSchema(schema)
    return None


def usage_to_wire(usage: Usage | None) -> dict[str, Any]:
    """OpenAI's usage object (cached input and reasoning output counted inside)."""
    usage = usage or Usage()
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def usage_from_wire(raw: Any) -> Usage | None:
    """An OpenAI usage object → :class:`Usage`; ``None`` when absent."""
    if not isinstance(raw, dict):
        return None
    prompt = raw.get("prompt_tokens_details") or {}
    completion = raw.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_tokens=int(prompt.get("cached_tokens") or 0) if isinstance(prompt, dict) else 0,
        reasoning_tokens=int(completion.get("reasoning_tokens") or 0)
        if isinstance(completion, dict)
        else 0,
    )


def _calls_to_wire(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    wired = []
    for call in calls:
        if call.kind == "custom":
            wired.append({"id": call.id, "type": "custom",
                          "custom": {"name": call.name, "input": call.arguments}})  # fmt: skip
        else:
            wired.append(
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
            )
    return wired


def response_to_wire(
    response: ModelResponse, *, model: str, completion_id: str | None = None
) -> dict[str, Any]:
    """A :class:`ModelResponse` → a ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": response.text or None}
    if response.tool_calls:
        message["tool_calls"] = _calls_to_wire(response.tool_calls)
    return {
        "id": completion_id or new_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": stop_reason(response)}],
        "usage": usage_to_wire(response.usage),
    }


def stream_chunks(
    response: ModelResponse, *, model: str, include_usage: bool, completion_id: str | None = None
) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects that stream ``response`` (the caller adds
    ``data: [DONE]``); the last one carries ``usage`` when ``include_usage``."""
    base = {"id": completion_id or new_id("chatcmpl"), "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}  # fmt: skip

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    if response.text:
        chunks.append(chunk({"content": response.text}))
    for index, call in enumerate(_calls_to_wire(response.tool_calls)):
        chunks.append(chunk({"tool_calls": [{"index": index, **call}]}))
    chunks.append(chunk({}, stop_reason(response)))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": usage_to_wire(response.usage)})
    return chunks


def error_body(kind: str, message: str, *, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error object: ``{"error": {"message", "type", "code"}}``."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def request_to_wire(request: ModelRequest, *, model: str) -> dict[str, Any]:
    """The ``messages``, ``tools`` and ``tool_choice`` of a Chat Completions body for
    ``request`` (generation parameters are the provider's to add).

    Raises:
        WireError: a completion request.
    """
    if request.messages is None:
        raise WireError("a chat completion request needs messages")
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        for result in message.tool_results:
            messages.append({"role": "tool", "tool_call_id": result.call_id,
                             "content": result.output})  # fmt: skip
        if message.tool_calls:
            messages.append({"role": "assistant", "content": message.content or None,
                             "tool_calls": _calls_to_wire(message.tool_calls)})  # fmt: skip
        elif message.content or not message.tool_results:
            messages.append({"role": message.role, "content": message.content})
    body: dict[str, Any] = {"model": model, "messages": messages}
    if request.tools:
        body["tools"] = [_tool_to_wire(t) for t in request.tools]
        if request.tool_choice in ("auto", "none", "required"):
            body["tool_choice"] = request.tool_choice
        elif request.tool_choice is not None:
            body["tool_choice"] = {"type": "function", "function": {"name": request.tool_choice}}
    return body


def _tool_to_wire(tool: Tool) -> dict[str, Any]:
    if tool.kind == "custom":
        custom: dict[str, Any] = {"name": tool.name, "description": tool.description}
        if tool.format is not None:
            custom["format"] = tool.format
        return {"type": "custom", "custom": custom}
    parameters = tool.parameters or {"type": "object", "properties": {}}
    return {"type": "function", "function": {"name": tool.name, "description": tool.description,
                                             "parameters": parameters}}  # fmt: skip


def refusal_of(message: Any, finish: str | None) -> tuple[str, str | None]:
    """The text and finish reason of a chat ``message``: one whose ``refusal`` field holds
    the answer (OpenAI's refusal, ``content`` null) is that text, finished ``refusal``."""
    content = message.get("content") if isinstance(message, dict) else None
    refusal = message.get("refusal") if isinstance(message, dict) else None
    if not content and isinstance(refusal, str) and refusal.strip():
        return refusal, "refusal"
    return text_of(content, where="choices[0].message.content"), finish


def response_from_wire(data: Any) -> ModelResponse:
    """A ``chat.completion`` object → :class:`ModelResponse`.

    Raises:
        WireError: no ``choices[0].message``.
    """
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise WireError(f"the response has no choice: {exc!r}") from exc
    calls = tuple(_call(c, f"choices[0].message.tool_calls[{i}]")
                  for i, c in enumerate(message.get("tool_calls") or []))  # fmt: skip
    text, finish = refusal_of(message, choice.get("finish_reason"))
    return ModelResponse(
        text=text,
        usage=usage_from_wire(data.get("usage")),
        finish_reason=finish,
        model=data.get("model"),
        tool_calls=calls,
    )


__all__ = [
    "error_body",
    "refusal_of",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
    "stream_chunks",
    "usage_from_wire",
    "usage_to_wire",
]
