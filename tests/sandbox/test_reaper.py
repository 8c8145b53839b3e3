"""A tempdir row's subreaper (assay.sandbox.reaper, assay.sandbox.subreaper): where the machine
gives no control groups, each program runs under a child subreaper that records the orphans
it adopts, and the row's end kills them and what is below them (issue 28). The program's
own exit, streams and signals pass through unchanged."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.sandbox import reaper
from assay.sandbox.process import ProcessResult, run_process
from tests.helpers import alive, kill_left, pids_in, wait_for, wait_gone

pytestmark = pytest.mark.skipif(not reaper.available(), reason="Linux with /proc children only")

ENV = {"PATH": "/usr/bin:/bin"}


def run(row: reaper.RowReaper, command: str | list[str], folder: Path, **options: object
        ) -> ProcessResult:  # fmt: skip
    return asyncio.run(run_process(row.enter(command), cwd=folder, env=ENV, timeout=30,
                                   **options))  # type: ignore[arg-type]  # fmt: skip


def test_the_programs_exit_code_streams_and_stdin_pass_through(tmp_path: Path) -> None:
    row = reaper.RowReaper()
    try:
        done = run(row, "read line; echo \"out $line\"; echo err >&2; exit 7", tmp_path,
                   stdin="given\n")  # fmt: skip
        assert (done.exit_code, done.stdout, done.stderr) == (7, "out given\n", "err\n")
        assert run(row, ["/bin/sh", "-c", "pwd"], tmp_path).stdout == f"{tmp_path}\n"
    finally:
        row.close()


def test_a_program_killed_by_a_signal_ends_the_same_way(tmp_path: Path) -> None:
    row = reaper.RowReaper()
    try:
        assert run(row, "kill -TERM $$", tmp_path).exit_code == -15
        assert run(row, "yes | head -c 1 >/dev/null; exit 0", tmp_path).exit_code == 0
    finally:
        row.close()


def test_a_program_that_cannot_start_ends_as_a_shell_says(tmp_path: Path) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")  # not executable
    row = reaper.RowReaper()
    try:
        missing = run(row, ["no-such-program-here"], tmp_path)
        assert missing.exit_code == 127
        assert missing.stderr == "assay: no-such-program-here: command not found\n"
        refused = run(row, [str(script)], tmp_path)
        assert refused.exit_code == 126 and "Permission denied" in refused.stderr
    finally:
        row.close()


def test_an_orphan_that_left_everything_is_recorded_and_ended_with_its_children(
    tmp_path: Path,
) -> None:
    """It cleared its environment, left the folder, left the process group and session, and
    its parent exited: the subreaper adopted it; the row's end kills it and its child."""
    pids = tmp_path / "pids"
    row = reaper.RowReaper()
    command = (f"(cd / && env -i setsid sh -c 'sleep 303 & echo $! >> {pids}; "
               f"echo $$ >> {pids}; wait' >/dev/null 2>&1 &); echo started")  # fmt: skip
    try:
        assert run(row, command, tmp_path).stdout == "started\n"
        wait_for(lambda: len(pids_in(pids)) == 2, 10, "the orphan did not start")
        records = [p.read_text() for p in row.folder.glob("program-*")]
        assert [line.split()[0] for line in "".join(records).split("\n") if line] == [
            str(pids_in(pids)[1])
        ]  # the orphan (its child is below it, not adopted)
        assert all(alive(pid) for pid in pids_in(pids))
        row.close()
        wait_gone(pids_in(pids), 10)
        assert not row.folder.exists()
    finally:
        kill_left(pids_in(pids))


def test_a_recorded_pid_that_is_now_another_process_is_left_alone(tmp_path: Path) -> None:
    """A record whose pid now belongs to a process started at another time (a reused pid)
    is not killed."""
    other = subprocess.Popen(["sleep", "60"])
    row = reaper.RowReaper()
    try:
        (row.folder / "program-0").write_text(f"{other.pid} 1\n")
        row.close()
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_what_a_program_started_and_waited_for_is_not_recorded(tmp_path: Path) -> None:
    row = reaper.RowReaper()
    try:
        assert run(row, "sleep 0.2 & wait; echo ok", tmp_path).stdout == "ok\n"
        assert "".join(p.read_text() for p in row.folder.glob("program-*")) == ""
    finally:
        row.close()


def test_the_subreaper_refuses_a_call_without_a_program() -> None:
    done = subprocess.run([sys.executable, "-I", "-S", str(reaper.SCRIPT), "record"],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2 and "usage: subreaper.py RECORD -- PROGRAM" in done.stderr
    assert not os.path.exists("record")


def test_a_program_killed_by_sigkill_ends_the_same_way(tmp_path: Path) -> None:
    row = reaper.RowReaper()
    try:
        assert run(row, "echo done; kill -9 $$", tmp_path).exit_code == -9
    finally:
        row.close()


def test_a_record_that_cannot_be_written_does_not_end_the_program(tmp_path: Path) -> None:
    """The records' folder removed under it (an agent that cleans /tmp): the program's own
    exit code still comes back."""
    row = reaper.RowReaper()
    try:
        done = run(row, f"rm -rf {row.folder}; (sleep 2 >/dev/null 2>&1 &); sleep 0.3; echo ok; "
                   "exit 7", tmp_path)  # fmt: skip
        assert (done.exit_code, done.stdout) == (7, "ok\n")
    finally:
        row.close()


def test_a_new_session_child_of_a_program_killed_at_its_timeout_ends_with_the_row(
    tmp_path: Path,
) -> None:
    """The timeout kills the program's group; a child that made a session of its own, left
    the folder and cleared its environment while its parent still ran is in the record."""
    pids = tmp_path / "pids"
    row = reaper.RowReaper()
    command = f"cd / && env -i setsid sleep 304 >/dev/null 2>&1 & echo $! > {pids}; sleep 600"
    try:
        done = asyncio.run(run_process(row.enter(command), cwd=tmp_path, env=ENV, timeout=2))
        assert done.timed_out
        assert all(alive(pid) for pid in pids_in(pids))
        row.close()
        wait_gone(pids_in(pids), 10)
    finally:
        kill_left(pids_in(pids))
