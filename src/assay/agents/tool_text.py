"""The text tool protocol of the ``llm`` agent's tool loop (``tool_protocol: text``), for a
model without native tool calling.

The tools are described in a system message (name, description, JSON schema of the
arguments) and the request carries no ``tools``. The model calls a tool by writing, anywhere
in its reply, one block per call::

    <tool_call>{"name": "run_command", "arguments": {"command": "ls"}}</tool_call>

Each result comes back in the next user message as
``<tool_result id="call_2_1" name="run_command" error="false">output</tool_result>``. A block
that is not a JSON object with a string ``name`` becomes a call of the tool ``invalid``,
whose error result tells the model what was wrong; a reply without a block ends the loop
like a native reply without tool calls.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from assay.providers.base import Message, ModelRequest, Tool, ToolCall, ToolResult

INVALID = "invalid"
"""The name given to a ``<tool_call>`` block that cannot be read."""


def text_request(request: ModelRequest, tools: Sequence[Tool]) -> ModelRequest:
    """``request`` without native tools, a system message describing ``tools`` first (after
    the task's own system prompt, when it has one)."""
    lines = ["You can use these tools. To call one, write a block such as",
             '<tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>',
             "(one block per call; the results come back in the next message). Tools:"]  # fmt: skip
    for tool in tools:
        schema = json.dumps(tool.parameters or {}, ensure_ascii=False, sort_keys=True)
        lines.append(f"- {tool.name}: {tool.description} Arguments (JSON schema): {schema}")
    messages = list(request.messages or ())
    guide = "\n".join(lines)
    if messages and messages[0].role == "system":
        messages[0] = Message("system", f"{messages[0].content}\n\n{guide}")
    else:
        messages.insert(0, Message("system", guide))
    return dataclasses.replace(request, messages=tuple(messages), tools=())


def parse_calls(text: str, turn: int) -> tuple[str, tuple[ToolCall, ...]]:
    """The reply's text outside the blocks (stripped) and its calls, with ids
    ``call_<turn>_<n>``. A block's JSON is read as far as it goes, so ``</tool_call>``
    inside one of its strings does not end it."""
    calls: list[ToolCall] = []
    outside: list[str] = []
    done = 0
    for start, body, error, end in _blocks(text):
        outside.append(text[done:start])
        done = end
        call_id = f"call_{turn}_{len(calls) + 1}"
        if error is not None:
            calls.append(ToolCall(call_id, INVALID, json.dumps({"error": error})))
            continue
        name = body.get("name") if isinstance(body, dict) else None
        if not isinstance(name, str):
            problem = "a tool call is a JSON object with a string 'name' and 'arguments'"
            calls.append(ToolCall(call_id, INVALID, json.dumps({"error": problem})))
            continue
        arguments = body.get("arguments", {})
        calls.append(ToolCall(call_id, name, json.dumps(arguments, ensure_ascii=False)))
    outside.append(text[done:])
    return "".join(outside).strip(), tuple(calls)


_OPEN, _CLOSE = "<tool_call>", "</tool_call>"


def _blocks(text: str) -> list[tuple[int, Any, str | None, int]]:
    """``(start, value, error, end)`` of each ``<tool_call>`` block: its JSON value, or
    ``error`` saying why it is not JSON."""
    found: list[tuple[int, Any, str | None, int]] = []
    decoder = json.JSONDecoder()
    at = text.find(_OPEN)
    while at != -1:
        begin = at + len(_OPEN)
        inner = begin + len(text[begin:]) - len(text[begin:].lstrip())
        try:
            value, stop = decoder.raw_decode(text, inner)
        except ValueError:
            stop = -1
        after = stop + len(text[stop:]) - len(text[stop:].lstrip()) if stop != -1 else -1
        if stop != -1 and text.startswith(_CLOSE, after):
            found.append((at, value, None, after + len(_CLOSE)))
        else:  # not JSON up to the closing tag: the block ends at the first one
            close = text.find(_CLOSE, begin)
            if close == -1:
                break
            try:
                json.loads(text[begin:close])
                problem = "a block holds one JSON object"
            except ValueError as exc:
                problem = f"not JSON: {exc}"
            found.append((at, None, problem, close + len(_CLOSE)))
        at = text.find(_OPEN, found[-1][3])
    return found


def results_message(calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> Message:
    """The user message that returns ``results`` (one per call, in order)."""
    names = {call.id: call.name for call in calls}
    blocks = [f'<tool_result id="{r.call_id}" name="{names.get(r.call_id, "")}" '
              f'error="{str(r.is_error).lower()}">{r.output}</tool_result>'
              for r in results]  # fmt: skip
    return Message("user", "\n".join(blocks))


__all__ = ["INVALID", "parse_calls", "results_message", "text_request"]
