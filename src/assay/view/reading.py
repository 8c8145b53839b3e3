"""Reading a run folder's files for the viewer: never writing, never raising on what a run
left behind. A file that is missing, half-written, corrupt or from an older schema yields
what could be read and a :class:`Problem` saying what could not.

``run.json`` of a large run is mostly ``task_results`` (about 300 bytes per row); the viewer
reads its rows from the ``task.json`` files instead, so :func:`read_run_summary` drops that
array before parsing (35 MB and 100,000 dicts for a 100,000-row run).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from pydantic import BaseModel, ValidationError

ModelT = TypeVar("ModelT", bound=BaseModel)
BIG_FILE = 1_000_000  # bytes: above this, run.json's task_results are cut before parsing
CHUNK = 1 << 20
_ROWS_START = b'\n  "task_results": ['
_ROWS_END = b"\n  ]"


@dataclass(frozen=True)
class Problem:
    """Something the viewer could not read: the file (run-relative) and why."""

    file: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def read_json_text(path: Path, name: str, text: str | None = None) -> tuple[Any, Problem | None]:
    """Parse ``path`` (or ``text``, its content) as JSON: ``(data, None)`` or ``(None,
    problem)`` naming ``name`` and what is wrong (missing, unreadable, not JSON)."""
    try:
        if text is None:
            text = read_bytes(path).decode("utf-8")  # a named pipe is refused, not waited on
        return json.loads(text), None
    except FileNotFoundError:
        return None, Problem(name, "missing")
    except OSError as exc:
        return None, Problem(name, f"could not be read ({exc.strerror or exc})")
    except UnicodeDecodeError as exc:
        return None, Problem(name, f"is not UTF-8 text ({exc.reason} at byte {exc.start})")
    except json.JSONDecodeError as exc:
        hint = " (still being written, or cut short)" if not text or not text.strip() else ""
        return None, Problem(name, f"is not valid JSON ({exc.msg}: line {exc.lineno} "
                                   f"column {exc.colno}){hint}")  # fmt: skip


def read_model(
    path: Path, name: str, model: type[ModelT], *, current: str | None = None
) -> tuple[ModelT | None, Any, list[Problem]]:
    """Read ``path`` as ``model``: ``(validated or None, raw JSON or None, problems)``.

    A file whose ``schema_version`` differs from ``current`` is reported as from another
    version of assay; a file that does not validate keeps its raw JSON for what can be shown.
    """
    data, problem = read_json_text(path, name)
    if problem is not None:
        return None, None, [problem]
    return validate(data, name, model, current=current)


def validate(
    data: Any, name: str, model: type[ModelT], *, current: str | None = None
) -> tuple[ModelT | None, Any, list[Problem]]:
    """:func:`read_model` for JSON already parsed."""
    problems: list[Problem] = []
    version = data.get("schema_version") if isinstance(data, dict) else None
    if current is not None and isinstance(data, dict) and str(version) != current:
        problems.append(Problem(name, f"has schema_version {version!r}, this assay reads "
                                      f"{current!r}: shown as far as it can be read"))  # fmt: skip
    try:
        return model.model_validate(data), data, problems
    except ValidationError as exc:
        problems.append(Problem(name, f"does not match its schema: {_validation(exc)}"))
        return None, data, problems


def _validation(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def read_run_summary(path: Path) -> tuple[Any, Problem | None]:
    """``run.json`` as JSON with ``task_results`` left empty when the file is big and
    written by assay's indented writer (otherwise parsed whole). The file is read in chunks
    and the rows' part is skipped as it is read, so it never sits in memory."""
    try:
        with open_regular(path) as handle:
            if os.fstat(handle.fileno()).st_size <= BIG_FILE:
                return read_json_text(path, "run.json", handle.read().decode("utf-8"))
            kept = _without_rows(handle)
        if kept is None:
            return read_json_text(path, "run.json")
        text = kept.decode("utf-8")
    except FileNotFoundError:
        return None, Problem("run.json", "missing")
    except (OSError, UnicodeDecodeError) as exc:
        return None, Problem("run.json", f"could not be read ({_first_line(exc)})")
    return read_json_text(path, "run.json", text)


def _without_rows(handle: BinaryIO) -> bytes | None:
    """The file's bytes with the ``task_results`` array emptied, or ``None`` when its markers
    are not found (not assay's indented writer)."""
    head = bytearray()
    while (start := head.find(_ROWS_START)) < 0:
        chunk = handle.read(CHUNK)
        if not chunk:
            return None
        head += chunk
    window = bytes(head[start + len(_ROWS_START) :])
    del head[start + len(_ROWS_START) :]
    while (end := window.find(_ROWS_END)) < 0:
        chunk = handle.read(CHUNK)
        if not chunk:
            return None
        window = window[-len(_ROWS_END) :] + chunk
    return bytes(head) + window[end:] + handle.read()


def read_text_tail(path: Path, *, limit: int = 200_000) -> tuple[str | None, bool]:
    """A text file's content (its last ``limit`` characters when longer), and whether it was
    cut; ``(None, False)`` when it does not exist or cannot be read."""
    try:
        with open_regular(path) as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            data = handle.read()
    except OSError:
        return None, False
    return data.decode("utf-8", "replace"), size > limit


def read_text_head(path: Path | str, *, limit: int = 200_000) -> tuple[str | None, bool]:
    """A text file's first ``limit`` bytes as text, and whether it was cut (at the start of
    a UTF-8 character: a character cut in two is left out, not shown as U+FFFD)."""
    try:
        data = read_bytes(path, limit=limit + 1)
    except OSError:
        return None, False
    if len(data) <= limit:
        return data.decode("utf-8", "replace"), False
    end = limit
    while end > max(0, limit - 3) and data[end] & 0xC0 == 0x80:  # a continuation byte
        end -= 1
    return data[:end].decode("utf-8", "replace"), True


def open_regular(path: Path | str) -> BinaryIO:
    """``path`` opened for reading bytes, which must be a regular file: a named pipe is
    opened without waiting for a writer, and refused, and a symbolic link is not followed
    (a run folder is anyone's to damage; a link could show a file from outside it).

    Raises:
        OSError: it cannot be opened, or it is a folder or not a regular file.
    """
    fd, _ = _open_regular(path)
    return os.fdopen(fd, "rb")


def _open_regular(path: Path | str) -> tuple[int, os.stat_result]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the file itself is a link: never followed out
            raise OSError(errno.ELOOP, "a symbolic link, not followed", str(path)) from None
        raise
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_bytes(path: Path | str, *, limit: int | None = None) -> bytes:
    """A file's bytes (its first ``limit`` when given), as far as its size when opened.

    Plain ``os`` calls, no file object: the viewer's index reads two small files per row
    and a file object's set-up was a fifth of a row's cost.

    Raises:
        OSError: the file cannot be opened or read, or it is not a regular file (a named
            pipe is opened without waiting for a writer, and refused).
    """
    fd, info = _open_regular(path)
    try:
        # at most the size it had when opened: a file still growing is read as it was then
        # (the index reads it again when its size or time changes), never without an end
        want = info.st_size if limit is None else min(limit, info.st_size)
        parts: list[bytes] = []
        while want > 0:
            part = os.read(fd, want)
            if not part:  # it shrank while read
                break
            parts.append(part)
            want -= len(part)
        return b"".join(parts)
    finally:
        os.close(fd)
