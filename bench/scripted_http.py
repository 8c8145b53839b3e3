"""The HTTP/1.1 loop of the bench's scripted model servers: plain asyncio streams with
keep-alive (almost no CPU), every request answered after exactly ``latency`` seconds by
``answer(request_line, body)`` → (content type, bytes)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

Answer = Callable[[str, dict[str, Any]], tuple[bytes, bytes]]


async def handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float, answer: Answer
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            raw = await reader.readexactly(length) if length else b"{}"
            await asyncio.sleep(latency)
            kind, data = answer(lines[0], json.loads(raw))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + kind + b"\r\nContent-Length: "
                         + str(len(data)).encode() + b"\r\n\r\n" + data)  # fmt: skip
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def serve(port: int, latency: float, answer: Answer) -> None:
    """Listen on 127.0.0.1:``port``; print ``ready`` once listening."""
    server = await asyncio.start_server(lambda r, w: handle(r, w, latency, answer),
                                        "127.0.0.1", port)  # fmt: skip
    print("ready", flush=True)
    async with server:
        await server.serve_forever()
