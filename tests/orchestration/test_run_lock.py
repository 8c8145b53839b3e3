"""One writer per run folder: a second writer is refused naming the holder; a stale lock (its
process killed) is taken over with a warning. Real concurrent ``assay`` processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.orchestration.running.runlock import LOCK_FILE, lock_run_dir
from tests.helpers import finish, start_assay, wait_for, write

ROWS = 6
TASK = """\
task_id: gated
description: every row waits while the gate file exists, and counts its agent call
initial_prompt: "${{row.text}}"
agent:
  type: command
  command: 'echo "$ASSAY_ROW_ID" >> {calls}; while [ -e {gate} ]; do sleep 0.05; done; echo yes'
dataset:
  rows:
{rows}
success_criteria:
  - type: classification_match
    expected_label: "yes"
    allowed_labels: ["yes", "no"]
"""


def make_task(folder: Path) -> tuple[Path, Path]:
    """The task, with its gate (closed) and its log of agent calls."""
    gate, calls = folder / "gate", folder / "calls.log"
    gate.write_text("")
    rows = "".join(f"    - {{id: r{i}, text: t{i}}}\n" for i in range(ROWS))
    write(folder / "task.yaml", TASK.format(rows=rows, gate=gate, calls=calls))
    return gate, calls


def assay(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def holder(run_dir: Path) -> dict[str, object]:
    text = (run_dir / LOCK_FILE).read_text() if (run_dir / LOCK_FILE).exists() else ""
    return json.loads(text) if text.strip() else {}


def started_run(folder: Path, *args: str) -> tuple[subprocess.Popen[str], Path]:
    """``assay run`` in the background, once it holds its run folder's lock."""
    process = start_assay("run", "task.yaml", "-j", "2", "-q", *args, cwd=folder)
    wait_for(lambda: (folder / "runs" / "latest" / LOCK_FILE).exists()
             and holder(folder / "runs" / "latest").get("pid") == process.pid,
             what="the run holds its lock")  # fmt: skip
    return process, (folder / "runs" / "latest").resolve()


@pytest.mark.parametrize(
    "command",
    [("run", "--resume"), ("evaluate",), ("report",)],
    ids=["resume", "evaluate", "report"],
)
def test_second_writer_is_refused_naming_the_holder(tmp_path: Path,
                                                    command: tuple[str, ...]) -> None:  # fmt: skip
    gate, calls = make_task(tmp_path)
    first, run_dir = started_run(tmp_path)
    try:
        second = assay(*command, str(run_dir), cwd=tmp_path)
        assert second.returncode == 2, second.stderr
        assert "in use by another assay process" in second.stderr
        assert f"pid {first.pid} on host {socket.gethostname()}" in second.stderr
        assert "task.yaml" in second.stderr  # the holder's command
        assert "started 20" in second.stderr
    finally:
        gate.unlink()
    finish(first)
    assert first.returncode == 0
    assert sorted(calls.read_text().split()) == [f"r{i}" for i in range(ROWS)]
    assert holder(run_dir) == {}  # released at the end


def test_two_resumes_at_once_run_each_row_once(tmp_path: Path) -> None:
    gate, calls = make_task(tmp_path)
    first, run_dir = started_run(tmp_path)
    wait_for(lambda: calls.exists() and len(calls.read_text().split()) >= 2, what="2 calls")
    os.kill(first.pid, signal.SIGKILL)  # leaves its lock file naming a dead process
    finish(first)
    assert holder(run_dir).get("pid") == first.pid
    calls.write_text("")

    resumed = start_assay("run", "--resume", str(run_dir), "-j", "2", cwd=tmp_path)
    wait_for(lambda: holder(run_dir).get("pid") == resumed.pid, what="the resume holds it")
    other = assay("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    gate.unlink()
    _, err = finish(resumed)
    assert resumed.returncode == 0, err
    assert f"took over the stale lock of {run_dir}" in err
    assert f"pid {first.pid}" in err
    assert other.returncode == 2, other.stderr
    assert f"pid {resumed.pid}" in other.stderr
    done = calls.read_text().split()
    assert len(done) == len(set(done)) <= ROWS  # no row ran twice
    run = json.loads((run_dir / "run.json").read_text())
    assert run["exit_code"] == 0


def test_lock_in_process_refused_while_another_process_holds_it(tmp_path: Path) -> None:
    holder_code = (
        "import sys, time; from pathlib import Path; "
        "from assay.orchestration.running.runlock import lock_run_dir; "
        "lock = lock_run_dir(Path(sys.argv[1]), command=['holder', 'cmd']); "
        "print('held', flush=True); time.sleep(60)"
    )
    process = subprocess.Popen([sys.executable, "-c", holder_code, str(tmp_path)],
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert process.stdout is not None and process.stdout.readline() == "held\n"
        with pytest.raises(UsageError, match=f"pid {process.pid} on host .*'holder cmd'"):
            lock_run_dir(tmp_path)
    finally:
        process.kill()
        process.wait()
    warnings: list[str] = []
    with lock_run_dir(tmp_path, on_warning=warnings.append):  # its process is gone: stale
        assert holder(tmp_path)["pid"] == os.getpid()
    assert len(warnings) == 1 and f"pid {process.pid}" in warnings[0]
    assert holder(tmp_path) == {}
    with lock_run_dir(tmp_path, on_warning=warnings.append):  # released cleanly: no warning
        pass
    assert len(warnings) == 1


def test_a_garbled_lock_file_is_named_and_taken_over(tmp_path: Path) -> None:
    (tmp_path / LOCK_FILE).write_text("not json at all")
    warnings: list[str] = []
    with lock_run_dir(tmp_path, on_warning=warnings.append):
        pass
    assert warnings and "not json at all" in warnings[0]


def test_the_lock_file_never_records_a_password_of_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-lock-file-secret-0123456789")
    command = ["assay", "run", "t.yaml", "--store", "postgresql://me:pg-pass-4242x@db/store",
               "-D", "agent.api_key=literal-key-98765xyz"]  # fmt: skip
    with lock_run_dir(tmp_path, command=command) as lock:
        text = lock.path.read_text(encoding="utf-8")
        holder = json.loads(text)
    assert "pg-pass-4242x" not in text and "literal-key-98765xyz" not in text
    assert holder["command"][:3] == ["assay", "run", "t.yaml"]
