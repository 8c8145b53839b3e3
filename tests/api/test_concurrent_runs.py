"""Two runs at once in one process (a service, a notebook): in one event loop
(``asyncio.gather`` of two ``run_async``) and in two threads, each run's programs are
reaped while the other runs and after it ends; no row waits for its timeout."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import assay
from tests.helpers import write

SLOW = """\
task_id: {name}
description: rows whose programs end after another run started or ended
initial_prompt: go
run_limits: {{task_timeout: 60}}
agent: {{type: command, command: "sleep {pause}; echo done-$ASSAY_ROW_ID"}}
dataset: {{rows: [{{id: r1}}, {{id: r2}}, {{id: r3}}, {{id: r4}}]}}
success_criteria:
  - {{type: response_match, expected: done-, match: contains, description: it answered}}
"""


def _tasks(folder: Path) -> tuple[str, str]:
    short = write(folder / "short.yaml", SLOW.format(name="short", pause=0.2))
    long = write(folder / "long.yaml", SLOW.format(name="long", pause=1.5))
    return str(short), str(long)


def _all_passed(result: assay.RunResult) -> None:
    statuses = [row.final_status.value for row in result.rows()]
    assert statuses == ["SUCCESS"] * 4, statuses
    assert result.exit_code == 0


def test_two_runs_in_one_event_loop(tmp_path: Path) -> None:
    short, long = _tasks(tmp_path)

    async def both() -> list[assay.RunResult]:
        return list(await asyncio.gather(
            assay.run_async(long, run_dir=tmp_path / "a", jobs=2),
            assay.run_async(short, run_dir=tmp_path / "b", jobs=1),
        ))  # fmt: skip

    for result in asyncio.run(both()):
        _all_passed(result)


def test_two_runs_in_two_threads(tmp_path: Path) -> None:
    short, long = _tasks(tmp_path)
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(assay.run, long, run_dir=tmp_path / "a", jobs=2),
                   pool.submit(assay.run, short, run_dir=tmp_path / "b", jobs=1)]  # fmt: skip
        for future in futures:
            _all_passed(future.result(timeout=300))
    _all_passed(assay.run(short, run_dir=tmp_path / "c"))  # and a run after both
