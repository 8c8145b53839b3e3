"""The dataset store at 1,000,000 examples, on SQLite and PostgreSQL.

For each backend, in a fresh store: (a) add 1,000,000 examples (the SST-2 dev rows of
examples/sst2 repeated, ids unique) as one version; (b) add 100 more as the next version;
(c) read that version in full, streamed, timing it and taking the reading process's peak
memory; then, for comparison, (c') read a 100,000-example version the same way. Every step
runs in its own process (``ru_maxrss`` is a per-process peak), timed around the store call
only (the rows are generated lazily, so the add never holds them all).

Targets (issue 3): (b) costs under 1% of (a); reading streams in constant memory, so the
peak of (c) is about that of (c').

Usage: python bench/store_bench.py [ROWS]
PostgreSQL: ASSAY_BENCH_POSTGRES_URL or ASSAY_TEST_POSTGRES_URL (a throwaway schema is made
and dropped); without either, only SQLite runs.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import SST2, save

SMALL = 100_000
BATCH = 100


def sst2_rows(start: int, count: int) -> Iterator[dict[str, Any]]:
    """``count`` SST-2 rows cycled from row ``start`` on, with unique ids ``s0000-0``…."""
    source = [json.loads(line) for line in SST2.read_text(encoding="utf-8").splitlines()]
    for index in range(start, start + count):
        row = source[index % len(source)]
        yield {"id": f"{row['id']}-{index // len(source)}", "text": row["text"],
               "label": row["label"]}  # fmt: skip


def peak_kb() -> int:
    """This process's peak resident memory, in KiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def step_add(url: str, name: str, start: int, count: int) -> dict[str, Any]:
    from assay.store import Schema, StoreError, open_store

    with open_store(url) as store:
        try:
            store.dataset(name)
        except StoreError:
            store.create_dataset(name, Schema({"text": "string", "label": "string"}))
        began = time.perf_counter()
        version = store.add(name, sst2_rows(start, count))
        seconds = time.perf_counter() - began
    return {"seconds": seconds, "version": version.number, "items": version.item_count,
            "peak_kb": peak_kb()}  # fmt: skip


def step_read(url: str, name: str, number: int) -> dict[str, Any]:
    from assay.store import open_store

    with open_store(url) as store:
        version = store.resolve(name, number)
        baseline = peak_kb()
        began = time.perf_counter()
        count = sum(1 for _ in store.iter_examples(name, number))
        seconds = time.perf_counter() - began
    assert count == version.item_count
    return {"seconds": seconds, "rows": count, "baseline_kb": baseline, "peak_kb": peak_kb()}


def in_process(*args: str) -> dict[str, Any]:
    """Run one step in a fresh Python process and return what it measured."""
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise RuntimeError(f"step {args[0]} failed")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def measure(url: str, rows: int) -> dict[str, Any]:
    """The figures for one backend (an empty store at ``url``)."""
    full = in_process("_add", url, "big", "0", str(rows))
    small = in_process("_add", url, "big", str(rows), str(BATCH))
    read = in_process("_read", url, "big", str(small["version"]))
    in_process("_add", url, "small", "0", str(SMALL))
    read_small = in_process("_read", url, "small", "1")
    return {
        "add_full": full,
        "add_100": small,
        "add_100_over_full": small["seconds"] / full["seconds"],
        "read_full": read,
        "read_small": read_small,
        "rows_per_s": {"add": rows / full["seconds"], "read": read["rows"] / read["seconds"]},
        "read_peak_ratio": read["peak_kb"] / read_small["peak_kb"],
    }


def postgres_url() -> tuple[str, Any] | None:
    """A URL on a throwaway schema of the benchmark server, and a function that drops it."""
    base = os.environ.get("ASSAY_BENCH_POSTGRES_URL") or os.environ.get("ASSAY_TEST_POSTGRES_URL")
    if not base:
        return None
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from assay.store import resolve_url

    engine = create_engine(resolve_url(base))
    schema = f"assay_bench_{os.getpid()}"
    with engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))

    def drop() -> None:
        with engine.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()

    url = make_url(resolve_url(base)).update_query_dict({"options": f"-csearch_path={schema}"})
    return url.render_as_string(hide_password=False), drop


def main(rows: int = 1_000_000) -> dict[str, Any]:
    result: dict[str, Any] = {"rows": rows, "batch": BATCH, "small": SMALL}
    with tempfile.TemporaryDirectory(prefix="assay-store-bench-") as folder:
        result["sqlite"] = measure(f"sqlite:///{Path(folder) / 'store.db'}", rows)
    postgres = postgres_url()
    if postgres is not None:
        url, drop = postgres
        try:
            result["postgresql"] = measure(url, rows)
        finally:
            drop()
    save("store", result)
    return result


def _print_summary(result: dict[str, Any]) -> None:
    for backend in ("sqlite", "postgresql"):
        if backend not in result:
            continue
        r = result[backend]
        print(
            f"{backend}: add {result['rows']:,} in {r['add_full']['seconds']:.1f} s "
            f"({r['rows_per_s']['add']:,.0f} rows/s, peak {r['add_full']['peak_kb'] / 1024:.0f} MB)"
            f"; add 100 in {r['add_100']['seconds'] * 1000:.1f} ms "
            f"({r['add_100_over_full']:.5%} of the full add); read {r['read_full']['rows']:,} in "
            f"{r['read_full']['seconds']:.1f} s ({r['rows_per_s']['read']:,.0f} rows/s), peak "
            f"{r['read_full']['peak_kb'] / 1024:.0f} MB (before reading "
            f"{r['read_full']['baseline_kb'] / 1024:.0f} MB); read {SMALL:,}: peak "
            f"{r['read_small']['peak_kb'] / 1024:.0f} MB"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_add":
        print(json.dumps(step_add(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))))
    elif len(sys.argv) > 1 and sys.argv[1] == "_read":
        print(json.dumps(step_read(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        figures = main(*(int(a) for a in sys.argv[1:]))
        print(json.dumps(figures, indent=2))
        _print_summary(figures)
