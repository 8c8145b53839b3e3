"""The order a review queue walks a run's rows in, kept on disk: a 100,000-row queue costs the
viewer no memory, however many orders and seeds reviewers walk.

A queue is a SQLite file in the viewer's scratch folder, one table ``queue (position,
folder)`` written once per (run index generation when the walk started, order, seed, scale,
labels version) by one ``INSERT … SELECT … ORDER BY`` over the run's index. While the run
is still running, the rows that reach the index later are added at the end of the queue
(in the same order among themselves): the rows ahead of a reviewer never move, and none is
shown twice or skipped. The viewer keeps the :data:`KEPT` queues used last (by the file's
time), and any used in the last half hour (up to :data:`MOST`), and removes older ones.
Orders (:data:`ORDERS`), each then in the run's own order
(suite, variant, row, replicate):

- ``uncertain``: the rows whose judges were least sure first (highest ``uncertainty``; rows
  without one last);
- ``disagree``: rows whose human labels say otherwise than the run's outcome first (most
  such labels first, :func:`assay.view.review.disagrees`), then rows no one labelled, then
  the rest;
- ``failed``: failures, errors and unreadable rows first;
- ``random``: shuffled by ``seed`` (each row's place is a hash of the seed and its folder,
  so a seed always gives the same order);
- ``dataset``: the run's own order.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import UsageError
from assay.view.review import Scale, disagrees

ORDERS = ("uncertain", "disagree", "failed", "random", "dataset")
KEPT = 32  # queue files kept in a scratch folder
ACTIVE_SECONDS = 1800  # a queue used this recently is a walk in progress: kept (up to MOST)
MOST = 256
_RUN_ORDER = "suite, variant, ord_index, ord_id, replicate"
_FIRST = {
    "uncertain": "uncertainty IS NULL, uncertainty DESC, ",
    "disagree": "disagreement(folder, category, score), ",
    "failed": "COALESCE(category NOT IN ('failed', 'error', 'unreadable'), 1), ",
    "random": "shuffled(folder), ",
    "dataset": "",
}


@dataclass(frozen=True)
class Queue:
    """A review queue on disk: ``length`` rows at positions ``0 … length - 1``."""

    path: Path
    length: int

    def folder(self, position: int) -> str | None:
        """The row folder at ``position`` (``None``: outside the queue)."""
        with contextlib.closing(sqlite3.connect(self.path, check_same_thread=False)) as db:
            found = db.execute("SELECT folder FROM queue WHERE position = ?",
                               (position + 1,)).fetchone()  # fmt: skip
        return str(found[0]) if found else None


def labelled_rows(db: sqlite3.Connection, folders: Collection[str]) -> int:
    """How many of ``folders`` are rows of the run whose index ``db`` is."""
    if not folders:
        return 0
    sql = "SELECT COUNT(*) FROM rows WHERE folder IN (SELECT value FROM json_each(?))"
    return int(db.execute(sql, (json.dumps(list(folders)),)).fetchone()[0])


def build_queue(
    index_db: Path,
    path: Path,
    order: str,
    *,
    seed: int = 0,
    human: Mapping[str, list[dict[str, Any]]] | None = None,
    scale: Scale | None = None,
    generation: int = 0,
) -> Queue:
    """The rows of the run whose index is ``index_db`` in the review order ``order``, written
    to ``path`` (``human``: folder → its labels, for ``disagree``); a queue already at
    ``path`` is the one asked for (name the file after everything above but
    ``generation``), with the rows the index gained since (its ``generation`` is later than
    the queue's) added at its end.

    Raises:
        UsageError: an unknown order.
    """
    if order not in ORDERS:
        raise UsageError(f"no review order '{order}'", hint=f"one of {', '.join(ORDERS)}")
    ordering = _Ordering(order, seed, human or {}, scale or Scale())
    if path.exists():
        try:
            return _extended(index_db, path, ordering, generation)
        except sqlite3.DatabaseError:  # pruned or cut meanwhile: written again below
            with contextlib.suppress(OSError):
                path.unlink()
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".partial")
    os.close(handle)
    db = ordering.connect(Path(name), index_db)
    try:
        db.execute("CREATE TABLE queue (position INTEGER PRIMARY KEY, folder TEXT NOT NULL)")
        db.execute("CREATE TABLE meta (generation INTEGER NOT NULL)")
        db.execute("INSERT INTO meta VALUES (?)", (generation,))
        db.execute(f"INSERT INTO queue (folder) SELECT folder FROM src.rows "
                   f"ORDER BY {ordering.sql}")  # fmt: skip
        db.execute("CREATE INDEX queued ON queue (folder)")
        length = int(db.execute("SELECT COUNT(*) FROM queue").fetchone()[0])
        db.commit()
    finally:
        db.close()
    os.replace(name, path)
    _prune(path.parent, keep=path)
    return Queue(path, length)


@dataclass(frozen=True)
class _Ordering:
    order: str
    seed: int
    human: Mapping[str, list[dict[str, Any]]]
    scale: Scale

    @property
    def sql(self) -> str:
        return f"{_FIRST[self.order]}{_RUN_ORDER}"

    def connect(self, path: Path, index_db: Path, *, create: bool = True) -> sqlite3.Connection:
        """The queue file ``path`` with the run's index attached as ``src`` and the order's
        functions (``create=False``: an existing file only; one removed meanwhile raises
        ``sqlite3.OperationalError`` instead of being made empty)."""
        where = str(path) if create else f"file:{path}?mode=rw"
        db = sqlite3.connect(where, timeout=30, check_same_thread=False, uri=not create)
        db.create_function("shuffled", 1, _shuffle_key(self.seed), deterministic=True)
        db.create_function("disagreement", 3, _disagreement(self.human, self.scale),
                           deterministic=True)  # fmt: skip
        db.execute("ATTACH DATABASE ? AS src", (str(index_db),))
        return db


def _extended(index_db: Path, path: Path, ordering: _Ordering, generation: int) -> Queue:
    """The queue at ``path``, the rows the index gained since it was written (a later
    ``generation``) added at its end in the queue's order; touched, as used last."""
    db = ordering.connect(path, index_db, create=False)
    try:
        (written,) = db.execute("SELECT generation FROM meta").fetchone()
        if written < generation:
            db.execute("BEGIN IMMEDIATE")  # another request may be adding them too
            (written,) = db.execute("SELECT generation FROM meta").fetchone()
            if written < generation:
                db.execute(f"INSERT INTO queue (folder) SELECT folder FROM src.rows "
                           f"WHERE folder NOT IN (SELECT folder FROM queue) "
                           f"ORDER BY {ordering.sql}")  # fmt: skip
                db.execute("UPDATE meta SET generation = ?", (generation,))
            db.commit()
        length = int(db.execute("SELECT COUNT(*) FROM queue").fetchone()[0])
    finally:
        db.close()
    with contextlib.suppress(OSError):
        os.utime(path)
    return Queue(path, length)


def _prune(folder: Path, *, keep: Path) -> None:
    """Remove the queue files of ``folder`` but the :data:`KEPT` used last, ``keep``, and
    any used in the last :data:`ACTIVE_SECONDS` (a reviewer's walk: removing it would sort
    its later rows again), up to :data:`MOST` files."""
    queues = []
    for path in folder.glob("queue-*.sqlite"):
        with contextlib.suppress(OSError):
            queues.append((path.stat().st_mtime, path))
    queues.sort(reverse=True)
    recent = time.time() - ACTIVE_SECONDS
    for rank, (used, path) in enumerate(queues):
        if rank < KEPT or path == keep or (used >= recent and rank < MOST):
            continue
        with contextlib.suppress(OSError):
            path.unlink()


def _shuffle_key(seed: int) -> Any:
    def key(folder: str) -> int:
        digest = hashlib.blake2b(f"{seed}/{folder}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big", signed=True)

    return key


def _disagreement(human: Mapping[str, list[dict[str, Any]]], scale: Scale) -> Any:
    def rank(folder: str, category: str | None, score: float | None) -> int:
        given = human.get(folder, [])
        if not given:
            return 1  # no one labelled it
        against = sum(disagrees(scale, item.get("label"), category or "", score)
                      for item in given)  # fmt: skip
        return -against if against else 2

    return rank
