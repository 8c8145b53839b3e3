"""What assay prints, redacted: a text stream wrapper, the command line's context manager
that puts it on ``sys.stdout`` and ``sys.stderr``, and the console a library call prints to.

Everything the command line prints (progress lines, warnings, errors, a traceback) goes
through these streams, so a known secret never reaches a terminal or a CI log, whoever
printed it. A library call (``assay.run``) never replaces ``sys``'s streams: what it prints
itself goes through :func:`console`, which its run's secrets join. Programs that rows run
write to pipes, not to these streams.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, cast

from assay.results.io import Writer
from assay.results.secrets import Redactor


class RedactingStream:
    """A text stream that redacts what is written with each of its redactors (none at first
    when none is given), then passes it to ``stream``; every other attribute (``isatty``,
    ``fileno``, ``encoding``, ``flush``) is ``stream``'s."""

    def __init__(self, stream: TextIO, *redactors: Redactor) -> None:
        self._stream = stream
        self.redactors = list(redactors)

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


def console() -> TextIO:
    """Where a library call prints (progress, a server's errors): ``sys.stderr`` when it
    already redacts (the command line's), else a redacting stream over it that a run joins
    its secrets to (:func:`joined_output`); ``sys.stderr`` itself is left as it is."""
    stream = sys.stderr
    return cast(TextIO, stream if isinstance(stream, RedactingStream) else RedactingStream(stream))


@contextlib.contextmanager
def joined_output(writer: Writer, streams: Iterable[TextIO] = ()) -> Iterator[None]:
    """Within the block, every redacting stream among ``sys.stdout``, ``sys.stderr`` and
    ``streams`` also redacts what ``writer`` redacts (the run's writer: what is printed is
    redacted as what is written, values added meanwhile included); no stream is replaced, so
    a library call leaves ``sys``'s streams alone.

    Whoever kept a reference to one of these streams (a progress display made before the
    run) redacts the values too.
    """
    joined: list[RedactingStream] = []
    redactor = writer.secrets if writer.secrets is not None else Redactor(shapes=False)
    for stream in (sys.stdout, sys.stderr, *streams):
        if isinstance(stream, RedactingStream) and all(s is not stream for s in joined):
            stream.redactors.append(redactor)
            joined.append(stream)
    try:
        yield
    finally:
        for stream in joined:
            stream.redactors.remove(redactor)


@contextlib.contextmanager
def redacted_output(writer: Writer) -> Iterator[None]:
    """Within the block, ``sys.stdout`` and ``sys.stderr`` redact what ``writer`` redacts
    (and values added meanwhile); both are restored after it. The command line's entry
    point uses it, once: everything it prints, a traceback included, is redacted.

    Inside an outer block the streams already redact: ``writer``'s secrets join them
    (:func:`joined_output`).
    """
    saved = sys.stdout, sys.stderr
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, RedactingStream):
            setattr(sys, name, RedactingStream(stream))
    try:
        with joined_output(writer):
            yield
    finally:
        sys.stdout, sys.stderr = saved
