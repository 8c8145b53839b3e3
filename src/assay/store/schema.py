"""A dataset's schema: one typed field per name, and the two file forms that declare it.

Field types: ``string``, ``number``, ``boolean``, ``json``, ``trace``, ``session`` (see
:mod:`assay.store.values` for what each accepts). A schema declares at least one field and at
most one ``trace`` or ``session`` field.

Schema files are YAML or JSON, in either form::

    fields: {text: string, label: string, score: number}

    type: object                         # JSON-Schema form (Judgment Labs' SDK judgeval)
    properties:
      text: {type: string}
      score: {type: integer}             # integer and number → number
      meta: {type: object}               # object and array → json
      run: {type: trace}

JSON-Schema input is checked with judgeval's messages (``reference/originals.md`` §3.2):
``Dataset schema must be a JSON object (dict).``,
``Dataset schema must declare top-level type "object".``,
``Dataset schema must declare a 'properties' object.`` and
``A dataset may declare at most one trace column; found N: a, b.``
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast

from assay.errors import StoreError, UserError
from assay.spec.base import did_you_mean
from assay.spec.source import YamlDocument, parse_yaml

FieldType = Literal["string", "number", "boolean", "json", "trace", "session"]
FIELD_TYPES: tuple[FieldType, ...] = ("string", "number", "boolean", "json", "trace", "session")
POINTER_TYPES: frozenset[str] = frozenset({"trace", "session"})

JSON_SCHEMA_TYPES: Mapping[str, FieldType] = MappingProxyType(
    {
        "string": "string",
        "number": "number",
        "integer": "number",
        "boolean": "boolean",
        "object": "json",
        "array": "json",
        "trace": "trace",
        "session": "session",
    }
)


@dataclass(frozen=True)
class Schema:
    """The typed fields of a dataset, in declaration order.

    Build one with ``Schema({"text": "string", "label": "string"})`` or from a file's data
    with :func:`parse_schema`.

    Raises:
        StoreError: no field, a field name that is not a non-empty string, an unknown type,
            or more than one ``trace``/``session`` field.
    """

    fields: Mapping[str, FieldType] = field(default_factory=dict)

    def __post_init__(self) -> None:
        fields = dict(self.fields)
        _check_fields(fields)
        object.__setattr__(self, "fields", MappingProxyType(fields))

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __hash__(self) -> int:
        return hash(frozenset(self.fields.items()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return dict(self.fields) == dict(other.fields)

    @property
    def pointer_field(self) -> str | None:
        """The ``trace`` or ``session`` field, if the schema has one."""
        return next((n for n, t in self.fields.items() if t in POINTER_TYPES), None)

    def to_dict(self) -> dict[str, Any]:
        """The ``{"fields": {name: type}}`` form (what ``assay dataset schema`` prints)."""
        return {"fields": dict(self.fields)}

    def to_json_schema(self) -> dict[str, Any]:
        """The JSON-Schema form: ``{"type": "object", "properties": {name: {"type": t}}}``."""
        return {"type": "object", "properties": {n: {"type": t} for n, t in self.fields.items()}}


def _check_fields(fields: dict[Any, Any]) -> None:
    if not fields:
        raise StoreError("A dataset schema must declare at least one field.")
    for name, kind in fields.items():
        if not isinstance(name, str) or not name:
            raise StoreError(f"A field name must be a non-empty string, not {name!r}.")
        if kind not in FIELD_TYPES:
            raise StoreError(
                f"field '{name}' has unknown type {kind!r}; the types are "
                + ", ".join(FIELD_TYPES),
                hint=did_you_mean(str(kind), FIELD_TYPES),
            )
    pointers = [n for n, t in fields.items() if t in POINTER_TYPES]
    if len(pointers) > 1:
        raise StoreError(
            f"A dataset may declare at most one trace column; found {len(pointers)}: "
            f"{', '.join(pointers)}.",
            hint="a dataset has at most one trace or session field",
        )


def parse_schema(data: Any, *, source: YamlDocument | None = None) -> Schema:
    """Read either schema form (see the module docstring).

    Args:
        data: the parsed YAML/JSON document.
        source: the document it came from, so errors name its file and line.

    Raises:
        StoreError: with judgeval's message for bad JSON-Schema input, else naming the field.
    """
    file = source.path if source else None
    try:
        if isinstance(data, dict) and "fields" in data:
            return _fields_form(data, source)
        return _json_schema_form(data, source)
    except StoreError as exc:
        if exc.file is None and file is not None:
            raise StoreError(exc.message, file=file, line=exc.line, hint=exc.hint) from None
        raise


def _line(source: YamlDocument | None, *loc: str) -> int | None:
    return source.line_of(loc) if source else None


def _fields_form(data: dict[str, Any], source: YamlDocument | None) -> Schema:
    extra = sorted(set(data) - {"fields"}, key=str)
    if extra:
        raise StoreError(
            f"unknown key '{extra[0]}' next to 'fields'",
            line=_line(source, str(extra[0])),
            hint="a schema file holds only 'fields: {name: type}'",
        )
    fields = data["fields"]
    if not isinstance(fields, dict):
        raise StoreError(
            "'fields' must map each field name to its type, e.g. {text: string}",
            line=_line(source, "fields"),
        )
    for name, kind in fields.items():
        if kind not in FIELD_TYPES:
            raise StoreError(
                f"field '{name}' has unknown type {kind!r}; the types are "
                + ", ".join(FIELD_TYPES),
                line=_line(source, "fields", str(name)),
                hint=did_you_mean(str(kind), FIELD_TYPES),
            )
    return Schema(fields)


def _json_schema_form(data: Any, source: YamlDocument | None) -> Schema:
    if not isinstance(data, dict):
        raise StoreError("Dataset schema must be a JSON object (dict).")
    if data.get("type") != "object":
        raise StoreError(
            'Dataset schema must declare top-level type "object".', line=_line(source, "type")
        )
    properties = data.get("properties")
    if not isinstance(properties, dict):
        raise StoreError(
            "Dataset schema must declare a 'properties' object.",
            line=_line(source, "properties"),
        )
    pointers = [n for n, p in properties.items()
                if isinstance(p, dict) and isinstance(p.get("type"), str)
                and p["type"] in POINTER_TYPES]  # fmt: skip
    if len(pointers) > 1:
        raise StoreError(
            f"A dataset may declare at most one trace column; found {len(pointers)}: "
            f"{', '.join(pointers)}.",
            line=_line(source, "properties"),
        )
    _unenforced(data, properties, source)
    fields = {name: _property_type(name, prop, source) for name, prop in properties.items()}
    return Schema(fields)


ANNOTATIONS = frozenset({"title", "description", "$comment", "examples", "default", "format",
                         "deprecated", "readOnly", "writeOnly"})  # fmt: skip
"""JSON-Schema keywords that describe and constrain nothing (``format`` is an annotation in
draft 2020-12): accepted beside a property's ``type``."""


def _unenforced(
    data: dict[str, Any], properties: dict[str, Any], source: YamlDocument | None
) -> None:
    """A JSON-Schema keyword the store would not enforce is refused, not dropped: a dataset
    checks each field's type only (``enum``, ``minimum``, ``pattern``… would let the rows they
    forbid in), and every declared field is required."""
    top = set(data) - {"type", "properties", "required", "additionalProperties", "$schema", "$id",
                       *ANNOTATIONS}  # fmt: skip
    required = data.get("required", list(properties))
    if isinstance(required, list) and set(required) != set(properties):
        raise StoreError(
            "required must list every property: a dataset requires every declared field "
            f"(not required here: {', '.join(sorted(set(properties) - set(required)))})",
            line=_line(source, "required"),
            hint="list them all, or drop required; a value that may be missing is a json "
            "field holding null",
        )
    if data.get("additionalProperties", False) is not False:
        top.add("additionalProperties")  # a dataset refuses undeclared fields
    for name, prop in properties.items():
        extra = sorted(set(prop) - {"type", *ANNOTATIONS}) if isinstance(prop, dict) else []
        if extra:
            raise StoreError(
                f"property '{name}': {', '.join(extra)} would not be enforced (a dataset checks "
                "each field's type only), so rows it forbids would be stored",
                line=_line(source, "properties", name),
                hint="drop them, or check the rows before adding them",
            )
    if top:
        raise StoreError(
            f"{', '.join(sorted(top))} would not be enforced (a dataset checks each field's "
            "type, and refuses undeclared fields)",
            line=_line(source, sorted(top)[0]),
            hint="drop them, or check the rows before adding them",
        )


def _property_type(name: str, prop: Any, source: YamlDocument | None) -> FieldType:
    kind = prop.get("type") if isinstance(prop, dict) else None
    if isinstance(kind, str) and kind in JSON_SCHEMA_TYPES:
        return JSON_SCHEMA_TYPES[kind]
    if isinstance(kind, list):  # pydantic's and judgeval's optional field: [string, "null"]
        raise StoreError(
            f"property '{name}': a list of types ({', '.join(map(str, kind))}) would not be "
            "enforced: a dataset field has one type, and every field is required",
            line=_line(source, "properties", name),
            hint=f"give '{name}' one type; a value that may be null is a json field "
            "(type: object or array in this form, json in the short form)",
        )
    raise StoreError(
        f"property '{name}' must be an object with a 'type' among "
        + ", ".join(JSON_SCHEMA_TYPES)
        + f"; got {prop!r}",
        line=_line(source, "properties", name),
        hint=did_you_mean(str(kind), JSON_SCHEMA_TYPES) if isinstance(kind, str) else None,
    )


def load_schema(path: Path) -> Schema:
    """Read a schema file (YAML or JSON, either form).

    Raises:
        StoreError: the file is missing or not UTF-8, is not valid YAML/JSON (with its line),
            or does not declare a valid schema.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (FileNotFoundError, IsADirectoryError):
        raise StoreError("schema file not found", file=path) from None
    except UnicodeDecodeError as exc:
        raise StoreError(f"schema file is not UTF-8 text ({exc.reason})", file=path) from None
    try:
        document = parse_yaml(text, path=path)
    except UserError as exc:
        raise StoreError(exc.message, file=path, line=exc.line, hint=exc.hint) from None
    return parse_schema(document.data, source=document)


def schema_from_json(text: str) -> Schema:
    """Read the ``{"fields": ...}`` JSON the store keeps in its ``datasets`` table."""
    data = json.loads(text)
    return Schema(cast(dict[str, FieldType], data["fields"]))
