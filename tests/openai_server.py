"""A real OpenAI-compatible (and Anthropic Messages) HTTP server on 127.0.0.1 that tests script.

It answers ``/v1/chat/completions``, ``/v1/completions`` and ``/v1/messages`` with what a
``reply(body)``
function returns: a string (the model's text), or a :class:`Fault` (an HTTP status with
headers such as ``Retry-After``, a delay, a truncated body). It records every request body and
the number of requests in flight at once, so tests can check what assay sent and how many
calls it made concurrently.
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


@dataclass(frozen=True)
class Fault:
    """What the server does instead of (or before) answering normally.

    Attributes:
        status: the HTTP status to return (e.g. 429, 500, 400); ``None`` answers 200.
        headers: extra response headers (``{"Retry-After": "1"}``).
        delay: seconds to wait before answering.
        truncate: send only the first half of a valid body (and close the connection).
        text: the model text when answering 200.
        body: a raw body sent as it is instead (a reply of the wrong shape, a non-JSON error).
        drip: seconds between the body's bytes (a gateway that sends a byte at a time).
    """

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    truncate: bool = False
    text: str = "ok"
    body: str | None = None
    drip: float = 0.0


Reply = Callable[[dict[str, Any]], "str | Fault"]


@dataclass
class ScriptedServer:
    """The running server: its URL, the requests it received and the peak concurrency."""

    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    in_flight: int = 0
    peak_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _anthropic_payload(body: dict[str, Any], text: str) -> bytes:
    if body.get("tool_choice"):
        content: list[dict[str, Any]] = [
            {"type": "tool_use", "id": "t1", "name": body["tool_choice"]["name"],
             "input": json.loads(text)}
        ]  # fmt: skip
    else:
        content = [{"type": "text", "text": text}]
    data = {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
            "content": content, "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 3}}  # fmt: skip
    return json.dumps(data).encode()


def _payload(target: str, body: dict[str, Any], text: str) -> bytes:
    path = target.partition("?")[0]
    if path.endswith("/messages"):
        return _anthropic_payload(body, text)
    usage = {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
    if path.endswith("/chat/completions"):
        choice: dict[str, Any] = {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": text},
        }
        kind = "chat.completion"
    else:
        choice = {"index": 0, "finish_reason": "stop", "text": text, "logprobs": None}
        kind = "text_completion"
    data = {"id": "x", "object": kind, "created": 0, "model": body.get("model", "m"),
            "choices": [choice], "usage": usage}  # fmt: skip
    return json.dumps(data).encode()


def _handler(server: ScriptedServer, reply: Reply) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with server.lock:
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                server.paths.append(self.path)
                server.times.append(time.monotonic())
                server.in_flight += 1
                server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
            try:
                self._answer(body, reply(body))
            finally:
                with server.lock:
                    server.in_flight -= 1

        def _answer(self, body: dict[str, Any], outcome: str | Fault) -> None:
            fault = outcome if isinstance(outcome, Fault) else Fault(text=outcome)
            if fault.delay:
                time.sleep(fault.delay)
            if fault.body is not None:
                data = fault.body.encode()
                self.send_response(fault.status or 200)
            elif fault.status is not None and fault.status != 200:
                data = json.dumps({"error": {"message": f"scripted {fault.status}"}}).encode()
                self.send_response(fault.status)
            else:
                data = _payload(self.path, body, fault.text)
                self.send_response(200)
            for name, value in fault.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if fault.truncate:
                self.send_header("Connection", "close")
            self.end_headers()
            if fault.drip:
                for index in range(len(data)):
                    self.wfile.write(data[index : index + 1])
                    self.wfile.flush()
                    time.sleep(fault.drip)
                return
            self.wfile.write(data[: len(data) // 2] if fault.truncate else data)
            if fault.truncate:
                self.close_connection = True

    return Handler


@contextmanager
def scripted_server(reply: Reply) -> Iterator[ScriptedServer]:
    """Start the server on a free port; stop it on exit."""
    state = ScriptedServer(base_url="")
    httpd = QuietHTTPServer(("127.0.0.1", 0), _handler(state, reply))
    httpd.daemon_threads = True
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
