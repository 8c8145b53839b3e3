"""Content hashes of what a run reads: each row, each file, a list of inline rows.

A run records them (files in ``plan.json``, ``run.json`` and every ``suite.json``; rows in
``selection.jsonl``) so that a resumed run,
``assay evaluate``, ``assay report`` and ``assay compare`` can tell when the data they look at
is not the data the rows were graded on.

- :func:`row_hash`: ``sha256`` of the row as canonical JSON (``sort_keys``, no spaces,
  ASCII), its first :data:`ROW_HASH_DIGITS` hex digits; equal rows hash equal whatever their
  key order or file format (a CSV row is its text cells).
- :func:`file_hash`: ``sha256`` of a file's bytes (64 hex digits), read in 1 MiB blocks.
- :func:`files_hash`: ``sha256`` over the files' hashes in order (a ``paths`` dataset).
- :func:`rows_hash`: ``sha256`` of a list of rows as canonical JSON (an inline dataset).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pydantic_core

ROW_HASH_DIGITS = 16
"""64 bits: enough to tell an edited row from the original, short enough to record for every
selected row."""
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                              allow_nan=True, default=repr)  # fmt: skip
# plain JSON only, else as _CANONICAL: a plain row hashes as it always did
_STRICT = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                           allow_nan=False)  # fmt: skip
_BLOCK = 1 << 20


def canonical(value: Any) -> bytes:
    """``value`` as canonical JSON bytes (see the module docstring)."""
    return _CANONICAL.encode(value).encode("ascii")


def row_hash(row: dict[str, Any]) -> str:
    """The content hash of one row (:data:`ROW_HASH_DIGITS` hex digits), over the row as a
    result file keeps it: a value JSON has no form for (a YAML date or timestamp, an
    infinity, a number as a key) is hashed as pydantic writes it into ``task.json`` (ISO
    text, ``null``, text keys), so the finished row and the dataset hash alike."""
    try:
        data = _STRICT.encode(row).encode("ascii")
    except (TypeError, ValueError):
        data = canonical(json.loads(pydantic_core.to_json(row, inf_nan_mode="null")))
    return hashlib.sha256(data).hexdigest()[:ROW_HASH_DIGITS]


def rows_hash(rows: Sequence[dict[str, Any]]) -> str:
    """The content hash of an ordered list of rows (64 hex digits)."""
    return hashlib.sha256(canonical(list(rows))).hexdigest()


def file_hash(path: Path) -> str:
    """``sha256`` of the file's bytes (64 hex digits).

    Raises:
        OSError: the file cannot be read.
    """
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def files_hash(hashes: Sequence[str]) -> str:
    """One hash over the files' hashes, in order (64 hex digits)."""
    return hashlib.sha256("\n".join(hashes).encode("ascii")).hexdigest()


__all__ = ["ROW_HASH_DIGITS", "canonical", "file_hash", "files_hash", "row_hash", "rows_hash"]
