"""Ctrl-C stops a run cleanly: exit 130, finished rows kept, reports written, no sandbox left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.test_run import latest
from tests.helpers import write

TASK = """\
task_id: slow
description: rows that finish one by one
initial_prompt: "${row.id}"
agent:
  type: command
  command: 'case "$ASSAY_ROW_ID" in r0|r1) echo fast;; *) sleep 30;; esac'
dataset:
  rows: [{id: r0}, {id: r1}, {id: r2}, {id: r3}]
success_criteria:
  - {type: response_match, expected: fast}
"""


def test_sigint_keeps_finished_rows_and_exits_130(tmp_path: Path) -> None:
    path = write(tmp_path / "slow.yaml", TASK)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "run", str(path), "-j", "4"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    run_dir = tmp_path / "runs" / "latest"
    while time.monotonic() < deadline:
        done = list(run_dir.glob("default/slow/*/00/task.json")) if run_dir.exists() else []
        if len(done) == 2:
            break
        time.sleep(0.1)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert run["interrupted"] is True
    assert run["exit_code"] == 130
    assert sorted(r["row_id"] for r in run["task_results"]) == ["r0", "r1"]
    assert list((tmp_path / "tmp").iterdir()) == []  # in-flight sandboxes removed
    assert (latest(tmp_path) / "default/slow/suite.json").exists()
