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

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from assay.errors import UsageError
from assay.results.io import Writer
from assay.results.run import TaskSelection
from assay.results.suite import SelectionRecord
from assay.spec.run_names import SELECTION_FILE as SELECTION_FILE  # re-exported


def write_selection_rows(
    run_dir: Path, rows: Iterable[tuple[str, str, str]], *, writer: Writer
) -> None:
    """Write ``(task id, row id, row hash)`` lines to ``run_dir/selection.jsonl`` as they
    come (by rename, so a reader never sees half a file), through ``writer``."""
    with writer.open(run_dir / SELECTION_FILE) as out:
        for task_id, row_id, row_hash in rows:
            out.write(json.dumps({"task_id": task_id, "row_id": row_id, "row_hash": row_hash},
                                 ensure_ascii=False) + "\n")  # fmt: skip


def iter_selection_rows(run_dir: Path) -> Iterator[tuple[str, str, str]]:
    """``(task id, row id, row hash)`` of ``run_dir/selection.jsonl``, in its order.

    Raises:
        UsageError: the file is missing, cannot be read, or a line is not a selection line
            (the run folder is damaged), naming the file and line.
    """
    path = run_dir / SELECTION_FILE
    hint = "restore the file from a copy of the run folder, or start a new run"
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                yield _parsed(line, path, number, hint)
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


def listed(run_dir: Path, selections: Mapping[str, SelectionRecord]) -> dict[str, SelectionRecord]:
    """Task id → its selection with the row ids and hashes listed, ``selection.jsonl`` read
    once for all of them (a selection whose run listed its rows inline is returned as it
    is). A selection that lists no rows although it selected some, in a folder that has the
    file, is read from the file too (its ``rows_file`` was lost).

    Raises:
        UsageError: see :func:`iter_selection_rows`; or the file does not list exactly
            ``rows_selected`` distinct rows of a task (it was cut short, padded or edited).
    """
    wanted = {task_id: s for task_id, s in selections.items() if listed_in_file(run_dir, s)}
    ids: dict[str, list[str]] = {task_id: [] for task_id in wanted}
    hashes: dict[str, dict[str, str]] = {task_id: {} for task_id in wanted}
    seen: set[tuple[str, str]] = set()
    for task_id, row_id, row_hash in iter_selection_rows(run_dir) if wanted else ():
        if task_id not in wanted:
            continue
        if (task_id, row_id) in seen:
            raise damaged_list(run_dir, task_id, f"lists row {row_id!r} twice")
        seen.add((task_id, row_id))
        ids[task_id].append(row_id)
        if row_hash:  # a run recorded before row hashes existed
            hashes[task_id][row_id] = row_hash
    found = dict(selections)
    for task_id, selection in wanted.items():
        count = len(ids[task_id])
        if count != selection.rows_selected:
            raise damaged_list(run_dir, task_id, f"lists {count} row(s) of task '{task_id}', "
                            f"but the run selected {selection.rows_selected}")  # fmt: skip
        update = {"row_ids": ids[task_id], "row_hashes": hashes[task_id],
                  "rows_file": SELECTION_FILE}  # fmt: skip
        found[task_id] = selection.model_copy(update=update)
    return found


def listed_tasks(run_dir: Path, chosen: Iterable[TaskSelection]) -> dict[str, TaskSelection]:
    """Task id → each of ``chosen`` with its rows listed (:func:`listed`)."""
    tasks = {c.task_id: c for c in chosen}
    rows = listed(run_dir, {task_id: c.selection for task_id, c in tasks.items()})
    return {task_id: c.model_copy(update={"selection": rows[task_id]})
            for task_id, c in tasks.items()}  # fmt: skip


def listed_in_file(run_dir: Path, selection: SelectionRecord) -> bool:
    """Whether ``selection``'s rows are to be read from ``selection.jsonl`` (its
    ``rows_file``; or it lists no rows although it selected some, and the file is there)."""
    if selection.row_ids:
        return False
    if selection.rows_file is not None:
        return True
    return bool(selection.rows_selected) and (run_dir / SELECTION_FILE).is_file()  # lost key


def damaged_list(run_dir: Path, task_id: str, what: str) -> UsageError:
    """The refusal of a ``selection.jsonl`` that does not list what the run selected:
    "the run's list of selected rows {what}"."""
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
