"""Production cases into a dataset: what a run or a file of OTLP traces saw, as examples.

A captured case offers named **sources** (``response``, ``trace``, ``row.text``,
``attr.gen_ai.request.model``, …); a **mapping** says which source fills each field of the
dataset (``--map actual_output=response``). A field without a mapping takes, in order: the
source of its own name; for a ``trace``/``session`` field the case's trace; for ``input``
the case's input (``prompt``); for ``actual_output``/``output`` its output (``response``);
the row's field of the same name (``row.<field>``); an attribute of that name on the trace's
spans (``attr.<field>``). A field left without a source is an error naming the sources
there are. The trace is copied into the store (a ``trace`` field's value holds its id).

A case whose example id is already in the dataset's latest version with the same content is
skipped and counted, so capturing the same run twice adds nothing the second time. One whose
id is taken by other content (the same row answered differently by a later run) is new
evidence: it is added under the id, ``~`` and 8 hex digits of its content's hash, and the
result lists it in ``renamed``. A dataset that does not exist yet is created with the default
schema of the kind of capture.

The known secrets (the ``writer``'s: the environment's, :class:`~assay.results.io.Writer`)
are redacted from every value and trace before it is stored: a production trace that quotes
an API key does not carry it into the store.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.errors import StoreError, UsageError
from assay.results.io import PLAIN, Writer
from assay.store.models import DatasetInfo, VersionInfo
from assay.store.schema import POINTER_TYPES, FieldType, Schema

if TYPE_CHECKING:
    from assay.store.store import Store

OUTPUT_NAMES = ("actual_output", "output")
INPUT_NAMES = ("input",)


@dataclass(frozen=True)
class Captured:
    """One case to add.

    Attributes:
        example_id: its id in the dataset.
        values: source name → value (``response``, ``trace`` (an OTLP object), ``row.x``, …).
        where: where it came from, for messages (a ``task.json``, a trace id).
        output_source: the source that holds its output (``response`` or ``output``).
        input_source: the source that holds its input (``prompt`` or ``input``).
    """

    example_id: str
    values: Mapping[str, Any]
    where: str
    output_source: str = "response"
    input_source: str = "prompt"


@dataclass(frozen=True)
class CaptureResult:
    """What a capture did: the version it made (``None`` when nothing was new), the ids
    added, the ids already in the dataset with the same content (skipped), whether the
    dataset was created, the mapping used (field → source), and the cases whose id was
    taken by other content: their id → the id they were added under."""

    version: VersionInfo | None
    added: list[str] = field(default_factory=list)
    skipped_existing: list[str] = field(default_factory=list)
    created: bool = False
    mapping: dict[str, str] = field(default_factory=dict)
    renamed: dict[str, str] = field(default_factory=dict)


def parse_mapping(items: Sequence[str]) -> dict[str, str]:
    """``["actual_output=response", "question=row.q"]`` → ``{field: source}``.

    Raises:
        UsageError: an item without ``=``, an empty side, or a field mapped twice.
    """
    mapping: dict[str, str] = {}
    for item in items:
        name, sep, source = item.partition("=")
        if not sep or not name.strip() or not source.strip():
            raise UsageError(f"--map {item!r} must be FIELD=SOURCE, e.g. actual_output=response")
        if name.strip() in mapping:
            raise UsageError(f"--map names the field '{name.strip()}' twice")
        mapping[name.strip()] = source.strip()
    return mapping


def default_source(name: str, kind: str, case: Captured) -> str | None:
    """The source a field without a mapping takes from ``case`` (module docstring)."""
    values = case.values
    candidates = [name]
    if kind in POINTER_TYPES:
        candidates.append("trace")
    if name in INPUT_NAMES:
        candidates.append(case.input_source)
    if name in OUTPUT_NAMES:
        candidates.append(case.output_source)
    candidates += [f"row.{name}", f"attr.{name}"]
    return next((c for c in candidates if c in values), None)


def resolve_mapping(
    schema: Schema, given: Mapping[str, str], cases: Sequence[Captured], *, dataset: str
) -> dict[str, str]:
    """Field → source for every field of ``schema``.

    Raises:
        UsageError: a mapped field the schema lacks, or a field no source fills (naming the
            sources there are).
    """
    unknown = [f for f in given if f not in schema.fields]
    if unknown:
        raise UsageError(
            f"dataset '{dataset}' has no field '{unknown[0]}' (fields: {', '.join(schema.fields)})"
        )
    available = sorted({name for case in cases for name in case.values})
    mapping: dict[str, str] = {}
    for name, kind in schema.fields.items():
        if name in given:
            mapping[name] = given[name]
            continue
        found = next((s for c in cases if (s := default_source(name, kind, c))), None)
        if found is None:
            raise UsageError(
                f"field '{name}' of dataset '{dataset}' has no source in these cases",
                hint=f"map it: --map {name}=SOURCE (sources: {_sources_text(available)})",
            )
        mapping[name] = found
    return mapping


def _sources_text(available: list[str]) -> str:
    """The sources, span attributes summed up after the others."""
    plain = [s for s in available if not s.startswith("attr.")]
    attrs = [s for s in available if s.startswith("attr.")]
    text = ", ".join(plain)
    if attrs:
        examples = ", ".join(attrs[:3]) + (", …" if len(attrs) > 3 else "")
        text += f"; and {len(attrs)} span attribute(s): {examples}"
    return text


def field_value(value: Any, kind: FieldType, *, name: str, case: Captured) -> Any:
    """``value`` as the field's type: ``None`` and non-text values become text for a string
    field; numbers and booleans must already be one.

    Raises:
        StoreError: a value that cannot be of the field's type (naming the case).
    """
    if kind == "string":
        if value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise StoreError(
            f"{case.where}: field '{name}' is a number, but its source gives {value!r}",
            row_id=case.example_id,
        )
    if kind == "boolean" and not isinstance(value, bool):
        raise StoreError(
            f"{case.where}: field '{name}' is a boolean, but its source gives {value!r}",
            row_id=case.example_id,
        )
    if kind in POINTER_TYPES and not isinstance(value, dict):
        raise StoreError(
            f"{case.where}: field '{name}' holds a {kind}, but this case has none",
            row_id=case.example_id,
            hint=f"leave such cases out (e.g. --suite), or use a dataset without a {kind} field",
        )
    return value


def value_kind(value: Any) -> FieldType:
    """The field type a default schema gives a value (``json`` for null, lists, objects)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "json"


def capture(
    store: Store,
    name: str,
    cases: Sequence[Captured],
    *,
    mapping: Mapping[str, str],
    default_schema: Schema,
    origin: str,
    writer: Writer = PLAIN,
) -> CaptureResult:
    """Add ``cases`` to dataset ``name`` as one new version (see the module docstring).

    Raises:
        UsageError: a bad mapping. StoreError: an id twice in the cases, a value that does
            not fit its field, a trace that is not OTLP JSON; nothing is added then.
    """
    if not cases:
        return CaptureResult(None)
    try:
        info: DatasetInfo | None = store.dataset(name)
    except StoreError:
        info = None
    schema, id_field = (info.schema, info.id_field) if info else (default_schema, "id")
    present = store.member_ids(name, [c.example_id for c in cases]) if info else set()
    fields = resolve_mapping(schema, mapping, cases, dataset=name)
    _unique(cases)
    rows = _rows(cases, fields, schema, id_field)
    rows = writer.redact_data(rows)
    if info is None:  # created only now: a refused capture leaves no empty dataset behind
        store.create_dataset(name, default_schema)
    version = store.add(name, rows, origin=origin, on_conflict="new_id")
    renamed = version.renamed
    added = [c.example_id for c in cases if c.example_id not in present]
    skipped = [c.example_id for c in cases if c.example_id in present - renamed.keys()]
    return CaptureResult(
        version if version.created else None,
        added + list(renamed.values()),
        skipped,
        info is None,
        fields,
        renamed,
    )


def _unique(cases: Sequence[Captured]) -> None:
    seen: dict[str, str] = {}
    for case in cases:
        if case.example_id in seen:
            raise StoreError(
                f"two cases would get the example id '{case.example_id}' "
                f"({seen[case.example_id]} and {case.where})",
                hint="pick one suite or variant (--suite, --variant)",
            )
        seen[case.example_id] = case.where


def _rows(
    cases: Iterable[Captured], fields: Mapping[str, str], schema: Schema, id_field: str
) -> list[dict[str, Any]]:
    rows = []
    for case in cases:
        row: dict[str, Any] = {id_field: case.example_id}
        for name, source in fields.items():
            if source not in case.values and not source.startswith(("row.", "attr.")):
                raise StoreError(
                    f"{case.where}: the source '{source}' of field '{name}' is "
                    "not one this case has",
                    row_id=case.example_id,
                    hint="sources: " + ", ".join(sorted(case.values)),
                )
            value = case.values.get(source)
            row[name] = field_value(value, schema.fields[name], name=name, case=case)
        rows.append(row)
    return rows
