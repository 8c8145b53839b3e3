"""Rows from files: JSONL, CSV and Parquet, streamed, each row with its file and line.

The format comes from the file name: ``.jsonl``/``.ndjson``/``.json`` (JSON Lines, read by
:func:`assay.data.jsonl.iter_jsonl`), ``.csv`` (:func:`assay.data.csvrows.iter_csv`),
``.parquet``/``.pq`` (pyarrow, extra ``parquet``). JSONL values are typed already; CSV cells,
and string cells of Parquet files in non-string fields, are converted by the dataset's schema
(:func:`assay.store.values.from_text`). Relative trace paths are resolved against the
folder of the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.data.arrowrows import PARQUET_INTS_KEY as PARQUET_INTS_KEY  # re-exported
from assay.data.arrowrows import int_rows, json_value, with_ints
from assay.data.csvrows import iter_csv
from assay.data.jsonl import iter_jsonl
from assay.errors import DatasetError, StoreError
from assay.install import install_hint
from assay.results.safe_text import csv_value
from assay.store.models import SourceRow
from assay.store.rows import row_error
from assay.store.schema import Schema, parse_schema
from assay.store.values import from_text

FORMATS = ("jsonl", "csv", "parquet")
_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv",
             ".parquet": "parquet", ".pq": "parquet"}  # fmt: skip
PARQUET_SCHEMA_KEY = b"assay.schema"
PARQUET_BATCH = 4096


def file_format(path: Path) -> str:
    """``jsonl``, ``csv`` or ``parquet``, from the file name.

    Raises:
        StoreError: an unknown suffix.
    """
    found = _SUFFIXES.get(path.suffix.lower())
    if found is None:
        raise StoreError(
            "cannot tell the format from the file name",
            file=path,
            hint="name it .jsonl, .csv or .parquet",
        )
    return found


def import_pyarrow() -> Any:
    """The ``pyarrow`` and ``pyarrow.parquet`` modules.

    Raises:
        StoreError: pyarrow is not installed (naming the extra that brings it).
    """
    try:
        import pyarrow  # type: ignore[import-untyped,unused-ignore]
        import pyarrow.parquet  # type: ignore[import-untyped,unused-ignore]
    except ModuleNotFoundError:
        raise StoreError(
            "Parquet needs pyarrow, which is not installed",
            hint=install_hint("parquet"),
        ) from None
    return pyarrow


def read_rows(
    path: Path, *, schema: Schema | None, id_field: str, display: str | None = None
) -> Iterator[SourceRow]:
    """Stream the rows of one file.

    Args:
        path: a JSONL, CSV or Parquet file.
        schema: converts text cells; ``None`` keeps CSV cells as strings (for inference).
        id_field: the dataset's id field (named in conversion errors).
        display: how to name the file in messages (default: ``str(path)``).

    Raises:
        DatasetError: unreadable JSONL/CSV (file:line).
        StoreError: unknown format, missing pyarrow, or a cell its field type cannot read.
    """
    name = display or str(path)
    kind = file_format(path)
    if kind == "jsonl":
        for line, data in iter_jsonl(path, display=name):
            yield SourceRow(data, name, line, path.parent)
    elif kind == "csv":
        for line, cells in iter_csv(path, display=name):
            data = {key: csv_value(cell) for key, cell in cells.items()}  # assay's exports
            yield _converted(SourceRow(data, name, line, path.parent), schema, id_field)
    else:
        yield from _parquet_rows(path, name, schema, id_field)


def _converted(row: SourceRow, schema: Schema | None, id_field: str) -> SourceRow:
    if schema is None:
        return row
    data = row.data
    for name, kind in schema.fields.items():
        value = data.get(name)
        if isinstance(value, str) and kind != "string":
            try:
                data[name] = from_text(kind, value)
            except ValueError as exc:
                example = data.get(id_field)
                raise row_error(
                    row, str(exc), example_id=str(example) if example else None, field=name
                ) from None
    return row


def _open_parquet(path: Path, name: str) -> Any:
    pyarrow = import_pyarrow()
    if not path.is_file():
        raise StoreError(f"Dataset file not found: {name}", file=name, located=True)
    try:
        return pyarrow.parquet.ParquetFile(path)
    except (pyarrow.ArrowException, OSError) as exc:
        raise StoreError(f"not a readable Parquet file: {exc}", file=name) from None


def _parquet_rows(
    path: Path, name: str, schema: Schema | None, id_field: str
) -> Iterator[SourceRow]:
    parquet = _open_parquet(path, name)
    ints = int_rows(parquet)
    number = 0
    for batch in parquet.iter_batches(batch_size=PARQUET_BATCH):
        for data in with_ints(batch.to_pylist(), ints, number):
            number += 1
            try:  # dates as ISO text, decimals as their text: as a task reads the file
                data = {key: json_value(value, name, number, key) for key, value in data.items()}
            except DatasetError as exc:
                raise StoreError(exc.message, file=name, line=number, field=exc.field,
                                 hint=exc.hint, located=True) from None  # fmt: skip
            yield _converted(SourceRow(data, name, number, path.parent), schema, id_field)


def parquet_schema(path: Path, *, display: str | None = None) -> Schema | None:
    """The schema an assay export wrote into a Parquet file's metadata, if there is one."""
    parquet = _open_parquet(path, display or str(path))
    metadata = parquet.schema_arrow.metadata or {}
    text = metadata.get(PARQUET_SCHEMA_KEY)
    return parse_schema(json.loads(text)) if text else None
