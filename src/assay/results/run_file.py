"""``run.json`` written and read a row at a time.

``run.json`` lists every row-task of the run (``task_results``, Coder Eval's contract), so it
grows with the run. :func:`write_run_json` writes the summary with the rows streamed in,
one compact JSON object per line, atomically; :func:`read_summary` reads everything but
the rows; :func:`iter_task_rows` reads the rows one at a time. Both read only what they
need from a file this module wrote, and fall back to reading the whole JSON document from
any other (an older assay's, or one edited by hand).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from assay.results.io import Writer, dumps
from assay.results.run import RunSummary, TaskRow

OPEN = '  "task_results": ['
EMPTY = OPEN + "],"
CLOSE = "  ],"


def write_run_json(path: Path, summary: RunSummary, rows: Iterable[str], *, writer: Writer) -> None:
    """Write ``summary`` (its own ``task_results`` ignored) with ``rows`` (each a
    :class:`TaskRow` as compact JSON) as its ``task_results``, atomically, through ``writer``
    (each string redacted)."""
    text = dumps(summary.model_copy(update={"task_results": []}).model_dump(mode="json"))
    before, found, after = writer.redact_json(text).partition("\n" + EMPTY + "\n")
    if not found:
        raise ValueError("run.json: task_results not found in the summary's JSON")
    with writer.open(path) as out:
        out.handle.write(before + "\n" + OPEN)  # redacted as data above
        first = True
        for row in rows:
            out.handle.write("\n    " if first else ",\n    ")
            out.write_json(row.rstrip("\n"))
            first = False
        out.handle.write(("\n" + CLOSE if not first else "],") + "\n" + after)


def read_summary(path: Path) -> RunSummary:
    """``run.json`` without its rows (``task_results`` empty).

    Raises:
        OSError: the file cannot be read. ValueError: it is not a valid ``run.json``.
    """
    kept: list[str] = []
    with path.open(encoding="utf-8") as handle:
        inside = False
        for line in handle:
            if inside:
                inside = line.rstrip("\n") != CLOSE
                if not inside:
                    kept.append('  "task_results": [],\n')
                continue
            if line.rstrip("\n") == OPEN:
                inside = True
                continue
            kept.append(line)
    if inside:
        raise ValueError(f"{path}: task_results is not closed")
    data = json.loads("".join(kept))
    data["task_results"] = []
    return RunSummary.model_validate(data)


def iter_task_rows(path: Path) -> Iterator[TaskRow]:
    """``run.json``'s rows, one at a time, in its order.

    Raises:
        OSError: the file cannot be read. ValueError: a row is not valid.
    """
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.rstrip("\n") == OPEN:
                break
            if line.startswith(OPEN):  # no rows ("[],")
                return
        else:
            return
        for line in handle:
            text = line.strip()
            if line.rstrip("\n") == CLOSE:
                return
            if text == "{":  # one row over several lines (an older assay): the whole file
                handle.seek(0)
                for row in json.load(handle).get("task_results", []):
                    yield TaskRow.model_validate(row)
                return
            yield TaskRow.model_validate_json(text.removesuffix(","))
