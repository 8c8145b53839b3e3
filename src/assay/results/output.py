"""What assay prints, redacted: a text stream wrapper and a context manager that puts it on
``sys.stdout`` and ``sys.stderr``.

Everything the command line prints (progress lines, warnings, errors, a traceback) goes
through these streams, so a known secret never reaches a terminal or a CI log, whoever
printed it. Programs that rows run write to pipes, not to these streams.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from assay.results.secrets import Redactor


class RedactingStream:
    """A text stream that redacts what is written with each of its redactors, then passes it
    to ``stream``; every other attribute (``isatty``, ``fileno``, ``encoding``, ``flush``) is
    ``stream``'s."""

    def __init__(self, stream: TextIO, redactor: Redactor) -> None:
        self._stream = stream
        self.redactors = [redactor]

    def write(self, text: str) -> int:
        """Write ``text`` redacted; returns ``len(text)`` as a stream does."""
        shown = text
        for redactor in self.redactors:
            shown = redactor.redact(shown)
        self._stream.write(shown)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        """Write each line redacted."""
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def redacted_output(redactor: Redactor) -> Iterator[None]:
    """Within the block, ``sys.stdout`` and ``sys.stderr`` redact ``redactor``'s values (and
    values added to it meanwhile); both are restored after it.

    Inside an outer block the streams already redact: ``redactor`` joins them, so whoever
    kept a reference to a stream (a progress display made before the run) redacts it too.
    """
    joined: list[RedactingStream] = []
    saved = sys.stdout, sys.stderr
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, RedactingStream):
            stream.redactors.append(redactor)
            joined.append(stream)
        else:
            setattr(sys, name, RedactingStream(stream, redactor))
    try:
        yield
    finally:
        for stream in joined:
            stream.redactors.remove(redactor)
        sys.stdout, sys.stderr = saved
