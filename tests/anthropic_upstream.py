"""A scripted Anthropic Messages server on 127.0.0.1: the "real API" behind the bridge.

``answer(body)`` returns the content blocks of the reply (``text``, ``thinking``,
``tool_use``) or an :class:`Upstream` fault (a status such as 429, with headers). Replies
are streamed as Anthropic streams them (SSE with ``event:`` lines, sent in chunks with a
pause between the first event and the rest, so a client that waits for the whole body is
noticed) or as plain JSON when ``stream`` is false. Every request's headers and body are
recorded, and so are the exact bytes sent back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.helpers import QuietHTTPServer

USAGE = {"input_tokens": 40, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100}
OUTPUT_TOKENS = 12


@dataclass(frozen=True)
class Fault:
    """Answer with HTTP ``status`` (an Anthropic error body) instead of a message."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)


Answer = Callable[[dict[str, Any]], "list[dict[str, Any]] | Fault"]


@dataclass
class Upstream:
    """The running server: URL (without ``/v1``), what it received and what it sent."""

    url: str
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    sent: list[bytes] = field(default_factory=list)
    delay: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


def sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream_body(model: str, blocks: list[dict[str, Any]]) -> list[bytes]:
    """The SSE events of a reply, as Anthropic sends them."""
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    start = {"id": f"msg_{time.time_ns()}", "type": "message", "role": "assistant",
             "model": model, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**USAGE, "output_tokens": 1}}  # fmt: skip
    events = [sse("message_start", {"type": "message_start", "message": start}),
              sse("ping", {"type": "ping"})]  # fmt: skip
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            opening, delta = (
                {**block, "input": {}},
                {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
            )
        elif block["type"] == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            delta = {"type": "thinking_delta", "thinking": block["thinking"]}
        else:
            opening, delta = (
                {"type": "text", "text": ""},
                {"type": "text_delta", "text": block["text"]},
            )
        events += [
            sse("content_block_start", {"type": "content_block_start", "index": index,
                                        "content_block": opening}),
            sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                        "delta": delta}),
        ]  # fmt: skip
        if block["type"] == "thinking":
            events.append(sse("content_block_delta", {"type": "content_block_delta",
                                                      "index": index, "delta": {
                "type": "signature_delta", "signature": "sig-" + str(index)}}))  # fmt: skip
        events.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    events += [
        sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
                              "stop_sequence": None}, "usage": {"output_tokens": OUTPUT_TOKENS}}),
        sse("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return events


def _handler(state: Upstream, answer: Answer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with state.lock:
                state.bodies.append(body)
                state.headers.append({k.lower(): v for k, v in self.headers.items()})
            if state.delay:
                time.sleep(state.delay)
            outcome = answer(body)
            if isinstance(outcome, Fault):
                self._fault(outcome)
            elif body.get("stream"):
                self._stream(stream_body(body.get("model", "m"), outcome))
            else:
                self._json(body, outcome)

        def _fault(self, fault: Fault) -> None:
            data = json.dumps({"type": "error", "error": {
                "type": "rate_limit_error" if fault.status == 429 else "api_error",
                "message": f"scripted {fault.status}"}}).encode()  # fmt: skip
            self.send_response(fault.status)
            for name, value in fault.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, events: list[bytes]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("request-id", "req_scripted")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for number, event in enumerate(events):
                self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                self.wfile.flush()
                if number == 0:
                    time.sleep(0.02)  # the first event alone: the client must not wait for all
            self.wfile.write(b"0\r\n\r\n")
            with state.lock:
                state.sent.append(b"".join(events))

        def _json(self, body: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
            stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
            data = json.dumps(
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model"),
                    "content": blocks,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {**USAGE, "output_tokens": OUTPUT_TOKENS},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            with state.lock:
                state.sent.append(data)

    return Handler


@contextmanager
def anthropic_upstream(answer: Answer, *, delay: float = 0.0) -> Iterator[Upstream]:
    """Serve ``answer`` on a free port (``delay`` seconds before each reply); stop on exit."""
    state = Upstream(url="", delay=delay)
    httpd = QuietHTTPServer(("127.0.0.1", 0), _handler(state, answer))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def turn_of(body: dict[str, Any]) -> int:
    """How many tool rounds the conversation has had (0 for the first request)."""
    turns = 0
    for message in reversed(body.get("messages", [])):
        content = message.get("content")
        results = isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )
        if message.get("role") == "assistant":
            turns += 1
        elif message.get("role") == "user" and not results:
            break
    return turns
