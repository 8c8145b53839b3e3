"""A scripted OpenAI server with a fixed latency, for the Codex benchmark: the same two-step
conversation on both of OpenAI's wires.

- ``POST /v1/responses`` (Codex's own wire, streamed as SSE the way the Responses API
  streams): the first request of a conversation (no tool output in its ``input``) gets a
  ``function_call`` of Codex's ``exec_command`` that writes ``result.txt``; a later one the
  message ``done``;
- ``POST /v1/chat/completions`` (what assay's ``openai/`` provider calls, behind the model
  bridge that translates Codex's requests): the same two answers, a ``tool_calls`` entry of
  the tool the request offers (``exec_command``), then ``done``.

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


def chat_answer(body: dict[str, Any]) -> tuple[bytes, bytes]:
    """A Chat Completions answer (JSON; the provider asks without streaming)."""
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    answered = any(isinstance(m, dict) and m.get("role") == "tool" for m in messages)
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or []
             if isinstance(t, dict)]  # fmt: skip
    stamp = time.time_ns()
    if answered or "exec_command" not in tools:
        message: dict[str, Any] = {"role": "assistant", "content": "done"}
        finish = "stop"
    else:
        call = {
            "id": f"call_{stamp}",
            "type": "function",
            "function": {"name": "exec_command", "arguments": json.dumps(COMMAND)},
        }
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    data = {
        "id": f"chatcmpl-{stamp}",
        "object": "chat.completion",
        "created": stamp // 10**9,
        "model": body.get("model", "m"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }
    return b"application/json", json.dumps(data).encode()  # fmt: skip


def answer(request_line: str, body: dict[str, Any]) -> tuple[bytes, bytes]:
    return chat_answer(body) if "/chat/completions" in request_line else responses_answer(body)


if __name__ == "__main__":
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    asyncio.run(serve(int(sys.argv[1]), latency, answer))
