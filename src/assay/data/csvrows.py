"""CSV as a row source: the header names the fields and every value is a string.

Quoted fields may hold commas, quotes and line breaks (RFC 4180, via the ``csv`` module);
CRLF and LF files both load; a leading byte-order mark is stripped; blank lines are skipped.
Line numbers in messages are the physical line where the record starts.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.errors import DatasetError


def iter_csv(path: Path, *, display: str | None = None) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line_number, row)`` for each record after the header.

    Raises:
        DatasetError: missing file, non-UTF-8 text, an empty or repeated header name, or a
            record whose field count differs from the header's.
    """
    name = display or str(path)
    try:
        handle = path.open(encoding="utf-8-sig", newline="")
    except FileNotFoundError:
        raise DatasetError(f"Dataset file not found: {name}", file=name) from None
    with handle:
        reader = csv.reader(handle, strict=True)
        try:
            yield from _records(reader, name)
        except UnicodeDecodeError as exc:
            raise DatasetError(
                f"Dataset {name}: not UTF-8 text ({exc.reason})", file=name, line=reader.line_num
            ) from None
        except csv.Error as exc:
            raise DatasetError(
                f"Dataset {name}: invalid CSV on line {reader.line_num}: {exc}",
                file=name,
                line=reader.line_num,
            ) from None


def _records(reader: Any, name: str) -> Iterator[tuple[int, dict[str, str]]]:
    header: list[str] | None = None
    start = 1
    for record in reader:
        line = start
        start = reader.line_num + 1
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
                line=line,
                hint="quote values that contain commas or line breaks",
            )
        yield line, dict(zip(header, record, strict=True))


def _check_header(record: list[str], name: str, line: int) -> list[str]:
    header = [cell.strip() for cell in record]
    seen: set[str] = set()
    for position, cell in enumerate(header, start=1):
        if not cell:
            raise DatasetError(
                f"Dataset {name}: header column {position} has no name", file=name, line=line
            )
        if cell in seen:
            raise DatasetError(
                f"Dataset {name}: header names column '{cell}' twice", file=name, line=line
            )
        seen.add(cell)
    return header
