"""Inferring a schema from example rows (``assay dataset create --infer-from FILE``).

Each field's type comes from its values: ``str`` → string, ``bool`` → boolean, ``int`` and
``float`` → number, ``dict`` and ``list`` → json. The dataset's id field is not a schema
field and is skipped. ``trace`` and ``session`` fields are never inferred: declare them in a
schema file. Errors (the first two with judgeval's messages, ``reference/originals.md``
§3.2), each naming the file and line:

- no rows: ``Cannot infer a dataset schema without examples. …``;
- rows with different field sets: ``All examples must share the same set of fields …``;
- a field whose values have two types, or that is null where it is not a json field;
- a field that is null in every row.

Fields keep the order of the first row. Rows are streamed: memory does not grow with them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import StoreError
from assay.store.models import SourceRow
from assay.store.schema import FieldType, Schema
from assay.store.sources import file_format, parquet_schema, read_rows


def _kind(value: Any) -> FieldType | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (dict, list)):
        return "json"
    return None


@dataclass
class _Seen:
    """What one field's values looked like so far, with where each thing was first seen."""

    kind: FieldType | None = None
    kind_at: str = ""
    null_at: str | None = None


def _fail(row: SourceRow, message: str, hint: str | None = None) -> StoreError:
    where = f"{row.where}: " if row.where else ""
    return StoreError(where + message, file=row.origin, line=row.line, located=True, hint=hint)


def _same_keys(first: list[str], keys: set[str], row: SourceRow) -> None:
    earlier = set(first)
    if keys == earlier:
        return
    parts = []
    if earlier - keys:
        parts.append(
            f"fields present in earlier examples but missing here: {sorted(earlier - keys)}"
        )
    if keys - earlier:
        parts.append(
            f"fields present here but missing in earlier examples: {sorted(keys - earlier)}"
        )
    raise _fail(
        row,
        "All examples must share the same set of fields (dataset schemas require all declared "
        "properties). " + "; ".join(parts) + ". Pass an explicit `schema` or make all examples "
        "homogeneous.",
        hint="give --schema with the fields that some rows lack declared json: an absent "
        "json field reads as null",
    )


def _observe(seen: _Seen, name: str, value: Any, row: SourceRow) -> None:
    if value is None:
        seen.null_at = seen.null_at or row.where or "a row"
        return
    kind = _kind(value)
    if kind is None:
        raise _fail(row, f"field '{name}': cannot store a Python {type(value).__name__}")
    if seen.kind is None:
        seen.kind, seen.kind_at = kind, row.where or "a row"
    elif seen.kind != kind:
        raise _fail(
            row,
            f"field '{name}' is {kind} here but {seen.kind} at {seen.kind_at}; a field has one "
            "type (declare it json in a schema file to allow any JSON value)",
        )


def _settle(name: str, seen: _Seen) -> FieldType:
    if seen.kind is None:
        raise StoreError(
            f"field '{name}' is null in every example (first at {seen.null_at}), so its type "
            "cannot be inferred",
            hint="declare it in a schema file (null is allowed only in json fields)",
        )
    if seen.null_at is not None and seen.kind != "json":
        raise StoreError(
            f"field '{name}' is null at {seen.null_at} but {seen.kind} at {seen.kind_at}; "
            "only json fields may be null",
            hint="fill in the value, or declare the field json in a schema file",
        )
    return seen.kind


def infer_schema(
    rows: Iterable[SourceRow], *, id_field: str = "id", source: str | None = None
) -> Schema:
    """Infer a schema from ``rows`` (rules in the module docstring).

    Args:
        rows: the examples, e.g. from :func:`assay.store.sources.read_rows`.
        id_field: the dataset's id field, which is not a schema field.
        source: the file the rows come from, named when it holds none.

    Raises:
        StoreError: one of the error cases of the module docstring.
    """
    first: list[str] | None = None
    fields: dict[str, _Seen] = {}
    for row in rows:
        data = row.data
        keys = [k for k in data if k != id_field]
        if first is None:
            first = keys
            fields = {k: _Seen() for k in keys}
        else:
            _same_keys(first, set(keys), row)
        for name in keys:
            _observe(fields[name], name, data[name], row)
    if first is None:
        raise StoreError(
            "Cannot infer a dataset schema without examples. Pass an explicit `schema` "
            "(assay dataset create NAME --schema FILE).",
            file=source,
        )
    if not first:
        raise StoreError(f"the examples have no fields besides the id field '{id_field}'")
    return Schema({name: _settle(name, seen) for name, seen in fields.items()})


def schema_of_file(path: Path, *, id_field: str = "id", display: str | None = None) -> Schema:
    """The schema for a file's rows: the one an assay Parquet export carries, else inferred.

    CSV cells are text, so a schema inferred from CSV has only string fields; pass a schema
    file to type them.

    Raises:
        StoreError: as :func:`infer_schema`; DatasetError: the file cannot be read.
    """
    name = display or str(path)
    if file_format(path) == "parquet":
        carried = parquet_schema(path, display=name)
        if carried is not None:
            return carried
    return infer_schema(read_rows(path, schema=None, id_field=id_field, display=name),
                        id_field=id_field, source=name)  # fmt: skip
