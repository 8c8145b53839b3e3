"""What the viewer reads of a run folder as a whole: a run's state, files that are missing,
corrupt or from another schema (shown as problems, never an error page), and run.json read
without its per-row list."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.results.run import RunSummary
from assay.view.reading import read_run_summary
from assay.view.runinfo import read_run
from assay.view.workspace import Workspace, find_runs
from tests.view.generate import make_run


def test_a_finished_run_is_read_whole(tmp_path: Path) -> None:
    run = make_run(30, tmp_path)
    info = read_run("r", run)
    assert (info.state, info.problems) == ("finished", [])
    assert info.summary is not None and info.summary.tasks_run == 30
    assert [s.key for s in info.suites] == ["default/sst2-three-way"]
    assert info.suites[0].rollup is not None and info.planned_rows == 30


def test_big_run_json_is_read_without_its_rows_and_equals_the_whole(tmp_path: Path) -> None:
    run = make_run(4000, tmp_path)
    path = run / "run.json"
    assert path.stat().st_size > 1_000_000
    data, problem = read_run_summary(path)
    whole = json.loads(path.read_text())
    assert problem is None and data["task_results"] == [] and len(whole["task_results"]) == 4000
    assert {**whole, "task_results": []} == data
    RunSummary.model_validate(data)


def test_corrupt_and_old_files_are_problems_not_errors(tmp_path: Path) -> None:
    run = make_run(5, tmp_path)
    (run / "run.json").write_text('{"run_id": "x", ')
    suite = run / "default" / "sst2-three-way" / "suite.json"
    data = json.loads(suite.read_text())
    data["schema_version"] = "0"
    del data["rows_total"]
    suite.write_text(json.dumps(data))
    (run / "sessions.jsonl").write_text('{"start": "2026-12-01T09:00:00"}\nnot json\n')
    info = read_run("r", run)
    assert [str(p) for p in info.problems] == [
        "run.json: is not valid JSON (Expecting property name enclosed in double quotes: "
        "line 1 column 17)",
        "sessions.jsonl line 2: is not valid JSON (Expecting value: line 1 column 1)",
        "default/sst2-three-way/suite.json: has schema_version '0', this assay reads '1': "
        "shown as far as it can be read",
        "default/sst2-three-way/suite.json: does not match its schema: rows_total: Field required",
    ]
    assert info.plan is not None and info.suites[0].rollup is None  # the plan still counts


def test_states_running_stopped_interrupted_unreadable(tmp_path: Path) -> None:
    run = make_run(5, tmp_path)
    (run / "run.json").unlink()
    (run / "sessions.jsonl").write_text('{"start": "2026-12-01T09:00:00"}\n')
    assert read_run("r", run, last_row_at=time.time()).state == "running"
    assert read_run("r", run, last_row_at=time.time() - 3600).state == "stopped"
    finished = make_run(5, tmp_path, name="stopped")
    data = json.loads((finished / "run.json").read_text())
    (finished / "run.json").write_text(json.dumps({**data, "interrupted": True}))
    assert read_run("s", finished).state == "interrupted"
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "plan.json").write_text("[]")
    info = read_run("b", broken)
    assert info.state == "unreadable"
    assert [str(p) for p in info.problems] == [
        "plan.json: does not match its schema: (top level): Input should be a valid "
        "dictionary or instance of PlanRecord"
    ]


def test_runs_are_found_newest_first_and_latest_is_skipped(tmp_path: Path) -> None:
    old = make_run(2, tmp_path / "runs", name="old")
    new = make_run(2, tmp_path / "runs", name="new")
    os.utime(old / "plan.json", (1, 1))
    (tmp_path / "runs" / "latest").symlink_to("new")
    (tmp_path / "runs" / "notes").mkdir()
    found = find_runs([tmp_path / "runs", new])
    assert [(e.key, e.path) for e in found] == [("new", new), ("old", old)]
    other = make_run(2, tmp_path / "elsewhere", name="new")
    keys = [e.key for e in find_runs([tmp_path / "runs", other])]
    suffix = hashlib.sha256(str(other.resolve()).encode()).hexdigest()[:8]
    assert sorted(keys) == ["new", f"new~{suffix}", "old"]


def started(run: Path, when: str) -> None:
    (run / "sessions.jsonl").write_text(json.dumps({"start": when}) + "\n"
                                        + json.dumps({"end": when}) + "\n")  # fmt: skip


def test_runs_are_ordered_by_their_start_and_same_names_keep_their_urls(tmp_path: Path) -> None:
    first = make_run(2, tmp_path / "one", name="same")
    second = make_run(2, tmp_path / "two", name="same")
    third = make_run(2, tmp_path / "one", name="other")
    started(first, "2026-12-01T09:00:00")
    started(second, "2026-12-01T10:00:00")
    started(third, "2026-12-01T11:00:00+00:00")
    for when, run in enumerate((third, second, first), start=1):  # file times say otherwise
        for name in ("plan.json", "run.json"):
            os.utime(run / name, (when * 1000, when * 1000))
    folders = [tmp_path / "one", tmp_path / "two"]
    found = find_runs(folders)
    assert [e.path for e in found] == [third, second, first]
    keys = {e.path: e.key for e in found}
    suffix = hashlib.sha256(str(second).encode()).hexdigest()[:8]
    assert keys == {first: "same", second: f"same~{suffix}", third: "other"}
    started(second, "2026-12-01T08:00:00")  # now the other "same" started first
    again = find_runs(folders)
    assert [e.path for e in again] == [third, first, second]
    assert {e.path: e.key for e in again} == keys
    assert [e.key for e in find_runs(folders)] == [e.key for e in again]


def hold_lock(run: Path) -> subprocess.Popen[str]:
    """A real process holding the run's lock, as ``assay run`` does while it writes."""
    code = ("import sys, time; from pathlib import Path; "
            "from assay.orchestration.running.runlock import lock_run_dir; "
            "lock_run_dir(Path(sys.argv[1]), command=['assay', 'run']); "
            "print('locked', flush=True); time.sleep(600)")  # fmt: skip
    holder = subprocess.Popen([sys.executable, "-c", code, str(run)], stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def test_a_run_is_running_while_its_process_holds_the_lock_and_stopped_once_killed(
    tmp_path: Path,
) -> None:
    run = make_run(5, tmp_path)
    (run / "run.json").unlink()
    (run / "sessions.jsonl").write_text('{"start": "2026-12-01T09:00:00"}\n')
    holder = hold_lock(run)
    try:
        # a slow row: nothing finished for an hour, but the run's process is at work
        assert read_run("r", run, last_row_at=time.time() - 3600).state == "running"
        ws = Workspace([run], scratch=tmp_path)
        entry = ws.runs()[0]
        assert ws.info(entry).state == "running"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # killed a moment after its last row: stopped now, not 10 minutes later
    assert read_run("r", run, last_row_at=time.time()).state == "stopped"
    assert ws.info(entry).state == "stopped"
    (run / ".lock").write_text("")  # released without ending the session (a crash between)
    assert read_run("r", run, last_row_at=time.time()).state == "stopped"
    other = {"pid": os.getpid(), "host": "another-host", "command": ["assay", "run"]}
    (run / ".lock").write_text(json.dumps(other))  # a shared folder: the lock cannot be told
    assert read_run("r", run, last_row_at=time.time()).state == "running"
    assert read_run("r", run, last_row_at=time.time() - 3600).state == "stopped"


def test_a_folder_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as missing:
        Workspace([tmp_path / "nope"])
    assert str(missing.value) == (f"no such folder: {tmp_path / 'nope'}\n  hint: give run "
                                  "folders or folders of runs (default: runs)")  # fmt: skip
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError) as file:
        Workspace([tmp_path / "file"])
    assert str(file.value) == f"{tmp_path / 'file'} is a file, not a run folder or a folder of runs"
