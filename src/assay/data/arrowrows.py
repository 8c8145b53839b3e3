"""Rows from Parquet and Arrow files (``.parquet``/``.pq``; ``.arrow``/``.feather``/``.ipc``),
streamed in record batches with pyarrow (extra ``parquet``).

Each row is a JSON-like object, numbered from 1 in the file (the "line" of messages). Values
become what a JSONL row would hold: dates and times as ISO 8601 text, decimals as their exact
text (``decimal128`` money ``0.10`` stays ``"0.10"``; a float would round
``12345678901234567.89``), nested lists and structs as lists and objects. A value JSON
cannot hold (NaN or an infinity, bytes) is refused with its row and column, as the JSONL
reader refuses NaN.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.errors import DatasetError
from assay.install import install_hint
from assay.spec.json_values import to_json_value

PARQUET_SUFFIXES = (".parquet", ".pq")
ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")
BATCH = 4096


def is_arrow_file(path: Path) -> bool:
    """The file name says Parquet or Arrow."""
    return path.suffix.lower() in PARQUET_SUFFIXES + ARROW_SUFFIXES


def _pyarrow(display: str) -> Any:
    try:
        import pyarrow  # type: ignore[import-untyped,unused-ignore]
        import pyarrow.ipc  # type: ignore[import-untyped,unused-ignore]
        import pyarrow.parquet  # type: ignore[import-untyped,unused-ignore]
    except ModuleNotFoundError:
        raise DatasetError(
            f"Dataset {display}: reading Parquet or Arrow files needs pyarrow, which is not "
            "installed", file=display,
            hint=install_hint("parquet") + ", or convert the file to JSONL",
        ) from None  # fmt: skip
    return pyarrow


def _batches(path: Path, display: str) -> Iterator[Any]:
    pyarrow = _pyarrow(display)
    if not path.is_file():
        raise DatasetError(f"Dataset file not found: {display}", file=display)
    try:
        if path.suffix.lower() in PARQUET_SUFFIXES:
            parquet = pyarrow.parquet.ParquetFile(path)
            ints = int_rows(parquet)
            first = 0
            for batch in parquet.iter_batches(batch_size=BATCH):
                yield with_ints(batch.to_pylist(), ints, first)
                first += batch.num_rows
            return
        try:
            reader = pyarrow.ipc.open_file(path)
            for index in range(reader.num_record_batches):
                yield reader.get_batch(index).to_pylist()
        except pyarrow.ArrowInvalid:  # the streaming format rather than the file format
            for batch in pyarrow.ipc.open_stream(path):
                yield batch.to_pylist()
    except (pyarrow.ArrowException, OSError) as exc:
        kind = "Parquet" if path.suffix.lower() in PARQUET_SUFFIXES else "Arrow"
        raise DatasetError(f"Dataset {display}: not a readable {kind} file: {exc}",
                           file=display) from None  # fmt: skip


PARQUET_INTS_KEY = b"assay.ints"
"""File metadata of an assay export: ``{column: [row index, …]}``, the rows of a float64
number column whose value was an int (a column mixing ints and floats)."""


def int_rows(parquet: Any) -> dict[str, set[int]]:
    """:data:`PARQUET_INTS_KEY` of a ``pyarrow.parquet.ParquetFile`` (empty for a file assay
    did not export)."""
    text = (parquet.metadata.metadata or {}).get(PARQUET_INTS_KEY)
    try:
        found = json.loads(text) if text else {}
        return {str(column): set(rows) for column, rows in found.items()}
    except (ValueError, TypeError, AttributeError):
        return {}  # not assay's: its values are read as they are


def with_ints(
    rows: list[dict[str, Any]], ints: dict[str, set[int]], first: int
) -> list[dict[str, Any]]:
    """``rows`` (from row index ``first``) with the ints an export wrote as floats restored,
    so a task reads the number the store holds (``1``, not ``1.0``)."""
    if not ints:
        return rows
    for offset, row in enumerate(rows):
        for column, indexes in ints.items():
            if first + offset in indexes and isinstance(row.get(column), float):
                row[column] = int(row[column])
    return rows


def iter_arrow(path: Path, *, display: str | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(row number, row)`` for every row of a Parquet or Arrow file.

    Raises:
        DatasetError: pyarrow missing, the file missing or unreadable, or a value JSON cannot
            hold (naming the row and column).
    """
    name = display or str(path)
    number = 0
    for rows in _batches(path, name):
        for row in rows:
            number += 1
            yield number, {key: json_value(value, name, number, key) for key, value in row.items()}


def json_value(value: Any, file: str, row: int, column: str) -> Any:
    """One Arrow value as a JSON value (:func:`assay.spec.json_values.to_json_value`); the
    store's Parquet import reads values by the same rule.

    Raises:
        DatasetError: NaN or an infinity, bytes or another value JSON cannot hold.
    """
    try:
        return to_json_value(value)
    except ValueError as exc:
        raise DatasetError(
            f"Dataset {file}: row {row}, column '{column}' {exc}", file=file, line=row,
            field=column, hint="write null, or a string, in its place",
        ) from None  # fmt: skip


__all__ = [
    "ARROW_SUFFIXES",
    "PARQUET_INTS_KEY",
    "PARQUET_SUFFIXES",
    "int_rows",
    "is_arrow_file",
    "iter_arrow",
    "json_value",
]
