"""A scripted Anthropic Messages server with a fixed latency, for the coding-agent benchmark.

Served by bench/scripted_http.py (keep-alive, almost no CPU). Every ``POST /v1/messages``
is answered after exactly ``LATENCY`` seconds, streamed as SSE the way Anthropic streams:
the first request of a conversation with a ``Write`` tool call (``result.txt`` ←
``positive``), every later one with the text ``done``. Usage:
``python bench/anthropic_server.py PORT [LATENCY_SECONDS]`` (prints ``ready`` when listening).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from scripted_http import serve


def sse(event: str, data: dict[str, object]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def answer(body: dict[str, object]) -> bytes:
    messages = body.get("messages")
    first = not any(
        isinstance(m, dict) and m.get("role") == "assistant" for m in messages or []
    ) if isinstance(messages, list) else True  # fmt: skip
    if first:
        block = {"type": "tool_use", "id": f"toolu_{time.time_ns()}", "name": "Write",
                 "input": {}}  # fmt: skip
        delta = {
            "type": "input_json_delta",
            "partial_json": json.dumps({"file_path": "result.txt", "content": "positive"}),
        }
        stop = "tool_use"
    else:
        block, delta, stop = (
            {"type": "text", "text": ""},
            {"type": "text_delta", "text": "done"},
            "end_turn",
        )
    message = {
        "id": f"msg_{time.time_ns()}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "m"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 50, "output_tokens": 1},
    }
    return b"".join([
        sse("message_start", {"type": "message_start", "message": message}),
        sse("content_block_start", {"type": "content_block_start", "index": 0,
                                    "content_block": block}),
        sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
                              "stop_sequence": None}, "usage": {"output_tokens": 10}}),
        sse("message_stop", {"type": "message_stop"}),
    ])  # fmt: skip


if __name__ == "__main__":
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    asyncio.run(serve(int(sys.argv[1]), latency, lambda _, body: (b"text/event-stream",
                                                                  answer(body))))  # fmt: skip
