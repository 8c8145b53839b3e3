"""``selection.jsonl``: the rows a run selected, one line per row, beside ``plan.json``.

A run records, for every dataset task, which rows it selected and each row's content hash
(:func:`assay.data.hashing.row_hash`), so a resumed run rebuilds exactly those rows and a
changed row is detected. Listed inside ``plan.json``, ``run.json`` and every ``suite.json``
(as runs before this file did, and still read), they made each of those files, and the
memory that writes and reads them, grow with the rows; so a run lists them here once,
written as they are computed, and the selection in those files says where
(``SelectionRecord.rows_file``).

Each line is ``{"task_id": ..., "row_id": ..., "row_hash": ...}``, in plan order (task
files in order, rows in dataset order).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from assay.errors import UsageError
from assay.results.secrets import Redactor
from assay.results.suite import SelectionRecord

SELECTION_FILE = "selection.jsonl"


def write_selection_rows(
    run_dir: Path, rows: Iterable[tuple[str, str, str]], *, redactor: Redactor | None
) -> None:
    """Write ``(task id, row id, row hash)`` lines to ``run_dir/selection.jsonl`` as they
    come (by rename, so a reader never sees half a file), each line redacted."""
    path = run_dir / SELECTION_FILE
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            for task_id, row_id, row_hash in rows:
                line = json.dumps({"task_id": task_id, "row_id": row_id, "row_hash": row_hash},
                                  ensure_ascii=False)  # fmt: skip
                handle.write((redactor.redact(line) if redactor else line) + "\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def iter_selection_rows(
    run_dir: Path, task_id: str | None = None
) -> Iterator[tuple[str, str, str]]:
    """``(task id, row id, row hash)`` of ``run_dir/selection.jsonl`` in its order (of
    ``task_id`` only, when given).

    Raises:
        UsageError: the file is missing, cannot be read, or a line is not a selection line
            (the run folder is damaged), naming the file and line.
    """
    path = run_dir / SELECTION_FILE
    hint = "restore the file from a copy of the run folder, or start a new run"
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                row = _parsed(line, path, number, hint)
                if task_id is None or row[0] == task_id:
                    yield row
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"the run's list of selected rows cannot be read: {reason}",
                         file=path, hint=hint) from None  # fmt: skip


def _parsed(line: str, path: Path, number: int, hint: str) -> tuple[str, str, str]:
    try:
        data = json.loads(line)
        return str(data["task_id"]), str(data["row_id"]), str(data["row_hash"])
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"not a line of the run's selected rows ({exc}): the run folder is "
                         "damaged", file=path, line=number, hint=hint) from None  # fmt: skip


def with_rows(run_dir: Path, task_id: str, selection: SelectionRecord) -> SelectionRecord:
    """``selection`` with its row ids and hashes listed (read from ``selection.jsonl`` when
    the run listed them there; as it is otherwise). A selection that lists no rows although
    it selected some, in a folder that has the file, is read from the file too (its
    ``rows_file`` was lost).

    Raises:
        UsageError: see :func:`iter_selection_rows`; or the file does not list exactly
            ``rows_selected`` distinct rows of the task (it was cut short, padded or edited).
    """
    lost = (selection.rows_file is None and not selection.row_ids and selection.rows_selected
            and (run_dir / SELECTION_FILE).is_file())  # fmt: skip
    if (selection.rows_file is None and not lost) or selection.row_ids:
        return selection
    ids: list[str] = []
    hashes: dict[str, str] = {}
    seen: set[str] = set()
    for _, row_id, row_hash in iter_selection_rows(run_dir, task_id):
        if row_id in seen:
            raise _miscount(run_dir, task_id, f"lists row {row_id!r} twice")
        seen.add(row_id)
        ids.append(row_id)
        if row_hash:  # a run recorded before row hashes existed
            hashes[row_id] = row_hash
    if len(ids) != selection.rows_selected:
        raise _miscount(run_dir, task_id, f"lists {len(ids)} row(s) of task '{task_id}', but "
                        f"the run selected {selection.rows_selected}")  # fmt: skip
    return selection.model_copy(update={"row_ids": ids, "row_hashes": hashes,
                                        "rows_file": SELECTION_FILE})  # fmt: skip


def _miscount(run_dir: Path, task_id: str, what: str) -> UsageError:
    return UsageError(f"the run's list of selected rows {what}: the run folder is damaged "
                      f"(task '{task_id}')", file=run_dir / SELECTION_FILE,
                      hint="restore the file from a copy of the run folder, or start a new "
                           "run")  # fmt: skip


def unlisted(selection: SelectionRecord) -> SelectionRecord:
    """``selection`` as a run's files show it: without its rows when they are listed in
    ``selection.jsonl`` (``rows_file``), as it is otherwise (a run written before it)."""
    if selection.rows_file is None or not (selection.row_ids or selection.row_hashes):
        return selection
    return selection.model_copy(update={"row_ids": [], "row_hashes": {}})
