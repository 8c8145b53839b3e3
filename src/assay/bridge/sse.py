"""Server-sent events: encoding what the bridge sends, and reading what it passes through.

Format from the WHATWG HTML standard, "Server-sent events": an event is ``event: NAME`` and
``data: TEXT`` lines ended by a blank line; a ``data:`` value spanning several lines is
several ``data:`` lines joined by newlines.
"""

from __future__ import annotations

import json
from typing import Any


def encode(data: Any, *, event: str | None = None) -> bytes:
    """One event: ``event:`` (when named) and ``data:`` with ``data`` as compact JSON."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


DONE = b"data: [DONE]\n\n"
"""The end of an OpenAI Chat Completions stream."""


class EventReader:
    """Splits a byte stream into events as the bytes arrive, for a reader on the side.

    :meth:`feed` takes any chunk (an event may be cut anywhere) and returns the events it
    completed, each as ``(name, data)`` with ``data`` the joined ``data:`` lines.
    """

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """Add ``chunk``; return the events completed by it."""
        self._buffer += chunk.replace(b"\r\n", b"\n")
        events = []
        while b"\n\n" in self._buffer:
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            name, data = "", []
            for line in block.decode("utf-8", "replace").split("\n"):
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
            if data or name:
                events.append((name, "\n".join(data)))
        return events
