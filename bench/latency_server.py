"""An OpenAI-compatible server with a fixed latency, for model-bound harness benchmarks.

Plain asyncio streams and HTTP/1.1 keep-alive, so that it costs almost no CPU: every request
to ``/v1/chat/completions`` (or ``/v1/completions``) is answered "positive" after exactly
``LATENCY`` seconds. Usage: python bench/latency_server.py PORT [LATENCY_SECONDS]
"""

from __future__ import annotations

import asyncio
import json
import sys

CHAT = json.dumps({
    "id": "x", "object": "chat.completion", "created": 0, "model": "fixed",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "positive"}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}).encode()  # fmt: skip
COMPLETION = json.dumps({
    "id": "x", "object": "text_completion", "created": 0, "model": "fixed",
    "choices": [{"index": 0, "finish_reason": "stop", "text": " positive", "logprobs": None}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}).encode()  # fmt: skip


async def handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1] if lines and " " in lines[0] else "/"
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            if length:
                await reader.readexactly(length)
            await asyncio.sleep(latency)
            body = COMPLETION if path.endswith("/completions") and "chat" not in path else CHAT
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            writer.write(head + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int, latency: float) -> None:
    server = await asyncio.start_server(lambda r, w: handle(r, w, latency), "127.0.0.1", port,
                                        backlog=1024)  # fmt: skip
    print(f"ready {port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 0.1))
