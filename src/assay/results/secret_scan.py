"""The secret scan of a run folder (``assay report --check-secrets RUN_DIR``, and the same
check at the end of every command that writes a run's reports).

It looks for two things and reports each by file and line, never by value:

- every value the run's :class:`~assay.results.secrets.Redactor` knows (in any of its escaped
  forms), in every file of the folder, kept sandboxes included;
- strings shaped like well-known tokens (:mod:`assay.results.token_shapes`, the rule the
  writer redacts by: provider keys, PEM private keys, a URL's userinfo or credential query
  value, and the token shapes of ``detect-secrets``' plugins), in every file except
  inside kept sandboxes, whose template files may hold test fixtures of that shape. The
  writer redacts them as it writes, so a finding here is a file assay did not write (or
  one written before this rule). A match must look random (letters and digits mixed, not
  a run of one character, no ``EXAMPLE``), so prose such as ``risk-free-...`` or AWS's
  documented example key is not reported.

Small files are read into batches searched at once, large ones mapped; each key shape is
searched only where one of the literal prefixes occurs; a 2,000-row run folder (8,000 files)
is scanned in about a tenth of a second.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from assay.results.secrets import Buffer, Redactor
from assay.results.sparse import data_blocks
from assay.results.token_shapes import KEY_SHAPES, find_tokens, library_shapes, looks_random

__all__ = ["KEY_SHAPES", "SecretFinding", "library_shapes", "looks_random", "scan_buffer",
           "scan_file", "scan_run"]  # fmt: skip

REPLICATE_DIR = re.compile(r"^\d{2,}$")
SANDBOX_DIR = "sandbox"


BATCH_BYTES = 1 << 20
"""Files up to this size are scanned in batches of about this size; larger ones on their
own, mapped rather than read. The scan's memory is a few batches whatever the run's size:
on a 20,000-row run folder batches of 1 MB took the CPU time of batches of 16 MB (2.55 s
against 2.59 s) at a peak of 5.6 MB instead of 37.8 MB."""


@dataclass(frozen=True, order=True)
class SecretFinding:
    """A secret found: the file (POSIX, relative to the scanned folder, or as given for a
    file outside it), the 1-based line, and what was found (never the value)."""

    file: str
    line: int
    kind: str

    def render(self) -> str:
        """``default/t/r1/00/task.json:12: the value of OPENAI_API_KEY`` (without a line for
        a file or folder the scan cannot read, ``line`` 0)."""
        return f"{self.file}:{self.line}: {self.kind}" if self.line else f"{self.file}: {self.kind}"


def scan_buffer(data: Buffer, redactor: Redactor, *, shapes: bool = True) -> list[tuple[int, str]]:
    """``(line, kind)`` of every secret in ``data``; see the module docstring."""
    return sorted((_line(data, 0, offset), kind) for offset, kind in _hits(data, redactor, shapes))


def _hits(data: Buffer, redactor: Redactor, shapes: bool) -> list[tuple[int, str]]:
    """``(offset, kind)`` of every secret in ``data``."""
    spans = redactor.find_bytes(data)
    hits = [(start, f"the value of {name}") for start, _, name in spans]
    if not shapes:
        return hits
    for token in find_tokens(data):
        if not any(start <= token.start < end for start, end, _ in spans):
            hits.append((token.start, token.kind))  # not a known value, reported by name
    return hits


def _line(data: Buffer, start: int, offset: int) -> int:
    return data[start:offset].count(b"\n") + 1


UNREADABLE = "a file the scan cannot read ({reason}): make it readable, or remove it"
"""A finding (line 0) for a file or folder the scan cannot read: it may hold a secret."""


def unreadable(reason: OSError) -> str:
    """The finding's text for a file or folder that could not be read."""
    return UNREADABLE.format(reason=reason.strerror or type(reason).__name__)


SCAN_BLOCK = 1 << 20
"""Bytes a large file is read in (its memory; a file is never read whole)."""
SCAN_OVERLAP = 1 << 16
"""Bytes each block shares with the next: a secret (in any escaped form) or key shorter than
this is found whole in one block, wherever the blocks are cut."""


def scan_file(
    path: Path, redactor: Redactor, *, shapes: bool = True, block: int = SCAN_BLOCK
) -> list[tuple[int, str]]:
    """``(line, kind)`` of every secret in the file at ``path`` (empty when it is empty),
    read in blocks of ``block`` bytes that overlap by :data:`SCAN_OVERLAP`, so a file of any
    size costs the same memory, its holes left out (:mod:`assay.results.sparse`); a file that
    cannot be read is one finding at line 0 (:data:`UNREADABLE`): it may hold one."""
    try:
        with path.open("rb") as handle:
            return _scan_blocks(handle, redactor, shapes=shapes, block=block)
    except OSError as exc:
        return [(0, unreadable(exc))]


def _scan_blocks(
    handle: BinaryIO, redactor: Redactor, *, shapes: bool, block: int
) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    kept, lines = b"", 0  # the overlap carried over, and the newlines before it
    blocks = data_blocks(handle, block)  # a sparse file's holes are not read
    while True:
        read = next(blocks, b"")
        data = kept + read
        final = not read  # a hit that starts before `settled` is whole in `data`, and is
        settled = len(data) if final else max(0, len(data) - SCAN_OVERLAP)  # not seen again
        found += [
            (lines + data.count(b"\n", 0, offset) + 1, kind)
            for offset, kind in _hits(data, redactor, shapes)
            if offset < settled
        ]
        if final:
            return sorted(found)
        lines += data.count(b"\n", 0, settled)
        kept = data[settled:]


def _files(folder: str) -> Iterator[tuple[str, int | OSError, bool]]:
    """Every regular file under ``folder`` (symlinks not followed): its path, its size (or
    the error that kept a folder from being listed) and whether key shapes are searched in
    it (not inside a kept sandbox, ``<NN>/sandbox/``). The walk holds one open listing per
    level, never a whole folder's entries, so a suite of a million row folders costs no
    more memory than one of ten."""
    try:
        top = os.scandir(folder)
    except OSError:
        return
    stack: list[tuple[Iterator[os.DirEntry[str]], bool, str]] = [(top, True, folder)]
    try:
        while stack:
            entries, shapes, directory = stack[-1]
            entry = next(entries, None)
            if entry is None:
                _close(stack.pop()[0])
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    kept = entry.name == SANDBOX_DIR and REPLICATE_DIR.match(
                        os.path.basename(directory)) is not None  # fmt: skip
                    stack.append((os.scandir(entry.path), shapes and not kept, entry.path))
                elif entry.is_file(follow_symlinks=False):
                    yield entry.path, entry.stat(follow_symlinks=False).st_size, shapes
            except OSError as exc:
                if entry.is_dir(follow_symlinks=False):  # a folder that cannot be listed
                    yield entry.path, exc, shapes
    finally:
        for entries, _, _ in stack:
            _close(entries)


def _close(entries: Iterator[os.DirEntry[str]]) -> None:
    close = getattr(entries, "close", None)
    if close is not None:
        close()


@dataclass
class _Batch:
    """Small files read into one buffer (joined by NUL bytes, which no environment value
    holds), so a scan costs a few searches over all of them instead of a few per file."""

    shapes: bool
    parts: list[bytes] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    size: int = 0

    def scan(self, redactor: Redactor) -> list[SecretFinding]:
        data = b"\0".join(self.parts)
        starts, position = [], 0
        for part in self.parts:
            starts.append(position)
            position += len(part) + 1
        found = []
        for offset, kind in _hits(data, redactor, self.shapes):
            index = bisect.bisect_right(starts, offset) - 1
            found.append(SecretFinding(self.names[index], _line(data, starts[index], offset), kind))
        self.parts, self.names, self.size = [], [], 0
        return found


def scan_run(
    run_dir: Path,
    redactor: Redactor,
    *,
    extra_files: Iterable[Path] = (),
    batch_bytes: int = BATCH_BYTES,
) -> list[SecretFinding]:
    """Every secret in the run folder ``run_dir`` and in ``extra_files`` (a JUnit XML file
    written elsewhere), sorted by file and line; ``batch_bytes``: see :data:`BATCH_BYTES`."""
    findings: list[SecretFinding] = []
    root = os.path.join(str(run_dir), "")
    batches = {True: _Batch(True), False: _Batch(False)}
    for path, size, shapes in _files(root):
        shown = path[len(root) :].replace(os.sep, "/")
        if isinstance(size, OSError):
            findings.append(SecretFinding(shown, 0, unreadable(size).replace("file", "folder", 1)))
            continue
        if size > batch_bytes:
            found = scan_file(Path(path), redactor, shapes=shapes)
            findings += [SecretFinding(shown, line, kind) for line, kind in found]
            continue
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            findings.append(SecretFinding(shown, 0, unreadable(exc)))
            continue
        batch = batches[shapes]
        batch.parts.append(data)
        batch.names.append(shown)
        batch.size += len(data)
        if batch.size > batch_bytes:
            findings += batch.scan(redactor)
    for batch in batches.values():
        findings += batch.scan(redactor)
    for extra in extra_files:
        findings += [SecretFinding(str(extra), line, kind)
                     for line, kind in scan_file(extra, redactor)]  # fmt: skip
    return sorted(set(findings))
