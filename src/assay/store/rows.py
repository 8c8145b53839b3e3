"""Turning an incoming row into a stored example: its id, checked values, copied traces.

Rules (each one is an error naming the file, line, example id and field):

- the row is a JSON object holding every schema field and no other field, except the
  dataset's id field, which is taken out of the data and becomes the example id;
- the id field's value is a non-empty string without control characters, or an integer
  (stored as its decimal text); a row without it gets an id made from its content
  (:func:`content_id`: the same row gets the same id in every batch, so adding a file again
  finds its rows already present instead of adding them twice);
- each value has its field's type (:mod:`assay.store.values`);
- a ``trace``/``session`` value is an OTLP JSON object, a file holding one (a path relative
  to the row's file), a list of those (``session`` only), or the id of a trace already
  stored; it is copied into the ``traces`` table and the field holds its id.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, select

from assay.data.jsonl import parse_json_strict
from assay.errors import StoreError
from assay.spec.base import did_you_mean
from assay.store.models import SourceRow
from assay.store.schema import POINTER_TYPES, Schema
from assay.store.tables import traces
from assay.store.traces import canonical_trace, merge, otlp_problem, session_id, trace_ids
from assay.store.values import describe, example_digest, stored_json, type_problem

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MISSING = object()


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_number(value: Any) -> bool:
    return type_problem("number", value) is None


def _is_bool(value: Any) -> bool:
    return value is True or value is False


def _is_json(value: Any) -> bool:
    return type_problem("json", value) is None


_FAST_CHECK: dict[str, Callable[[Any], bool]] = {
    "string": _is_str,
    "number": _is_number,
    "boolean": _is_bool,
    "json": _is_json,
}


CONTENT_ID_DIGITS = 32


def content_id(data: dict[str, Any]) -> str:
    """The id of a row that has none: the first 32 hex digits of ``sha256`` of its data as
    canonical JSON (sorted keys), so equal rows get equal ids whatever the batch."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                           default=repr)  # fmt: skip
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()[:CONTENT_ID_DIGITS]


def row_error(
    row: SourceRow, message: str, *, example_id: str | None = None, field: str | None = None
) -> StoreError:
    """A :class:`StoreError` whose message starts ``file:line: example 'x', field 'f': ``.

    The error's ``file`` and ``line`` are set too (the message already shows them, and the
    example and field).
    """
    who = [f"example '{example_id}'"] if example_id else []
    if field:
        who.append(f"field '{field}'")
    where = f"{row.where}: " if row.where else ""
    text = where + (", ".join(who) + ": " if who else "") + message
    return StoreError(text, file=row.origin, line=row.line, located=True)


class TraceSink:
    """Copies the traces and sessions of one batch into the ``traces`` table.

    Args:
        connection: the batch's write transaction.
    """

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._seen: dict[str, tuple[str, str]] = {}  # id → (kind, body hash), this batch

    def store(self, kind: str, value: Any, row: SourceRow, example_id: str, field: str) -> str:
        """Copy ``value`` (see the module docstring) and return the trace or session id."""
        if isinstance(value, str) and self._stored_kind(value) == kind:
            return value
        trace = self._load(kind, value, row, example_id, field)
        problem = otlp_problem(trace)
        if problem:
            raise row_error(row, problem, example_id=example_id, field=field)
        if kind == "trace":
            ids = trace_ids(trace)
            if len(ids) != 1:
                raise row_error(
                    row,
                    f"the trace holds spans of {len(ids)} traces ({', '.join(ids[:5])}); "
                    "a trace field holds one trace (use a session field for several)",
                    example_id=example_id,
                    field=field,
                )
            key = ids[0]
        else:
            key = session_id(trace)
        self._insert(key, kind, trace, row, example_id, field)
        return key

    def _stored_kind(self, key: str) -> str | None:
        if key in self._seen:
            return self._seen[key][0]
        found = self._connection.execute(
            select(traces.c.kind, traces.c.body_hash).where(traces.c.trace_id == key)
        ).first()
        if found is None:
            return None
        self._seen[key] = (found.kind, found.body_hash)
        return str(found.kind)

    def _load(self, kind: str, value: Any, row: SourceRow, example_id: str, field: str) -> Any:
        if isinstance(value, dict):
            return value
        if isinstance(value, str):
            return self._read_file(value, row, example_id, field)
        if kind == "session" and isinstance(value, list) and value:
            parts = [self._load("trace", item, row, example_id, field) for item in value]
            for part in parts:
                problem = otlp_problem(part)
                if problem:
                    raise row_error(row, problem, example_id=example_id, field=field)
            return merge(parts)
        expected = "an OTLP JSON object, a path to an OTLP JSON file or a stored trace id"
        if kind == "session":
            expected += ", or a list of objects/paths"
        raise row_error(
            row, f"expected {expected}, got {describe(value)}", example_id=example_id, field=field
        )

    def _read_file(self, value: str, row: SourceRow, example_id: str, field: str) -> Any:
        path = Path(value)
        if not path.is_absolute():
            path = (row.base_dir or Path.cwd()) / path
        if not path.is_file():
            raise row_error(
                row,
                f"{value!r} is neither the id of a stored trace nor a file (looked for {path})",
                example_id=example_id,
                field=field,
            )
        try:
            return parse_json_strict(path.read_text(encoding="utf-8-sig"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise row_error(
                row, f"the trace file {path} is not valid JSON: {exc}", example_id=example_id,
                field=field,
            ) from None  # fmt: skip

    def _insert(
        self, key: str, kind: str, trace: Any, row: SourceRow, example_id: str, field: str
    ) -> None:
        body = json.dumps(trace, separators=(",", ":"), allow_nan=False)
        body_hash = hashlib.sha256(canonical_trace(trace).encode("utf-8", "surrogatepass"))
        digest = body_hash.hexdigest()
        stored_kind = self._stored_kind(key)
        if stored_kind is None:
            self._connection.execute(
                traces.insert().values(
                    trace_id=key, kind=kind, body=body, body_hash=digest,
                    created_at=datetime.now(UTC).isoformat(),
                )
            )  # fmt: skip
            self._seen[key] = (kind, digest)
        elif self._seen[key] != (kind, digest):
            raise row_error(
                row,
                f"{stored_kind} {key} is already in the store with different content; "
                "a stored trace never changes",
                example_id=example_id,
                field=field,
            )


class RowChecker:
    """Checks rows against one dataset's schema and prepares them for storing.

    Args:
        schema: the dataset's schema.
        id_field: the field that holds example ids.
        sink: where trace/session values are copied (needed when the schema has one).
    """

    def __init__(self, schema: Schema, id_field: str, sink: TraceSink | None) -> None:
        self._made: dict[str, int] = {}  # content id → rows of this batch that had it
        self._schema = schema
        self._id_field = id_field
        self._sink = sink
        self._names = frozenset(schema.fields)
        self._checks = [
            (name, kind, _FAST_CHECK[kind])
            for name, kind in schema.fields.items()
            if kind not in POINTER_TYPES
        ]
        self._pointer = schema.pointer_field

    def prepare(self, row: SourceRow) -> tuple[str, str, int]:
        """``(example_id, data as stored JSON, hash digest)`` for one row.

        Raises:
            StoreError: the row breaks a rule of the module docstring.
        """
        data = row.data
        if not isinstance(data, dict):
            raise row_error(row, f"a row must be a JSON object, got {describe(data)}")
        given = self._example_id(data, row)
        example_id = given if given is not None else self._content_id(data)
        out = self._fields(data, row, example_id)
        for name, kind, check in self._checks:
            value = out[name]
            if not check(value):
                problem = type_problem(kind, value) or f"not a valid {kind}"
                raise row_error(row, problem, example_id=example_id, field=name)
        if self._pointer is not None:
            out = self._with_pointer(out, row, example_id)
        return example_id, stored_json(out), example_digest(example_id, out)

    def _content_id(self, data: dict[str, Any]) -> str:
        """The id of a row without one: :func:`content_id`, with ``-2``, ``-3`` … for the
        second and later copies of the same row in one batch."""
        made = content_id(data)
        seen = self._made.get(made, 0) + 1
        self._made[made] = seen
        return made if seen == 1 else f"{made}-{seen}"

    def _example_id(self, data: dict[str, Any], row: SourceRow) -> str | None:
        value = data.get(self._id_field, _MISSING)
        if value is _MISSING:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, str) and value and not _CONTROL.search(value):
            return value
        raise row_error(
            row,
            f"the id field '{self._id_field}' must be a non-empty string without control "
            f"characters, or an integer; got {describe(value)}",
            field=self._id_field,
        )

    def _fields(self, data: dict[str, Any], row: SourceRow, example_id: str) -> dict[str, Any]:
        keys = data.keys()
        has_id = self._id_field in data
        if len(keys) - has_id == len(self._names) and self._names <= keys:
            return {k: v for k, v in data.items() if k != self._id_field} if has_id else data
        missing = [name for name in self._schema.fields if name not in data]
        if missing and all(self._schema.fields[name] == "json" for name in missing):
            # json is the one type that holds null: a row without the key holds null there
            return self._fields({**data, **dict.fromkeys(missing)}, row, example_id)
        if missing:
            raise row_error(
                row,
                f"missing field(s) {', '.join(repr(m) for m in missing)}; every example "
                f"carries every schema field ({', '.join(self._schema.fields)}) but a json one, "
                "which reads as null when absent",
                example_id=example_id,
                field=missing[0],
            )
        extra = next(k for k in keys if k not in self._names and k != self._id_field)
        raise row_error(
            row,
            "the schema declares no such field (fields: "
            + ", ".join(self._schema.fields)
            + (f"; id field: {self._id_field})" if self._id_field else ")")
            + (f"; {hint}" if (hint := did_you_mean(str(extra), self._names)) else ""),
            example_id=example_id,
            field=str(extra),
        )

    def _with_pointer(self, out: dict[str, Any], row: SourceRow, example_id: str) -> dict[str, Any]:
        assert self._pointer is not None and self._sink is not None
        name = self._pointer
        kind = self._schema.fields[name]
        key = self._sink.store(kind, out[name], row, example_id, name)
        out = dict(out)
        out[name] = key
        return out
