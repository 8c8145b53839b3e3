"""A scripted OpenAI server with a fixed latency, for the Codex benchmark: the same two-step
conversation on both of OpenAI's wires.

- ``POST /v1/responses`` (Codex's own wire, streamed as SSE the way the Responses API
  streams): the first request of a conversation (no tool output in its ``input``) gets a
  ``function_call`` of Codex's ``exec_command`` that writes ``result.txt``; a later one the
  message ``done``;
- ``POST /v1/chat/completions`` (what assay's ``openai/`` provider calls behind the model
  bridge, and what Qwen Code, OpenCode and Pi call bare): the same two answers, a
  ``tool_calls`` entry of the shell tool the request offers (:data:`SHELL_TOOLS`: Codex's
  ``exec_command``, Qwen Code's ``run_shell_command``, OpenCode's and Pi's ``bash``, with the
  arguments its schema names), then ``done``; streamed as chunks when the request asks
  (``"stream": true``, as the CLIs do), one JSON object otherwise (as assay's provider asks).

Served by bench/scripted_http.py; every answer after exactly ``LATENCY`` seconds. Usage:
``python bench/openai_server.py PORT [LATENCY_SECONDS]`` (prints
``ready`` when listening).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from scripted_http import serve

COMMAND = {"cmd": "printf positive > result.txt"}
SHELL_TOOLS = ("exec_command", "run_shell_command", "bash", "shell")
"""The shell tools of the CLIs this server answers (Codex, Qwen Code, OpenCode and Pi)."""
USAGE = {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 60}  # fmt: skip


def sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def responses_answer(body: dict[str, Any]) -> tuple[bytes, bytes]:
    """A streamed Responses answer: the content type and the SSE body."""
    items = body.get("input") if isinstance(body.get("input"), list) else []
    answered = any(isinstance(i, dict) and i.get("type", "").endswith("_call_output")
                   for i in items)  # fmt: skip
    stamp = time.time_ns()
    if answered:
        item: dict[str, Any] = {"type": "message", "id": f"msg_{stamp}", "role": "assistant",
                                "status": "completed",
                                "content": [{"type": "output_text", "text": "done",
                                             "annotations": []}]}  # fmt: skip
    else:
        item = {"type": "function_call", "id": f"fc_{stamp}", "call_id": f"call_{stamp}",
                "name": "exec_command", "arguments": json.dumps(COMMAND),
                "status": "completed"}  # fmt: skip
    response = {"id": f"resp_{stamp}", "object": "response", "status": "completed",
                "model": body.get("model", "m"), "output": [item], "usage": USAGE}  # fmt: skip
    started = {**response, "status": "in_progress", "output": []}
    events = [
        {"type": "response.created", "response": started},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    ]
    return b"text/event-stream", b"".join(sse(e) for e in events)


def shell_call(tools: list[Any]) -> tuple[str, dict[str, str]] | None:
    """The shell tool among the request's tools and the arguments that write ``result.txt``
    (``command`` or ``cmd``, and a ``description`` when its schema has one); ``None``
    when none is offered."""
    for tool in tools:
        function = tool.get("function", {}) if isinstance(tool, dict) else {}
        if function.get("name") in SHELL_TOOLS:
            fields = (function.get("parameters") or {}).get("properties") or {}
            key = "cmd" if "cmd" in fields else "command"
            args = {key: COMMAND["cmd"]}
            if "description" in fields:
                args["description"] = "Write the answer"
            return function["name"], args
    return None


def chat_answer(body: dict[str, Any]) -> tuple[bytes, bytes]:
    """A Chat Completions answer: streamed chunks (SSE) when the request asks, else JSON."""
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    answered = any(isinstance(m, dict) and m.get("role") == "tool" for m in messages)
    call = None if answered else shell_call(body.get("tools") or [])
    stamp = time.time_ns()
    if call is None:
        message: dict[str, Any] = {"role": "assistant", "content": "done"}
        finish = "stop"
    else:
        calls = [{"index": 0, "id": f"call_{stamp}", "type": "function",
                  "function": {"name": call[0], "arguments": json.dumps(call[1])}}]  # fmt: skip
        message, finish = {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"
    usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
    head = {"id": f"chatcmpl-{stamp}", "created": stamp // 10**9, "model": body.get("model", "m")}
    if body.get("stream"):
        chunks = [
            {**head, "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": message, "finish_reason": None}]},
            {**head, "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
        ]  # fmt: skip
        data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
        return b"text/event-stream", data + b"data: [DONE]\n\n"
    data = {**head, "object": "chat.completion", "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}  # fmt: skip
    return b"application/json", json.dumps(data).encode()


def answer(request_line: str, body: dict[str, Any]) -> tuple[bytes, bytes]:
    return chat_answer(body) if "/chat/completions" in request_line else responses_answer(body)


if __name__ == "__main__":
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    asyncio.run(serve(int(sys.argv[1]), latency, answer))
