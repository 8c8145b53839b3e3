"""A scripted model server with a fixed latency for the Gemini CLI benchmark: the same two-step
conversation on the Gemini API and on OpenAI's Chat Completions wire.

- ``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`` and ``…:generateContent`` (the
  Gemini API, what the Gemini CLI calls bare): a request whose ``contents`` hold no
  ``functionResponse`` and that offers ``run_shell_command`` gets a ``functionCall`` of it that
  writes ``result.txt``; any other the text ``done``; ``…:countTokens`` an estimate;
- ``POST /v1/chat/completions`` (what assay's ``openai/`` provider calls behind the model
  bridge, which translates the CLI's Gemini requests): bench/openai_server.py's answers.

Served by bench/scripted_http.py; every answer after exactly ``LATENCY`` seconds. Usage:
``python bench/gemini_server.py PORT [LATENCY_SECONDS]`` (prints ``ready`` when listening).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from scripted_http import serve

from openai_server import COMMAND, chat_answer

USAGE = {"promptTokenCount": 50, "candidatesTokenCount": 10, "totalTokenCount": 60}


def offers_shell(body: dict[str, Any]) -> bool:
    return any(d.get("name") == "run_shell_command" for t in body.get("tools") or []
               for d in t.get("functionDeclarations") or [])  # fmt: skip


def gemini_answer(request_line: str, body: dict[str, Any]) -> tuple[bytes, bytes]:
    """A Gemini answer (SSE chunks for ``streamGenerateContent``, else one JSON object)."""
    if ":countTokens" in request_line:
        return b"application/json", json.dumps({"totalTokens": 50}).encode()
    parts = [p for turn in body.get("contents") or [] for p in turn.get("parts") or []]
    answered = any("functionResponse" in part for part in parts)
    if answered or not offers_shell(body):
        part: dict[str, Any] = {"text": "done"}
    else:
        part = {"functionCall": {"name": "run_shell_command", "args": {"command": COMMAND["cmd"]}}}
    data = {"candidates": [{"content": {"role": "model", "parts": [part]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": USAGE, "modelVersion": "gemini-2.5-pro"}  # fmt: skip
    if ":streamGenerateContent" in request_line:
        return b"text/event-stream", b"data: " + json.dumps(data).encode() + b"\r\n\r\n"
    return b"application/json", json.dumps(data).encode()


def answer(request_line: str, body: dict[str, Any]) -> tuple[bytes, bytes]:
    if "/chat/completions" in request_line:
        return chat_answer(body)
    return gemini_answer(request_line, body)


if __name__ == "__main__":
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    asyncio.run(serve(int(sys.argv[1]), latency, answer))
