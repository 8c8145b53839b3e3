"""Two real writer processes at once, and a writer killed with SIGKILL in mid-batch."""

from __future__ import annotations

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
    store.create_dataset("d", SCHEMA)
    store.add("d", [{"id": "seed", "text": "", "n": 0}])
    go = tmp_path / "go"
    count = 8 * CHUNK + 7
    ready = [tmp_path / f"ready-{p}" for p in ("a", "b")]
    procs = [writer(store_url, p, count, "--ready", str(r), "--go", str(go))
             for p, r in zip(("a", "b"), ready, strict=True)]  # fmt: skip
    deadline = time.monotonic() + 120
    while not all(r.exists() for r in ready):  # both have opened the store and wait
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.01)
    go.write_text("go")
    outputs = [proc.communicate(timeout=240) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    reports = sorted(out.split() for out, _ in outputs)
    assert [int(r[0]) for r in reports] == [2, 3]
    (_, _, _, first_end), (_, _, second_start, _) = reports
    assert float(second_start) < float(first_end)  # the second writer waited, it did not fail
    found = store.versions("d")
    assert [(v.number, v.added, v.item_count) for v in found] == [
        (1, 1, 1), (2, count, count + 1), (3, count, 2 * count + 1)
    ]  # fmt: skip
    latest = [e.example_id for e in store.iter_examples("d", 3)]
    assert len(latest) == len(set(latest)) == 2 * count + 1
    first = "a" if [e.example_id for e in store.iter_examples("d", 2)][1].startswith("a") else "b"
    second = "b" if first == "a" else "a"
    expected = (
        ["seed"] + [f"{first}{i}" for i in range(count)] + [f"{second}{i}" for i in range(count)]
    )
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
