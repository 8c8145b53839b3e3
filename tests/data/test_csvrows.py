"""CSV as a row source: header = fields, string values, RFC 4180 quoting, exact messages."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data.csvrows import iter_csv
from assay.errors import DatasetError

FIXTURES = Path(__file__).parent / "fixtures"
COSMOSQA = FIXTURES / "cosmosqa_valid_sample.csv"
COSMOSQA_HEADER = [
    "id",
    "context",
    "question",
    "answer0",
    "answer1",
    "answer2",
    "answer3",
    "label",
]


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def load(path: Path, **kwargs: Any) -> list[tuple[int, dict[str, str]]]:
    return list(iter_csv(path, **kwargs))


def error_of(path: Path, **kwargs: Any) -> DatasetError:
    with pytest.raises(DatasetError) as caught:
        load(path, **kwargs)
    return caught.value


# --- header and values --------------------------------------------------------------------


def test_header_names_the_fields_and_every_value_is_a_string(tmp_path: Path) -> None:
    path = write_bytes(
        tmp_path / "d.csv", b"id,n,f,flag,empty,none\n007,42,1.50,true,,null\n8,-1,1e400,,x,\n"
    )
    rows = load(path)
    assert rows == [
        (2, {"id": "007", "n": "42", "f": "1.50", "flag": "true", "empty": "", "none": "null"}),
        (3, {"id": "8", "n": "-1", "f": "1e400", "flag": "", "empty": "x", "none": ""}),
    ]
    for _, row in rows:
        assert all(type(value) is str for value in row.values())
        assert list(row) == ["id", "n", "f", "flag", "empty", "none"]


def test_header_names_are_stripped_values_are_not(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b" id , text \n a , b \n")
    assert load(path) == [(2, {"id": " a ", "text": " b "})]


def test_unicode_values_are_unchanged(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", "id,text\n1,café ☕ e\u0301 \u2028 x\x85y\n".encode())
    assert load(path) == [(2, {"id": "1", "text": "café ☕ e\u0301 \u2028 x\x85y"})]


def test_header_only_and_empty_files_give_no_rows(tmp_path: Path) -> None:
    assert load(write_bytes(tmp_path / "h.csv", b"id,text\n")) == []
    assert load(write_bytes(tmp_path / "e.csv", b"")) == []
    assert load(write_bytes(tmp_path / "b.csv", b"\n\n")) == []


# --- quoting ------------------------------------------------------------------------------


def test_quoted_commas_quotes_and_newlines(tmp_path: Path) -> None:
    data = (
        b"id,text,note\n"
        b'1,"a, b","say ""hi"""\n'
        b'2,"line one\nline two\n\nline four",plain\n'
        b'3,"",""""\n'
    )
    rows = load(write_bytes(tmp_path / "d.csv", data))
    assert rows == [
        (2, {"id": "1", "text": "a, b", "note": 'say "hi"'}),
        (3, {"id": "2", "text": "line one\nline two\n\nline four", "note": "plain"}),
        (7, {"id": "3", "text": "", "note": '"'}),
    ]


def test_a_quoted_crlf_inside_a_value_survives(tmp_path: Path) -> None:
    data = b'id,text\r\n1,"a\r\nb"\r\n2,c\r\n'
    assert load(write_bytes(tmp_path / "d.csv", data)) == [
        (2, {"id": "1", "text": "a\r\nb"}),
        (4, {"id": "2", "text": "c"}),
    ]


def test_bad_quoting_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b'id,text\n1,ok\n2,"a"b\n')
    error = error_of(path)
    assert error.message == f"Dataset {path}: invalid CSV on line 3: ',' expected after '\"'"
    assert error.line == 3


def test_unterminated_quote_is_an_error_where_the_quote_opened(tmp_path: Path) -> None:
    rows = b"".join(b"%d,t%d\n" % (i, i) for i in range(3, 500))
    path = write_bytes(tmp_path / "d.csv", b'id,text\n1,ok\n2,"never closed\n' + rows)
    error = error_of(path)  # it named the file's last line: "unexpected end of data"
    assert error.message == (
        f"Dataset {path}: invalid CSV on line 3: a quoted value that starts in this record is "
        "never closed (the file ends inside it, on line 500)"
    )
    assert error.line == 3 and error.hint is not None and "close the quote" in error.hint


def test_a_stray_quote_closed_far_below_names_the_line_it_opened(tmp_path: Path) -> None:
    rows = b"".join(b"r%d,t%d\n" % (i, i) for i in range(3, 50))
    path = write_bytes(tmp_path / "d.csv", b'id,text\nr1,ok\nr2,"he said hi,\n' + rows
                       + b'r50,"closed"\n')  # fmt: skip
    error = error_of(path)
    assert error.line == 51 and "(the record began on line 3: a quote opened there" in (
        error.message)  # fmt: skip


@pytest.mark.parametrize("separator", [";", "\t"])
def test_a_header_of_one_column_holding_another_separator_is_named(
    tmp_path: Path, separator: str
) -> None:
    text = f"id{separator}text{separator}label\nr1{separator}hello{separator}pos\n"
    error = error_of(write_bytes(tmp_path / "d.csv", text.encode()))
    header = f"id{separator}text{separator}label"
    assert f"the header is one column, {header!r}, holding {separator!r}" in error.message
    assert error.line == 1 and error.hint is not None and "commas" in error.hint


# --- line ends, BOM, blank lines ----------------------------------------------------------


def test_cosmosqa_rows_with_crlf_ends_and_no_final_newline() -> None:
    raw = COSMOSQA.read_bytes()
    assert b"\r\n" in raw and not raw.endswith(b"\n")
    rows = load(COSMOSQA)
    with COSMOSQA.open(encoding="utf-8", newline="") as handle:
        records = list(csv.reader(handle))
    assert records[0] == COSMOSQA_HEADER
    assert [row for _, row in rows] == [
        dict(zip(COSMOSQA_HEADER, record, strict=True)) for record in records[1:]
    ]
    assert [line for line, _ in rows] == [2, 3, 4, 5, 6, 7]
    for _, row in rows:
        assert list(row) == COSMOSQA_HEADER
        assert not any("\r" in value or "\n" in value for value in row.values())
    assert rows[-1][1]["label"] == "0"  # the last record has no newline after it
    assert rows[3][1]["context"].startswith("I ' ve never traditionally been picky")
    assert ", " in rows[3][1]["context"]
    assert '" joked around a bit "' in rows[4][1]["context"]


def test_cosmosqa_with_lf_ends_gives_the_same_rows(tmp_path: Path) -> None:
    lf = write_bytes(tmp_path / "lf.csv", COSMOSQA.read_bytes().replace(b"\r\n", b"\n"))
    assert load(lf) == load(COSMOSQA)


def test_cr_only_line_ends_load(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b"id,text\r1,a\r2,b\r")
    assert load(path) == [(2, {"id": "1", "text": "a"}), (3, {"id": "2", "text": "b"})]


def test_leading_bom_is_stripped(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b"\xef\xbb\xbfid,text\r\n1,a\r\n")
    rows = load(path)
    assert rows == [(2, {"id": "1", "text": "a"})]
    assert "\ufeffid" not in rows[0][1]


def test_cosmosqa_with_a_bom(tmp_path: Path) -> None:
    bom = write_bytes(tmp_path / "bom.csv", b"\xef\xbb\xbf" + COSMOSQA.read_bytes())
    assert load(bom) == load(COSMOSQA)


def test_blank_lines_are_skipped_with_physical_line_numbers(tmp_path: Path) -> None:
    data = b"\n\nid,text\r\n\r\n1,a\r\n   \r\n\t\n2,b\n\n"
    assert load(write_bytes(tmp_path / "d.csv", data)) == [
        (5, {"id": "1", "text": "a"}),
        (8, {"id": "2", "text": "b"}),
    ]


# --- errors -------------------------------------------------------------------------------


def test_too_many_fields_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b"id,text\n1,a\n\n2,b,c\n")
    error = error_of(path)
    assert error.message == f"Dataset {path}: record on line 4 has 3 fields; the header has 2"
    assert error.line == 4
    assert error.hint == "quote values that contain commas or line breaks"


def test_too_few_fields_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b"id,text,label\r\n1,a,x\r\n2,b\r\n")
    error = error_of(path)
    assert error.message == f"Dataset {path}: record on line 3 has 2 fields; the header has 3"


def test_field_count_error_after_a_multiline_record_names_the_physical_line(
    tmp_path: Path,
) -> None:
    path = write_bytes(tmp_path / "d.csv", b'id,text\n1,"a\nb\nc"\n2\n')
    assert error_of(path).message == (
        f"Dataset {path}: record on line 5 has 1 fields; the header has 2"
    )


def test_duplicate_header_is_an_error(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b"id,text,id\n1,a,2\n")
    error = error_of(path)
    assert error.message == f"Dataset {path}: header names column 'id' twice"
    assert error.line == 1


def test_header_duplicate_after_stripping_is_an_error(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b"\nid, id\n1,2\n")
    error = error_of(path)
    assert error.message == f"Dataset {path}: header names column 'id' twice"
    assert error.line == 2


@pytest.mark.parametrize(("header", "position"), [(b"id,,text", 2), (b",id", 1), (b"id,text, ", 3)])
def test_empty_header_name_is_an_error(tmp_path: Path, header: bytes, position: int) -> None:
    path = write_bytes(tmp_path / "d.csv", header + b"\n1,2,3\n")
    assert error_of(path).message == f"Dataset {path}: header column {position} has no name"


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.csv"
    assert error_of(path).message == f"Dataset file not found: {path}"
    assert error_of(path, display="data/nope.csv").message == (
        "Dataset file not found: data/nope.csv"
    )


def test_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "d.csv"
    folder.mkdir()
    assert error_of(folder).message == f"Dataset path is a directory, not a file: {folder}"


def test_invalid_utf8_names_the_line_and_byte(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b"id,text\n1,ok\n2,caf\xe9\n")
    error = error_of(path)
    assert error.message == (
        f"Dataset {path}: invalid CSV on line 3: not UTF-8 text (byte 6 of the line)"
    )
    assert error.line == 3


def test_invalid_utf8_in_the_header(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b"\xef\xbb\xbfid,t\xffxt\n1,a\n")
    error = error_of(path)
    assert error.message == (
        f"Dataset {path}: invalid CSV on line 1: not UTF-8 text (byte 5 of the line)"
    )
    assert error.line == 1


def test_invalid_utf8_far_into_a_file_names_its_line(tmp_path: Path) -> None:
    # The text layer decodes in blocks of several KB, far ahead of the csv reader.
    data = b"id,text\n" + b"1,abcdef\n" * 5000 + b"2,\xff\n" + b"3,ok\n" * 10
    path = write_bytes(tmp_path / "d.csv", data)
    error = error_of(path)
    assert error.line == 5002
    assert error.message == (
        f"Dataset {path}: invalid CSV on line 5002: not UTF-8 text (byte 3 of the line)"
    )


def test_invalid_utf8_line_counts_cr_only_and_quoted_line_breaks(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b'id,text\r1,a\r2,"x\r\n\xe9"\r\n')
    assert error_of(path).line == 4


def test_reading_is_lazy_rows_before_a_bad_record_are_yielded(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "d.csv", b"id,text\n1,a\n2,b,c\n")
    rows = iter_csv(path)
    assert next(rows) == (2, {"id": "1", "text": "a"})
    with pytest.raises(DatasetError, match="line 3"):
        next(rows)


# --- property: whatever the csv module writes, iter_csv reads back --------------------------

CELLS = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    header=st.lists(
        st.text(alphabet="abcdefghij_", min_size=1, max_size=6), min_size=2, max_size=4, unique=True
    ),
    data=st.data(),
    terminator=st.sampled_from(["\n", "\r\n"]),
)
def test_written_rows_read_back_exactly(
    tmp_path_factory: pytest.TempPathFactory,
    header: list[str],
    data: st.DataObject,
    terminator: str,
) -> None:
    records = data.draw(
        st.lists(st.lists(CELLS, min_size=len(header), max_size=len(header)), max_size=5)
    )
    # Python 3.11's writer leaves a lone CR unquoted when the terminator is LF (invalid
    # CSV), so quote every field in that case.
    quoting = csv.QUOTE_ALL if terminator == "\n" else csv.QUOTE_MINIMAL
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator=terminator, quoting=quoting)
    writer.writerow(header)
    writer.writerows(records)
    path = tmp_path_factory.mktemp("csv") / "d.csv"
    path.write_bytes(buffer.getvalue().encode("utf-8"))
    rows = load(path)
    assert [row for _, row in rows] == [dict(zip(header, r, strict=True)) for r in records]


def test_a_field_past_the_csv_modules_default_limit_is_a_value(tmp_path: Path) -> None:
    """A 144,000-character document (the ``csv`` module's default refuses fields over
    131,072 characters as invalid CSV; JSONL took the same row)."""
    document = "word " * 28_800
    path = tmp_path / "docs.csv"
    path.write_text(f'id,text\na,"{document}"\n', encoding="utf-8")
    ((line, row),) = list(iter_csv(path))
    assert line == 2 and row == {"id": "a", "text": document}
