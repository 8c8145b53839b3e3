"""The OpenAI Responses API (``POST /v1/responses``), server side (what Codex speaks).

Shapes from OpenAI's API reference ("Create a model response", "Streaming events"): a
request has ``model``, ``instructions``, ``input`` (a string, or items: ``message`` with
``role`` ``system`` / ``developer`` / ``user`` / ``assistant`` and content parts
``input_text`` / ``output_text``; ``function_call`` ``{call_id, name, arguments}``;
``function_call_output`` ``{call_id, output}``; ``custom_tool_call`` ``{call_id, name,
input}`` and ``custom_tool_call_output``; ``reasoning``), ``tools`` (``function`` with
``parameters``, ``custom`` with an optional grammar ``format``, ``namespace`` ``{name,
tools}`` grouping function tools, as Codex sends each MCP server's: each becomes a tool
named ``<namespace>__<name>`` for the model, and a call of it goes back as a
``function_call`` with ``namespace`` and the tool's own ``name``, as Codex routes it; hosted
tools such as ``web_search`` are OpenAI's own and are not offered to another model),
``tool_choice``,
``max_output_tokens``, ``temperature``, ``top_p``, ``text.format`` (a JSON schema becomes
the answer constraint), ``stream``. A response is ``{id, object: "response", status,
output: [items], usage: {input_tokens (cached included), input_tokens_details.cached_tokens,
output_tokens, output_tokens_details.reasoning_tokens, total_tokens}}``; streamed, the
events ``response.created``, ``response.in_progress``, per item
``response.output_item.added`` … ``response.output_item.done``, then
``response.completed``, each with a ``sequence_number``.
"""

from __future__ import annotations

import dataclasses
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

_SKIPPED_ITEMS = frozenset({"reasoning", "item_reference"})
_CALL_ITEMS = {"function_call": "function", "custom_tool_call": "custom"}
_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})


def request_from_wire(body: Any) -> ModelRequest:
    """A Responses request body → :class:`ModelRequest`.

    Raises:
        WireError: no ``input``, or an item that cannot be translated (its type is named).
    """
    if not isinstance(body, dict) or "input" not in body:
        raise WireError("input: a Responses request needs 'input'")
    messages: list[Message] = []
    if body.get("instructions"):
        messages.append(Message("system", text_of(body["instructions"], where="instructions")))
    raw = body["input"]
    if isinstance(raw, str):
        messages.append(Message("user", raw))
    elif isinstance(raw, list):
        for index, item in enumerate(raw):
            _add_item(messages, item, f"input[{index}]")
    else:
        raise WireError("input must be a string or a list of items")
    return ModelRequest(
        messages=tuple(messages),
        temperature=float(body.get("temperature", 1.0)),
        max_tokens=int(body.get("max_output_tokens") or 4096),
        top_p=body.get("top_p"),
        constraint=_constraint(body.get("text")),
        tools=tuple(_tools(body.get("tools"))),
        tool_choice=_choice(body.get("tool_choice")),
    )


def _add_item(messages: list[Message], item: Any, where: str) -> None:
    if not isinstance(item, dict):
        raise WireError(f"{where}: an input item must be an object")
    kind = item.get("type", "message")
    if kind in _SKIPPED_ITEMS:
        return
    if kind == "message":
        role = item.get("role")
        if role not in ("system", "developer", "user", "assistant"):
            raise WireError(f"{where}: unknown message role {role!r}")
        text = text_of(item.get("content"), where=where)
        _append(messages, Message("system" if role == "developer" else role, text))
    elif kind in _CALL_ITEMS:
        _append(messages, Message("assistant", "", (_call(item, kind, where),)))
    elif kind in _OUTPUT_ITEMS:
        if not isinstance(item.get("call_id"), str):
            raise WireError(f"{where}: a {kind} item needs 'call_id'")
        output = text_of(item.get("output"), where=where)
        _append(messages, Message("user", "", tool_results=(ToolResult(item["call_id"], output),)))
    else:
        raise WireError(f"{where}: input items of type {kind!r} cannot be translated for this "
                        "model")  # fmt: skip


def _call(item: dict[str, Any], kind: str, where: str) -> ToolCall:
    if not isinstance(item.get("call_id"), str) or not isinstance(item.get("name"), str):
        raise WireError(f"{where}: a {kind} item needs 'call_id' and 'name'")
    if kind == "custom_tool_call":
        return ToolCall(item["call_id"], item["name"], str(item.get("input", "")), kind="custom")
    namespace = item.get("namespace")
    name = joined(namespace, item["name"]) if isinstance(namespace, str) else item["name"]
    return ToolCall(item["call_id"], name, json_arguments(item.get("arguments", "")))


def joined(namespace: str, name: str) -> str:
    """The one name a namespaced tool has for the model: ``mcp__server`` and ``tool`` give
    ``mcp__server__tool`` (a namespace that ends in ``__`` is not given another)."""
    return f"{namespace}{name}" if namespace.endswith("__") else f"{namespace}__{name}"


def with_namespaces(response: ModelResponse, request: ModelRequest) -> ModelResponse:
    """``response`` with each call of a namespaced tool of ``request`` split back into its
    namespace and own name (how a Responses client routes it)."""
    found = {t.name: t.namespace for t in request.tools or () if t.namespace is not None}
    if not any(call.name in found for call in response.tool_calls):
        return response
    calls = tuple(
        dataclasses.replace(call, name=call.name.removeprefix(joined(found[call.name], "")),
                            namespace=found[call.name])
        if call.name in found else call
        for call in response.tool_calls
    )  # fmt: skip
    return dataclasses.replace(response, tool_calls=calls)


def _append(messages: list[Message], message: Message) -> None:
    """Add ``message``, merging the calls of consecutive assistant items and the results of
    consecutive tool outputs into one message each (the shape of the other wires)."""
    previous = messages[-1] if messages else None
    if (
        previous is not None
        and previous.role == message.role == "assistant"
        and (message.tool_calls and not message.content)
    ):
        messages[-1] = Message("assistant", previous.content,
                               (*previous.tool_calls, *message.tool_calls))  # fmt: skip
    elif previous is not None and message.tool_results and previous.tool_results:
        messages[-1] = Message(
            "user", previous.content, tool_results=(*previous.tool_results, *message.tool_results)
        )
    else:
        messages.append(message)


def _tools(raw: Any) -> list[Tool]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise WireError("tools must be a list")
    tools = []
    for index, tool in enumerate(raw):
        if not isinstance(tool, dict):
            raise WireError(f"tools[{index}] must be an object")
        if tool.get("type") == "namespace":
            if not isinstance(tool.get("name"), str) or not isinstance(tool.get("tools"), list):
                raise WireError(f"tools[{index}]: a namespace needs 'name' and 'tools'")
            tools += [dataclasses.replace(t, name=joined(tool["name"], t.name),
                                          namespace=tool["name"])
                      for t in _tools(tool["tools"])]  # fmt: skip
            continue
        kind = tool.get("type")
        if kind not in ("function", "custom"):
            continue  # a hosted tool (web_search, tool_search, ...): OpenAI's own
        if not isinstance(tool.get("name"), str):
            raise WireError(f"tools[{index}] needs a 'name'")
        tools.append(Tool(tool["name"], str(tool.get("description") or ""),
                          tool.get("parameters"), kind=kind,
                          format=tool.get("format")))  # fmt: skip
    return tools


def _choice(raw: Any) -> str | None:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict) and isinstance(raw.get("name"), str):
        return str(raw["name"])
    return None


def _constraint(raw: Any) -> JsonSchema | None:
    fmt = raw.get("format") if isinstance(raw, dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = fmt.get("schema")
        if isinstance(schema, dict):
            return JsonSchema(schema)
    return None


def usage_to_wire(usage: Usage | None) -> dict[str, Any]:
    """The Responses usage object (cached input and reasoning output counted inside)."""
    usage = usage or Usage()
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def output_items(response: ModelResponse) -> list[dict[str, Any]]:
    """The ``output`` items of ``response``: a ``message`` with its text, then one item per
    tool call."""
    items: list[dict[str, Any]] = []
    if response.text:
        items.append({"type": "message", "id": new_id("msg"), "role": "assistant",
                      "status": "completed",
                      "content": [{"type": "output_text", "text": response.text,
                                   "annotations": []}]})  # fmt: skip
    for call in response.tool_calls:
        if call.kind == "custom":
            items.append({"type": "custom_tool_call", "id": new_id("ctc"), "call_id": call.id,
                          "name": call.name, "input": call.arguments,
                          "status": "completed"})  # fmt: skip
        else:
            item = {
                "type": "function_call",
                "id": new_id("fc"),
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "status": "completed",
            }
            if call.namespace is not None:
                item["namespace"] = call.namespace
            items.append(item)
    return items


def response_to_wire(
    response: ModelResponse, *, model: str, response_id: str | None = None
) -> dict[str, Any]:
    """A :class:`ModelResponse` → a ``response`` object."""
    incomplete = stop_reason(response) == "length" and not response.tool_calls
    return {
        "id": response_id or new_id("resp"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "model": model,
        "output": output_items(response),
        "usage": usage_to_wire(response.usage),
    }


def stream_events(
    response: ModelResponse, *, model: str, response_id: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events (name, data) that stream ``response``."""
    final = response_to_wire(response, model=model, response_id=response_id)
    opening = {**final, "status": "in_progress", "output": [], "usage": None}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": opening}),
        ("response.in_progress", {"type": "response.in_progress", "response": opening}),
    ]
    for index, item in enumerate(final["output"]):
        events.append(("response.output_item.added", {
            "type": "response.output_item.added", "output_index": index,
            "item": {**item, "status": "in_progress"}}))  # fmt: skip
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(("response.output_text.delta", {
                "type": "response.output_text.delta", "item_id": item["id"],
                "output_index": index, "content_index": 0, "delta": text}))  # fmt: skip
            events.append(("response.output_text.done", {
                "type": "response.output_text.done", "item_id": item["id"],
                "output_index": index, "content_index": 0, "text": text}))  # fmt: skip
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": index, "item": item},
            )
        )
    done = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    events.append((done, {"type": done, "response": final}))
    for number, (_, data) in enumerate(events):
        data["sequence_number"] = number
    return events


def error_body(kind: str, message: str, *, code: str | None = None) -> dict[str, Any]:
    """OpenAI's error object: ``{"error": {"message", "type", "code"}}``."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def failed_event(message: str, *, code: str) -> tuple[str, dict[str, Any]]:
    """A ``response.failed`` event: how a stream reports an error after it started."""
    return ("response.failed", {"type": "response.failed", "response": {
        "id": new_id("resp"), "object": "response", "status": "failed",
        "error": {"code": code, "message": message}, "output": []}})  # fmt: skip


__all__ = [
    "error_body",
    "failed_event",
    "output_items",
    "request_from_wire",
    "response_to_wire",
    "stream_events",
    "usage_to_wire",
]
