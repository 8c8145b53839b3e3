"""A run killed with SIGKILL mid-way, then resumed, reports what an uninterrupted run does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_run import assay, latest
from tests.helpers import finish, selected_rows, start_assay, wait_for, write

ROWS = 24
TASK = """\
task_id: resumable
description: rows that take a little time, graded deterministically
initial_prompt: "${{row.text}}"
agent:
  type: command
  command: 'sleep 0.15; case "$ASSAY_ROW_ID" in *[02468]) echo yes;; *) echo no;; esac'
dataset:
  stratify_field: kind
  rows:
{rows}
success_criteria:
  - type: classification_match
    expected_label: "yes"
    allowed_labels: ["yes", "no"]
    suite_thresholds: {{accuracy: 0.4}}
"""


def make_task(folder: Path) -> Path:
    rows = "".join(f"    - {{id: r{i:02d}, text: t{i}, kind: k{i % 3}}}\n" for i in range(ROWS))
    return write(folder / "task.yaml", TASK.format(rows=rows))


def suite(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "default/resumable/suite.json").read_text())
    return data


def kill_after(folder: Path, rows_done: int, *args: str) -> Path:
    # a real process: killed with SIGKILL mid-run, then resumed
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "run", "task.yaml", "-j", "2", "-q", *args],
        cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run_dir = folder / "runs" / "latest"
        if run_dir.exists() and len(list(run_dir.glob("default/*/*/00/task.json"))) >= rows_done:
            break
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    return latest(folder)


def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    make_task(whole)
    make_task(broken)
    assert assay("run", "task.yaml", "-j", "2", "-q", cwd=whole).returncode == 0
    run_dir = kill_after(broken, 6)
    finished = list(run_dir.glob("default/resumable/*/00/task.json"))
    assert 6 <= len(finished) < ROWS
    for path in finished:
        json.loads(path.read_text())  # every task.json on disk is complete
    assert not (run_dir / "run.json").exists()
    before = {p: p.read_text() for p in finished}

    done = assay("run", "--resume", str(run_dir), "-q", cwd=broken)
    assert done.returncode == 0, done.stderr
    assert suite(run_dir) == suite(latest(whole))
    assert {p: p.read_text() for p in finished} == before  # kept rows were not run again
    run = json.loads((run_dir / "run.json").read_text())
    assert run["tasks_run"] == ROWS and run["sessions"] == 2
    assert run["total_duration_seconds"] == pytest.approx(active_time(run_dir), abs=1e-6)


def active_time(run_dir: Path) -> float:
    """From the files, by hand: the killed session counts until its last finished row, the
    resumed one from its start to its end; the time between them is not counted."""
    events = [json.loads(line) for line in (run_dir / "sessions.jsonl").read_text().splitlines()]
    assert [next(iter(e)) for e in events] == ["start", "start", "end"]
    first, second, end = (datetime.fromisoformat(next(iter(e.values()))) for e in events)
    rows = [json.loads(p.read_text()) for p in run_dir.glob("default/*/*/00/task.json")]
    ended = [datetime.fromisoformat(r["completed_at"]) for r in rows]
    killed = max(t for t in ended if first <= t <= second)
    return (killed - first).total_seconds() + (end - second).total_seconds()


def test_resume_reuses_an_unseeded_stratified_sample(tmp_path: Path) -> None:
    make_task(tmp_path)
    run_dir = kill_after(tmp_path, 2, "--sample-per-stratum", "3")
    plan = json.loads((run_dir / "plan.json").read_text())
    recorded = list(selected_rows(run_dir))
    assert len(recorded) == 9 and plan["tasks"][0]["selection"]["seed_was_drawn"]
    done = assay("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr  # the gate depends on the random draw
    assert list(selected_rows(run_dir)) == recorded
    assert suite(run_dir)["selection"]["rows_selected"] == len(recorded)
    assert sorted(
        p.parent.parent.name for p in run_dir.glob("default/resumable/*/00/task.json")
    ) == (sorted(recorded))


def test_retry_errors_runs_only_the_errored_rows(tmp_path: Path) -> None:
    marker = tmp_path / "outage"
    marker.write_text("down")
    text = (
        "task_id: outage\ndescription: d\ninitial_prompt: x\n"
        f"agent: {{type: command, command: 'test ! -e {marker} || exit 9; echo ok'}}\n"
        "dataset: {rows: [{id: a}, {id: b}]}\n"
        "success_criteria:\n  - {type: response_match, expected: ok, suite_thresholds: {mean: 1}}\n"
    )
    write(tmp_path / "outage.yaml", text)
    assert assay("run", "outage.yaml", cwd=tmp_path).returncode == 1
    run_dir = latest(tmp_path)
    marker.unlink()
    assert assay("run", "--resume", str(run_dir), cwd=tmp_path).returncode == 1  # errors kept
    done = assay("run", "--resume", str(run_dir), "--retry-errors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((run_dir / "run.json").read_text())["tasks_succeeded"] == 2


# the first attempt floods stdout past max_output_mb (agent.stdout.log) and, with ``hang``,
# sleeps; every later attempt answers cleanly
FLOOD = """\
task_id: st
description: d
initial_prompt: go
agent:
  type: command
  command: >-
    if test -e {marker}; then echo clean answer; else touch {marker}; echo old > left.txt;
    yes FLOOD | head -c 30000; echo; {then}; fi
sandbox: {{limits: {{max_output_mb: 0.01}}}}
dataset: {{rows: [{{id: r1}}]}}
success_criteria:
  - {{type: response_match, expected: clean answer, match: contains}}
"""


def attempt_files(run_dir: Path) -> list[str]:
    return sorted(p.name for p in (run_dir / "default/st/r1/00").iterdir())


def test_a_row_resumed_after_ctrl_c_keeps_nothing_of_its_first_attempt(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    write(tmp_path / "t.yaml", FLOOD.format(marker=marker, then="exec sleep 30"))
    # a real process: Ctrl-C while the row's first attempt runs, its flood already logged
    process = start_assay("run", "t.yaml", "-q", "--keep-sandboxes", cwd=tmp_path)
    row = tmp_path / "runs/latest/default/st/r1/00"
    wait_for(lambda: (row / "agent.stdout.log").is_file() and (row / "sandbox/left.txt").is_file(),
             what="the first attempt's flood logged")  # fmt: skip
    process.send_signal(signal.SIGINT)
    _, err = finish(process)
    assert process.returncode == 130, err
    assert attempt_files(latest(tmp_path)) == ["agent.stdout.log", "sandbox"]
    done = assay("run", "--resume", "runs/latest", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = latest(tmp_path)
    assert attempt_files(run_dir) == ["response.txt", "sandbox", "task.json", "task.log",
                                      "trace.json"]  # fmt: skip
    assert list((run_dir / "default/st/r1/00/sandbox").iterdir()) == []
    agent = json.loads((run_dir / "default/st/r1/00/task.json").read_text())["agent"]
    assert (agent["output_logs"], agent["output_dropped_bytes"]) == ([], 0)


def test_retry_errors_clears_the_errored_attempt_and_nothing_else(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    write(tmp_path / "t.yaml", FLOOD.format(marker=marker, then="echo broken >&2; exit 9"))
    assert assay("run", "t.yaml", "-q", cwd=tmp_path).returncode == 1
    run_dir = latest(tmp_path)
    first = json.loads((run_dir / "default/st/r1/00/task.json").read_text())
    assert first["final_status"] == "ERROR" and first["agent"]["output_logs"] == [
        "agent.stdout.log"]  # fmt: skip
    write(run_dir / "default/st/r1/00/notes.txt", "mine")  # not a file a row writes
    done = assay("run", "--resume", str(run_dir), "--retry-errors", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert attempt_files(run_dir) == ["notes.txt", "response.txt", "task.json", "task.log",
                                      "trace.json"]  # fmt: skip
    assert "clean answer" in (run_dir / "default/st/r1/00/response.txt").read_text()


def test_resume_refuses_task_arguments_and_non_runs(tmp_path: Path) -> None:
    make_task(tmp_path)
    assert assay("run", "task.yaml", "--resume", "runs/x", cwd=tmp_path).returncode == 2
    (tmp_path / "empty").mkdir()
    done = assay("run", "--resume", "empty", cwd=tmp_path)
    assert done.returncode == 2
    assert "has no plan.json" in done.stderr


def test_a_row_whose_files_cannot_be_written_ends_error_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    text = (
        'task_id: disk\ndescription: d\ninitial_prompt: "${row.id}"\n'
        "agent: {type: command, command: 'echo ok'}\n"
        "dataset: {rows: [{id: a}, {id: b}, {id: c}]}\n"
        "success_criteria:\n  - {type: response_match, expected: ok}\n"
    )
    write(tmp_path / "disk.yaml", text)
    assert assay("run", "disk.yaml", cwd=tmp_path).returncode == 0
    run_dir = latest(tmp_path)
    (run_dir / "run.json").unlink()
    blocked = run_dir / "default/disk/b"
    for path in sorted(blocked.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    blocked.rmdir()
    blocked.write_text("a file where row b's folder goes")  # its files cannot be written

    done = assay("run", "--resume", str(run_dir), cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # an errored row never passes CI
    run = json.loads((run_dir / "run.json").read_text())
    assert (run["tasks_succeeded"], run["tasks_error"]) == (2, 1)
    failed = [t for t in run["task_results"] if t["final_status"] == "ERROR"]
    assert [t["row_id"] for t in failed] == ["b"]
    report = (run_dir / "default/disk/suite.md").read_text()
    assert "### `disk/b` — ERROR\n- score: —\n- error: the row's files could not be written: " in (
        report
    )


@pytest.mark.parametrize("damage", ['{"start": "2026-12-07T09:4', "\0" * 6])
def test_a_cut_session_line_neither_stops_the_reports_nor_the_resume(
    tmp_path: Path, damage: str
) -> None:
    """An append to sessions.jsonl cut by a kill (or the NUL bytes a crashed file system
    leaves) made `assay report` and `assay run --resume` end in a JSONDecodeError traceback,
    and the resume glued its own line to the cut one (a platform engineer's break-test)."""
    make_task(tmp_path)
    assert assay("run", "task.yaml", "-q", cwd=tmp_path).returncode in (0, 1)
    run_dir = latest(tmp_path)
    sessions = run_dir / "sessions.jsonl"
    with sessions.open("a", encoding="utf-8") as handle:
        handle.write(damage)
    done = assay("report", str(run_dir), cwd=tmp_path)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    resumed = assay("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    assert resumed.returncode in (0, 1) and "Traceback" not in resumed.stderr, resumed.stderr
    lines = sessions.read_text().splitlines()
    assert json.loads(lines[-2]).keys() == {"start"} and json.loads(lines[-1]).keys() == {"end"}
    assert json.loads((run_dir / "run.json").read_text())["sessions"] == 2


def test_row_ids_that_differ_only_in_case_are_warned_of(tmp_path: Path) -> None:
    """``r1`` and ``R1`` share one folder on macOS's and Windows's file systems, where one
    row's results replace the other's (a platform engineer's break-test)."""
    write(tmp_path / "t.yaml", "task_id: case\ndescription: d\ninitial_prompt: x\n"
          "agent: {type: command, command: echo x}\n"
          "dataset: {rows: [{id: r1}, {id: R1}, {id: r2}]}\n"
          "success_criteria: [{type: response_match, expected: x}]\n")  # fmt: skip
    done = assay("plan", "t.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "has row ids that differ only in case ('r1' and 'R1'; 1 in all)" in done.stderr


def test_a_mock_script_edited_since_the_run_started_is_refused_on_resume(tmp_path: Path) -> None:
    """An edited `mock/` script answered the resumed rows and the report mixed two models'
    answers without a word (a platform engineer's break-test); the task file and judge files
    were already checked."""
    write(tmp_path / "script.yaml", "default: even\n")
    write(tmp_path / "t.yaml", "task_id: mocked\ndescription: d\ninitial_prompt: x ${row.id}\n"
          "agent: {type: llm, model: mock/script.yaml}\n"
          "dataset: {rows: [{id: r1}, {id: r2}]}\n"
          "success_criteria: [{type: response_match, expected: even}]\n")  # fmt: skip
    assert assay("run", "t.yaml", "-q", cwd=tmp_path).returncode == 0
    run_dir = latest(tmp_path)
    recorded = json.loads((run_dir / "plan.json").read_text())["scripts"]
    assert list(recorded) == [str((tmp_path / "script.yaml").resolve())]
    write(tmp_path / "script.yaml", "default: odd\n")
    done = assay("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"mock script {(tmp_path / 'script.yaml').resolve()} has content hash" in done.stderr
    assert "its rows would be answered by two scripts" in done.stderr
    write(tmp_path / "script.yaml", "default: even\n")  # restored: the resume goes on
    assert assay("run", "--resume", str(run_dir), "-q", cwd=tmp_path).returncode == 0


def test_a_damaged_task_json_that_runs_again_is_said(tmp_path: Path) -> None:
    """`--resume` ran again, without a word, rows whose task.json was cut short or emptied:
    finished rows, as far as the run could tell (a platform engineer's break-test)."""
    make_task(tmp_path)
    assert assay("run", "task.yaml", "-q", cwd=tmp_path).returncode in (0, 1)
    run_dir = latest(tmp_path)
    row = run_dir / "default/resumable/r05/00/task.json"
    row.write_text(row.read_text()[:300])
    done = assay("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert ("1 row(s) whose task.json cannot be read run again "
            "(default/resumable/r05/00/task.json)") in done.stderr  # fmt: skip
    assert json.loads(row.read_text())["row_id"] == "r05"
