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
from assay.orchestration.expand import Expansion, Selectors, expand_dataset
from assay.orchestration.overrides import Override
from assay.orchestration.plan import Plan
from assay.orchestration.task_loader import load_task
from assay.results.io import read_model
from assay.results.plan_record import PLAN_FILE, PlanRecord, listed_record, write_plan
from assay.results.run import RunSummary
from assay.results.run_file import read_summary
from assay.results.selection_file import listed
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
    results: Iterable[EvaluationResult], recorded: Mapping[str, Mapping[str, str]]
) -> list[Drift]:
    """Finished rows whose ``task.json`` row is not the recorded content (any variant or
    replicate): the run graded some rows on other content."""
    seen: dict[str, dict[str, str]] = {}
    for result in results:
        hashes = recorded.get(result.suite_id or "")
        if not hashes or result.row_id is None or result.row is None:
            continue
        expected = hashes.get(result.row_id)
        if expected is not None and row_hash(result.row) != expected:
            seen.setdefault(result.suite_id or "", {})[result.row_id] = "changed"
    return [Drift(task, tuple(sorted(rows)), (), "results") for task, rows in seen.items()]


def reread(record: PlanRecord, *, store_url: str | None) -> tuple[dict[str, Expansion], list[str]]:
    """Each recorded task expanded again over its recorded row ids, as the dataset is now;
    and a warning for each task whose data cannot be read (it is not checked)."""
    overrides = tuple(Override(tuple(path), value) for path, value in record.options.overrides)
    expansions: dict[str, Expansion] = {}
    warnings = []
    for task in record.tasks:
        if task.selection is None or not task.selection.row_hashes:
            continue
        try:
            base = Path(task.base_dir) if task.base_dir else None  # a task built in Python
            loaded = load_task(Path(task.file), base_dir=base, overrides=overrides)
            expansions[task.task_id] = expand_dataset(
                loaded, Selectors(), fixed_row_ids=list(task.selection.row_ids),
                store_url=store_url,
                store_version=task.dataset.version if task.dataset else None, missing_ok=True,
            )  # fmt: skip
        except UserError as exc:
            warnings.append(f"task '{task.task_id}': its dataset could not be read to check "
                            f"that it is unchanged ({exc.message})")  # fmt: skip
    return expansions, warnings


def check_run_dir(run_dir: Path, results: Iterable[EvaluationResult], *, action: str) -> list[str]:
    """:func:`check_finished_run` with what the run recorded (``plan.json``, and
    ``run.json``'s selections).

    Raises:
        UsageError: rows that differ, named.
    """
    record = read_model(run_dir / PLAN_FILE, PlanRecord)
    if record is not None:
        record = listed_record(run_dir, record)
    try:
        summary: RunSummary | None = read_summary(run_dir / "run.json")  # without its rows
    except (OSError, ValueError):
        summary = None
    planned = {t.task_id for t in record.tasks} if record is not None else set()
    unplanned = {
        s.task_id: s.selection
        for s in (summary.selections if summary else [])
        if s.task_id not in planned
    }  # plan.json records the rest (read once)
    selections: list[tuple[str, SelectionRecord | None]] = list(listed(run_dir, unplanned).items())
    if record is not None:
        selections += [(t.task_id, t.selection) for t in record.tasks]
    return check_finished_run(run_dir, results, record, selections, action=action)


def check_finished_run(
    run_dir: Path,
    results: Iterable[EvaluationResult],
    record: PlanRecord | None,
    selections: Iterable[tuple[str, SelectionRecord | None]],
    *,
    action: str,
) -> list[str]:
    """For ``assay evaluate`` and ``assay report``: refuse a run whose finished rows, or whose
    files' rows as they are now, differ from what it recorded. A store version never changes,
    so stored rows are not read again. Returns warnings for data that could not be read.

    Raises:
        UsageError: rows that differ, named (:func:`drift_error`).
    """
    drifts = results_drift(results, recorded_hashes(selections))
    warnings: list[str] = []
    if record is not None:
        files_only = record.model_copy(update={"tasks": [
            t for t in record.tasks if t.dataset is None or t.dataset.store is None]})  # fmt: skip
        expansions, warnings = reread(files_only, store_url=None)
        drifts += dataset_drift(files_only, expansions)
    if drifts:
        raise drift_error(drifts, run_dir=run_dir, action=action)
    return warnings


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
    write_plan(run_dir, record)
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
    "check_finished_run",
    "check_run_dir",
    "dataset_drift",
    "drift_error",
    "recorded_hashes",
    "reread",
    "results_drift",
    "same_data",
    "updated_record",
    "without_drifted",
]
