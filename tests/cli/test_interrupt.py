"""Ctrl-C stops a run cleanly: exit 130, finished rows kept, reports written, no sandbox or
agent left, whether assay started with SIGINT at its default (a terminal) or ignored (started
in the background by a script or CI: an explicit SIGINT still stops it)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.cli.test_run import latest
from tests.helpers import (
    SigintAtStart,
    finish,
    pids_in,
    start,
    start_assay,
    wait_for,
    wait_gone,
    write,
)

TASK = """\
task_id: slow
description: rows that finish one by one
initial_prompt: "${{row.id}}"
agent:
  type: command
  command: >-
    case "$ASSAY_ROW_ID" in r0|r1) echo fast;;
    *) echo $$ >> {pids}; exec sleep 30;; esac
dataset:
  rows: [{{id: r0}}, {{id: r1}}, {{id: r2}}, {{id: r3}}]
success_criteria:
  - {{type: response_match, expected: fast}}
"""


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_sigint_keeps_finished_rows_and_exits_130(tmp_path: Path, sigint: SigintAtStart) -> None:
    pids = tmp_path / "pids"
    path = write(tmp_path / "slow.yaml", TASK.format(pids=pids))
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    # a real process: SIGINT/SIGTERM and the disposition it started with are process-wide
    process = start_assay("run", str(path), "-j", "4", cwd=tmp_path, sigint=sigint, env=env)
    run_dir = tmp_path / "runs" / "latest"

    def two_done_two_running() -> bool:
        done = list(run_dir.glob("default/slow/*/00/task.json"))
        return len(done) == 2 and len(pids_in(pids)) == 2

    wait_for(two_done_two_running, what="r0 and r1 finished, r2 and r3 running")
    process.send_signal(signal.SIGINT)
    _, err = finish(process)
    assert process.returncode == 130, err
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert run["interrupted"] is True
    assert run["exit_code"] == 130
    assert sorted(r["row_id"] for r in run["task_results"]) == ["r0", "r1"]
    assert list((tmp_path / "tmp").iterdir()) == []  # in-flight sandboxes removed
    assert (latest(tmp_path) / "default/slow/suite.json").exists()
    wait_gone(pids_in(pids))  # the agents still running were killed


SEE_SIGINT = (
    "import signal; found = signal.getsignal(signal.SIGINT); "
    "print('ignored' if found == signal.SIG_IGN else "
    "'default' if found is signal.default_int_handler else repr(found))"
)


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_the_launcher_sets_the_sigint_disposition(tmp_path: Path, sigint: SigintAtStart) -> None:
    """The control for the case above: whatever pytest inherited, the program started sees
    SIGINT as asked (Python installs its handler only over a SIGINT at its default)."""
    out, _ = finish(start([sys.executable, "-c", SEE_SIGINT], cwd=tmp_path, sigint=sigint))
    assert out.strip() == sigint
