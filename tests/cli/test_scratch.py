"""A command's temporary files lie in one scratch folder: removed when it ends, and after a
``kill -9`` by the next command (real processes and real locks)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from assay.cli.shared.scratch import LOCK, PREFIX, process_scratch, sweep
from tests.cli.test_resume import make_task
from tests.helpers import write

HOLDER = """
import fcntl, sys, time
handle = open(sys.argv[1], "rb")
fcntl.flock(handle, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def test_the_scratch_folder_holds_what_tempfile_makes_and_goes_at_the_end(tmp_path: Path) -> None:
    before = tempfile.tempdir
    with process_scratch(base=tmp_path) as folder:
        assert folder is not None and folder.parent == tmp_path
        assert folder.name.startswith(PREFIX) and (folder / LOCK).is_file()
        made = Path(tempfile.mkdtemp(prefix="assay-x-"))
        assert made.parent == folder
        (made / "file").write_text("kept until the end")
    assert tempfile.tempdir == before
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_removes_only_the_folders_whose_process_is_gone(tmp_path: Path) -> None:
    dead = tmp_path / f"{PREFIX}dead"
    (dead / "assay-sandbox").mkdir(parents=True)
    (dead / LOCK).write_bytes(b"")
    making = tmp_path / f"{PREFIX}making"  # no lock file yet: being made
    making.mkdir()
    other = tmp_path / "assay-other"  # not a scratch folder
    other.mkdir()
    (other / LOCK).write_bytes(b"")
    alive = tmp_path / f"{PREFIX}alive"
    alive.mkdir()
    (alive / LOCK).write_bytes(b"")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(alive / LOCK)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert sweep(tmp_path) == [dead]
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            "assay-other", f"{PREFIX}alive", f"{PREFIX}making"]  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert sweep(tmp_path) == [alive]  # its holder is gone now


def test_a_sweep_ends_the_processes_still_working_in_a_folder_it_removes(tmp_path: Path) -> None:
    """Found by a break-test: after `kill -9` of a run, a `tempdir` row's agent went on
    working in the folder the next command removed under it."""
    dead = tmp_path / f"{PREFIX}dead"
    (dead / "assay-sandbox").mkdir(parents=True)
    (dead / LOCK).write_bytes(b"")
    orphan = subprocess.Popen(["sleep", "60"], cwd=dead / "assay-sandbox")
    elsewhere = subprocess.Popen(["sleep", "60"], cwd=tmp_path)
    try:
        assert sweep(tmp_path) == [dead]
        assert orphan.wait(timeout=10) == -signal.SIGKILL
        assert elsewhere.poll() is None  # a process working elsewhere is left alone
    finally:
        for process in (orphan, elsewhere):
            process.kill()
            process.wait()


def test_a_killed_run_leaves_its_scratch_to_the_next_command(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    make_task(tmp_path)
    env = {**os.environ, "TMPDIR": str(scratch)}
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "run", "task.yaml", "-j", "2", "-q"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(scratch.glob(f"{PREFIX}*/assay-*")):
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    left = list(scratch.iterdir())
    assert [p.name.startswith(PREFIX) for p in left] == [True]
    assert list(left[0].glob("assay-*")), "the killed run's sandboxes were in its scratch"
    done = subprocess.run([sys.executable, "-m", "assay", "plan", "task.yaml"], cwd=tmp_path,
                          env=env, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(scratch.iterdir()) == []


def test_a_finished_run_leaves_nothing_in_the_temporary_directory(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    write(tmp_path / "task.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
          "agent: {type: command, command: 'cat \"$ASSAY_PROMPT_FILE\"'}\n"
          "success_criteria: [{type: classification_match, expected_label: hi,"
          " allowed_labels: [hi, bye]}]\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "assay", "run", "task.yaml", "-q"],
                          cwd=tmp_path, env={**os.environ, "TMPDIR": str(scratch)},
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(scratch.iterdir()) == []
