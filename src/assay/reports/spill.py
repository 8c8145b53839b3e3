"""Lines sorted by a key, in memory that does not grow with them: an external merge sort.

The reports list every row in report order (``run.json``'s ``task_results``, JUnit's test
cases), while rows arrive in any order (as they finish, or as the run folder is read).
:class:`SortedLines` keeps up to :data:`CHUNK` lines in memory; beyond that it writes each
chunk, sorted, to a temporary file, and :meth:`SortedLines.sorted` merges the chunks
(``heapq.merge``), reading one line of each at a time. The merge's fan-in is bounded, as an
external sort's is: when :data:`FAN_IN` files of one level are written they are merged into
one file of the next level, so about ``FAN_IN × log_FAN_IN(lines / CHUNK)`` files are open
at most (a few hundred at a billion lines), far below a process's limit of open files.
Keys are JSON lists of numbers and strings, compared as Python compares lists.
"""

from __future__ import annotations

import heapq
import json
import os
import tempfile
from collections.abc import Iterator
from typing import IO, Any

CHUNK = 4_096
FAN_IN = 64
Key = list[Any]


class SortedLines:
    """Add ``(key, line)`` pairs in any order; read the lines back sorted by key (equal keys
    keep their order of arrival). Use as a context manager (the chunk files are deleted)."""

    def __init__(self, chunk: int | None = None, *, fan_in: int | None = None) -> None:
        self.chunk, self.fan_in = chunk or CHUNK, max(2, fan_in or FAN_IN)
        self._buffer: list[tuple[Key, int, str]] = []
        self._levels: list[list[IO[str]]] = []  # level i: files of CHUNK × FAN_IN**i lines
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
        handle: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8", prefix="assay-sort-")  # noqa: SIM115
        for key, order, line in self._buffer:
            handle.write(json.dumps([key, order], separators=(",", ":")) + "\t" + line + "\n")
        self._buffer = []
        level = 0
        while True:  # a full level is merged into one file of the next
            if level == len(self._levels):
                self._levels.append([])
            self._levels[level].append(handle)
            if len(self._levels[level]) < self.fan_in:
                return
            handle, self._levels[level] = _merged(self._levels[level]), []
            level += 1

    def sorted(self) -> Iterator[str]:
        """Every line, sorted by key."""
        self._buffer.sort(key=lambda entry: (entry[0], entry[1]))
        streams = [_read(handle) for files in self._levels for handle in files]
        streams.append(((key, order), line) for key, order, line in self._buffer)
        for _, line in heapq.merge(*streams, key=lambda entry: entry[0]):
            yield line

    def close(self) -> None:
        """Delete the chunk files."""
        for handle in (handle for files in self._levels for handle in files):
            handle.close()
        self._levels = []
        self._buffer = []


def _merged(files: list[IO[str]]) -> IO[str]:
    """The chunk files merged into one (in key, then arrival, order), and closed."""
    handle = tempfile.TemporaryFile("w+", encoding="utf-8", prefix="assay-sort-")  # noqa: SIM115
    for entry, line in heapq.merge(*(_read(f) for f in files), key=lambda entry: entry[0]):
        handle.write(json.dumps(list(entry), separators=(",", ":")) + "\t" + line + "\n")
    for done in files:
        done.close()
    return handle


def _read(handle: IO[str]) -> Iterator[tuple[tuple[Key, int], str]]:
    handle.seek(0, os.SEEK_SET)
    for text in handle:
        head, _, line = text.rstrip("\n").partition("\t")
        key, order = json.loads(head)
        yield (key, order), line
