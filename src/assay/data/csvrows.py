"""CSV as a row source: the header names the fields and every value is a string.

Quoted fields may hold commas, quotes and line breaks (RFC 4180, via the ``csv`` module);
CRLF and LF files both load; a leading byte-order mark is stripped; blank lines are skipped.
Line numbers in messages are the physical line where the record starts. A field may be up to
:data:`FIELD_LIMIT` characters long.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.data.dataset_file import open_dataset
from assay.errors import DatasetError

_BOM = b"\xef\xbb\xbf"
FIELD_LIMIT = 1 << 30
"""The longest field read, in characters: a long document or source file is a normal value
(the ``csv`` module's own default, 131,072, refused them as invalid CSV)."""


def iter_csv(path: Path, *, display: str | None = None) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line_number, row)`` for each record after the header.

    Raises:
        DatasetError: missing file (or a directory), non-UTF-8 text (naming the line of the
            first bad byte), an empty or repeated header name, or a record whose field count
            differs from the header's.
    """
    name = display or str(path)
    if csv.field_size_limit() < FIELD_LIMIT:  # the module's one setting, only ever raised
        csv.field_size_limit(FIELD_LIMIT)
    with open_dataset(path, name, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, strict=True)
        opened = [1]  # the line the record being read began on
        try:
            yield from _records(reader, name, opened)
        except UnicodeDecodeError as exc:
            # The text layer decodes ahead in blocks, so reader.line_num is not where the bad
            # byte is: find it again in the raw bytes.
            line, byte = _first_non_utf8(path) or (reader.line_num + 1, exc.start + 1)
            raise DatasetError(
                f"Dataset {name}: invalid CSV on line {line}: not UTF-8 text "
                f"(byte {byte} of the line)",
                file=name,
                line=line,
                located=True,
            ) from None
        except csv.Error as exc:
            if "unexpected end of data" in str(exc):  # a quote never closed: say where it was
                raise DatasetError(
                    f"Dataset {name}: invalid CSV on line {opened[0]}: a quoted value that "
                    f"starts in this record is never closed (the file ends inside it, on "
                    f"line {reader.line_num})", file=name, located=True, line=opened[0],
                    hint='close the quote; a quote inside a quoted value is written ""',
                ) from None  # fmt: skip
            spans = reader.line_num > opened[0]  # a quote left open earlier ran to here
            raise DatasetError(
                f"Dataset {name}: invalid CSV on line {reader.line_num}: {exc}"
                + (f" (the record began on line {opened[0]}: a quote opened there and "
                   "closed only here?)" if spans else ""),
                file=name, located=True, line=reader.line_num,
            ) from None  # fmt: skip


def _first_non_utf8(path: Path) -> tuple[int, int] | None:
    """``(line, byte in the line)`` of the first byte that is not UTF-8, both 1-based.

    Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r``, as the ``csv`` module counts them
    (a UTF-8 sequence never contains either byte, so lines can be checked one by one).
    """
    number = 0
    with path.open("rb") as handle:
        for chunk in handle:
            for piece in chunk.splitlines(keepends=True):
                number += 1
                skip = len(_BOM) if number == 1 and piece.startswith(_BOM) else 0
                try:
                    piece[skip:].decode("utf-8")
                except UnicodeDecodeError as exc:
                    return number, exc.start + 1
    return None


def _records(reader: Any, name: str, opened: list[int]) -> Iterator[tuple[int, dict[str, str]]]:
    header: list[str] | None = None
    start = 1
    for record in reader:
        line = start
        start = opened[0] = reader.line_num + 1
        if not record or (len(record) == 1 and not record[0].strip()):
            continue
        if header is None:
            header = _check_header(record, name, line)
            continue
        if len(record) != len(header):
            raise DatasetError(
                f"Dataset {name}: record on line {line} has {len(record)} fields; "
                f"the header has {len(header)}",
                file=name,
                located=True,
                line=line,
                hint="quote values that contain commas or line breaks",
            )
        yield line, dict(zip(header, record, strict=True))


def _check_header(record: list[str], name: str, line: int) -> list[str]:
    header = [cell.strip() for cell in record]
    separator = next((c for c in (";", "\t", "|") if len(header) == 1 and c in header[0]), None)
    if separator is not None:  # a spreadsheet's CSV where the comma is the decimal mark
        raise DatasetError(
            f"Dataset {name}: the header is one column, {header[0][:80]!r}, holding "
            f"{separator!r}: assay reads comma-separated CSV",
            file=name, line=line, located=True,
            hint="save the file with commas between values (a spreadsheet's \"CSV UTF-8 "
            "(comma delimited)\"), or convert it to JSONL",
        )  # fmt: skip
    seen: set[str] = set()
    for position, cell in enumerate(header, start=1):
        if not cell:
            raise DatasetError(
                f"Dataset {name}: header column {position} has no name",
                file=name,
                line=line,
                located=True,
            )
        if cell in seen:
            raise DatasetError(
                f"Dataset {name}: header names column '{cell}' twice",
                file=name,
                line=line,
                located=True,
            )
        seen.add(cell)
    return header
