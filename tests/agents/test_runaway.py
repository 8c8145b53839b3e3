"""A runaway agent's output is capped per stream: the rest is read and counted, never kept,
so the assay process's memory stays bounded, and the kept text names the cut."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay import api
from tests.helpers import kill_left, pids_in, wait_gone, write

PEAK = """
import asyncio, resource, sys
from pathlib import Path
from assay.sandbox.process import run_process

result = asyncio.run(run_process(sys.argv[1], cwd=Path.cwd(), env={"PATH": "/usr/bin:/bin"},
                                 timeout=300))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(result.stdout), result.dropped)
"""


def peak(command: str, folder: Path) -> tuple[int, int, int]:
    """Peak RSS (KiB) of a process that ran ``command`` through run_process, the length of
    the stdout text it kept, and the bytes dropped."""
    done = subprocess.run([sys.executable, "-c", PEAK, command], cwd=folder,
                          capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    rss, kept, dropped = (int(part) for part in done.stdout.split())
    return rss, kept, dropped


def test_200_mb_of_output_keeps_memory_bounded(tmp_path: Path) -> None:
    small_rss, small_kept, small_dropped = peak("head -c 1000 /dev/zero", tmp_path)
    capped_rss, _, _ = peak("head -c 11000000 /dev/zero", tmp_path)  # just past the cap
    big_rss, big_kept, big_dropped = peak("head -c 200000000 /dev/zero", tmp_path)
    assert (small_kept, small_dropped) == (1000, 0)
    assert big_dropped == 200_000_000 - 10 * 1024 * 1024
    assert big_kept < 10 * 1024 * 1024 + 200
    # KiB. 190 MB more output than the capped run costs no more memory than it (kept before:
    # 200 MB of bytes, then their text); and the cap's own cost stays well under the output.
    assert big_rss < capped_rss + 32 * 1024
    assert big_rss < small_rss + 160 * 1024


def test_both_streams_are_capped_and_the_cut_is_marked(tmp_path: Path) -> None:
    command = "head -c 3000 /dev/zero | tr '\\\\0' o; head -c 5000 /dev/zero | tr '\\\\0' e >&2"
    code = (
        "import asyncio, sys; from pathlib import Path; "
        "from assay.sandbox.process import run_process; "
        f"r = asyncio.run(run_process({command!r}, cwd=Path.cwd(), "
        "env={'PATH': '/usr/bin:/bin'}, timeout=60, max_output_bytes=1000)); "
        "print(repr(r.stdout[-80:])); print(repr(r.stderr[-80:])); print(r.dropped)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    out, err, dropped = done.stdout.splitlines()
    assert "output cut after 1000 bytes; 2000 more bytes dropped" in out
    assert "output cut after 1000 bytes; 4000 more bytes dropped" in err
    assert dropped == "6000"


def test_a_command_agent_row_records_the_cut(tmp_path: Path) -> None:
    task = write(
        tmp_path / "task.yaml",
        """\
task_id: loud
description: an agent that prints 12 MiB
initial_prompt: go
agent:
  type: command
  command: "head -c 12582912 /dev/zero | tr '\\\\0' y"
success_criteria:
  - type: run_command
    command: "true"
""",
    )
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    (path,) = result.run_dir.glob("**/task.json")
    record = json.loads(path.read_text())
    assert record["agent"]["output_dropped_bytes"] == 2097152
    response = (path.parent / "response.txt").read_text()
    assert response.endswith("output cut after 10485760 bytes; 2097152 more bytes dropped]\n")


@pytest.mark.parametrize("driver", ["tempdir", "bwrap"])
def test_the_cap_is_the_tasks_sandbox_limits_max_output_mb(tmp_path: Path, driver: str) -> None:
    """Issue 28 item 8: what is kept of each stream is configurable, for the agent's program
    and for a criterion's command alike."""
    task = write(
        tmp_path / "task.yaml",
        f"""\
task_id: loud
description: an agent and a criterion that print 300 KiB each
initial_prompt: go
sandbox: {{driver: {driver}, limits: {{max_output_mb: 0.125}}}}
agent:
  type: command
  command: "head -c 307200 /dev/zero | tr '\\\\0' y"
success_criteria:
  - type: run_command
    command: "head -c 307200 /dev/zero | tr '\\\\0' z; echo END"
    expected_stdout: "END"
    stdout_match: contains
""",
    )
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    (path,) = result.run_dir.glob("**/task.json")
    record = json.loads(path.read_text())
    assert record["agent"]["output_dropped_bytes"] == 307200 - 131072
    response = (path.parent / "response.txt").read_text()
    assert response.endswith("output cut after 131072 bytes; 176128 more bytes dropped]\n")
    criterion = record["success_criteria_results"][0]
    assert criterion["score"] == 0.0  # END came after the cap: the criterion never saw it


LEAVER = """\
task_id: leaver
description: an agent and a criterion that leave processes running outside their group
initial_prompt: go
agent:
  type: command
  command: >-
    setsid sleep 300 >/dev/null 2>&1 & echo $! >> {pids};
    nohup sleep 300 >/dev/null 2>&1 & echo $! >> {pids};
    (sleep 300 >/dev/null 2>&1 &) ; echo yes
success_criteria:
  - type: run_command
    command: "setsid sleep 300 >/dev/null 2>&1 & echo $! >> {pids}; true"
"""


def test_processes_a_row_left_running_end_with_it(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    task = write(tmp_path / "task.yaml", LEAVER.format(pids=pids))
    try:
        result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
        assert result.exit_code == 0
        left = pids_in(pids)
        assert len(left) == 3
        wait_gone(left, 30)
    finally:
        kill_left(pids_in(pids))
