"""Two real writer processes at once, and a writer killed with SIGKILL in mid-batch."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import create_engine, func, select

from assay.store import Schema, Store
from assay.store.engine import resolve_url
from assay.store.tables import members, versions
from assay.store.writes import CHUNK
from tests.helpers import wait_for

REPO = Path(__file__).resolve().parents[2]
SCHEMA = Schema({"text": "string", "n": "number"})


def writer(url: str, prefix: str, count: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store.writer", url, "d", prefix, str(count), *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def table_counts(url: str) -> tuple[int, int]:
    """(member rows, version rows) straight from the tables."""
    engine = create_engine(resolve_url(url))
    try:
        with engine.connect() as connection:
            rows = connection.execute(select(func.count()).select_from(members)).scalar_one()
            made = connection.execute(select(func.count()).select_from(versions)).scalar_one()
    finally:
        engine.dispose()
    return rows, made


def test_two_writers_at_once_lose_nothing(store: Store, store_url: str, tmp_path: Path) -> None:
    """Writer A stops in the middle of its batch, its write transaction open; writer B starts
    its own batch then. B must wait for A (not fail, not slip in first): A's batch becomes
    version 2 and B's version 3, each contiguous. The order is decided by the test, not by
    timing: A is released only once B has begun its add and has not finished for 2 s."""
    store.create_dataset("d", SCHEMA)
    store.add("d", [{"id": "seed", "text": "", "n": 0}])
    count = 8 * CHUNK + 7
    stalled, adding, release = tmp_path / "stalled", tmp_path / "adding", tmp_path / "release"
    first = writer(store_url, "a", count, "--stall-after", str(3 * CHUNK + 5),
                   "--marker", str(stalled), "--hold", str(release))  # fmt: skip
    wait_for(lambda: stalled.exists() or first.poll() is not None, 120, "writer a mid-batch")
    assert first.poll() is None, first.communicate()
    second = writer(store_url, "b", count, "--adding", str(adding))
    wait_for(lambda: adding.exists() or second.poll() is not None, 120, "writer b adding")
    with contextlib.suppress(subprocess.TimeoutExpired):
        second.wait(timeout=2)
    assert second.poll() is None, second.communicate()  # waiting for a's transaction
    release.write_text("go")
    outputs = [proc.communicate(timeout=240) for proc in (first, second)]
    for proc, (_, err) in zip((first, second), outputs, strict=True):
        assert proc.returncode == 0, err
    assert [out.split() for out, _ in outputs] == [["2", str(count)], ["3", str(count)]]
    found = store.versions("d")
    assert [(v.number, v.added, v.item_count) for v in found] == [
        (1, 1, 1), (2, count, count + 1), (3, count, 2 * count + 1)
    ]  # fmt: skip
    latest = [e.example_id for e in store.iter_examples("d", 3)]
    expected = ["seed"] + [f"a{i}" for i in range(count)] + [f"b{i}" for i in range(count)]
    assert latest == expected  # each batch is contiguous: no interleaving


def test_kill_9_in_mid_batch_leaves_no_half_version(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    store.create_dataset("d", SCHEMA)
    before = store.add("d", [{"id": "kept", "text": "x", "n": 1}])
    rows_before = table_counts(store_url)
    marker = tmp_path / "mid-batch"
    proc = writer(store_url, "lost", 10 * CHUNK, "--stall-after", str(3 * CHUNK + 5), "--marker",
                  str(marker))  # fmt: skip
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert store.versions("d") == [before]
    assert store.dataset("d").current_version == 1
    assert table_counts(store_url) == rows_before  # the 3 chunks it wrote are gone
    after = store.add("d", [{"id": "next", "text": "y", "n": 2}])  # the lock was released
    assert (after.number, after.item_count) == (2, 2)
    assert [e.example_id for e in store.iter_examples("d", 2)] == ["kept", "next"]
