"""The folders a viewer was given, the runs in them, and each run's row index, kept in a
scratch folder of the viewer's own (a temporary folder, removed when it stops; never inside
a run folder).

A folder given is either one run (it has ``plan.json`` or ``run.json``) or a folder of runs
(``runs/``: every child folder that is a run; the ``latest`` symlink is skipped). Runs are
looked for again on every visit of the runs page, so a run started after the viewer shows up.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from assay.errors import UsageError
from assay.results.io import Writer
from assay.results.plan_record import PLAN_FILE, SESSIONS_FILE
from assay.results.run import TaskSelection
from assay.results.selection_file import SELECTION_FILE
from assay.view.index import RowIndex
from assay.view.runinfo import RunInfo, is_run, read_run

_STAMPED = ("run.json", PLAN_FILE, SESSIONS_FILE, "experiment.json")
_SETTLED = ("finished", "interrupted", "unreadable")
MEMO_SIZE = 32
T = TypeVar("T")


@dataclass(frozen=True)
class RunEntry:
    """A run found in the folders: its URL ``key`` (the folder name, made unique) and path."""

    key: str
    path: Path


def check_folders(folders: list[Path]) -> list[Path]:
    """The folders, absolute.

    Raises:
        UsageError: a folder does not exist or is a file.
    """
    found = []
    for folder in folders:
        if not folder.exists():
            hint = "give run folders or folders of runs (default: runs)"
            raise UsageError(f"no such folder: {folder}", hint=hint)
        if not folder.is_dir():
            raise UsageError(f"{folder} is a file, not a run folder or a folder of runs")
        found.append(folder.resolve())
    return found


def find_runs(folders: list[Path]) -> list[RunEntry]:
    """Every run in ``folders``, newest first by the run's own start time
    (:func:`started_at`). A run's URL key is its folder name; when runs of several folders
    given share a name, the one in the folder given first keeps the name and each other
    gets ``NAME~`` and 8 hex digits of its path's SHA-256: the same URL on every visit,
    whatever order the runs start in."""
    found: list[tuple[int, Path]] = []
    for position, folder in enumerate(folders):
        if is_run(folder):
            found.append((position, folder))
            continue
        try:
            children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError:
            continue
        found += [(position, child) for child in children if is_run(child)]
    unique: dict[Path, int] = {}
    for position, path in found:
        unique.setdefault(path.resolve(), position)
    first: dict[str, Path] = {}
    for path in sorted(unique, key=lambda p: (unique[p], str(p))):
        first.setdefault(path.name, path)
    entries = [RunEntry(path.name if first[path.name] == path else _suffixed(path), path)
               for path in unique]  # fmt: skip
    entries.sort(key=lambda e: (started_at(e.path), e.path.name, str(e.path)), reverse=True)
    return entries


def _suffixed(path: Path) -> str:
    return f"{path.name}~{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"


def started_at(path: Path) -> float:
    """When the run started (``time.time()`` seconds): the first session's start in
    ``sessions.jsonl`` (written beside ``plan.json`` when the run began), else the time
    ``plan.json`` or ``run.json`` was written (a run from before ``sessions.jsonl``)."""
    try:
        with (path / SESSIONS_FILE).open(encoding="utf-8") as handle:
            first = json.loads(handle.readline(4096))
        return datetime.fromisoformat(str(first["start"])).timestamp()
    except (OSError, ValueError, TypeError, KeyError):
        pass
    for name in (PLAN_FILE, "run.json"):
        try:
            return (path / name).stat().st_mtime
        except OSError:
            continue
    return 0.0


def file_identity(path: Path) -> tuple[int, int, int, int]:
    """``(device, inode, modification time in ns, size)`` of ``path``; zeros when it is
    missing: a file replaced (by rename) or rewritten has another identity."""
    try:
        info = path.stat()
    except OSError:
        return (0, 0, 0, 0)
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)


def stamp(path: Path) -> tuple[tuple[int, int], ...]:
    stamps = []
    for name in _STAMPED:
        try:
            info = (path / name).stat()
            stamps.append((info.st_mtime_ns, info.st_size))
        except OSError:
            stamps.append((0, 0))
    return tuple(stamps)


class Job:
    """A computation running in the background: ``done`` once it ended, with its ``value``
    or the ``error`` (a :class:`UsageError`'s message) that stopped it."""

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self.error: str | None = None

    def run(self, compute: Callable[[], Any]) -> None:
        """Compute the value (in the job's thread)."""
        try:
            self.value = compute()
        except UsageError as exc:
            self.error = exc.message
        except (OSError, ValueError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.done = True


class Workspace:
    """The viewer's runs and their indexes (see the module docstring).

    Args:
        folders: run folders or folders of runs (checked by :func:`check_folders`).
        scratch: where the indexes go (default: a new temporary folder, removed by
            :meth:`close`).
    """

    def __init__(self, folders: list[Path], *, scratch: Path | None = None) -> None:
        self.folders = check_folders(folders)
        self._own_scratch = scratch is None
        self.scratch = Path(tempfile.mkdtemp(prefix="assay-view-")) if scratch is None else scratch
        self._lock = threading.Lock()
        self._entries: dict[str, RunEntry] = {}
        self._indexes: dict[Path, RowIndex] = {}
        self._infos: dict[Path, tuple[tuple[tuple[int, int], ...], RunInfo]] = {}
        self._memo: dict[tuple[Any, ...], Any] = {}
        self._selections: dict[Path, tuple[object, dict[str, TaskSelection]]] = {}
        self._jobs: dict[tuple[Any, ...], Job] = {}
        self.shown = Writer.from_environment(os.environ)  # what pages show (and search) redacted

    def memo(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """``compute()``, kept under ``key`` (the last ``MEMO_SIZE`` answers): pages whose
        inputs did not change are not worked out again."""
        with self._lock:
            if key in self._memo:
                return self._memo[key]  # type: ignore[no-any-return]
        value = compute()
        with self._lock:
            self._memo[key] = value
            while len(self._memo) > MEMO_SIZE:
                self._memo.pop(next(iter(self._memo)))
        return value

    def background(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Job:
        """The job computing ``compute()`` in a thread of its own, started on the first call
        with ``key`` (the last ``MEMO_SIZE`` jobs are kept): a page shows what is ready and
        updates when the rest is."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                job = self._jobs[key] = Job()
                threading.Thread(target=job.run, args=(compute,), daemon=True,
                                 name="assay-view-job").start()  # fmt: skip
                while len(self._jobs) > MEMO_SIZE:
                    self._jobs.pop(next(iter(self._jobs)))
        return job

    def close(self) -> None:
        """Remove the scratch folder (when the workspace made it)."""
        if self._own_scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def runs(self) -> list[RunEntry]:
        """Every run, newest first (looked for again now)."""
        found = find_runs(self.folders)
        with self._lock:
            self._entries = {e.key: e for e in found}
        return found

    def entry(self, key: str) -> RunEntry | None:
        """The run with URL key ``key``."""
        with self._lock:
            known = self._entries.get(key)
        if known is None:
            known = next((e for e in self.runs() if e.key == key), None)
        return known

    def index(self, entry: RunEntry, *, start: bool = True) -> RowIndex:
        """The run's row index (made on first use). ``start`` begins a scan in the background
        when the run may have changed: always for a run in progress (at most every 2 s),
        otherwise only when its reports were rewritten since the last scan."""
        with self._lock:
            index = self._indexes.get(entry.path)
            if index is None:
                number = len(self._indexes) + 1
                index = RowIndex(entry.path, self.scratch / f"run-{number}.sqlite",
                                 redact=self.shown.redact)  # fmt: skip
                self._indexes[entry.path] = index
        if start:
            now = stamp(entry.path)
            live = now[0] == (0, 0) or self._open_session(entry)
            if (live or index.stamp != now) and index.refresh_in_background():
                index.stamp = now  # only a scan that starts sees it: a dropped one is asked again
        return index

    def selections(self, entry: RunEntry) -> dict[str, TaskSelection]:
        """Task id → the dataset and rows the run recorded selecting (:attr:`RunInfo.selections`),
        read again only when ``selection.jsonl`` (inode, modification time, size) or the
        run's report files changed: a diff's pages never re-read a 100,000-line list.

        Raises:
            UsageError: the run's list of selected rows is damaged (as ``assay compare``).
        """
        identity = (file_identity(entry.path / SELECTION_FILE), stamp(entry.path))
        with self._lock:
            cached = self._selections.get(entry.path)
        if cached is not None and cached[0] == identity:
            return cached[1]
        found = self.info(entry).selections
        with self._lock:
            self._selections[entry.path] = (identity, found)
        return found

    def _open_session(self, entry: RunEntry) -> bool:
        with self._lock:
            cached = self._infos.get(entry.path)
        return cached is None or cached[1].open_session

    def info(self, entry: RunEntry) -> RunInfo:
        """What the run's files say, read again when one of them changed (and on every call
        while the run is in progress)."""
        now = stamp(entry.path)
        with self._lock:
            cached = self._infos.get(entry.path)
        if cached is not None and cached[0] == now and cached[1].state in _SETTLED:
            return cached[1]
        index = self._indexes.get(entry.path)
        info = read_run(entry.key, entry.path, last_row_at=_last_row(index))
        with self._lock:
            self._infos[entry.path] = (now, info)
        return info


def _last_row(index: RowIndex | None) -> float | None:
    """When the newest indexed ``task.json`` was written (``time.time()`` seconds)."""
    if index is None:
        return None
    with index.connect() as db:
        newest = db.execute("SELECT MAX(mtime_ns) FROM rows").fetchone()[0]
    return newest / 1e9 if newest else None
