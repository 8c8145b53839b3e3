"""``${row.<field>}`` substitution (Coder Eval's rules) and placeholder look-alikes."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data.substitute import (
    PLACEHOLDER,
    PlaceholderKeyError,
    PlaceholderTypeError,
    fields_in,
    fields_in_tree,
    lookalikes,
    scalar_text,
    string_leaves,
    substitute,
    substitute_tree,
)

ROW: dict[str, Any] = {"id": "r1", "text": "hello", "n": 3, "label": None}


# --- what counts as a placeholder ---------------------------------------------------------


def test_placeholder_pattern_is_coder_evals() -> None:
    assert PLACEHOLDER.pattern == r"\$\{row\.([A-Za-z_][A-Za-z0-9_]*)\}"


def test_substitutes_every_placeholder() -> None:
    text = "Classify ${row.text} (row ${row.id}, n=${row.n}); again: ${row.text}"
    assert substitute(text, ROW) == "Classify hello (row r1, n=3); again: hello"


def test_adjacent_placeholders_and_placeholder_only_text() -> None:
    assert substitute("${row.id}${row.text}", ROW) == "r1hello"
    assert substitute("${row.text}", ROW) == "hello"
    assert substitute("", ROW) == ""


@pytest.mark.parametrize(
    "text",
    [
        "{row.text}",
        "{{row.text}}",
        "{{ row.text }}",
        "$row.text",
        "${ row.text }",
        "${row.text }",
        "${row[text]}",
        "${rows.text}",
        "${ROW.text}",
        "${Row.text}",
        "$(row.text)",
        "${row.}",
        "${row.1text}",
        "${row.text-x}",
        "${row.a.b}",
        "${text}",
        "$text",
        "plain text",
    ],
)
def test_only_the_exact_form_is_substituted(text: str) -> None:
    # None of these is a placeholder: each stays as written, and no error is raised even
    # though the row has no such field.
    assert substitute(text, {"id": "x"}) == text


def test_field_names_with_underscores_and_digits() -> None:
    row = {"_x": "a", "x_1": "b", "X9": "c"}
    assert substitute("${row._x}/${row.x_1}/${row.X9}", row) == "a/b/c"


def test_a_dollar_before_the_placeholder_is_kept() -> None:
    assert substitute("$${row.n} costs $5", ROW) == "$3 costs $5"


# --- values -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        ("", ""),
        ("007", "007"),
        (0, "0"),
        (-4, "-4"),
        (2**70, "1180591620717411303424"),
        (1.5, "1.5"),
        (1.0, "1.0"),
        (1e-7, "1e-07"),
        (True, "True"),
        (False, "False"),
        ("café ☕ \u2028", "café ☕ \u2028"),
    ],
)
def test_scalar_values_go_through_str_and_null_is_empty(value: Any, text: str) -> None:
    row = {"v": value}
    assert scalar_text("v", row) == text
    assert substitute("[${row.v}]", row) == f"[{text}]"


@pytest.mark.parametrize(("value", "kind"), [([1, 2], "list"), ([], "list"), ({"a": 1}, "dict")])
def test_list_or_dict_value_is_an_error(value: Any, kind: str) -> None:
    row = {"id": "r1", "foo": value}
    with pytest.raises(PlaceholderTypeError) as caught:
        substitute("x ${row.foo} y", row)
    message = f"${{row.foo}}: value must be a scalar (str/int/float/bool/None), got {kind}"
    assert str(caught.value) == message
    assert isinstance(caught.value, TypeError)
    with pytest.raises(PlaceholderTypeError, match=re.escape(message)):
        scalar_text("foo", row)


def test_missing_key_is_an_error_listing_the_sorted_keys() -> None:
    row = {"text": "t", "id": "r1", "Label": "x", "_z": 1}
    with pytest.raises(PlaceholderKeyError) as caught:
        substitute("${row.text} ${row.foo}", row)
    message = "${row.foo}: key not found (available: ['Label', '_z', 'id', 'text'])"
    assert str(caught.value) == message  # not wrapped in quotes like a plain KeyError
    assert caught.value.args == (message,)
    assert isinstance(caught.value, KeyError)


def test_missing_key_in_an_empty_row() -> None:
    with pytest.raises(PlaceholderKeyError) as caught:
        substitute("${row.foo}", {})
    assert str(caught.value) == "${row.foo}: key not found (available: [])"


def test_a_key_with_a_null_value_is_present_not_missing() -> None:
    assert substitute("<${row.label}>", ROW) == "<>"


# --- one pass -------------------------------------------------------------------------------


def test_a_value_that_holds_a_placeholder_is_inserted_literally() -> None:
    row = {"a": "${row.b}", "b": "B", "self": "${row.self}", "gone": "${row.missing}"}
    assert substitute("${row.a}", row) == "${row.b}"
    assert substitute("${row.self}!", row) == "${row.self}!"
    # The inserted text is never looked at again, so a missing field inside it is no error.
    assert substitute("${row.gone} ${row.b}", row) == "${row.missing} B"


def test_a_value_that_completes_a_placeholder_is_not_substituted() -> None:
    row = {"open": "${row.", "name": "b}", "b": "B"}
    assert substitute("${row.open}b}", row) == "${row.b}"
    assert substitute("${row.open}${row.name}", row) == "${row.b}"


SAFE_TEXT = st.text(alphabet=st.characters(blacklist_characters="$"), max_size=8)
FIELD = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True)
VALUE = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=10)
    | st.builds(lambda f: "${row." + f + "}", FIELD)
)


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(st.tuples(SAFE_TEXT, FIELD), max_size=6),
    tail=SAFE_TEXT,
    values=st.dictionaries(FIELD, VALUE, max_size=8),
)
def test_substitution_is_one_pass_concatenation(
    parts: list[tuple[str, str]], tail: str, values: dict[str, Any]
) -> None:
    row = dict(values)
    for _, name in parts:
        row.setdefault(name, "v_" + name)
    template = "".join(f"{text}${{row.{name}}}" for text, name in parts) + tail
    expected = "".join(text + ("" if row[name] is None else str(row[name])) for text, name in parts)
    assert substitute(template, row) == expected + tail
    assert fields_in(template) == {name for _, name in parts}


# --- trees ----------------------------------------------------------------------------------


def test_substitute_tree_walks_dicts_and_lists_at_any_depth() -> None:
    tree = {
        "type": "classification_match",
        "expected_label": "${row.text}",
        "allowed_labels": ["${row.text}", "other", ["${row.id}", {"deep": "${row.n}!"}]],
        "nested": {"a": {"b": {"c": ["x ${row.id} y"]}}},
        "weight": 1.5,
        "count": 3,
        "flag": True,
        "nothing": None,
        "${row.id}": "keys are not leaves",
    }
    original = copy.deepcopy(tree)
    result = substitute_tree(tree, ROW)
    assert result == {
        "type": "classification_match",
        "expected_label": "hello",
        "allowed_labels": ["hello", "other", ["r1", {"deep": "3!"}]],
        "nested": {"a": {"b": {"c": ["x r1 y"]}}},
        "weight": 1.5,
        "count": 3,
        "flag": True,
        "nothing": None,
        "${row.id}": "keys are not leaves",
    }
    assert tree == original  # the input is not modified
    assert result["weight"] is tree["weight"]
    assert result["nothing"] is None


@pytest.mark.parametrize("leaf", [None, 0, 2.5, True, b"${row.id}", ("${row.id}",)])
def test_substitute_tree_leaves_non_strings_alone(leaf: Any) -> None:
    assert substitute_tree(leaf, ROW) is leaf
    assert substitute_tree({"x": [leaf]}, ROW) == {"x": [leaf]}


def test_substitute_tree_errors_like_substitute() -> None:
    with pytest.raises(PlaceholderKeyError, match=re.escape("${row.nope}: key not found")):
        substitute_tree({"a": [{"b": "${row.nope}"}]}, ROW)
    with pytest.raises(PlaceholderTypeError, match="got list"):
        substitute_tree(["${row.xs}"], {"xs": [1]})


def test_string_leaves_and_fields_in_tree() -> None:
    tree = {"a": "${row.x}", "b": [1, "${row.y} and ${row.x}", {"c": None, "d": "plain"}]}
    assert string_leaves(tree) == ["${row.x}", "${row.y} and ${row.x}", "plain"]
    assert fields_in_tree(tree) == {"x", "y"}
    assert fields_in_tree({"${row.key}": 1}) == set()
    assert string_leaves(3) == []


# --- look-alikes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "{row.text}",
        "{{row.text}}",
        "{{ row.text }}",
        "$row.text",
        "${ row.text }",
        "${row.text }",
        "${ row.text}",
        "${row[text]}",
        "${rows.text}",
        "$(row.text)",
    ],
)
def test_lookalikes_are_found(text: str) -> None:
    assert lookalikes(f"Classify: {text}.") == [text]


def test_a_real_placeholder_is_not_a_lookalike() -> None:
    assert lookalikes("${row.text}") == []
    assert lookalikes("a ${row.text} b ${row.id}${row.n} c") == []
    assert lookalikes("{{${row.text}}}") == []
    assert lookalikes("no placeholders at all {x} $y {{z}}") == []


def test_lookalikes_next_to_real_placeholders() -> None:
    text = "${row.text} vs {row.text} vs {{ row.label }} vs $row.id vs ${row.id}"
    assert lookalikes(text) == ["{{ row.label }}", "{row.text}", "$row.id"]


def test_each_lookalike_is_reported_once() -> None:
    assert lookalikes("{row.a} {row.a} {row.b}") == ["{row.a}", "{row.b}"]
