"""`assay run` end to end, as a user runs it: its command line (in-process, see
tests/cli/inproc.py), real files, real sandboxes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from tests.cli.inproc import run_in_process
from tests.helpers import selected_rows, write

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def assay(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``assay ARGS`` in ``cwd`` run in this interpreter as ``python -m assay`` would run it
    (tests/cli/inproc.py); ``env`` adds variables to this environment."""
    return run_in_process(*args, cwd=cwd, env=env)


def assay_process(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m assay ARGS`` in a real process, for what only a process shows."""
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env} if env is not None else None,
    )


def latest(cwd: Path) -> Path:
    return (cwd / "runs" / "latest").resolve()


def finished(done: subprocess.CompletedProcess[str], run_dir: Path) -> int:
    """A run that went to its end, for a test that uses its files: exit 0 or 1 (which one
    is the exit-code rule's business, tested on its own), the same code recorded in
    ``run.json``, not interrupted, no traceback. Returns the exit code."""
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    run = json.loads((run_dir / "run.json").read_text())
    assert (run["exit_code"], run["interrupted"]) == (done.returncode, False)
    return done.returncode


def suite_json(run_dir: Path, suite: str, variant: str = "default") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / variant / suite / "suite.json").read_text())
    return data


def test_sentiment_example_exact_numbers(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "sentiment", tmp_path / "sentiment")
    done = assay("run", "sentiment/sentiment_classification.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    suite = suite_json(latest(tmp_path), "sentiment-classification")
    metrics = suite["criterion_aggregates"][0]["metrics"]
    assert round(metrics["accuracy"], 3) == 0.667
    assert round(metrics["macro_f1"], 3) == 0.667
    assert metrics["recall.positive"] == 1.0
    assert metrics["recall.negative"] == 0.5
    assert metrics["precision.positive"] == 0.5
    assert metrics["completion_rate"] == 1.0
    assert suite["rows_total"] == 3 and suite["rows_passed"] == 2 and suite["rows_failed"] == 1
    assert suite["passed"] is True
    assert [c["passed"] for c in suite["criterion_aggregates"][0]["threshold_checks"]] == [
        True,
        True,
        True,
    ]
    assert suite["failed_samples"][0]["task_json_relpath"] == (
        "default/sentiment-classification/r3/00/task.json"
    )


def test_dataset_example_expands_and_passes(tmp_path: Path) -> None:
    done = assay("run", str(EXAMPLES / "dataset_example"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = latest(tmp_path)
    for row in ("alpha", "beta"):
        task = json.loads((run_dir / "default/dataset-example" / row / "00/task.json").read_text())
        assert task["task_id"] == f"dataset-example/{row}"
        assert task["final_status"] == "SUCCESS"


def sentiment_task(tmp_path: Path, thresholds: str) -> Path:
    shutil.copytree(EXAMPLES / "sentiment", tmp_path / "s")
    path = tmp_path / "s" / "sentiment_classification.yaml"
    text = path.read_text().replace(
        "      accuracy: 0.6\n      macro_f1: 0.5\n      recall.positive: 0.9\n", thresholds
    )
    path.write_text(text)
    return path


def test_failed_gate_exits_1_and_names_the_metric(tmp_path: Path) -> None:
    path = sentiment_task(tmp_path, "      accuracy: 0.9\n")
    done = assay("run", str(path), cwd=tmp_path)
    assert done.returncode == 1
    suite = suite_json(latest(tmp_path), "sentiment-classification")
    check = suite["criterion_aggregates"][0]["threshold_checks"][0]
    assert check.pop("interval")[0] < 0.9 and "straddles 0.9" in check.pop("note")
    assert check == {
        "metric": "accuracy",
        "min_value": 0.9,
        "actual_value": suite["criterion_aggregates"][0]["metrics"]["accuracy"],
        "passed": False,
    }
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert run["suites"][0]["failed_gates"] == ["classification_match.accuracy"]
    assert run["exit_code"] == 1


def test_invalid_task_exits_2_in_run_and_plan(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "task_id: x\ndescription: d\nsuccess_criteria: []\n")
    for command in ("run", "plan"):
        done = assay(command, str(bad), cwd=tmp_path)
        assert done.returncode == 2, command
        assert "bad.yaml" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_missing_task_file_exits_2(tmp_path: Path) -> None:
    done = assay("run", "nope.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "task file not found: nope.yaml" in done.stderr


TASK = """\
task_id: rows
description: rows in order
initial_prompt: "${{row.text}}"
agent:
  type: command
  command: {command}
run_limits: {{task_timeout: {timeout}}}
{extra}
dataset:
  rows:
{rows}
success_criteria:
  - type: response_match
    expected: "${{row.text}}"
    match: contains
    suite_thresholds: {{completion_rate: 0.0}}
"""


def rows_task(
    tmp_path: Path, command: str, rows: list[str], *, timeout: float = 30, extra: str = ""
) -> Path:
    body = "".join(f"    - {{id: {r}, text: {r}}}\n" for r in rows)
    text = TASK.format(command=json.dumps(command), timeout=timeout, extra=extra, rows=body)
    return write(tmp_path / "task.yaml", text)


def task_json(tmp_path: Path, suite: str, row: str) -> dict[str, Any]:
    path = latest(tmp_path) / "default" / suite / row / "00" / "task.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_results_keep_dataset_order_whatever_finishes_first(tmp_path: Path) -> None:
    command = 'sleep "$(cat | tr -dc 0-9 | head -c 1)e-1"; echo "$ASSAY_PROMPT"'
    path = rows_task(tmp_path, command, ["r3", "r2", "r1", "r0"])
    done = assay("run", str(path), "-j", "4", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert [r["row_id"] for r in run["task_results"]] == ["r3", "r2", "r1", "r0"]
    suite = suite_json(latest(tmp_path), "rows")
    assert list(selected_rows(latest(tmp_path))) == ["r3", "r2", "r1", "r0"]
    assert suite["selection"]["rows_selected"] == 4


def test_command_agent_is_killed_at_task_timeout(tmp_path: Path) -> None:
    path = rows_task(tmp_path, "echo started; sleep 30; echo late", ["slow"], timeout=0.5)
    done = assay("run", str(path), cwd=tmp_path)
    task = task_json(tmp_path, "rows", "slow")
    assert task["final_status"] == "TIMEOUT"
    assert task["agent"]["timed_out"] is True
    assert "killed after 0.5 s" in task["error_message"]
    # killed, not waited for: "late" never came (what came before the kill is kept, when the
    # shell got that far in 0.5 s)
    response = (latest(tmp_path) / "default/rows/slow/00/response.txt").read_text()
    assert response in ("", "started\n")
    assert done.returncode == 0  # the gate (completion_rate >= 0) decides


def test_agent_crash_is_an_error_excluded_from_the_denominator(tmp_path: Path) -> None:
    command = 'if [ "$ASSAY_ROW_ID" = bad ]; then echo boom >&2; exit 3; fi; echo "$ASSAY_PROMPT"'
    path = rows_task(tmp_path, command, ["ok1", "bad", "ok2"])
    done = assay("run", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # the suite gates completion_rate >= 0 itself
    task = task_json(tmp_path, "rows", "bad")
    assert task["final_status"] == "ERROR"
    assert task["error_message"] == "the agent command exited with code 3: boom"
    assert task["success_criteria_results"] == []
    suite = suite_json(latest(tmp_path), "rows")
    aggregate = suite["criterion_aggregates"][0]
    assert suite["rows_total"] == 3 and suite["rows_error"] == 1
    assert aggregate["rows_excluded"] == 1
    assert aggregate["metrics"]["count"] == 2.0
    assert aggregate["metrics"]["completion_rate"] == 2 / 3
    assert aggregate["metrics"]["mean"] == 1.0


def test_pre_run_failure_ends_the_row_in_error(tmp_path: Path) -> None:
    extra = "pre_run:\n  - command: 'exit 4'\n"
    path = rows_task(tmp_path, "cat", ["a"], extra=extra)
    done = assay("run", str(path), cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # no row was graded: an outage never passes
    task = task_json(tmp_path, "rows", "a")
    assert task["final_status"] == "ERROR"
    assert task["pre_run_results"][0]["exit_code"] == 4
    assert task["error_message"] == "pre_run command 'exit 4' exited with code 4"  # said nothing
    path = rows_task(tmp_path, "cat", ["a"],
                     extra="pre_run:\n  - command: 'echo no fixtures here; exit 3'\n")  # fmt: skip
    assay("run", str(path), cwd=tmp_path)
    said = task_json(tmp_path, "rows", "a")["error_message"]
    assert said == (
        "pre_run command 'echo no fixtures here; exit 3' exited with code 3: no fixtures here"
    )  # its stdout when its stderr is empty (it was dropped)


def test_symlink_out_of_the_sandbox_is_a_failing_zero(tmp_path: Path) -> None:
    secret = write(tmp_path / "secret.txt", "positive")
    text = f"""\
task_id: escape
description: an agent plants a symlink to a file outside its sandbox
initial_prompt: go
agent:
  type: command
  command: "ln -s {secret} result.txt"
success_criteria:
  - type: file_check
    path: result.txt
    includes: [positive]
"""
    path = write(tmp_path / "escape.yaml", text)
    done = assay("run", str(path), cwd=tmp_path)
    assert done.returncode == 1
    task = json.loads((latest(tmp_path) / "default/escape/00/task.json").read_text())
    result = task["success_criteria_results"][0]
    assert (result["score"], result["error"], task["final_status"]) == (0.0, None, "FAILURE")
    assert "resolves outside the sandbox" in result["details"]


def test_prompt_arrives_on_stdin_and_in_env(tmp_path: Path) -> None:
    command = 'test "$(cat)" = "$ASSAY_PROMPT" && echo "$ASSAY_PROMPT"'
    path = rows_task(tmp_path, command, ["hello"])
    assert assay("run", str(path), cwd=tmp_path).returncode == 0
    assert task_json(tmp_path, "rows", "hello")["final_status"] == "SUCCESS"
    response = latest(tmp_path) / "default/rows/hello/00/response.txt"
    assert response.read_text() == "hello\n"


def test_junit_xml_handles_ids_with_slashes(tmp_path: Path) -> None:
    path = rows_task(tmp_path, "cat", ["a", "b"])
    report = tmp_path / "out" / "junit.xml"
    done = assay("run", str(path), "--junit-xml", str(report), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    root = ET.parse(report).getroot()
    cases = root.findall(".//testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("rows", "a"),
        ("rows", "b"),
        ("rows", "suite gate"),
    ]


def test_latest_points_at_the_newest_run(tmp_path: Path) -> None:
    path = rows_task(tmp_path, "cat", ["a"])
    assert assay("run", str(path), cwd=tmp_path).returncode == 0
    first = latest(tmp_path)
    assert assay("run", str(path), cwd=tmp_path).returncode == 0
    second = latest(tmp_path)
    assert first != second  # two runs in the same second get -2 (orchestration/test_rundir.py)
    assert first.parent == second.parent == tmp_path / "runs"
    assert (tmp_path / "runs" / "latest").is_symlink()


def test_task_without_dataset_failing_exits_1(tmp_path: Path) -> None:
    text = (
        "task_id: solo\ndescription: d\ninitial_prompt: hi\n"
        "agent: {type: command, command: 'echo nope'}\n"
        "success_criteria:\n  - {type: response_match, expected: 'yes'}\n"
    )
    done = assay("run", str(write(tmp_path / "solo.yaml", text)), cwd=tmp_path)
    assert done.returncode == 1
    task = json.loads((latest(tmp_path) / "default/solo/00/task.json").read_text())
    assert task["final_status"] == "FAILURE"


def test_no_nan_in_any_json(tmp_path: Path) -> None:
    path = rows_task(tmp_path, "exit 1", ["a", "b"])
    done = assay("run", str(path), cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # no row was graded: an outage never passes
    for file in latest(tmp_path).rglob("*.json"):
        json.loads(file.read_text(), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    suite = suite_json(latest(tmp_path), "rows")
    aggregate = suite["criterion_aggregates"][0]
    assert aggregate["metrics"]["mean"] is None
    assert aggregate["undefined_metrics"]["mean"] == "no graded rows"
    assert aggregate["metrics"]["completion_rate"] == 0.0


def test_a_node_programs_error_names_its_message_not_only_its_stack(tmp_path: Path) -> None:
    """A real Node failure: its stack alone filled the error's 500 characters."""
    script = write(tmp_path / "fail.js", "require('fs').writeFileSync('/nonexistent/x', 'y')\n")
    path = rows_task(tmp_path, f"node {script}", ["js"])
    assay("run", str(path), cwd=tmp_path)
    said = task_json(tmp_path, "rows", "js")["error_message"]
    assert said.startswith("the agent command exited with code 1: "), said
    assert "Error: ENOENT: no such file or directory, open '/nonexistent/x'" in said, said
