"""A task's dataset as it is now against the rows a run recorded, one row at a time.

``assay report`` and ``assay evaluate`` refuse a run whose dataset changed since it ran. A
file or inline dataset whose row ids come from ``dataset.id_field`` is read here row by row
and each recorded row's content hash compared (:func:`assay.data.hashing.row_hash`), so the
check holds a flag per recorded row (:class:`~assay.results.recorded_rows.RecordedRows`)
rather than the dataset, its ids and an index of them, and a million-row run is checked in
the memory of a thousand-row one. Other datasets (a QA dataset whose ids are made from its
samples) are expanded as the run expanded them
(:func:`assay.orchestration.planning.datacheck.reread`).
"""

from __future__ import annotations

import numpy as np

from assay.data.hashing import row_hash
from assay.data.rows import iter_dataset
from assay.errors import DatasetError
from assay.orchestration.loading.qa_rows import explicit_ids
from assay.orchestration.loading.task_loader import LoadedTask
from assay.results.recorded_rows import RecordedRows


def streamable(loaded: LoadedTask) -> bool:
    """Whether ``loaded``'s dataset can be checked a row at a time: files or inline rows,
    ids from ``dataset.id_field`` (not a store dataset, whose versions never change, nor a
    QA dataset whose ids are made from its samples)."""
    task = loaded.definition
    spec = task.dataset
    return spec is not None and spec.store is None and (task.qa is None or explicit_ids(task))


def stream_drift(loaded: LoadedTask, recorded: RecordedRows) -> tuple[list[str], list[str]]:
    """``(changed, removed)``: the recorded rows whose content is not the recorded content
    now, in dataset order, and the recorded rows the dataset no longer has, in recorded
    order. Rows the run did not record are not read past their id.

    Raises:
        DatasetError: a file cannot be read or a line is invalid; a recorded row's id is
            used twice (which of them the run ran cannot be told).
    """
    spec = loaded.definition.dataset
    assert spec is not None
    seen = np.zeros(len(recorded), dtype=np.bool_)
    changed: list[str] = []
    rows = iter_dataset(inline=spec.rows, paths=spec.paths, base_dir=loaded.base_dir)
    for row in rows:
        value = row.get(spec.id_field)
        if value is None or isinstance(value, bool | dict | list):
            continue  # not a row id a run records
        row_id = str(value)
        at = recorded.position(row_id)
        if at is None:
            continue
        if seen[at]:
            raise DatasetError(f"Duplicate dataset row id for task "
                               f"'{loaded.definition.task_id}': {row_id!r}",
                               file=loaded.display)  # fmt: skip
        seen[at] = True
        expected = recorded.get(row_id)
        if expected is not None and row_hash(row) != expected:
            changed.append(row_id)
    removed = recorded.ids_at(np.flatnonzero(~seen).tolist()) if not seen.all() else []
    return changed, removed


__all__ = ["stream_drift", "streamable"]
