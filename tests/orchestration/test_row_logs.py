"""The output logs a node of a cluster packs with a row's files are written into the row's
folder by the driver (:func:`assay.orchestration.running.rowfiles.write_logs`): redacted
with the driver's secrets, whole, and nothing but plain files of the log folder."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

import assay
from assay.errors import SandboxError
from assay.orchestration.running.rowfiles import clear_attempt, write_logs
from assay.results.io import PLAIN, Writer
from assay.results.secrets import Redactor
from assay.sandbox.archive import pack
from tests.helpers import write

SECRET = "driver-only-value-1234567890"


def test_each_log_is_written_whole_and_redacted_with_the_drivers_secrets(tmp_path: Path) -> None:
    node = tmp_path / "node"
    node.mkdir()
    flood = b"y" * (3 << 20)  # past one block of the streaming writer
    (node / "agent.stdout.log").write_bytes(SECRET.encode() + b"\n" + flood + SECRET.encode())
    (node / "pre_run-1.stderr.log").write_bytes(b"short\n")
    known = Redactor()
    known.add("DRIVER_TOKEN", SECRET)
    row = tmp_path / "row"
    row.mkdir()
    write_logs(pack(node), row, writer=Writer(known))
    text = (row / "agent.stdout.log").read_bytes()
    assert text == b"[redacted:DRIVER_TOKEN]\n" + flood + b"[redacted:DRIVER_TOKEN]"
    assert (row / "pre_run-1.stderr.log").read_bytes() == b"short\n"


@pytest.mark.parametrize("name", ["../escaped.log", "sub/agent.stdout.log", ".hidden", ".."])
def test_a_member_that_is_not_a_plain_file_of_the_folder_is_refused(
    tmp_path: Path, name: str
) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        member = tarfile.TarInfo(name)
        member.size = 2
        archive.addfile(member, io.BytesIO(b"hi"))
    row = tmp_path / "deep" / "row"
    row.mkdir(parents=True)
    with pytest.raises(SandboxError, match="not a log"):
        write_logs(buffer.getvalue(), row, writer=PLAIN)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["deep", "row"]


def test_a_folder_member_is_refused(tmp_path: Path) -> None:
    node = tmp_path / "node"
    (node / "sub").mkdir(parents=True)
    with pytest.raises(SandboxError, match="not a log"):
        write_logs(pack(node), tmp_path, writer=PLAIN)


def test_a_damaged_archive_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="cannot read the row's packed logs"):
        write_logs(b"not a tar archive at all" * 40, tmp_path, writer=PLAIN)


def test_clear_attempt_removes_only_the_files_a_row_attempt_writes(tmp_path: Path) -> None:
    row = tmp_path / "row" / "00"
    for name in ("task.json", "task.log", "response.txt", "trace.json", "agent.stdout.log",
                 "pre_run-1.stderr.log", "command-2.stdout.log", "notes.txt",
                 "sandbox/a/b.txt", "r/00/task.json"):  # fmt: skip
        (row / name).parent.mkdir(parents=True, exist_ok=True)
        (row / name).write_text("old")
    outside = tmp_path / "outside.log"
    outside.write_text("kept")
    (row / "link.log").symlink_to(outside)
    clear_attempt(row)
    left = sorted(p.relative_to(row).as_posix() for p in row.rglob("*"))
    assert left == ["link.log", "notes.txt", "r", "r/00", "r/00/task.json"]  # row id "…/00/r"
    assert outside.read_text() == "kept"
    clear_attempt(tmp_path / "never-ran")  # a row without a folder: nothing to do
    assert not (tmp_path / "never-ran").exists()


def test_a_pre_run_that_timed_out_is_logged_with_its_error_not_exit_none(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
                 "agent: {type: command, command: 'echo hi'}\n"
                 "pre_run: [{command: 'sleep 30', timeout: 1}]\n"
                 "success_criteria: [{type: file_exists, path: x}]\n")  # fmt: skip
    run_dir = assay.run([str(task)], run_dir=str(tmp_path / "runs")).run_dir
    log = (run_dir / "default" / "t" / "00" / "task.log").read_text()
    assert "pre_run 'sleep 30': timed out after 1 s" in log and "exit None" not in log
