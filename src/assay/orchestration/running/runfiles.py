"""Which of a plan's work items a run directory holds finished, for ``--resume``; reading a
run directory back is :mod:`assay.results.run_folder`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from assay.orchestration.planning.plan import WorkItem
from assay.orchestration.running.rundir import item_dir
from assay.results.task_result import EvaluationResult


def finished_mask(
    run_dir: Path, items: Sequence[WorkItem], *, retry_errors: bool,
    damaged: list[Path] | None = None,
) -> bytearray:  # fmt: skip
    """``1`` for each item whose ``task.json`` is complete (not for ``ERROR`` ones when
    retrying errors), ``0`` for the rest; an unreadable one is ``0``, so its row runs again,
    and its path is added to ``damaged``. One byte an item: the results are read one at a
    time and not kept."""
    mask = bytearray(len(items))
    for position, item in enumerate(items):
        path = _task_json(run_dir, item)
        if not path.is_file():
            continue
        try:
            result = EvaluationResult.model_validate_json(path.read_bytes())
        except (ValueError, OSError):
            if damaged is not None:
                damaged.append(path)
            continue  # unreadable: run it again
        if retry_errors and result.final_status.category == "error":
            continue
        mask[position] = 1
    return mask


def kept_results(
    run_dir: Path, items: Sequence[WorkItem], mask: bytearray
) -> Iterator[EvaluationResult]:
    """The results of the items ``mask`` marks, read one at a time."""
    for position, item in enumerate(items):
        if mask[position]:
            yield EvaluationResult.model_validate_json(_task_json(run_dir, item).read_bytes())


def finished_results(
    run_dir: Path, items: Sequence[WorkItem], *, retry_errors: bool
) -> list[EvaluationResult]:
    """The results of items whose ``task.json`` is complete (``ERROR`` ones dropped when
    retrying errors), in a list (:func:`finished_mask` for a run of any size)."""
    mask = finished_mask(run_dir, items, retry_errors=retry_errors)
    return list(kept_results(run_dir, items, mask))


def _task_json(run_dir: Path, item: WorkItem) -> Path:
    row_task = item.row_task
    return item_dir(run_dir, variant_id=item.variant_id, task_id=row_task.task_id,
                    suite_id=row_task.suite_id, row_id=row_task.row_id,
                    replicate=item.replicate) / "task.json"  # fmt: skip
