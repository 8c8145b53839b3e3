"""The viewer's index of one run's rows: a SQLite file in the viewer's own scratch folder
(never in the run folder), filled from the ``task.json`` files and kept up to date as rows
finish.

Why an index: a 100,000-row run has 100,000 ``task.json`` files; paging, filtering and
sorting them on every request would read them all. The index reads each file once (and again
only when its size or modification time changes), keeps one line per row-task replicate
(:class:`~assay.view.records.RowLine`) and one per criterion outcome, and answers a page of
rows in milliseconds with the process's memory independent of the run's size (SQLite keeps
its pages on disk; the viewer holds only the page it serves).

Indexing runs in a background thread; pages served meanwhile cover the rows indexed so far
and say so (:class:`IndexState`).
"""

from __future__ import annotations

import contextlib
import operator
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from assay.results.run_folder import REPLICATE_DIR
from assay.results.secrets import clip_head
from assay.results.task_result import EvaluationResult
from assay.view.reading import read_bytes, read_json_text, read_text_head
from assay.view.records import RowLine, raw_line, row_line, unreadable

BATCH = 500
SCHEMA = """
CREATE TABLE IF NOT EXISTS rows (
  pk INTEGER PRIMARY KEY, folder TEXT NOT NULL UNIQUE, mtime_ns INTEGER, size INTEGER,
  scan INTEGER,
  variant TEXT, suite TEXT, task_id TEXT, row_id TEXT, row_index INTEGER, replicate INTEGER,
  ord_index INTEGER NOT NULL, ord_id TEXT NOT NULL,
  status TEXT, category TEXT, score REAL, duration REAL, tokens INTEGER, cost REAL,
  model TEXT, expected TEXT, observed TEXT, error_kind TEXT, reason TEXT,
  response_start TEXT, problem TEXT, uncertainty REAL
);
CREATE TABLE IF NOT EXISTS texts (pk INTEGER PRIMARY KEY, prompt TEXT, response TEXT);
CREATE TABLE IF NOT EXISTS criteria (
  pk INTEGER NOT NULL, variant TEXT, suite TEXT, row_id TEXT, replicate INTEGER,
  position INTEGER, type TEXT, score REAL, outcome TEXT, expected TEXT, observed TEXT,
  qa_correct INTEGER
);
CREATE INDEX IF NOT EXISTS rows_order ON rows (suite, variant, ord_index, ord_id, replicate);
CREATE INDEX IF NOT EXISTS rows_status ON rows (status);
CREATE INDEX IF NOT EXISTS rows_labels ON rows (expected, observed);
CREATE INDEX IF NOT EXISTS rows_error ON rows (error_kind);
CREATE INDEX IF NOT EXISTS rows_score ON rows (score);
CREATE INDEX IF NOT EXISTS rows_row ON rows (row_id);
CREATE INDEX IF NOT EXISTS rows_variant ON rows (variant, category);
CREATE INDEX IF NOT EXISTS rows_suite_row ON rows (suite, variant, row_id);
CREATE INDEX IF NOT EXISTS rows_scan ON rows (scan);
CREATE INDEX IF NOT EXISTS criteria_pk ON criteria (pk);
CREATE INDEX IF NOT EXISTS criteria_suite ON criteria (suite, variant, position, outcome);
CREATE INDEX IF NOT EXISTS criteria_rows ON criteria (suite, variant, position, row_id);
"""
_COLUMNS = ("folder", "mtime_ns", "size", "scan", "variant", "suite", "task_id", "row_id",
            "row_index", "replicate", "ord_index", "ord_id", "status", "category", "score",
            "duration", "tokens", "cost", "model", "expected", "observed", "error_kind",
            "reason", "response_start", "problem", "uncertainty")  # fmt: skip
_INSERT = (f"INSERT INTO rows (pk, {', '.join(_COLUMNS)}) "
           f"VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})")  # fmt: skip
_TEXTS = "INSERT OR REPLACE INTO texts (pk, prompt, response) VALUES (?, ?, ?)"
_CRITERION = ("INSERT INTO criteria (pk, variant, suite, row_id, replicate, position, type, "
              "score, outcome, expected, observed, qa_correct) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")  # fmt: skip
PREVIEW = 160  # characters of the response shown in the rows table
Stamp = tuple[int, int]


@dataclass(frozen=True)
class IndexState:
    """How far the index is: ``indexed`` rows of ``found`` ``task.json`` files, whether a
    scan is running, when the last one ended (``time.monotonic``), and the error that
    stopped the last scan, if any."""

    indexed: int
    found: int
    scanning: bool
    scanned_at: float | None
    error: str | None = None

    @property
    def complete(self) -> bool:
        """Every ``task.json`` found so far is indexed and no scan is running."""
        return not self.scanning and self.scanned_at is not None and self.indexed >= self.found


def iter_rows(run_dir: Path) -> Iterator[tuple[str, Stamp]]:
    """Every row folder with a ``task.json`` (run-relative, POSIX) and that file's
    ``(mtime_ns, size)``, in folder-name order: ``<variant>/<suite>/<row>/<NN>`` and
    ``<variant>/<task>/<NN>``, the layout :mod:`assay.orchestration.running.rundir` writes (never
    inside a kept sandbox). One folder's names at a time: a 100,000-row suite is never held
    as folder entries. Plain ``os`` calls on strings (``scandir`` knows a folder from a link
    without another ``stat``): the scan is part of the index's rate."""
    root = os.fspath(run_dir)
    for variant in _folders(root):
        for entry in _folders(f"{root}/{variant}"):
            base = f"{variant}/{entry}"
            for child in _folders(f"{root}/{base}"):
                stamp = _stamp(f"{root}/{base}/{child}") if REPLICATE_DIR.match(child) else None
                if stamp is not None:  # a task's replicate; else a row, its id maybe a number
                    yield f"{base}/{child}", stamp
                    continue
                for replicate in _folders(f"{root}/{base}/{child}"):
                    if REPLICATE_DIR.match(replicate):
                        stamp = _stamp(f"{root}/{base}/{child}/{replicate}")
                        if stamp is not None:
                            yield f"{base}/{child}/{replicate}", stamp


def scan_rows(run_dir: Path) -> dict[str, Stamp]:
    """:func:`iter_rows` as a mapping (for tests and small runs)."""
    return dict(iter_rows(run_dir))


def _folders(folder: str) -> list[str]:
    """The folders in ``folder`` that may be folders of the layout, sorted (none when it is
    not a folder; symbolic links are not followed, hidden names are left out)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(
                e.name
                for e in entries
                if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
            )
    except OSError:
        return []


def _stamp(folder: str) -> Stamp | None:
    try:
        info = os.stat(f"{folder}/task.json")
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def read_row(run_dir: Path, folder: str) -> RowLine:
    """One row's index line, from its ``task.json`` and ``response.txt``; a file that
    cannot be read gives a line that says why."""
    where = f"{os.fspath(run_dir)}/{folder}"
    try:
        raw = read_bytes(f"{where}/task.json")
    except OSError as exc:
        return unreadable(folder, f"task.json could not be read ({exc})")
    try:
        result = EvaluationResult.model_validate_json(raw)
    except ValidationError as exc:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            return unreadable(folder, f"task.json could not be read ({bad})")
        data, problem = read_json_text(Path(where, "task.json"), "task.json", text)
        if problem is not None:
            return unreadable(folder, str(problem))
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        return raw_line(folder, data, f"task.json does not match its schema: {where}: "
                                      f"{first['msg']}")  # fmt: skip
    response, _ = read_text_head(f"{where}/response.txt", limit=80_000)
    return row_line(folder, result, response or "")


class RowIndex:
    """The index of one run (see the module docstring).

    Args:
        run_dir: the run folder (read only).
        db_path: the SQLite file to keep the index in (created; outside the run folder).
        redact: applied to each row's prompt and response before they are kept (searched,
            previewed): a search never matches what the pages show redacted.
    """

    def __init__(
        self, run_dir: Path, db_path: Path, *, redact: Callable[[str], str] | None = None
    ) -> None:
        self.run_dir = run_dir
        self.db_path = db_path
        self.redact = redact
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._found = 0
        self._scans = 0  # scans so far: each marks the rows it sees
        self._scanned_at: float | None = None
        self._error: str | None = None
        self.stamp: object = None  # the run's report files when the last scan was asked for
        self.generation = 0  # counts stored batches: cached answers of older ones are stale
        with self.connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)

    @contextlib.contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A connection for one request (closed after); rows come back as ``sqlite3.Row``."""
        db = sqlite3.connect(self.db_path, timeout=30, check_same_thread=False)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA synchronous=OFF")
        try:
            yield db
            db.commit()
        finally:
            db.close()

    def state(self) -> IndexState:
        """How far the index is."""
        with self.connect() as db:
            indexed = int(db.execute("SELECT COUNT(*) FROM rows").fetchone()[0])
        running = self._thread is not None and self._thread.is_alive()
        return IndexState(indexed, max(self._found, indexed) if running else self._found,
                          running, self._scanned_at, self._error)  # fmt: skip

    def refresh_in_background(self, *, min_interval: float = 2.0) -> bool:
        """Start a scan in a background thread unless one runs, or one ended less than
        ``min_interval`` seconds ago; whether it started (a caller that records what the
        scan will see records it only then, so a request dropped here is asked again)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return False
            if self._scanned_at is not None and time.monotonic() - self._scanned_at < min_interval:
                return False
            name = f"assay-view-index-{self.run_dir.name}"
            self._thread = threading.Thread(target=self._refresh_logged, daemon=True, name=name)
            self._thread.start()
            return True

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the running scan (if any) to end."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _refresh_logged(self) -> None:
        try:
            self.refresh()
        except (OSError, sqlite3.Error) as exc:
            self._error = f"indexing stopped: {exc}"
            self._scanned_at = time.monotonic()

    def refresh(self) -> int:
        """Scan the run folder and index every new or changed ``task.json``, in batches
        committed as they go, then forget rows whose ``task.json`` is gone. Returns the rows
        (re)indexed. Memory stays at one batch whatever the run's size: what is known is
        looked up batch by batch, and rows not seen by this scan are found by a mark."""
        self._scans += 1
        seen = indexed = 0
        with self.connect() as db:  # one connection; each batch is committed as it is stored
            for batch in _batches(iter_rows(self.run_dir)):
                seen += len(batch)
                self._found = max(self._found, seen)
                changed = self._mark(db, batch)
                if changed:
                    self._store(db, [(read_row(self.run_dir, f), stamp) for f, stamp in changed])
                    indexed += len(changed)
                db.commit()
                if changed:
                    self.generation += 1
            gone = [r[0] for r in db.execute("SELECT folder FROM rows WHERE scan != ?",
                                             [self._scans])]  # fmt: skip
            for start in range(0, len(gone), BATCH):
                self._forget(db, gone[start : start + BATCH])
        if gone:
            self.generation += 1
        self._found = seen
        self._scanned_at = time.monotonic()
        self._error = None
        return indexed

    def _mark(
        self, db: sqlite3.Connection, batch: list[tuple[str, Stamp]]
    ) -> list[tuple[str, Stamp]]:
        """Mark ``batch``'s folders as seen by this scan; the ones new or changed since."""
        marks = ", ".join("?" * len(batch))
        folders = [folder for folder, _ in batch]
        known = {
            r[0]: (r[1], r[2])
            for r in db.execute(
                f"SELECT folder, mtime_ns, size FROM rows WHERE folder IN ({marks})", folders
            )
        }
        db.execute(f"UPDATE rows SET scan = ? WHERE folder IN ({marks})", [self._scans, *folders])
        return [(folder, stamp) for folder, stamp in batch if known.get(folder) != stamp]

    @staticmethod
    def _forget(db: sqlite3.Connection, folders: list[str]) -> None:
        marks = ", ".join("?" * len(folders))
        for table in ("criteria", "texts"):
            db.execute(f"DELETE FROM {table} WHERE pk IN (SELECT pk FROM rows WHERE folder IN "
                       f"({marks}))", folders)  # fmt: skip
        db.execute(f"DELETE FROM rows WHERE folder IN ({marks})", folders)

    def _store(self, db: sqlite3.Connection, lines: list[tuple[RowLine, Stamp]]) -> None:
        """Replace the lines of ``lines``' folders: three ``executemany`` for the batch, the
        primary keys given here (one past the largest) so no row needs a statement of its
        own to learn its key."""
        self._forget(db, [line.folder for line, _ in lines])
        if self.redact is not None:  # what is searched and previewed is what pages show
            shown = self.redact
            lines = [(replace(line, prompt=shown(line.prompt), response=shown(line.response)),
                      stamp) for line, stamp in lines]  # fmt: skip
        first = int(db.execute("SELECT COALESCE(MAX(pk), 0) FROM rows").fetchone()[0]) + 1
        keyed = list(enumerate(lines, start=first))
        db.executemany(_INSERT, [
            (pk, line.folder, mtime, size, self._scans, *_values(line))
            for pk, (line, (mtime, size)) in keyed
        ])  # fmt: skip
        db.executemany(_TEXTS, [(pk, line.prompt, line.response) for pk, (line, _) in keyed])
        db.executemany(_CRITERION, [
            (pk, line.variant, line.suite, line.row_id, line.replicate, c.position, c.type,
             c.score, c.outcome, c.expected, c.observed, c.qa_correct)
            for pk, (line, _) in keyed for c in line.criteria
        ])  # fmt: skip


_PLAIN = operator.attrgetter("variant", "suite", "task_id", "row_id", "row_index", "replicate")
_MORE = operator.attrgetter("status", "category", "score", "duration", "tokens", "cost", "model",
                            "expected", "observed", "error_kind", "reason")  # fmt: skip


def _values(line: RowLine) -> tuple[object, ...]:
    """The ``rows`` columns a row's line gives, in ``_COLUMNS[4:]`` order."""
    return (*_PLAIN(line), line.row_index if line.row_index is not None else -1,
            line.row_id or "", *_MORE(line), clip_head(line.response, PREVIEW), line.problem,
            line.uncertainty)  # fmt: skip


def _batches(rows: Iterator[tuple[str, Stamp]]) -> Iterator[list[tuple[str, Stamp]]]:
    batch: list[tuple[str, Stamp]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch
