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
import re
from collections.abc import Sequence

from assay.providers.base import Message, ModelRequest, Tool, ToolCall, ToolResult

_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
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
    ``call_<turn>_<n>``."""
    calls = []
    for number, found in enumerate(_CALL.finditer(text), start=1):
        call_id = f"call_{turn}_{number}"
        try:
            value = json.loads(found.group(1))
        except ValueError as exc:
            calls.append(ToolCall(call_id, INVALID, json.dumps({"error": f"not JSON: {exc}"})))
            continue
        name = value.get("name") if isinstance(value, dict) else None
        if not isinstance(name, str):
            problem = "a tool call is a JSON object with a string 'name' and 'arguments'"
            calls.append(ToolCall(call_id, INVALID, json.dumps({"error": problem})))
            continue
        arguments = value.get("arguments", {})
        calls.append(ToolCall(call_id, name, json.dumps(arguments, ensure_ascii=False)))
    return _CALL.sub("", text).strip(), tuple(calls)


def results_message(calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> Message:
    """The user message that returns ``results`` (one per call, in order)."""
    names = {call.id: call.name for call in calls}
    blocks = [f'<tool_result id="{r.call_id}" name="{names.get(r.call_id, "")}" '
              f'error="{str(r.is_error).lower()}">{r.output}</tool_result>'
              for r in results]  # fmt: skip
    return Message("user", "\n".join(blocks))


__all__ = ["INVALID", "parse_calls", "results_message", "text_request"]
