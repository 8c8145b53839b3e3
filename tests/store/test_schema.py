"""Schemas (both file forms, judgeval's messages), inference, value rules, text conversion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.errors import StoreError
from assay.store import Schema, SourceRow, infer_schema, load_schema, parse_schema
from assay.store.values import (
    EMPTY_HASH,
    combine,
    example_digest,
    from_text,
    to_text,
    type_problem,
)
from tests.helpers import write

# --- the Schema object -------------------------------------------------------------------


def test_schema_keeps_declaration_order_and_compares_by_content() -> None:
    schema = Schema({"text": "string", "score": "number", "ok": "boolean"})
    assert list(schema) == ["text", "score", "ok"]
    assert schema == Schema({"ok": "boolean", "text": "string", "score": "number"})
    assert schema != Schema({"text": "string"})
    assert schema.to_dict() == {"fields": {"text": "string", "score": "number", "ok": "boolean"}}
    assert schema.pointer_field is None
    assert Schema({"t": "trace", "x": "json"}).pointer_field == "t"


def test_schema_refuses_no_field_unknown_type_and_two_pointers() -> None:
    with pytest.raises(StoreError, match="must declare at least one field"):
        Schema({})
    with pytest.raises(StoreError) as caught:
        Schema({"text": "strng"})  # type: ignore[dict-item]
    assert "field 'text' has unknown type 'strng'" in caught.value.message
    assert caught.value.hint == "did you mean 'string'?"
    with pytest.raises(StoreError) as caught:
        Schema({"a": "trace", "b": "session"})
    assert caught.value.message == "A dataset may declare at most one trace column; found 2: a, b."


# --- the two file forms ----------------------------------------------------------------


def test_fields_form_and_json_schema_form_give_the_same_schema() -> None:
    fields = parse_schema({"fields": {"q": "string", "n": "number", "m": "json", "t": "trace"}})
    json_schema = parse_schema(
        {
            "type": "object",
            "properties": {
                "q": {"type": "string"},
                "n": {"type": "integer"},
                "m": {"type": "object"},
                "t": {"type": "trace"},
            },
        }
    )
    assert fields == json_schema
    mapped = parse_schema(
        {
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "b": {"type": "array"},
                "c": {"type": "boolean"},
                "s": {"type": "session"},
            },
        }
    )
    assert dict(mapped.fields) == {"a": "number", "b": "json", "c": "boolean", "s": "session"}


NOT_DICT = "Dataset schema must be a JSON object (dict)."
NOT_OBJECT = 'Dataset schema must declare top-level type "object".'
NO_PROPERTIES = "Dataset schema must declare a 'properties' object."
THREE_TRACES = {"a": {"type": "trace"}, "b": {"type": "trace"}, "c": {"type": "session"}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (["text"], NOT_DICT),
        ("fields", NOT_DICT),
        ({"properties": {}}, NOT_OBJECT),
        ({"type": "array", "properties": {}}, NOT_OBJECT),
        ({"type": "object"}, NO_PROPERTIES),
        ({"type": "object", "properties": []}, NO_PROPERTIES),
        (
            {"type": "object", "properties": THREE_TRACES},
            "A dataset may declare at most one trace column; found 3: a, b, c.",
        ),
    ],
)
def test_json_schema_errors_have_judgevals_messages(data: Any, message: str) -> None:
    with pytest.raises(StoreError) as caught:
        parse_schema(data)
    assert caught.value.message == message


def test_json_schema_property_without_known_type_names_it() -> None:
    with pytest.raises(StoreError) as caught:
        parse_schema({"type": "object", "properties": {"a": {"type": "strin"}}})
    assert caught.value.message.startswith("property 'a' must be an object with a 'type' among")
    assert caught.value.hint == "did you mean 'string'?"
    with pytest.raises(StoreError, match="property 'b' must be an object"):
        parse_schema({"type": "object", "properties": {"b": "string"}})


def test_json_schema_keywords_the_store_would_not_enforce_are_refused(tmp_path: Path) -> None:
    described = {"type": "object", "title": "rows", "required": ["text", "n"],
                 "additionalProperties": False,
                 "properties": {"text": {"type": "string", "description": "the review"},
                                "n": {"type": "integer", "format": "int64"}}}  # fmt: skip
    assert dict(parse_schema(described).fields) == {"text": "string", "n": "number"}
    path = write(tmp_path / "s.yaml", "type: object\nproperties:\n  text: {type: string}\n"
                 "  label: {type: string, enum: [pos, neg]}\n")  # fmt: skip
    with pytest.raises(StoreError) as enum:
        load_schema(path)
    assert enum.value.message.startswith("property 'label': enum would not be enforced")
    assert enum.value.line == 4
    some = {"type": "object", "required": ["text"],
            "properties": {"text": {"type": "string"}, "n": {"type": "number"}}}  # fmt: skip
    with pytest.raises(StoreError, match=r"required must list every property.*here: n\)"):
        parse_schema(some)
    open_ended = {"type": "object", "properties": {"t": {"type": "string"}},
                  "additionalProperties": True, "minProperties": 1}  # fmt: skip
    with pytest.raises(StoreError, match=r"^additionalProperties, minProperties would not be"):
        parse_schema(open_ended)
    nullable = write(tmp_path / "n.yaml", 'type: object\nproperties:\n'
                     '  text: {type: [string, "null"]}\n  trace: {type: trace}\n')  # fmt: skip
    with pytest.raises(StoreError) as listed:  # pydantic's optional field: a crash before
        load_schema(nullable)
    assert listed.value.message.startswith("property 'text': a list of types (string, null)")
    assert listed.value.line == 3 and "json field" in (listed.value.hint or "")


def test_schema_file_yaml_and_json_with_lines(tmp_path: Path) -> None:
    yaml_file = write(tmp_path / "s.yaml", "fields:\n  text: string\n  label: string\n")
    assert dict(load_schema(yaml_file).fields) == {"text": "string", "label": "string"}
    json_file = write(
        tmp_path / "s.json",
        json.dumps({"type": "object", "properties": {"x": {"type": "integer"}}}),
    )
    assert dict(load_schema(json_file).fields) == {"x": "number"}
    bad = write(tmp_path / "bad.yaml", "fields:\n  text: string\n  label: lable\n")
    with pytest.raises(StoreError) as caught:
        load_schema(bad)
    assert caught.value.file == str(bad) and caught.value.line == 3
    assert "field 'label' has unknown type 'lable'" in caught.value.message
    extra = write(tmp_path / "extra.yaml", "fields: {a: string}\nid_field: id\n")
    with pytest.raises(StoreError, match="unknown key 'id_field' next to 'fields'"):
        load_schema(extra)
    with pytest.raises(StoreError, match="schema file not found"):
        load_schema(tmp_path / "missing.yaml")
    broken = write(tmp_path / "broken.yaml", "fields: {a: string\n")
    with pytest.raises(StoreError, match="invalid YAML"):
        load_schema(broken)
    two = write(tmp_path / "two.yaml", "type: object\nproperties:\n  a: {type: trace}\n"
                "  b: {type: session}\n")  # fmt: skip
    with pytest.raises(StoreError) as caught:
        load_schema(two)
    assert caught.value.message == "A dataset may declare at most one trace column; found 2: a, b."
    assert caught.value.line == 2


# --- inference -------------------------------------------------------------------------


def rows(*data: dict[str, Any]) -> list[SourceRow]:
    return [SourceRow(d, "d.jsonl", i) for i, d in enumerate(data, start=1)]


def test_inference_maps_python_types_and_skips_the_id_field() -> None:
    schema = infer_schema(
        rows(
            {"id": "a", "s": "x", "b": True, "i": 1, "f": 0.5, "o": {"k": 1}, "l": [], "n": None},
            {"id": "b", "s": "", "b": False, "i": 2.5, "f": 3, "o": [1], "l": {}, "n": {"z": 0}},
        )
    )
    assert dict(schema.fields) == {"s": "string", "b": "boolean", "i": "number", "f": "number",
                                   "o": "json", "l": "json", "n": "json"}  # fmt: skip
    assert list(infer_schema(rows({"key": 1, "v": "x"}), id_field="key")) == ["v"]


def test_inference_without_examples_uses_judgevals_message() -> None:
    with pytest.raises(StoreError) as caught:
        infer_schema([], source="empty.jsonl")
    assert caught.value.message.startswith(
        "Cannot infer a dataset schema without examples. Pass an explicit `schema`"
    )
    assert caught.value.file == "empty.jsonl"


def test_inference_with_different_fields_names_line_and_fields() -> None:
    with pytest.raises(StoreError) as caught:
        infer_schema(rows({"a": 1, "b": 2}, {"a": 1, "b": 2}, {"a": 1, "c": 3}))
    assert caught.value.message == (
        "d.jsonl:3: All examples must share the same set of fields (dataset schemas require all "
        "declared properties). fields present in earlier examples but missing here: ['b']; "
        "fields present here but missing in earlier examples: ['c']. Pass an explicit `schema` "
        "or make all examples homogeneous."
    )
    assert caught.value.line == 3


def test_inference_refuses_mixed_types_and_nulls_outside_json() -> None:
    with pytest.raises(StoreError) as caught:
        infer_schema(rows({"a": "1"}, {"a": "2"}, {"a": 3}))
    assert caught.value.message.startswith(
        "d.jsonl:3: field 'a' is number here but string at d.jsonl:1; a field has one type"
    )
    with pytest.raises(StoreError, match=r"field 'a' is boolean here but number at d\.jsonl:1"):
        infer_schema(rows({"a": 1}, {"a": True}))
    with pytest.raises(StoreError) as caught:
        infer_schema(rows({"a": None, "b": 1}, {"a": None, "b": 2}))
    assert caught.value.message.startswith(
        "field 'a' is null in every example (first at d.jsonl:1)"
    )
    with pytest.raises(StoreError) as caught:
        infer_schema(rows({"a": "x"}, {"a": None}))
    assert caught.value.message == (
        "field 'a' is null at d.jsonl:2 but string at d.jsonl:1; only json fields may be null"
    )


# --- values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "value", "problem"),
    [
        ("string", "", None),
        ("string", "007", None),
        ("string", None, "expected a string, got null"),
        ("string", 7, "expected a string, got a number (7)"),
        ("number", 7, None),
        ("number", -0.5, None),
        ("number", True, "expected a number, got a boolean (true)"),
        ("number", "7", 'expected a number, got a string ("7")'),
        ("number", float("nan"), "expected a finite number, got nan"),
        ("number", float("-inf"), "expected a finite number, got -inf"),
        ("boolean", False, None),
        ("boolean", 0, "expected a boolean, got a number (0)"),
        ("json", None, None),
        ("json", {"b": [1, {"c": None}], "a": "x"}, None),
        ("json", {"a": [float("nan")]}, "expected a JSON value: .a[0] is nan"),
        ("json", {1: "x"}, "expected a JSON value: the object has a non-string key 1"),
        ("json", (1, 2), "expected a JSON value: the value is a Python tuple, not JSON"),
    ],
)
def test_type_problems(kind: str, value: Any, problem: str | None) -> None:
    assert type_problem(kind, value) == problem


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        ("string", " 007\r\n", " 007\r\n"),
        ("number", "7", 7),
        ("number", "-12", -12),
        ("number", "7.0", 7.0),
        ("number", "1e-3", 0.001),
        ("number", "123456789012345678901234567890", 123456789012345678901234567890),
        ("boolean", "true", True),
        ("boolean", "FALSE", False),
        ("json", '{"b": 1, "a": [null]}', {"b": 1, "a": [None]}),
        ("json", "null", None),
        ("trace", "5b8efff798038103d269b633813fc60c", "5b8efff798038103d269b633813fc60c"),
        ("trace", '{"resourceSpans": []}', {"resourceSpans": []}),
    ],
)
def test_text_cells_convert_by_type_and_back(kind: str, text: str, value: Any) -> None:
    converted = from_text(kind, text)
    assert converted == value and type(converted) is type(value)
    if kind == "json":
        assert list(converted or {}) == list(value or {})  # key order kept
    if kind != "boolean" and text.strip() == text and "e" not in text:
        assert from_text(kind, to_text(kind, converted)) == value


def test_an_empty_cell_of_a_json_field_is_null() -> None:
    assert from_text("json", "") is None and from_text("json", "  ") is None
    assert from_text("json", "null") is None and from_text("json", '""') == ""


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        ("number", "007", 'expected a number, got the text "007"'),
        ("number", "", 'expected a number, got the text ""'),
        ("number", "NaN", 'expected a number, got the text "NaN"'),
        ("number", "1e999", 'expected a number, got the text "1e999"'),
        ("boolean", "yes", 'expected a boolean (true or false), got the text "yes"'),
        ("json", "{'a': 1}", "expected JSON text: Expecting property name enclosed in double"),
        ("json", '{"a": 1, "a": 2}', "expected JSON text: key 'a' appears twice in one object"),
    ],
)
def test_text_cells_that_do_not_convert(kind: str, text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        from_text(kind, text)
    assert str(caught.value).startswith(message)


# --- the content hash ------------------------------------------------------------------


def test_hash_is_order_independent_and_incremental() -> None:
    a = example_digest("a", {"x": 1})
    b = example_digest("b", {"x": 2})
    c = example_digest("c", {"x": 3})
    ab = combine(EMPTY_HASH, add=a + b)
    assert ab == combine(EMPTY_HASH, add=b + a) == combine(combine(EMPTY_HASH, add=b), add=a)
    assert combine(combine(ab, add=c), remove=c) == ab
    assert combine(ab, remove=a + b) == EMPTY_HASH
    assert len(ab) == 64 and int(ab, 16) == (a + b) % 2**256


def test_digest_covers_id_and_exact_values_but_not_key_order() -> None:
    base = example_digest("a", {"x": 1, "y": "z"})
    assert base == example_digest("a", {"y": "z", "x": 1})
    assert base != example_digest("b", {"x": 1, "y": "z"})
    assert base != example_digest("a", {"x": 1.0, "y": "z"})
    assert base != example_digest("a", {"x": 1, "y": "z "})
    assert example_digest("a", {"s": "é"}) != example_digest("a", {"s": "e\u0301"})
