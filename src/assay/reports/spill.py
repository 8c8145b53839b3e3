"""Lines sorted by a key, in memory that does not grow with them: an external merge sort.

The reports list every row in report order (``run.json``'s ``task_results``, JUnit's test
cases), while rows arrive in any order (as they finish, or as the run folder is read).
:class:`SortedLines` keeps up to :data:`CHUNK` lines in memory; beyond that it writes each
chunk, sorted, to a temporary file, and :meth:`SortedLines.sorted` merges the chunks
(``heapq.merge``), reading one line of each at a time. Keys are JSON lists of numbers and
strings, compared as Python compares lists.
"""

from __future__ import annotations

import heapq
import json
import os
import tempfile
from collections.abc import Iterator
from typing import IO, Any

CHUNK = 4_096
Key = list[Any]


class SortedLines:
    """Add ``(key, line)`` pairs in any order; read the lines back sorted by key (equal keys
    keep their order of arrival). Use as a context manager (the chunk files are deleted)."""

    def __init__(self, chunk: int | None = None) -> None:
        self.chunk = chunk or CHUNK
        self._buffer: list[tuple[Key, int, str]] = []
        self._files: list[IO[str]] = []
        self._count = 0

    def __enter__(self) -> SortedLines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self._count

    def add(self, key: Key, line: str) -> None:
        """Add one line (without a newline) under ``key``."""
        self._buffer.append((key, self._count, line))
        self._count += 1
        if len(self._buffer) >= self.chunk:
            self._spill()

    def _spill(self) -> None:
        self._buffer.sort(key=lambda entry: (entry[0], entry[1]))
        handle = tempfile.TemporaryFile("w+", encoding="utf-8", prefix="assay-sort-")  # noqa: SIM115
        for key, order, line in self._buffer:
            handle.write(json.dumps([key, order], separators=(",", ":")) + "\t" + line + "\n")
        handle.seek(0)
        self._files.append(handle)
        self._buffer = []

    def sorted(self) -> Iterator[str]:
        """Every line, sorted by key."""
        self._buffer.sort(key=lambda entry: (entry[0], entry[1]))
        streams = [_read(handle) for handle in self._files]
        streams.append(((key, order), line) for key, order, line in self._buffer)
        for _, line in heapq.merge(*streams, key=lambda entry: entry[0]):
            yield line

    def close(self) -> None:
        """Delete the chunk files."""
        for handle in self._files:
            handle.close()
        self._files = []
        self._buffer = []


def _read(handle: IO[str]) -> Iterator[tuple[tuple[Key, int], str]]:
    handle.seek(0, os.SEEK_SET)
    for text in handle:
        head, _, line = text.rstrip("\n").partition("\t")
        key, order = json.loads(head)
        yield (key, order), line
