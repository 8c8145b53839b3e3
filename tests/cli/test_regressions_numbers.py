"""Regressions from adversarial testing: the numbers a suite reports (denominators, gates)."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_run import assay, finished, latest, suite_json, task_json
from tests.helpers import SigintAtStart, finish, pids_in, start_assay, wait_for, wait_gone, write


def classify_task(tmp_path: Path, command: str, thresholds: str) -> Path:
    text = f"""\
task_id: ce
description: d
initial_prompt: "x ${{row.id}}"
agent: {{type: command, command: {json.dumps(command)}}}
dataset:
  rows: [{{id: a}}, {{id: b}}, {{id: c}}, {{id: d}}]
success_criteria:
  - type: classification_match
    path: result.txt
    expected_label: positive
    allowed_labels: [positive, negative]
    suite_thresholds: {thresholds}
"""
    return write(tmp_path / "task.yaml", text)


def test_rows_that_did_not_grade_are_excluded_and_lower_completion_rate(
    tmp_path: Path,
) -> None:
    """Three rows whose agent crashed: the criterion did not grade them (a folder left where
    its file should be was the way once; that is the agent's doing now, a failing 0.0)."""
    command = 'if [ "$ASSAY_ROW_ID" = a ]; then echo positive > result.txt; else exit 3; fi'
    path = classify_task(tmp_path, command, "{completion_rate: 1.0}")
    done = assay("run", str(path), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    aggregate = suite_json(latest(tmp_path), "ce")["criterion_aggregates"][0]
    assert aggregate["metrics"]["completion_rate"] == 0.25
    assert aggregate["metrics"]["count"] == 1.0
    assert aggregate["metrics"]["accuracy"] == 1.0
    assert aggregate["rows_excluded"] == 3
    assert aggregate["threshold_checks"][0]["passed"] is False
    assert suite_json(latest(tmp_path), "ce")["rows_error"] == 3


SLOW = """\
task_id: slow
description: two rows finish, the others wait for a file
initial_prompt: "${{row.id}}"
agent:
  type: command
  command: >-
    case "$ASSAY_ROW_ID" in r0|r1) ;; *) echo $$ >> {started};
    while [ ! -e {go} ]; do sleep 0.1; done;; esac;
    echo fast
dataset:
  rows: [{{id: r0}}, {{id: r1}}, {{id: r2}}, {{id: r3}}, {{id: r4}}, {{id: r5}}]
success_criteria:
  - type: response_match
    expected: fast
    suite_thresholds: {{mean: 0.5}}
"""


def start_and_stop(
    tmp_path: Path, sig: signal.Signals, sigint: SigintAtStart = "default"
) -> subprocess.Popen[str]:
    """Two rows finished and four agents waiting when ``sig`` arrives."""
    started = tmp_path / "started"
    path = write(tmp_path / "slow.yaml", SLOW.format(go=tmp_path / "go", started=started))
    # a real process: signals are delivered to a process
    process = start_assay("run", str(path), "-j", "6", "-q", cwd=tmp_path, sigint=sigint)
    run_dir = tmp_path / "runs" / "latest"

    def two_done_four_waiting() -> bool:
        done = list(run_dir.glob("default/slow/*/00/task.json"))
        return len(done) == 2 and len(pids_in(started)) == 4

    wait_for(two_done_four_waiting, what="r0 and r1 finished, r2 to r5 waiting")
    process.send_signal(sig)
    finish(process)
    return process


def assert_incomplete(suite: dict[str, Any]) -> None:
    assert suite["rows_total"] == 6
    assert suite["rows_missing"] == 4
    assert suite["criterion_aggregates"][0]["metrics"]["completion_rate"] == 2 / 6
    assert suite["passed"] is False


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_interrupted_suite_counts_missing_rows_and_cannot_pass(
    tmp_path: Path, sigint: SigintAtStart
) -> None:
    process = start_and_stop(tmp_path, signal.SIGINT, sigint)
    assert process.returncode == 130
    run_dir = latest(tmp_path)
    assert_incomplete(suite_json(run_dir, "slow"))

    report = assay("report", str(run_dir), cwd=tmp_path)
    assert report.returncode == 1, report.stderr
    assert_incomplete(suite_json(run_dir, "slow"))
    assert json.loads((run_dir / "run.json").read_text())["interrupted"] is True

    (tmp_path / "go").touch()
    resumed = assay("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    suite = suite_json(run_dir, "slow")
    assert (suite["rows_total"], suite["rows_missing"], suite["rows_passed"]) == (6, 0, 6)
    assert suite["passed"] is True


def test_report_after_sigkill_counts_missing_rows(tmp_path: Path) -> None:
    process = start_and_stop(tmp_path, signal.SIGKILL)
    (tmp_path / "go").touch()  # lets the orphaned agents of the killed run finish
    assert process.returncode == -signal.SIGKILL
    run_dir = latest(tmp_path)
    report = assay("report", str(run_dir), cwd=tmp_path)
    assert report.returncode == 1, report.stderr
    assert_incomplete(suite_json(run_dir, "slow"))
    summary = json.loads((run_dir / "run.json").read_text())
    assert summary["interrupted"] is True
    # the killed session lasted from its start to its last finished row, not 0.0 s
    started = json.loads((run_dir / "sessions.jsonl").read_text().splitlines()[0])["start"]
    assert summary["start_time"] == started
    assert summary["total_duration_seconds"] > 0


def test_file_over_64_mib_is_a_failing_zero_not_a_partial_read(tmp_path: Path) -> None:
    command = "python3 -c \"open('out.txt', 'wb').truncate(65 * 2**20)\""
    text = f"""\
task_id: big
description: d
initial_prompt: x
agent: {{type: command, command: {json.dumps(command)}}}
success_criteria:
  - {{type: file_check, path: out.txt, excludes: [FORBIDDEN]}}
"""
    done = assay("run", str(write(tmp_path / "big.yaml", text)), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    task = json.loads((latest(tmp_path) / "default/big/00/task.json").read_text())
    result = task["success_criteria_results"][0]
    assert (result["score"], result["error"]) == (0.0, None)  # what the agent left: a failure
    assert "larger than 64 MiB" in result["details"]


def test_infinite_or_huge_weights_are_load_errors(tmp_path: Path) -> None:
    for weight in (".inf", "1e308"):
        text = (
            "task_id: w\ndescription: d\ninitial_prompt: x\n"
            "agent: {type: llm, model: mock/echo}\n"
            f"success_criteria:\n  - {{type: response_match, expected: x, weight: {weight}}}\n"
        )
        path = write(tmp_path / "w.yaml", text)
        for command in ("plan", "run"):
            done = assay(command, str(path), cwd=tmp_path)
            assert done.returncode == 2, (weight, command, done.stderr)
            assert "weight" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_suite_without_thresholds_where_every_row_errored(tmp_path: Path) -> None:
    text = """\
task_id: allerr
description: d
initial_prompt: "x ${row.id}"
agent: {type: command, command: "exit 3"}
dataset:
  rows: [{id: a}, {id: b}]
success_criteria:
  - {type: response_match, expected: x}
"""
    done = assay("run", str(write(tmp_path / "t.yaml", text)), cwd=tmp_path)
    finished(done, latest(tmp_path))
    suite_md = (latest(tmp_path) / "default/allerr/suite.md").read_text()
    assert "2 errored" in suite_md
    assert "**Error**: no row was graded by this criterion" in suite_md
    assert "thresholds fail" not in suite_md


def test_a_gate_missed_by_a_hair_shows_enough_digits(tmp_path: Path) -> None:
    rows = ", ".join(f"{{id: r{i:02d}, ok: {'x' if i < 7 else 'y'}}}" for i in range(20))
    text = f"""\
task_id: hair
description: d
initial_prompt: "${{row.ok}}"
agent: {{type: llm, model: mock/echo}}
dataset:
  rows: [{rows}]
success_criteria:
  - type: response_match
    expected: x
    suite_thresholds: {{mean: 0.3501}}
"""
    done = assay("run", str(write(tmp_path / "t.yaml", text)), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    suite = suite_json(latest(tmp_path), "hair")
    assert suite["criterion_aggregates"][0]["metrics"]["mean"] == 0.35
    suite_md = (latest(tmp_path) / "default/hair/suite.md").read_text()
    assert "| `mean` | 0.3501 | 0.3500 | ✗ |" in suite_md


def test_row_and_task_named_sandbox_are_counted_by_report_and_evaluate(tmp_path: Path) -> None:
    text = """\
task_id: s
description: d
initial_prompt: "${row.x}"
agent: {type: llm, model: mock/echo}
dataset:
  rows: [{id: sandbox, x: positive}, {id: r2, x: positive}, {id: r3, x: negative}]
success_criteria:
  - {type: classification_match, expected_label: "${row.x}", allowed_labels: [positive, negative]}
"""
    solo = """\
task_id: sandbox
description: d
initial_prompt: hi
agent: {type: llm, model: mock/echo}
success_criteria:
  - {type: response_match, expected: hi}
"""
    write(tmp_path / "tasks" / "s.yaml", text)
    write(tmp_path / "tasks" / "sandbox.yaml", solo)
    assert assay("run", "tasks", "-q", cwd=tmp_path).returncode == 0
    run_dir = latest(tmp_path)
    for command in ("report", "evaluate"):
        done = assay(command, str(run_dir), cwd=tmp_path)
        assert done.returncode == 0, (command, done.stderr)
        assert suite_json(run_dir, "s")["rows_total"] == 3, command
        run = json.loads((run_dir / "run.json").read_text())
        assert sorted(r["task_id"] for r in run["task_results"]) == [
            "s/r2",
            "s/r3",
            "s/sandbox",
            "sandbox",
        ], command
    assert task_json(tmp_path, "s", "sandbox")["final_status"] == "SUCCESS"


def test_run_interrupted_before_any_row_finished_reports_every_row_missing(
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    text = f"""\
task_id: none
description: d
initial_prompt: "x ${{row.id}}"
agent: {{type: command, command: "echo $$ >> {pids}; exec sleep 30"}}
dataset:
  rows: [{{id: a}}, {{id: b}}]
success_criteria:
  - {{type: response_match, expected: positive, suite_thresholds: {{mean: 0.0}}}}
"""
    path = write(tmp_path / "t.yaml", text)
    # a real process: started with SIGINT ignored, as a background job is
    process = start_assay("run", str(path), "-q", cwd=tmp_path, sigint="ignored")
    wait_for(lambda: len(pids_in(pids)) == 2, what="both agents started")
    process.send_signal(signal.SIGINT)
    _, err = finish(process)
    assert process.returncode == 130, err
    wait_gone(pids_in(pids))
    report = assay("report", str(latest(tmp_path)), cwd=tmp_path)
    assert report.returncode == 1, report.stderr
    suite = suite_json(latest(tmp_path), "none")
    assert (suite["rows_total"], suite["rows_missing"], suite["passed"]) == (2, 2, False)
    assert "0 passed, 0 failed, 0 errored, 2 never ran" in report.stdout


def test_a_report_between_two_kills_does_not_freeze_the_runs_sessions(tmp_path: Path) -> None:
    """run.json written by a report after the first kill was read as the run's figures after
    the second (one session, its duration), though a second session had run."""
    process = start_and_stop(tmp_path, signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL
    run_dir = latest(tmp_path)
    assert assay("report", str(run_dir), cwd=tmp_path).returncode == 1
    assert json.loads((run_dir / "run.json").read_text())["sessions"] == 1
    resumed = start_assay("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    wait_for(lambda: len((run_dir / "sessions.jsonl").read_text().splitlines()) >= 2,
             what="the resumed session logged")  # fmt: skip
    resumed.send_signal(signal.SIGKILL)
    finish(resumed)
    (tmp_path / "go").touch()  # lets the orphaned agents finish
    assay("report", str(run_dir), cwd=tmp_path)
    summary = json.loads((run_dir / "run.json").read_text())
    assert (summary["sessions"], summary["interrupted"]) == (2, True)
