"""Every page, JSON answer and file view the viewer sends passes the redaction of the
environment it runs in (its secret variables' values and the key shapes of
:mod:`assay.results.token_shapes`), as ``assay report``'s exports and ``report.html`` do: a run
folder written by an older assay, or a file copied into it, may hold a secret in clear.

An answer sent in one piece (a page, a JSON answer, a file view) is redacted whole; a streamed
one (the ``rows.csv`` / ``rows.jsonl`` exports, redacted row by row as they are made) passes
as it is.
"""

from __future__ import annotations

from assay.results.io import Writer
from assay.view.guard import ASGIApp, Message, Receive, Scope, Send

OWN_ASSETS = "/assets/"
"""The viewer's own style sheet and scripts: passed as they are (no run's text is in them)."""

REDACTED_TYPES = (b"text/", b"application/json")
"""The content types redacted (a download of another kind passes as it is)."""


class RedactedAnswers:
    """ASGI middleware: the module docstring's redaction, with ``writer``'s secrets."""

    def __init__(self, app: ASGIApp, *, writer: Writer) -> None:
        self.app = app
        self.writer = writer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer ``scope`` through the app, redacting what it sends in one piece."""
        if scope["type"] != "http" or scope.get("path", "").startswith(OWN_ASSETS):
            await self.app(scope, receive, send)  # the viewer's own scripts hold no secret
            return
        held: list[Message] = []

        async def redacted(message: Message) -> None:
            if message["type"] == "http.response.start" and _redactable(message):
                held.append(message)  # sent with the body, whose length may change
                return
            if held and message["type"] == "http.response.body":
                start = held.pop()
                if not message.get("more_body"):
                    text = self.writer.redact(bytes(message.get("body", b"")).decode(
                        "utf-8", errors="replace"))  # fmt: skip
                    message = {**message, "body": text.encode("utf-8")}
                    start = {**start, "headers": _with_length(start, len(message["body"]))}
                await send(start)
            await send(message)

        await self.app(scope, receive, redacted)


def _redactable(start: Message) -> bool:
    kind = dict(start.get("headers") or []).get(b"content-type", b"")
    return bytes(kind).startswith(REDACTED_TYPES)


def _with_length(start: Message, length: int) -> list[tuple[bytes, bytes]]:
    headers = [(k, v) for k, v in start.get("headers") or [] if k.lower() != b"content-length"]
    return [*headers, (b"content-length", str(length).encode())]
