"""``plan.json``: what a run set out to do, written before its first row, so it can be resumed.

It names the task files (absolute paths), the command-line options that shaped the plan, and
for every dataset task the selection it made (row ids in dataset order, and the selectors).
``assay run --resume RUN_DIR`` rebuilds exactly this plan, with exactly these rows, even when
the selection was an unseeded random draw. ``sessions.jsonl`` beside it logs when each
invocation started and ended, so durations cover the whole run, not its downtime.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.errors import UsageError
from assay.results.io import Writer, read_json
from assay.results.run import TaskSelection
from assay.results.selection_file import SELECTION_FILE, listed, unlisted, write_selection_rows
from assay.results.suite import DatasetRecord, SelectionRecord
from assay.spec.run_names import PLAN_FILE as PLAN_FILE  # re-exported
from assay.spec.run_names import SESSIONS_FILE as SESSIONS_FILE  # re-exported

PLAN_SCHEMA_VERSION = "1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PlannedTaskRecord(_Model):
    """One task file of the plan and the rows it selected. A task built in Python is saved
    in the run directory (``file``) with the folder its relative paths start from
    (``base_dir``). ``content_hash``: SHA-256 of the task as loaded, without its dataset
    (a resumed run refuses a task edited since; absent in older runs). ``images``: each
    ``docker`` variant's image as ``ENGINE IMAGE ID`` (a resumed run or a regrade refuses
    another one; empty in older runs)."""

    task_id: str
    file: str
    base_dir: str | None = None
    dataset: DatasetRecord | None = None
    selection: SelectionRecord | None = None
    content_hash: str | None = None
    images: dict[str, str] = Field(default_factory=dict)


class PlanOptionsRecord(_Model):
    """The command-line options that shaped the plan. ``experiment_hash``: SHA-256 of the
    experiment as the run used it (a resumed run refuses an experiment edited since; absent
    in older runs)."""

    sample: int | None = None
    sample_per_stratum: int | None = None
    split: str | None = None
    tags: list[str] = Field(default_factory=list)
    exclude_tags: list[str] = Field(default_factory=list)
    include_skipped: bool = False
    skip_unsupported: bool = False
    stop_when_decided: bool = False
    repeats: int | None = None
    experiment: str | None = None
    experiment_hash: str | None = None
    overrides: list[tuple[list[str], Any]] = Field(default_factory=list)


class JudgeUse(_Model):
    """A judge a task's criterion (``position`` in ``success_criteria``; ``None``: the
    task's ``qa.judge``) resolved to when the run was planned: a resumed run reads the same
    store version and refuses a judge whose content changed."""

    position: int | None = None
    name: str
    version: int | None = None
    content_hash: str
    source: str


class PlanRecord(_Model):
    """One ``plan.json``."""

    schema_version: str = PLAN_SCHEMA_VERSION
    stage: Literal["run", "execute"] = "run"
    files: list[str]
    options: PlanOptionsRecord = Field(default_factory=PlanOptionsRecord)
    jobs: int = 4
    keep_sandboxes: bool = False
    tasks: list[PlannedTaskRecord] = Field(default_factory=list)
    variants: list[str] = Field(default_factory=lambda: ["default"])
    criteria: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    work_items: int = 0
    planned: dict[str, int] = Field(default_factory=dict)
    judges: dict[str, list[JudgeUse]] = Field(default_factory=dict)
    scripts: dict[str, str] = Field(default_factory=dict)
    """Each ``mock/`` model script the run's agents, judges and simulated users read (its
    path) → the SHA-256 of its content: a resumed run refuses one edited since (its rows
    would be answered by two scripts); empty in older runs."""

    def selections(self) -> list[TaskSelection]:
        """Each dataset task's dataset and selection, as ``run.json`` lists them (rows as
        this record has them: see :func:`unlisted`)."""
        return [
            TaskSelection(task_id=t.task_id, source_file=t.file, dataset=t.dataset,
                          selection=unlisted(t.selection))
            for t in self.tasks
            if t.dataset is not None and t.selection is not None
        ]  # fmt: skip


def write_plan(run_dir: Path, record: PlanRecord, *, writer: Writer) -> None:
    """Write ``plan.json`` atomically through ``writer`` (a ``-D`` override may carry a
    secret). A selection that lists its rows (a record read with :func:`read_plan` and
    changed) has them written to ``selection.jsonl`` instead, as a run lists them."""
    listed = [t for t in record.tasks if t.selection is not None and t.selection.row_ids]
    if listed:
        write_selection_rows(run_dir, ((t.task_id, row_id, t.selection.row_hashes.get(row_id, ""))
                                       for t in listed if t.selection is not None
                                       for row_id in t.selection.row_ids),
                             writer=writer)  # fmt: skip
        record = record.model_copy(update={"tasks": [_unlisted(t) for t in record.tasks]})
    writer.json(run_dir / PLAN_FILE, record)


def _unlisted(task: PlannedTaskRecord) -> PlannedTaskRecord:
    if task.selection is None or not task.selection.row_ids:
        return task
    selection = task.selection.model_copy(
        update={"row_ids": [], "row_hashes": {}, "rows_file": SELECTION_FILE}
    )
    return task.model_copy(update={"selection": selection})


def read_plan(run_dir: Path) -> PlanRecord:
    """``run_dir/plan.json`` with every selection's rows listed (read from
    ``selection.jsonl`` when the run listed them there).

    Raises:
        UsageError: a file cannot be read or is not what assay wrote (the run folder is
            damaged), naming it (and the line, for JSON that does not parse).
    """
    path = run_dir / PLAN_FILE
    hint = "restore the file from a copy of the run folder, or start a new run"
    try:
        record = PlanRecord.model_validate(read_json(path))
    except json.JSONDecodeError as exc:
        raise UsageError(f"{PLAN_FILE} is not valid JSON ({exc.msg}): the run folder is damaged",
                         file=path, line=exc.lineno, hint=hint) from None  # fmt: skip
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{PLAN_FILE} cannot be read ({exc})", file=path, hint=hint) from None
    except ValidationError as exc:
        where = ".".join(str(part) for part in exc.errors()[0]["loc"]) or "the top level"
        raise UsageError(f"{PLAN_FILE} is not a plan assay wrote ({where}: "
                         f"{exc.errors()[0]['msg']}): the run folder is damaged",
                         file=path, hint=hint) from None  # fmt: skip
    return listed_record(run_dir, record)


def listed_record(run_dir: Path, record: PlanRecord) -> PlanRecord:
    """``record`` with every selection's rows listed (:func:`listed`: the file read once)."""
    rows = listed(run_dir, {t.task_id: t.selection for t in record.tasks if t.selection})
    tasks = [t.model_copy(update={"selection": rows[t.task_id]}) if t.selection else t
             for t in record.tasks]  # fmt: skip
    return record.model_copy(update={"tasks": tasks})


def log_session(
    run_dir: Path,
    event: Literal["start", "end"],
    when: datetime,
    *,
    writer: Writer,
) -> None:
    """Append one line to ``sessions.jsonl`` (through ``writer``, like every file), on a line
    of its own after a last line that a kill cut short."""
    path = run_dir / SESSIONS_FILE
    line = json.dumps({event: when.isoformat()}) + "\n"
    writer.append(path, ("\n" if _ends_cut(path) else "") + line)


def _ends_cut(path: Path) -> bool:
    """``path`` ends without a line break (an append a kill cut short)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except OSError:  # no file yet, or an empty one
        return False


def read_sessions(run_dir: Path) -> list[tuple[datetime, datetime | None]]:
    """Each invocation's (start, end); end is ``None`` for one that was killed. A line that
    does not read (cut short by a kill, the NUL bytes a crashed file system leaves) is
    passed over: the log only times the sessions."""
    sessions: list[tuple[datetime, datetime | None]] = []
    path = run_dir / SESSIONS_FILE
    if not path.exists():
        return sessions
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        event = _event(line)
        if "start" in event:
            sessions.append((event["start"], None))
        elif "end" in event and sessions and sessions[-1][1] is None:
            sessions[-1] = (sessions[-1][0], event["end"])
    return sessions


def _event(line: str) -> dict[str, datetime]:
    """A session line's ``{start|end: time}``; empty when it does not read."""
    try:
        data = json.loads(line)
        return {key: datetime.fromisoformat(value) for key, value in data.items()
                if key in ("start", "end")}  # fmt: skip
    except (ValueError, TypeError, AttributeError):
        return {}
