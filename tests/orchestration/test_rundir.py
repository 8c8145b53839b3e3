"""Run folders: one per run, named by the second it started; runs in the same second get
``-2``, ``-3``, …; ``latest`` always points at the newest."""

from __future__ import annotations

import os
import threading
from datetime import datetime
from pathlib import Path

from assay.orchestration.running.rundir import create_run_dir, point_latest

NOW = datetime(2026, 12, 1, 9, 5, 7)


def test_runs_in_the_same_second_get_numbered_folders(tmp_path: Path) -> None:
    made = [create_run_dir(tmp_path / "runs", now=NOW).name for _ in range(3)]
    assert made == ["2026-12-01_09-05-07", "2026-12-01_09-05-07-2", "2026-12-01_09-05-07-3"]
    assert os.readlink(tmp_path / "runs" / "latest") == "2026-12-01_09-05-07-3"


def test_a_later_second_starts_without_a_number(tmp_path: Path) -> None:
    create_run_dir(tmp_path, now=NOW)
    later = create_run_dir(tmp_path, now=NOW.replace(second=8))
    assert later.name == "2026-12-01_09-05-08"
    assert (tmp_path / "latest").resolve() == later


def test_runs_started_at_once_never_share_a_folder(tmp_path: Path) -> None:
    """Eight threads in the same second: mkdir is atomic, so each gets its own folder."""
    made: list[Path] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def one() -> None:
        start.wait()
        folder = create_run_dir(tmp_path, now=NOW)
        with lock:
            made.append(folder)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    names = sorted(p.name for p in made)
    stamp = "2026-12-01_09-05-07"
    assert names == sorted([stamp] + [f"{stamp}-{n}" for n in range(2, 9)])
    assert (tmp_path / "latest").resolve() in made


def test_latest_that_cannot_be_replaced_leaves_the_run_alone(tmp_path: Path) -> None:
    """A folder named ``latest`` (not a symlink) cannot be replaced by one: the run goes on
    without moving it, and no temporary link is left behind."""
    (tmp_path / "latest" / "keep").mkdir(parents=True)
    run = create_run_dir(tmp_path, now=NOW)
    assert run.is_dir()
    assert (tmp_path / "latest" / "keep").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2026-12-01_09-05-07", "latest"]
    point_latest(tmp_path, run)  # again, directly: still no exception, nothing left over
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2026-12-01_09-05-07", "latest"]
