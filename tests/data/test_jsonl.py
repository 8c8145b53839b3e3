"""The strict JSONL reader: line splitting, line numbers, exact values, exact messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data.jsonl import iter_jsonl, parse_json_strict
from assay.errors import DatasetError, UserError

FIXTURES = Path(__file__).parent / "fixtures"
MBPP = FIXTURES / "mbpp_crlf_in_code.jsonl"


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def load(path: Path, **kwargs: Any) -> list[tuple[int, dict[str, Any]]]:
    return list(iter_jsonl(path, **kwargs))


def error_of(path: Path, **kwargs: Any) -> DatasetError:
    with pytest.raises(DatasetError) as caught:
        load(path, **kwargs)
    return caught.value


# --- line splitting and line numbers -------------------------------------------------------


def test_blank_and_whitespace_lines_are_skipped_with_physical_line_numbers(
    tmp_path: Path,
) -> None:
    data = b'\n   \n{"a": 1}\n\t \n\r\n{"a": 2}\n\n \t\r\n{"a": 3}\n\n'
    rows = load(write_bytes(tmp_path / "d.jsonl", data))
    assert rows == [(3, {"a": 1}), (6, {"a": 2}), (9, {"a": 3})]


def test_error_after_blank_lines_reports_the_physical_line(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'\n\n{"a": 1}\n   \n\n{"a": }\n')
    error = error_of(path)
    assert error.message == f"Dataset {path}: invalid JSON on line 6: Expecting value (column 7)"
    assert error.line == 6
    assert error.file == str(path)


def test_file_without_final_newline_loads_its_last_line(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"a": 1}\n{"a": 2}')
    assert load(path) == [(1, {"a": 1}), (2, {"a": 2})]


def test_last_line_without_newline_and_with_cr_loads(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"a": 1}\r\n{"a": 2}\r')
    assert load(path) == [(1, {"a": 1}), (2, {"a": 2})]


def test_empty_and_blank_only_files_give_no_rows(tmp_path: Path) -> None:
    assert load(write_bytes(tmp_path / "empty.jsonl", b"")) == []
    assert load(write_bytes(tmp_path / "blank.jsonl", b"\n \n\t\r\n")) == []


def test_leading_utf8_bom_is_stripped(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'\xef\xbb\xbf{"id": "x"}\n{"id": "y"}\n')
    rows = load(path)
    assert rows == [(1, {"id": "x"}), (2, {"id": "y"})]
    assert "\ufeffid" not in rows[0][1]


def test_bom_alone_on_the_first_line_counts_as_a_blank_line(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'\xef\xbb\xbf\n{"id": "x"}\n')
    assert load(path) == [(2, {"id": "x"})]


def test_bom_after_the_first_line_is_not_stripped(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"id": "x"}\n\xef\xbb\xbf{"id": "y"}\n')
    error = error_of(path)
    assert error.message.startswith(f"Dataset {path}: invalid JSON on line 2: ")


def test_crlf_line_ends_are_removed(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"a": "x"}\r\n{"a": "y"}\r\n')
    assert load(path) == [(1, {"a": "x"}), (2, {"a": "y"})]


def test_escaped_crlf_inside_a_string_survives_exactly(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"code": "a\\r\\nb\\r\\n"}\r\n{"code": "\\r"}\n')
    assert load(path) == [(1, {"code": "a\r\nb\r\n"}), (2, {"code": "\r"})]


@pytest.mark.parametrize(
    ("char", "encoded"),
    [("\u2028", b"\xe2\x80\xa8"), ("\u2029", b"\xe2\x80\xa9"), ("\x85", b"\xc2\x85")],
    ids=["U+2028", "U+2029", "U+0085"],
)
def test_unicode_line_separators_inside_strings_are_not_line_breaks(
    tmp_path: Path, char: str, encoded: bytes
) -> None:
    text = f"before{char}after"
    # str.splitlines would cut the record here; the reader must not.
    assert len(text.splitlines()) == 2
    path = write_bytes(tmp_path / "d.jsonl", b'{"t": "before' + encoded + b'after"}\n{"t": "z"}\n')
    assert load(path) == [(1, {"t": text}), (2, {"t": "z"})]


def test_all_three_separators_in_one_row_with_crlf(tmp_path: Path) -> None:
    data = '{"t": "a\u2028b\u2029c\x85d"}\r\n{"t": "e"}\r\n'.encode()
    path = write_bytes(tmp_path / "d.jsonl", data)
    assert load(path) == [(1, {"t": "a\u2028b\u2029c\x85d"}), (2, {"t": "e"})]


def test_a_raw_carriage_return_is_not_a_line_break(tmp_path: Path) -> None:
    # Old-Mac CR-only files are one long line, and a raw CR inside a string is invalid JSON.
    path = write_bytes(tmp_path / "d.jsonl", b'{"a": 1}\r{"a": 2}\r\n')
    assert error_of(path).message.startswith(f"Dataset {path}: invalid JSON on line 1: ")


def test_reading_is_lazy_rows_before_a_bad_line_are_yielded(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"a": 1}\n{"a": 2}\nnot json\n')
    rows = iter_jsonl(path)
    assert next(rows) == (1, {"a": 1})
    assert next(rows) == (2, {"a": 2})
    with pytest.raises(DatasetError, match="line 3"):
        next(rows)


# --- the real data: MBPP's code strings hold escaped CRLF ---------------------------------


def test_mbpp_rows_keep_their_escaped_crlf(tmp_path: Path) -> None:
    raw_lines = MBPP.read_bytes().split(b"\n")[:-1]
    expected = [json.loads(line) for line in raw_lines]
    rows = load(MBPP)
    assert [number for number, _ in rows] == [1, 2, 3]
    assert [row for _, row in rows] == expected
    assert [row["task_id"] for _, row in rows] == [1, 2, 3]
    for _, row in rows:
        assert "\r\n" in row["code"]
    assert rows[0][1]["code"].startswith("R = 3\r\nC = 3\r\ndef min_cost(cost, m, n): \r\n")


def test_mbpp_rows_are_identical_when_the_file_itself_has_crlf_ends(tmp_path: Path) -> None:
    crlf = write_bytes(tmp_path / "mbpp_crlf.jsonl", MBPP.read_bytes().replace(b"\n", b"\r\n"))
    assert load(crlf) == load(MBPP)


# --- values round-trip exactly --------------------------------------------------------------


def test_values_round_trip_exactly(tmp_path: Path) -> None:
    row = {
        "id": "007",
        "empty": "",
        "space": " ",
        "zero": 0,
        "neg": -12,
        "big": 2**64 + 1,
        "huge": 10**40 + 7,
        "neg_big": -(2**70),
        "float": 0.1,
        "exp": 1e-7,
        "one_point_zero": 1.0,
        "true": True,
        "false": False,
        "null": None,
        "list": [1, "2", None, [], {}],
        "nested": {"a": {"b": ["c"]}},
        "unicode": "café ☕ 𝔘𝔫𝔦 שלום e\u0301 \u200b",
        "escapes": 'tab\tquote"back\\slash\nnl\u0000nul',
        "numeric_text": "1.50",
        "bool_text": "true",
        "null_text": "null",
        "NaN_text": "NaN",
    }
    for ensure_ascii in (True, False):
        line = json.dumps(row, ensure_ascii=ensure_ascii).encode()
        ((_, loaded),) = load(write_bytes(tmp_path / "d.jsonl", line + b"\n"))
        assert loaded == row
        assert type(loaded["id"]) is str
        assert type(loaded["big"]) is int
        assert type(loaded["one_point_zero"]) is float
        assert type(loaded["true"]) is bool
        assert loaded["unicode"] == row["unicode"]  # no normalisation: e + U+0301 stays two


def test_big_integer_literals_are_exact(tmp_path: Path) -> None:
    digits = "123456789012345678901234567890123456789"
    path = write_bytes(tmp_path / "d.jsonl", f'{{"n": {digits}, "m": -{digits}}}\n'.encode())
    ((_, row),) = load(path)
    assert row == {"n": int(digits), "m": -int(digits)}
    assert str(row["n"]) == digits


def test_key_order_is_kept(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"z": 1, "a": 2, "m": 3}\n')
    ((_, row),) = load(path)
    assert list(row) == ["z", "a", "m"]


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(st.dictionaries(st.text(), JSON_VALUES, max_size=5), max_size=6),
    blanks=st.lists(st.sampled_from(["", " ", "\t", "\r", " \t\r"]), max_size=6),
    crlf=st.booleans(),
    ensure_ascii=st.booleans(),
    final_newline=st.booleans(),
)
def test_any_json_objects_round_trip_with_their_line_numbers(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[dict[str, Any]],
    blanks: list[str],
    crlf: bool,
    ensure_ascii: bool,
    final_newline: bool,
) -> None:
    lines: list[str] = []
    expected: list[tuple[int, dict[str, Any]]] = []
    for position, row in enumerate(rows):
        if position < len(blanks):
            lines.append(blanks[position])
        lines.append(json.dumps(row, ensure_ascii=ensure_ascii))
        expected.append((len(lines), row))
    end = "\r\n" if crlf else "\n"
    text = end.join(lines) + (end if final_newline else "")
    path = tmp_path_factory.mktemp("jsonl") / "d.jsonl"
    path.write_bytes(text.encode("utf-8"))
    assert load(path) == expected


# --- strictness ---------------------------------------------------------------------------


def test_repeated_key_is_an_error_naming_line_and_key(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"id": "a"}\n{"id": "b", "text": 1, "id": "c"}\n')
    error = error_of(path)
    assert error.message == f"Dataset {path}: key 'id' appears twice in the object on line 2"
    assert error.line == 2
    assert error.hint == "a JSON object may name each key once"


def test_repeated_key_in_a_nested_object_is_an_error(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"meta": {"k": 1, "k": 1}}\n')
    assert error_of(path).message == (
        f"Dataset {path}: key 'k' appears twice in the object on line 1"
    )


def test_a_key_written_with_an_escape_is_the_same_key(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"ab": 1, "\\u0061b": 2}\n')
    assert "key 'ab' appears twice" in error_of(path).message


def test_the_same_key_in_sibling_objects_is_fine(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 3}]}\n')
    assert load(path) == [(1, {"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 3}]})]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_literals_are_errors(tmp_path: Path, literal: str) -> None:
    path = write_bytes(tmp_path / "d.jsonl", f'{{"ok": 1}}\n{{"x": [1, {literal}]}}\n'.encode())
    error = error_of(path)
    assert error.message == (
        f"Dataset {path}: invalid JSON on line 2: "
        f"{literal} is not valid JSON; write null or a string instead"
    )
    assert error.line == 2


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1.5e309"])
def test_a_number_that_overflows_to_infinity_is_an_error(tmp_path: Path, number: str) -> None:
    path = write_bytes(tmp_path / "d.jsonl", f'{{"x": {number}}}\n'.encode())
    error = error_of(path)
    assert error.message == (
        f"Dataset {path}: invalid JSON on line 1: "
        f"the number {number} is too large for a float; write it as a string"
    )


def test_large_finite_and_tiny_floats_load(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"max": 1.7976931348623157e308, "tiny": 1e-400}\n')
    assert load(path) == [(1, {"max": 1.7976931348623157e308, "tiny": 0.0})]


def test_nan_and_infinity_as_strings_are_fine(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"x": "NaN", "y": "Infinity"}\n')
    assert load(path) == [(1, {"x": "NaN", "y": "Infinity"})]


def test_parse_json_strict_applies_the_same_rules() -> None:
    assert parse_json_strict('{"a": [1, "b"]}') == {"a": [1, "b"]}
    assert parse_json_strict("[1]") == [1]
    for text in ('{"a": 1, "a": 2}', "[NaN]", "[1e999]", "{", "{'a': 1}"):
        with pytest.raises(ValueError):
            parse_json_strict(text)


# --- message shapes (Coder Eval's, reference/originals.md §1.1) ---------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"{", "Expecting property name enclosed in double quotes (column 2)"),
        (b"{'a': 1}", "Expecting property name enclosed in double quotes (column 2)"),
        (b'{"a": 1} {"b": 2}', "Extra data (column 10)"),
        (b"not json", "Expecting value (column 1)"),
        (b'{"a": "tab\there"}', "Invalid control character at (column 11)"),
    ],
)
def test_invalid_json_message(tmp_path: Path, line: bytes, reason: str) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"ok": true}\n' + line + b"\n")
    error = error_of(path)
    assert error.message == f"Dataset {path}: invalid JSON on line 2: {reason}"
    assert error.line == 2


def test_invalid_json_message_keeps_the_prefix_whatever_the_reason(tmp_path: Path) -> None:
    # The reason text of a trailing comma differs between Python versions.
    path = write_bytes(tmp_path / "d.jsonl", b'{"a": 1,}\n')
    assert error_of(path).message.startswith(f"Dataset {path}: invalid JSON on line 1: ")


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (b"[1, 2]", "[1, 2]"),
        (b'"text"', "'text'"),
        (b"42", "42"),
        (b"null", "None"),
        (b"true", "True"),
        (b"[]", "[]"),
    ],
)
def test_a_line_that_is_not_an_object_is_an_error(tmp_path: Path, line: bytes, shown: str) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b"\n" + line + b"\n")
    error = error_of(path)
    assert error.message == f"Dataset {path}: row on line 2 is not a JSON object: {shown}"
    assert error.line == 2


def test_a_long_non_object_is_shortened_in_the_message(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", json.dumps(list(range(200))).encode() + b"\n")
    message = error_of(path).message
    prefix = f"Dataset {path}: row on line 1 is not a JSON object: "
    assert message.startswith(prefix + "[0, 1, 2, ")
    shown = message.removeprefix(prefix)
    assert 110 < len(shown) <= 120  # cut at a space: never inside a key
    assert shown.endswith(", ...")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    error = error_of(path)
    assert error.message == f"Dataset file not found: {path}"
    assert isinstance(error, UserError)


def test_display_name_is_used_in_messages(tmp_path: Path) -> None:
    assert error_of(tmp_path / "nope.jsonl", display="data/nope.jsonl").message == (
        "Dataset file not found: data/nope.jsonl"
    )
    path = write_bytes(tmp_path / "d.jsonl", b"[1]\n")
    error = error_of(path, display="data/d.jsonl")
    assert error.message == "Dataset data/d.jsonl: row on line 1 is not a JSON object: [1]"
    assert error.file == "data/d.jsonl"


def test_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    error = error_of(tmp_path)
    assert error.message == f"Dataset path is a directory, not a file: {tmp_path}"


def test_invalid_utf8_names_the_line_and_byte(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"a": "ok"}\n\n{"a": "caf\xe9"}\n')
    error = error_of(path)
    assert error.message == (
        f"Dataset {path}: invalid JSON on line 3: not UTF-8 text (byte 11 of the line)"
    )
    assert error.line == 3


def test_invalid_utf8_far_into_a_file_names_its_line(tmp_path: Path) -> None:
    data = b'{"a": "row"}\n' * 5000 + b'{"a": "\xff"}\n'
    path = write_bytes(tmp_path / "d.jsonl", data)
    assert error_of(path).line == 5001


def test_a_truncated_utf8_sequence_at_the_end_is_an_error(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.jsonl", b'{"a": "\xe2\x80"}')
    assert "not UTF-8 text" in error_of(path).message


def test_rows_are_kept_compact_and_read_back_exactly() -> None:
    import datetime

    from assay.data.rows import RowList, pack_row

    rows = [{"id": "a", "n": 1.5, "t": "é", "nested": {"k": [1, None, True]}},
            {"id": "b", "when": datetime.date(2024, 1, 2)},  # YAML dates: JSON cannot say
            {"id": "c", 1: "a number as a key"}]  # fmt: skip
    kept = RowList(rows)
    assert list(kept) == rows and kept[1]["when"] == datetime.date(2024, 1, 2)
    assert isinstance(pack_row(rows[0]), bytes)
    assert isinstance(pack_row(rows[1]), dict) and isinstance(pack_row(rows[2]), dict)
    changed = kept[0]
    changed["id"] = "z"  # a read is a copy
    assert kept[0]["id"] == "a" and kept == rows


def test_rows_past_the_spill_size_are_read_back_from_disk_exactly() -> None:
    import datetime
    import pickle
    import threading

    from assay.data.rows import RowList

    rows = [{"id": f"r{i}", "text": "é" * (i % 7), "n": i} for i in range(500)]
    rows[250] = {"id": "r250", "when": datetime.date(2024, 1, 2)}  # kept as a dict
    kept = RowList(rows, spill_bytes=200)  # spills after a few rows
    assert kept._file is not None and kept._memory == []  # on disk, not in memory
    assert len(kept) == 500 and list(kept) == rows and kept == rows
    assert kept[-1] == rows[-1] and kept[10:13] == rows[10:13] and kept[250] == rows[250]
    kept.append({"id": "late"})  # appended after a read: flushed before the next read
    assert kept[500] == {"id": "late"}
    with pytest.raises(IndexError):
        kept.packed(501)
    copy = pickle.loads(pickle.dumps(kept))  # a plan sent to another machine
    assert copy == [*rows, {"id": "late"}] and copy._file is not None
    seen: list[bool] = []

    def read() -> None:
        seen.append(all(kept[i] == rows[i] for i in range(0, 500, 7)))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [True] * 4
    small = RowList(rows[:3])
    assert small._file is None and list(small) == rows[:3]  # a small dataset opens no file
