"""The Anthropic Messages API (``POST /v1/messages``), both ways.

Shapes from Anthropic's API reference ("Messages", "Streaming Messages"): a request has
``model``, ``max_tokens``, ``system`` (a string or text blocks), ``messages`` (``user`` and
``assistant``; content a string or blocks ``text``, ``image``, ``tool_use``,
``tool_result``, ``thinking``), ``tools`` (``name``, ``description``, ``input_schema``),
``tool_choice`` (``auto``, ``any``, ``tool``, ``none``), ``stop_sequences``,
``temperature``, ``top_p``, ``stream``. Claude Code also puts ``role: "system"`` entries in
``messages``; they are read as system text. A response is a ``message`` with content
blocks, ``stop_reason`` (``end_turn``, ``tool_use``, ``max_tokens``) and ``usage``
(``input_tokens`` uncached, ``cache_read_input_tokens``, ``cache_creation_input_tokens``,
``output_tokens``); streamed, it is the events ``message_start``, per block
``content_block_start`` / ``content_block_delta`` (``text_delta``, ``input_json_delta``) /
``content_block_stop``, then ``message_delta`` and ``message_stop``.

Thinking blocks are dropped on the way to another provider (they are signed by Anthropic
and mean nothing elsewhere); images and documents become a note.
"""

from __future__ import annotations

import json
from typing import Any

from assay.providers.base import (
    Message,
    ModelRequest,
    ModelResponse,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)
from assay.providers.wire.common import (
    WireError,
    json_arguments,
    new_id,
    stop_reason,
    text_of,
)

_STOP = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn"}
FREEFORM_KEY = "input"
"""A freeform (``custom``) tool offered to Claude takes its text in this one argument."""


def request_from_wire(body: Any) -> ModelRequest:
    """A Messages request body → :class:`ModelRequest`.

    Raises:
        WireError: not an object, no ``messages`` list, or a malformed message or block.
    """
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise WireError("messages: a Messages request needs a 'messages' list")
    messages: list[Message] = []
    system = text_of(body.get("system"), where="system")
    if system:
        messages.append(Message("system", system))
    for index, raw in enumerate(body["messages"]):
        messages.append(_message(raw, f"messages[{index}]"))
    return ModelRequest(
        messages=tuple(messages),
        temperature=float(body.get("temperature", 1.0)),
        max_tokens=int(body.get("max_tokens") or 4096),
        top_p=body.get("top_p"),
        stop=tuple(body.get("stop_sequences") or ()),
        tools=tuple(_tools(body.get("tools"))),
        tool_choice=_choice_from(body.get("tool_choice")),
    )


def _message(raw: Any, where: str) -> Message:
    if not isinstance(raw, dict) or raw.get("role") not in ("user", "assistant", "system"):
        raise WireError(f"{where}: a message needs role 'user' or 'assistant'")
    content = raw.get("content")
    if isinstance(content, str):
        return Message(raw["role"], content)
    if not isinstance(content, list):
        raise WireError(f"{where}.content must be a string or a list of blocks")
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for number, block in enumerate(content):
        place = f"{where}.content[{number}]"
        if not isinstance(block, dict):
            raise WireError(f"{place}: a content block must be an object")
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            calls.append(_call(block, place))
        elif kind == "tool_result":
            results.append(_result(block, place))
        elif kind in ("thinking", "redacted_thinking"):
            continue
        else:
            texts.append(f"[{kind} omitted]")
    return Message(raw["role"], "\n".join(texts), tuple(calls), tuple(results))


def _call(block: dict[str, Any], where: str) -> ToolCall:
    if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
        raise WireError(f"{where}: a tool_use block needs 'id' and 'name'")
    return ToolCall(block["id"], block["name"], json_arguments(block.get("input", {})))


def _result(block: dict[str, Any], where: str) -> ToolResult:
    if not isinstance(block.get("tool_use_id"), str):
        raise WireError(f"{where}: a tool_result block needs 'tool_use_id'")
    output = text_of(block.get("content"), where=where)
    return ToolResult(block["tool_use_id"], output, bool(block.get("is_error", False)))


def _tools(raw: Any) -> list[Tool]:
    """Client tools (with ``input_schema``); server tools such as web search are Anthropic's
    own and are not offered to another model."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise WireError("tools must be a list")
    tools = []
    for index, tool in enumerate(raw):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise WireError(f"tools[{index}] needs a 'name'")
        if "input_schema" not in tool:
            continue
        tools.append(Tool(tool["name"], str(tool.get("description") or ""),
                          tool.get("input_schema")))  # fmt: skip
    return tools


def _choice_from(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    if kind == "tool":
        return str(raw.get("name"))
    return {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))


def _choice_to(choice: str | None) -> dict[str, Any] | None:
    if choice is None:
        return None
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def usage_to_wire(usage: Usage | None) -> dict[str, int]:
    """Anthropic's usage object: ``input_tokens`` counts only the uncached input."""
    usage = usage or Usage()
    uncached = usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens
    return {
        "input_tokens": max(0, uncached),
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }


def usage_from_wire(raw: Any) -> Usage:
    """An Anthropic usage object → :class:`Usage` (input = uncached + cache read + written)."""
    if not isinstance(raw, dict):
        return Usage()
    read = int(raw.get("cache_read_input_tokens") or 0)
    write = int(raw.get("cache_creation_input_tokens") or 0)
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0) + read + write,
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def _blocks(response: ModelResponse) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if response.text:
        blocks.append({"type": "text", "text": response.text})
    for call in response.tool_calls:
        value = call.input if call.kind == "function" else {FREEFORM_KEY: call.arguments}
        if not isinstance(value, dict):
            value = {FREEFORM_KEY: value}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": value})
    return blocks


def response_to_wire(
    response: ModelResponse, *, model: str, message_id: str | None = None
) -> dict[str, Any]:
    """A :class:`ModelResponse` → a Messages response object."""
    return {
        "id": message_id or new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(response),
        "stop_reason": _STOP[stop_reason(response)],
        "stop_sequence": None,
        "usage": usage_to_wire(response.usage),
    }


def stream_events(
    response: ModelResponse, *, model: str, message_id: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events (name, data) that stream ``response``, in Anthropic's order."""
    message = response_to_wire(response, model=model, message_id=message_id)
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**usage, "output_tokens": 0}}  # fmt: skip
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start",
             {"type": "content_block_start", "index": index, "content_block": opening}),
            ("content_block_delta",
             {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]  # fmt: skip
    events += [
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                           "usage": {"output_tokens": usage["output_tokens"]}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return events


def error_body(kind: str, message: str) -> dict[str, Any]:
    """Anthropic's error object: ``{"type": "error", "error": {"type", "message"}}``
    (``kind``: ``invalid_request_error``, ``authentication_error``, ``rate_limit_error``,
    ``api_error``, ``overloaded_error``)."""
    return {"type": "error", "error": {"type": kind, "message": message}}


def request_to_wire(request: ModelRequest, *, model: str) -> dict[str, Any]:
    """A :class:`ModelRequest` → a Messages request body (without ``stream``).

    Raises:
        WireError: a completion request (the Messages API has none).
    """
    if request.messages is None:
        raise WireError("the Messages API has no completion endpoint; use prompt_format: chat")
    system = "\n\n".join(m.content for m in request.messages if m.role == "system")
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": [_message_to_wire(m) for m in request.messages if m.role != "system"],
        "temperature": request.temperature,
    }
    if system:
        body["system"] = system
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.tools:
        body["tools"] = [_tool_to_wire(t) for t in request.tools]
        choice = _choice_to(request.tool_choice)
        if choice is not None:
            body["tool_choice"] = choice
    return body


def _tool_to_wire(tool: Tool) -> dict[str, Any]:
    schema = tool.parameters or {"type": "object", "properties": {}}
    if tool.kind == "custom":
        schema = {"type": "object", "properties": {FREEFORM_KEY: {"type": "string"}},
                  "required": [FREEFORM_KEY]}  # fmt: skip
    return {"name": tool.name, "description": tool.description, "input_schema": schema}


def _message_to_wire(message: Message) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for result in message.tool_results:
        blocks.append({"type": "tool_result", "tool_use_id": result.call_id,
                       "content": result.output, "is_error": result.is_error})  # fmt: skip
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        value = call.input if call.kind == "function" else {FREEFORM_KEY: call.arguments}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": value if isinstance(value, dict) else {FREEFORM_KEY: value},
            }
        )
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    return {"role": message.role, "content": blocks}


def response_from_wire(data: Any, *, custom_tools: frozenset[str] = frozenset()) -> ModelResponse:
    """A Messages response object → :class:`ModelResponse` (``custom_tools``: the names of
    freeform tools, whose calls carry their text in ``input``).

    Raises:
        WireError: not a message object.
    """
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise WireError("the response is not a Messages 'message' object")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in data["content"]:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            name = str(block.get("name"))
            value = block.get("input", {})
            if name in custom_tools and isinstance(value, dict):
                calls.append(
                    ToolCall(
                        str(block.get("id")), name, str(value.get(FREEFORM_KEY, "")), kind="custom"
                    )
                )
            else:
                calls.append(ToolCall(str(block.get("id")), name, json_arguments(value)))
    return ModelResponse(
        text="".join(texts),
        usage=usage_from_wire(data.get("usage")),
        finish_reason=_finish(data.get("stop_reason")),
        model=data.get("model"),
        tool_calls=tuple(calls),
    )


def _finish(reason: Any) -> str | None:
    if reason is None:
        return None
    return {"tool_use": "tool_calls", "max_tokens": "length", "end_turn": "stop",
            "stop_sequence": "stop"}.get(str(reason), str(reason))  # fmt: skip


__all__ = [
    "error_body",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
    "stream_events",
    "usage_from_wire",
    "usage_to_wire",
]
