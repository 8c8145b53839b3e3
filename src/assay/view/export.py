"""The rows a filter selects, as CSV or JSON Lines: the rows page's download links and
``assay report RUN_DIR --rows FILTER --format csv|jsonl`` write the same lines.

A filter is the rows page's URL query string (:class:`~assay.view.queries.RowFilter`:
``status=FAILURE&suite=mood&q=love``; empty: every row), so a link copied from the page
exports what the page shows, in its order (every page of it). Each line holds
:data:`COLUMNS`: the row's facts from the index, and its whole prompt, response and dataset
row read from its own ``task.json`` and ``response.txt``.

No secret is written: each line passes the writer ``assay report`` writes a run's
rows with (:func:`assay.orchestration.loading.secrets.results_writer`: the environment's secrets and
those the row's recorded configuration names). A CSV cell that a spreadsheet would run as a
formula is neutralised (:func:`assay.results.safe_text.csv_cell`; read back with
``csv_value``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from pydantic import ValidationError

from assay.errors import UsageError
from assay.orchestration.loading.secrets import results_writer
from assay.results.io import Writer
from assay.results.run_folder import resolve_run_dir
from assay.results.safe_text import csv_cell
from assay.results.status import FinalStatus
from assay.results.task_result import EvaluationResult
from assay.view.queries import SORTS, RowFilter, is_number, order_by, status_value, where
from assay.view.reading import read_bytes

FORMATS = ("csv", "jsonl")
_OUTCOMES = ("pass", "fail", "error", "refused")  # a criterion line's (assay.view.records)
COLUMNS = ("folder", "variant", "suite", "task_id", "row_id", "row_index", "replicate",
           "status", "score", "expected", "observed", "error_kind", "reason", "duration",
           "tokens", "cost", "model", "prompt", "response", "row")  # fmt: skip
_INDEXED = COLUMNS[:-3]
_NOT_FILTERS = frozenset({"page", "size"})


def parse_filter(text: str) -> RowFilter:
    """The filter of a rows page's query string (a leading ``?`` and a whole URL's query
    are accepted; empty: every row).

    Raises:
        UsageError: a name that is not a filter of the rows page, or a sort the page does
            not know, naming the valid ones.
    """
    query = text.split("?", 1)[1] if "?" in text else text
    pairs = parse_qsl(query, keep_blank_values=True)
    names = [f.name for f in fields(RowFilter) if f.name not in _NOT_FILTERS]
    for name, value in pairs:
        if name in _NOT_FILTERS:
            continue
        if name not in names:
            raise UsageError(f"--rows: '{name}' is not a filter of the rows page",
                             hint=f"use {', '.join(names)} (as in the viewer's URL, e.g. "
                                  "status=FAILURE&q=love)")  # fmt: skip
        if name == "sort" and value not in SORTS:
            raise UsageError(f"--rows: sort '{value}' is not one of {', '.join(SORTS)}")
        _check_value(name, value)
    return RowFilter.from_params(dict(pairs))


def _check_value(name: str, value: str) -> None:
    """Refuse a ``replicate``, ``status`` or ``criterion`` value that would match no row (or
    none of its kind) whatever the run.

    Raises:
        UsageError: naming the valid values.
    """
    if name == "replicate" and value.strip() and not is_number(value.strip()):
        raise UsageError(f"--rows: replicate '{value}' is not a replicate's number",
                         hint="e.g. replicate=0 (the first)")  # fmt: skip
    if name == "status" and value.strip() and status_value(value) is None:
        raise UsageError(f"--rows: status '{value}' is not a row-task's status",
                         hint="use one of " + ", ".join(s.value for s in FinalStatus))  # fmt: skip
    position, _, outcome = value.strip().lower().partition(":")
    if name == "criterion" and value.strip() and not (is_number(position)
                                                      and outcome in _OUTCOMES):  # fmt: skip
        raise UsageError(f"--rows: criterion '{value}' is not POSITION:OUTCOME",
                         hint="e.g. criterion=0:fail (the first criterion failed); outcomes: "
                              + ", ".join(_OUTCOMES))  # fmt: skip


def export_lines(
    db: sqlite3.Connection,
    run_dir: Path,
    chosen: RowFilter,
    fmt: str,
    *,
    environ: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """The export of every row ``chosen`` selects (all pages, in its sort order): a header
    line then one line per row (CSV), or one JSON object per line (``jsonl``); each line
    ends with a newline and is redacted.

    Raises:
        UsageError: ``fmt`` is not ``csv`` or ``jsonl``.
    """
    if fmt not in FORMATS:
        raise UsageError(f"--format: '{fmt}' is not one of {', '.join(FORMATS)}")
    environment = os.environ if environ is None else environ
    writers: dict[str, Writer] = {}
    if fmt == "csv":
        yield _csv_line(list(COLUMNS))
    for record in _records(db, run_dir, chosen):
        writer = _writer(record.pop("_result"), environment, writers)
        if fmt == "jsonl":
            yield writer.redact(json.dumps(record, ensure_ascii=False)) + "\n"
        else:
            yield _csv_line([_cell(record[c], writer) for c in COLUMNS])


def _records(db: sqlite3.Connection, run_dir: Path, chosen: RowFilter) -> Iterator[dict[str, Any]]:
    condition, params = where(chosen)
    sql = f"SELECT {', '.join(_INDEXED)} FROM rows{condition} ORDER BY {order_by(chosen)}"
    for found in db.execute(sql, params):
        record = dict(zip(_INDEXED, found, strict=True))
        result = _result(run_dir / record["folder"])
        prompt = result.task_config.resolved.get("initial_prompt") if result else None
        record["prompt"] = prompt if isinstance(prompt, str) else None
        record["response"] = _text(run_dir / record["folder"] / "response.txt")
        record["row"] = result.row if result else None
        record["_result"] = result
        yield record


def _result(folder: Path) -> EvaluationResult | None:
    try:
        return EvaluationResult.model_validate_json(read_bytes(folder / "task.json"))
    except (OSError, ValidationError):
        return None  # the index line already says why (an unreadable row)


def _text(path: Path) -> str | None:
    try:
        return read_bytes(path).decode("utf-8", errors="replace")  # a regular file only
    except OSError:
        return None


def _writer(
    result: EvaluationResult | None, environ: Mapping[str, str], known: dict[str, Writer]
) -> Writer:
    """The writer ``assay report`` writes this row with (one per distinct configuration)."""
    resolved = result.task_config.resolved if result is not None else {}
    key = json.dumps([resolved.get(k) for k in ("agent", "qa", "success_criteria")],
                     sort_keys=True, default=str)  # fmt: skip
    if key not in known:
        known[key] = results_writer([result] if result is not None else [], environ)
    return known[key]


def _cell(value: Any, writer: Writer) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False)
    return csv_cell(writer.redact(str(value)))


def _csv_line(cells: list[str]) -> str:
    """One CSV record ending in ``\n``; a cell holding a carriage return is quoted too (the
    csv module quotes only the line terminator's characters, and a bare ``\r`` ends a
    record for every reader, which would split the row and start a cell anew)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(cells)  # quotes a cell with \r or \n
    return buffer.getvalue()[:-2] + "\n"


def export_rows(run_dir: str | Path, *, rows: str = "", format: str = "csv") -> Iterator[str]:
    """The rows of a run that a filter selects, as CSV or JSON Lines, line by line (the
    rows page's download; ``assay report RUN_DIR --rows FILTER --format csv|jsonl``): every
    page of the filter, in its order, with each row's whole prompt, response and dataset
    row; no secret written, CSV formula cells neutralised. Nothing is written into the run
    folder.

    Args:
        run_dir: the run (``runs/latest`` works).
        rows: the rows page's query string, e.g. ``status=FAILURE&q=love`` (empty: every
            row).
        format: ``csv`` (a header line, then one line per row) or ``jsonl``.

    Returns:
        The lines, each ending with a newline (read as they are produced).

    Raises:
        UsageError: not a run directory; a name that is not a filter; an unknown format.
    """
    from assay.view.index import RowIndex

    folder = resolve_run_dir(run_dir)
    chosen = parse_filter(rows)
    if format not in FORMATS:
        raise UsageError(f"--format: '{format}' is not one of {', '.join(FORMATS)}")

    def lines() -> Iterator[str]:
        scratch = Path(tempfile.mkdtemp(prefix="assay-export-"))
        try:
            index = RowIndex(folder, scratch / "index.sqlite",
                             redact=Writer.from_environment(os.environ).redact)  # fmt: skip
            index.refresh()
            with index.connect() as db:
                yield from export_lines(db, folder, chosen, format)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    return lines()
