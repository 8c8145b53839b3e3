"""The review queue on disk against Python's stable sort of the index's rows (the order the
queue kept in memory before): each order, with ties in the run's order; a queue asked for
again is read from its file; an unknown order is refused; labelled rows are counted."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from assay.errors import UsageError
from assay.view.index import RowIndex
from assay.view.review import Scale, disagrees
from assay.view.review_queue import KEPT, ORDERS, build_queue, labelled_rows
from tests.view.generate import make_run

RUN_ORDER = "suite, variant, ord_index, ord_id, replicate"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> RowIndex:
    folder = tmp_path_factory.mktemp("queue")
    run = make_run(40, folder / "runs", name="q", replicates=2, variants=("a", "b"))
    found = RowIndex(run, folder / "index.sqlite")
    found.refresh()
    with found.connect() as db:  # some judges unsure, one row unreadable
        db.execute("UPDATE rows SET uncertainty = (pk % 7) / 7.0 WHERE pk % 3 = 0")
        db.execute("UPDATE rows SET category = 'unreadable' WHERE pk = 5")
    return found


def rows_of(index: RowIndex) -> list[sqlite3.Row]:
    with index.connect() as db:
        return db.execute(f"SELECT * FROM rows ORDER BY {RUN_ORDER}").fetchall()


def walk(path: Path, length: int, index: RowIndex, order: str, **options: Any) -> list[str]:
    queue = build_queue(index.db_path, path, order, **options)
    assert queue.length == length and queue.folder(length) is None
    return [str(queue.folder(i)) for i in range(length)]


def test_each_order_is_pythons_stable_sort_of_the_rows(index: RowIndex, tmp_path: Path) -> None:
    rows = rows_of(index)
    folders = [r["folder"] for r in rows]
    assert len(folders) == 160
    assert walk(tmp_path / "d", 160, index, "dataset") == folders
    failing = {"failed", "error", "unreadable"}
    expected = sorted(rows, key=lambda r: r["category"] not in failing)
    assert walk(tmp_path / "f", 160, index, "failed") == [r["folder"] for r in expected]
    assert rows[4]["category"] == "unreadable" or "unreadable" in {r["category"] for r in rows}
    expected = sorted(rows, key=lambda r: (r["uncertainty"] is None, -(r["uncertainty"] or 0)))
    assert walk(tmp_path / "u", 160, index, "uncertain") == [r["folder"] for r in expected]
    shuffled = walk(tmp_path / "r3", 160, index, "random", seed=3)
    assert sorted(shuffled) == sorted(folders) and shuffled != folders
    assert walk(tmp_path / "r3-again", 160, index, "random", seed=3) == shuffled
    assert walk(tmp_path / "r4", 160, index, "random", seed=4) != shuffled


def test_disagreements_first_then_unlabelled_then_agreements(
    index: RowIndex, tmp_path: Path
) -> None:
    rows = rows_of(index)
    passed = [r["folder"] for r in rows if r["category"] == "passed"]
    failed = [r["folder"] for r in rows if r["category"] == "failed"]
    human = {passed[0]: [{"label": "fail"}, {"label": "fail"}],  # two say otherwise
             failed[0]: [{"label": "pass"}, {"label": "fail"}],  # one says otherwise
             passed[1]: [{"label": "pass"}], failed[1]: [{"label": "fail"}]}  # fmt: skip
    scale = Scale()

    def key(row: sqlite3.Row) -> tuple[int, int]:
        given = human.get(row["folder"], [])
        against = sum(disagrees(scale, g["label"], row["category"], row["score"]) for g in given)
        return (0, -against) if against else ((1, 0) if not given else (2, 0))

    order = walk(tmp_path / "x", 160, index, "disagree", human=human, scale=scale)
    assert order == [r["folder"] for r in sorted(rows, key=key)]
    assert order[:2] == [passed[0], failed[0]] and set(order[-2:]) == {passed[1], failed[1]}


def test_a_queue_is_written_once_and_an_unknown_order_refused(
    index: RowIndex, tmp_path: Path
) -> None:
    path = tmp_path / "queue.sqlite"
    first = build_queue(index.db_path, path, "random", seed=1)
    inode = path.stat().st_ino
    again = build_queue(index.db_path, path, "random", seed=1)
    assert again == first and path.stat().st_ino == inode  # read, not written again
    assert [p.name for p in tmp_path.iterdir()] == ["queue.sqlite"]  # no partial file left
    with pytest.raises(UsageError, match="no review order 'sideways'") as caught:
        build_queue(index.db_path, tmp_path / "other.sqlite", "sideways")
    assert caught.value.hint == f"one of {', '.join(ORDERS)}"
    assert not (tmp_path / "other.sqlite").exists()


def test_labelled_rows_counts_the_runs_own_rows(index: RowIndex) -> None:
    folders = [r["folder"] for r in rows_of(index)]
    with index.connect() as db:
        assert labelled_rows(db, []) == 0
        assert labelled_rows(db, {folders[0]: [], folders[9]: [], "elsewhere/00": []}) == 2
        assert labelled_rows(db, folders) == 160


def _index_of(path: Path, rows: list[tuple[str, str, float | None]]) -> None:
    """A run index's ``rows`` table holding ``rows`` (folder, category, uncertainty), added
    to what it has, in the run's order by folder."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE IF NOT EXISTS rows (folder TEXT, category TEXT, score REAL, "
                   "uncertainty REAL, suite TEXT, variant TEXT, ord_index INTEGER, "
                   "ord_id TEXT, replicate INTEGER)")  # fmt: skip
        db.executemany("INSERT INTO rows VALUES (?, ?, NULL, ?, '', 'default', 0, ?, 0)",
                       [(f, c, u, f) for f, c, u in rows])  # fmt: skip
        db.commit()


@pytest.mark.parametrize("order", ["failed", "random", "uncertain"])
def test_rows_that_arrive_while_a_run_runs_join_the_end_of_a_queue(
    tmp_path: Path, order: str
) -> None:
    """A reviewer walking a live run's queue: the rows ahead never move, each row is shown
    once, and the rows the index gained since are added at the end in the queue's order."""
    index_db, path = tmp_path / "index.sqlite", tmp_path / "queue-live.sqlite"
    early = [(f"r{n:02}", "failed" if n % 3 else "passed", n / 10) for n in range(10)]
    _index_of(index_db, early)
    first = build_queue(index_db, path, order, seed=5, generation=1)
    walked = [first.folder(i) for i in range(first.length)]
    late = [(f"r{n:02}", "failed" if n % 2 else "passed", n / 10) for n in range(10, 16)]
    _index_of(index_db, late)
    assert build_queue(index_db, path, order, seed=5, generation=1).length == 10  # not yet
    grown = build_queue(index_db, path, order, seed=5, generation=2)
    now = [grown.folder(i) for i in range(grown.length)]
    assert now[:10] == walked and sorted(now) == [f"r{n:02}" for n in range(16)]
    fresh_db = tmp_path / "late-only.sqlite"
    _index_of(fresh_db, late)  # the late rows alone, in the order's own sort
    alone = build_queue(fresh_db, tmp_path / "queue-alone.sqlite", order, seed=5)
    assert now[10:] == [alone.folder(i) for i in range(alone.length)]
    assert build_queue(index_db, path, order, seed=5, generation=2) == grown  # once


def test_only_the_queues_used_last_are_kept(tmp_path: Path) -> None:
    """A viewer up for days keeps :data:`KEPT` queue files, the ones used last."""
    index_db = tmp_path / "index.sqlite"
    _index_of(index_db, [("r0", "passed", None), ("r1", "failed", None)])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for seed in range(KEPT):
        build_queue(index_db, scratch / f"queue-{seed:03}.sqlite", "random", seed=seed)
    hours_ago = time.time() - 7200
    for path in scratch.glob("queue-*.sqlite"):  # no walk used them for two hours
        os.utime(path, (hours_ago, hours_ago))
    later = time.time() + 60
    os.utime(scratch / "queue-000.sqlite", (later, later))  # the first, used again: kept
    newer = [f"queue-new{n}.sqlite" for n in range(5)]
    for n, name in enumerate(newer):
        build_queue(index_db, scratch / name, "random", seed=1000 + n)
    kept = {p.name for p in scratch.glob("queue-*.sqlite")}
    assert len(kept) == KEPT and {"queue-000.sqlite", *newer} <= kept
    for n in range(KEPT + 3):  # walks in progress (used in the last half hour) are all kept
        build_queue(index_db, scratch / f"queue-walk{n}.sqlite", "random", seed=2000 + n)
    assert len(list(scratch.glob("queue-walk*.sqlite"))) == KEPT + 3


def test_a_queue_file_cut_or_removed_meanwhile_is_written_again(tmp_path: Path) -> None:
    """Another request's pruning (or a cut file) never leaves a queue that fails every
    later request: it is written again."""
    index_db, path = tmp_path / "index.sqlite", tmp_path / "queue-x.sqlite"
    _index_of(index_db, [("r0", "passed", None), ("r1", "failed", None)])
    first = build_queue(index_db, path, "failed")
    path.write_bytes(b"")  # cut to nothing
    again = build_queue(index_db, path, "failed")
    assert again.length == first.length == 2 and again.folder(0) == "r1"
    path.write_bytes(b"not a database at all")
    assert build_queue(index_db, path, "failed").length == 2
