"""Writing result files: atomically, as UTF-8, never with NaN in JSON, never with a secret.

A file is written to a temporary name in the same directory and renamed over the target, so
a reader (or a resumed run) sees either the old file or the complete new one, never half.
:func:`write_text` writes in place, for files that a later atomic file vouches for.

Every writer takes the run's :class:`~assay.results.secrets.Redactor` (``redactor``, a
required keyword: ``None`` only where nothing written can hold a secret): the text is
redacted on its way to the disk, here, rather than by each producer. JSON is
redacted as data (every string, keys included, then serialized again), so a redacted file
is always valid JSON; that slower path is taken only when the text holds a known value.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any, TypeVar

import pydantic_core
from pydantic import BaseModel

from assay.results.secrets import Redactor

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def write_text_atomic(path: Path, text: str, *, redactor: Redactor | None) -> None:
    """Write ``text`` to ``path`` (UTF-8) by rename; creates parent directories.

    The temporary name carries the process and thread ids, so two writers never share one.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write_text(tmp, text, redactor=redactor)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path, text: str, *, redactor: Redactor | None) -> None:
    """Write ``text`` to ``path`` (UTF-8, no newline translation; a lone surrogate is written
    as a backslash escape, a known secret as its marker), creating parent directories; not
    atomic.

    For a row's files written before its ``task.json``, which alone marks the row finished:
    a kill mid-way leaves a row without ``task.json``, which a resumed run runs again. Plain
    ``os`` calls: three system calls (open, write, close), where ``open()`` makes six, and a
    writer thread gives up the GIL around each one.
    """
    if redactor is not None:
        text = redactor.redact(text)
    data = text.encode("utf-8", "backslashreplace")
    try:
        handle = os.open(path, _CREATE, 0o666)
    except FileNotFoundError:
        make_dirs(path.parent)
        handle = os.open(path, _CREATE, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view) :]
    finally:
        os.close(handle)


def make_dirs(directory: Path) -> None:
    """Create ``directory`` and missing parents (``mkdir -p``), in two system calls when
    only it and its parent are new (a row's ``<row_id>/<NN>``).

    Raises:
        OSError: a path on the way is a file, or the disk refuses.
    """
    for path in (directory.parent, directory):
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)
            return


def dumps(data: Any, *, compact: bool = False) -> str:
    """JSON text with two-space indent (or compact) and a newline.

    Indented text comes from pydantic-core's compiled serializer: the standard library
    indents in pure Python, about 15 times slower (6.5 s for a 100,000-sample
    ``metrics.json``). NaN and infinities are refused either way: the serializer writes them
    as bare ``NaN``/``Infinity`` tokens, so text without those letters holds none, and text
    with them (an answer that says "NaN") is checked exactly by the standard encoder.

    Raises:
        ValueError: ``data`` contains NaN or an infinity (``allow_nan=False``).
    """
    if compact:
        return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"
    text = pydantic_core.to_json(data, indent=2, inf_nan_mode="constants").decode("utf-8")
    if "NaN" in text or "Infinity" in text:
        json.dumps(data, allow_nan=False)  # raises ValueError on a real NaN or infinity
    return text + "\n"


def redact_json(text: str, redactor: Redactor | None, *, compact: bool = False) -> str:
    """JSON ``text`` (one document, or JSON Lines when ``compact``) with every known secret
    replaced in its strings; ``text`` itself when it holds none."""
    if redactor is None or not redactor.contains(text):
        return text
    if compact and text.count("\n") > 1:
        return "".join(redact_json(line + "\n", redactor, compact=True)
                       for line in text.splitlines() if line)  # fmt: skip
    return dumps(redactor.redact_data(json.loads(text)), compact=compact)


def write_json_atomic(
    path: Path, data: Any, *, compact: bool = False, redactor: Redactor | None
) -> None:
    """Write ``data`` (a pydantic model or plain JSON data) to ``path`` atomically."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    text = redact_json(dumps(data, compact=compact), redactor, compact=compact)
    write_text_atomic(path, text, redactor=None)  # redacted as data above


def write_model_atomic(path: Path, model: BaseModel, *, redactor: Redactor | None) -> None:
    """Write a result model with pydantic's own (compiled) serializer, for per-row files.

    Result models reject NaN and infinities when built (``allow_inf_nan=False``), so the
    output never holds them.
    """
    text = redact_json(model.model_dump_json(indent=2) + "\n", redactor)
    write_text_atomic(path, text, redactor=None)  # redacted as data above


def read_json(path: Path) -> Any:
    """Read a JSON file written by assay."""
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


ModelT = TypeVar("ModelT", bound=BaseModel)


def read_model(path: Path, model: type[ModelT]) -> ModelT | None:
    """``path`` read as ``model`` (a ``run.json``, a ``plan.json``), or ``None`` when the file
    is missing or is not valid JSON of that model."""
    if not path.is_file():
        return None
    try:
        return model.model_validate(read_json(path))
    except (ValueError, OSError):
        return None
