"""A real OpenAI-compatible HTTP server on 127.0.0.1 that tests script.

It answers ``/v1/chat/completions`` and ``/v1/completions`` with replies from a
``reply(body) -> str`` function and records every request body, so tests can check what
assay sent (model, messages, response_format, grammar, ...).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], str]


@dataclass
class ScriptedServer:
    """The running server: its URL and the request bodies it received."""

    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


def _handler(server: ScriptedServer, reply: Reply) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            server.requests.append(body)
            server.headers.append({k.lower(): v for k, v in self.headers.items()})
            text = reply(body)
            usage = {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
            if self.path.endswith("/chat/completions"):
                choice: dict[str, Any] = {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
                obj = "chat.completion"
            else:
                choice = {"index": 0, "finish_reason": "stop", "text": text, "logprobs": None}
                obj = "text_completion"
            payload = {
                "id": "x",
                "object": obj,
                "created": 0,
                "model": body.get("model", "m"),
                "choices": [choice],
                "usage": usage,
            }
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def scripted_server(reply: Reply) -> Iterator[ScriptedServer]:
    """Start the server on a free port; stop it on exit."""
    state = ScriptedServer(base_url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state, reply))
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
