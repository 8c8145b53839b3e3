"""The review queue on disk against Python's stable sort of the index's rows (the order the
queue kept in memory before): each order, with ties in the run's order; a queue asked for
again is read from its file; an unknown order is refused; labelled rows are counted."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from assay.errors import UsageError
from assay.view.index import RowIndex
from assay.view.review import Scale, disagrees
from assay.view.review_queue import ORDERS, build_queue, labelled_rows
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
    stamp = path.stat().st_mtime_ns
    again = build_queue(index.db_path, path, "random", seed=1)
    assert again == first and path.stat().st_mtime_ns == stamp
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
