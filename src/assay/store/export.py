"""Writing a version's examples as JSONL, CSV or Parquet, streamed.

Every format writes the example id first, under the dataset's id field, then the schema's
fields; adding the file to a dataset with the same schema gives back the same examples (the
same content hash).

- JSONL: one object per line, UTF-8, values exactly as stored (key order kept).
- CSV: a header, then one record per example; strings verbatim (quoted as needed, so
  ``\\r\\n`` inside a value survives), numbers as JSON numbers, booleans ``true``/``false``,
  json fields as JSON text.
- Parquet: a string column for the id and string fields, booleans as bool; numbers as int64
  when every value is an int that fits, else float64 (a column mixing ints and floats: an
  int is its float, ``7`` → ``7.0``, as pandas reads such a column), and as JSON number text
  only when an int float64 cannot hold exactly (beyond 2**53) shares the column with a
  float; json fields as JSON text, a JSON null as a Parquet null. The file's metadata holds
  the schema (``assay.schema``) and the rows of a float64 column that held ints
  (``assay.ints``), so ``assay dataset import`` restores both.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable
from typing import IO, Any

from assay.results.safe_text import csv_cell
from assay.store.models import Example
from assay.store.schema import Schema
from assay.store.sources import PARQUET_INTS_KEY, PARQUET_SCHEMA_KEY, import_pyarrow
from assay.store.values import to_text

PARQUET_ROWS_PER_BATCH = 10_000
_INT64 = (-(2**63), 2**63 - 1)
_EXACT_FLOAT = 2**53
"""The largest int every float64 at or below holds exactly."""


def _record(example: Example, id_field: str) -> dict[str, Any]:
    return {id_field: example.example_id, **example.data}


def write_jsonl(examples: Iterable[Example], out: IO[bytes], *, id_field: str) -> int:
    """Write one JSON object per example; return how many."""
    count = 0
    for example in examples:
        record = _record(example, id_field)
        try:
            line = json.dumps(record, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: keep it, escaped
            line = json.dumps(record, allow_nan=False).encode("ascii")
        out.write(line + b"\n")
        count += 1
    return count


def write_csv(examples: Iterable[Example], out: IO[bytes], *, schema: Schema, id_field: str) -> int:
    """Write a header and one CSV record per example; return how many."""
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    try:
        writer = csv.writer(text)
        writer.writerow([id_field, *schema.fields])
        count = 0
        for example in examples:
            cells = [to_text(kind, example.data[name]) for name, kind in schema.fields.items()]
            writer.writerow([csv_cell(example.example_id), *map(csv_cell, cells)])
            count += 1
        text.flush()
    finally:
        text.detach()
    return count


def _number_encoding(values: Iterable[Any]) -> tuple[str, list[int]]:
    """``int`` (int64), ``float`` (float64) or ``text`` for one number column, and in a
    float64 column the rows whose value was an int (restored as ints on import)."""
    ints = floats = exact = True  # every value an int64 int / a float / exactly a float64
    positions: list[int] = []
    for index, value in enumerate(values):
        is_int = isinstance(value, int)
        ints = ints and is_int and _INT64[0] <= value <= _INT64[1]
        floats = floats and isinstance(value, float)
        exact = exact and (not is_int or abs(value) <= _EXACT_FLOAT)
        if is_int:
            positions.append(index)
    kind = "int" if ints else "float" if floats or exact else "text"
    return kind, positions if kind == "float" else []


def _arrow_types(
    schema: Schema, examples: Callable[[], Iterable[Example]]
) -> tuple[dict[str, tuple[Any, Callable[[Any], Any]]], dict[str, list[int]]]:
    """Each field's Arrow type and encoder, and the int rows of float64 number columns."""
    pa = import_pyarrow()
    numbers = [n for n, k in schema.fields.items() if k == "number"]
    found = {n: _number_encoding(e.data[n] for e in examples()) for n in numbers}
    encodings = {name: kind for name, (kind, _) in found.items()}
    ints = {name: rows for name, (_, rows) in found.items() if rows}
    types: dict[str, tuple[Any, Callable[[Any], Any]]] = {}
    for name, kind in schema.fields.items():
        if kind == "string":
            types[name] = (pa.string(), _same)
        elif kind == "boolean":
            types[name] = (pa.bool_(), _same)
        elif kind == "number" and encodings[name] == "int":
            types[name] = (pa.int64(), _same)
        elif kind == "number" and encodings[name] == "float":
            types[name] = (pa.float64(), _as_float)
        elif kind == "json":
            types[name] = (pa.string(), _json_or_null)
        else:
            types[name] = (pa.string(), _text_of(kind))
    return types, ints


def _same(value: Any) -> Any:
    return value


def _as_float(value: Any) -> float:
    return float(value)


def _json_or_null(value: Any) -> str | None:
    return None if value is None else to_text("json", value)


def _text_of(kind: str) -> Callable[[Any], str]:
    return lambda value: to_text(kind, value)


def write_parquet(
    examples: Callable[[], Iterable[Example]],
    out: IO[bytes] | str,
    *,
    schema: Schema,
    id_field: str,
) -> int:
    """Write a Parquet file; ``examples`` is called twice (once to pick number column types).

    Raises:
        StoreError: pyarrow is not installed.
    """
    pa = import_pyarrow()
    types, ints = _arrow_types(schema, examples)
    arrow_schema = pa.schema(
        [pa.field(id_field, pa.string()), *(pa.field(n, t) for n, (t, _) in types.items())],
        metadata={PARQUET_SCHEMA_KEY: json.dumps(schema.to_dict()), b"assay.id_field": id_field},
    )
    count = 0
    with pa.parquet.ParquetWriter(out, arrow_schema) as writer:
        columns: dict[str, list[Any]] = {name: [] for name in arrow_schema.names}
        for example in examples():
            columns[id_field].append(example.example_id)
            for name, (_, encode) in types.items():
                columns[name].append(encode(example.data[name]))
            count += 1
            if len(columns[id_field]) >= PARQUET_ROWS_PER_BATCH:
                writer.write_table(pa.table(columns, schema=arrow_schema))
                columns = {name: [] for name in arrow_schema.names}
        if columns[id_field] or count == 0:
            writer.write_table(pa.table(columns, schema=arrow_schema))
        if ints:
            writer.add_key_value_metadata({PARQUET_INTS_KEY: json.dumps(ints)})
    return count
