"""Is a run's data still the data it recorded? Rows whose content changed, by id.

A run records the content hash of every selected row (``selection.jsonl``; runs written
before it: ``selection.row_hashes`` in ``plan.json``, ``run.json`` and every
``suite.json``). Two things can then differ from it:

- the **dataset** as it is now (a file edited, a store replaced): a resumed run would grade the
  rest of its rows on other content than its finished rows (:func:`dataset_drift`);
- the **finished rows** themselves (each ``task.json`` keeps the row it ran): a run that
  already mixes two contents (:func:`results_drift`).

A resumed run, ``assay evaluate`` and ``assay report`` refuse either with the rows that differ
(:func:`drift_error`); ``assay run --resume RUN --rerun-changed`` runs exactly those rows
again on the current content (:func:`without_drifted`, :func:`updated_record`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from assay.data.hashing import row_hash
from assay.errors import UsageError, UserError
from assay.orchestration.loading.datastream import stream_drift, streamable
from assay.orchestration.loading.overrides import Override
from assay.orchestration.loading.task_loader import LoadedTask, load_task
from assay.orchestration.planning.expand import Expansion, Selectors, expand_dataset
from assay.orchestration.planning.plan import Plan
from assay.results.io import read_model
from assay.results.plan_record import PLAN_FILE, PlannedTaskRecord, PlanRecord, write_plan
from assay.results.recorded_rows import RecordedRows, recorded_rows
from assay.results.run import RunSummary
from assay.results.run_file import read_summary
from assay.results.suite import SelectionRecord
from assay.results.task_result import EvaluationResult

SHOWN = 10


@dataclass(frozen=True)
class Drift:
    """Rows of one task whose content is not the content the run recorded.

    Attributes:
        task_id: the task (suite) id.
        changed: row ids whose content differs.
        removed: row ids the dataset no longer has.
        where: ``dataset`` (the dataset as it is now) or ``results`` (the finished rows'
            ``task.json``).
    """

    task_id: str
    changed: tuple[str, ...]
    removed: tuple[str, ...] = ()
    where: str = "dataset"

    @property
    def rows(self) -> tuple[str, ...]:
        """Every row that differs."""
        return self.changed + self.removed

    def describe(self) -> str:
        """One sentence naming the rows (the first :data:`SHOWN` of each kind)."""
        parts = []
        if self.changed:
            parts.append(f"{len(self.changed)} row(s) changed ({_ids(self.changed)})")
        if self.removed:
            parts.append(f"{len(self.removed)} row(s) removed ({_ids(self.removed)})")
        subject = "its dataset now" if self.where == "dataset" else "its finished rows"
        return f"task '{self.task_id}': {subject} differs from what the run recorded: " + (
            " and ".join(parts))  # fmt: skip


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def recorded_hashes(
    selections: Iterable[tuple[str, SelectionRecord | None]],
) -> dict[str, dict[str, str]]:
    """Task id → the recorded row hashes (tasks recorded before hashes existed are left out)."""
    return {task_id: s.row_hashes for task_id, s in selections if s and s.row_hashes}


def dataset_drift(record: PlanRecord, expansions: Mapping[str, Expansion]) -> list[Drift]:
    """Compare the rows the run recorded with ``expansions`` (task id → the task expanded now,
    over the recorded row ids)."""
    drifts = []
    for task in record.tasks:
        expansion = expansions.get(task.task_id)
        if task.selection is None or expansion is None or not task.selection.row_hashes:
            continue
        recorded = task.selection.row_hashes
        missing = expansion.selection.missing_ids if expansion.selection else []
        changed = tuple(row_id for row_id, now in expansion.selected_rows()  # a row at a time
                        if recorded.get(row_id, now) != now)  # fmt: skip
        if changed or missing:
            drifts.append(Drift(task.task_id, changed, tuple(missing), "dataset"))
    return drifts


def results_drift(
    results: Iterable[EvaluationResult], recorded: Mapping[str, Mapping[str, str] | RecordedRows]
) -> list[Drift]:
    """Finished rows whose ``task.json`` row is not the recorded content (any variant or
    replicate): the run graded some rows on other content. ``recorded``: task id → the
    recorded hash of each row id."""
    seen: dict[str, dict[str, str]] = {}
    for result in results:
        hashes = recorded.get(result.suite_id or "")
        if not hashes or result.row_id is None or result.row is None:
            continue
        expected = hashes.get(result.row_id)
        if expected is not None and (result.row_hash or row_hash(result.row)) != expected:
            seen.setdefault(result.suite_id or "", {})[result.row_id] = "changed"
    return [Drift(task, tuple(sorted(rows)), (), "results") for task, rows in seen.items()]


def check_run_dir(run_dir: Path, results: Iterable[EvaluationResult], *, action: str) -> list[str]:
    """For ``assay evaluate`` and ``assay report``: refuse a run whose finished rows, or whose
    files' rows as they are now, differ from what it recorded (``selection.jsonl``, or the
    selections of ``plan.json`` and ``run.json`` in a run written before it). A store version
    never changes, so stored rows are not read again. Returns warnings for data that could
    not be read. The recorded rows are kept compact
    (:class:`~assay.results.recorded_rows.RecordedRows`) and a file dataset is read a row at
    a time (:mod:`assay.orchestration.loading.datastream`), so memory does not grow with the rows.

    Raises:
        UsageError: rows that differ, named (:func:`drift_error`); a damaged run folder.
    """
    record = read_model(run_dir / PLAN_FILE, PlanRecord)
    try:
        summary: RunSummary | None = read_summary(run_dir / "run.json")  # without its rows
    except (OSError, ValueError):
        summary = None
    selections = {s.task_id: s.selection for s in (summary.selections if summary else [])
                  if s.selection is not None}  # fmt: skip
    selections.update(
        {
            t.task_id: t.selection
            for t in (record.tasks if record else [])
            if t.selection is not None
        }
    )  # plan.json's, where both have one
    recorded = {task_id: rows for task_id, rows in recorded_rows(run_dir, selections).items()
                if rows.hashed}  # fmt: skip
    drifts = results_drift(results, recorded)
    warnings: list[str] = []
    if record is not None:
        files_only = [t for t in record.tasks if t.dataset is None or t.dataset.store is None]
        found, warnings = _dataset_drifts(record, files_only, recorded)
        drifts += found
    if drifts:
        raise drift_error(drifts, run_dir=run_dir, action=action)
    return warnings


def _dataset_drifts(
    record: PlanRecord, tasks: Sequence[PlannedTaskRecord], recorded: Mapping[str, RecordedRows]
) -> tuple[list[Drift], list[str]]:
    """Each of ``tasks`` whose dataset now differs from its recorded rows; and a warning for
    each whose dataset cannot be read (it is not checked)."""
    overrides = tuple(Override(tuple(path), value) for path, value in record.options.overrides)
    drifts, warnings = [], []
    for task in tasks:
        rows = recorded.get(task.task_id)
        if rows is None:
            continue
        try:
            base = Path(task.base_dir) if task.base_dir else None  # a task built in Python
            loaded = load_task(Path(task.file), base_dir=base, overrides=overrides)
            if streamable(loaded):
                changed, removed = stream_drift(loaded, rows)
            else:
                changed, removed = _expanded_drift(loaded, task, rows)
        except UserError as exc:
            warnings.append(f"task '{task.task_id}': its dataset could not be read to check "
                            f"that it is unchanged ({exc.message})")  # fmt: skip
            continue
        if changed or removed:
            drifts.append(Drift(task.task_id, tuple(changed), tuple(removed), "dataset"))
    return drifts, warnings


def _expanded_drift(
    loaded: LoadedTask, task: PlannedTaskRecord, rows: RecordedRows
) -> tuple[list[str], list[str]]:
    """:func:`stream_drift` for a dataset that must be expanded to know its row ids."""
    expansion = expand_dataset(
        loaded, Selectors(), fixed_row_ids=rows.ids_at(range(len(rows))),
        store_version=task.dataset.version if task.dataset else None, missing_ok=True,
    )  # fmt: skip
    changed = [row_id for row_id, now in expansion.selected_rows()  # a row at a time
               if rows.get(row_id) not in (None, now)]  # fmt: skip
    return changed, list(expansion.selection.missing_ids if expansion.selection else [])


def same_data(
    run_dir: Path,
    plan: Plan,
    record: PlanRecord,
    kept: Iterable[EvaluationResult],
    *,
    rerun_changed: bool,
) -> tuple[set[tuple[str, str]], PlanRecord]:
    """For a resumed run: refuse rows whose content changed since the run recorded it (in
    the dataset as it is now, or in a finished row's ``task.json``), naming them; with
    ``rerun_changed``, return them (``(task id, row id)``, every variant and replicate) to
    run again, and record the new content in ``plan.json``. ``kept`` is read once.

    Raises:
        UsageError: rows changed and ``rerun_changed`` is off (:func:`drift_error`).
    """
    expansions = {p.loaded.definition.task_id: p.expansion for p in plan.tasks}
    selections = [(t.task_id, t.selection) for t in record.tasks]
    drifts = dataset_drift(record, expansions) + results_drift(kept, recorded_hashes(selections))
    if not drifts:
        return set(), record
    if not rerun_changed:
        raise drift_error(drifts, run_dir=run_dir, action="resuming the run")
    record = updated_record(record, expansions)
    write_plan(run_dir, record, writer=plan.writer)
    return {(d.task_id, row) for d in drifts for row in d.changed}, record


def drift_error(drifts: Sequence[Drift], *, run_dir: Path, action: str) -> UsageError:
    """The refusal naming every drifted task and its rows."""
    lines = "; ".join(d.describe() for d in drifts)
    if all(not d.changed for d in drifts):  # removed rows cannot run again
        hint = "restore the dataset (a resumed run, evaluate and report use the recorded rows)"
    else:
        hint = (f"`assay run --resume {run_dir} --rerun-changed` runs exactly those rows again on "
                "the current content; or restore the dataset")  # fmt: skip
    return UsageError(
        f"{action} refused: {lines}; grading or reporting them together would mix two "
        "datasets", hint=hint,
    )  # fmt: skip


def without_drifted(
    results: Sequence[EvaluationResult], drifts: Sequence[Drift]
) -> list[EvaluationResult]:
    """``results`` without every variant and replicate of the drifted rows (to run again)."""
    drop = {(d.task_id, row) for d in drifts for row in d.changed}
    return [r for r in results if (r.suite_id, r.row_id) not in drop]


def updated_record(record: PlanRecord, expansions: Mapping[str, Expansion]) -> PlanRecord:
    """``record`` with each re-read task's dataset and row hashes as they are now."""
    tasks = []
    for task in record.tasks:
        expansion = expansions.get(task.task_id)
        current = expansion.dataset_record if expansion is not None else None
        if expansion is None or task.selection is None or current is None:
            tasks.append(task)
            continue
        hashes = {**task.selection.row_hashes, **expansion.row_hashes()}
        selection = task.selection.model_copy(update={"row_hashes": hashes})
        tasks.append(task.model_copy(update={"dataset": current, "selection": selection}))
    return record.model_copy(update={"tasks": tasks})


__all__ = [
    "Drift",
    "check_run_dir",
    "dataset_drift",
    "drift_error",
    "recorded_hashes",
    "results_drift",
    "same_data",
    "updated_record",
    "without_drifted",
]
