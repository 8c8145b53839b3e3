"""`assay execute` → `assay evaluate` gives what `assay run` gives; `assay report` rebuilds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.cli.test_run import EXAMPLES, assay, latest
from tests.helpers import selected_rows

SUITE = "sentiment-classification"


def metrics_of(run_dir: Path) -> dict[str, Any]:
    suite = json.loads((run_dir / "default" / SUITE / "suite.json").read_text())
    metrics: dict[str, Any] = suite["criterion_aggregates"][0]["metrics"]
    return metrics


def copy_example(tmp_path: Path) -> str:
    shutil.copytree(EXAMPLES / "sentiment", tmp_path / "sentiment")
    return "sentiment/sentiment_classification.yaml"


def test_execute_then_evaluate_matches_run(tmp_path: Path) -> None:
    task = copy_example(tmp_path)
    assert assay("run", task, cwd=tmp_path).returncode == 0
    expected = metrics_of(latest(tmp_path))

    done = assay("execute", task, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    executed = latest(tmp_path)
    row = json.loads((executed / "default" / SUITE / "r1/00/task.json").read_text())
    assert row["final_status"] == "NOT_GRADED"
    assert row["success_criteria_results"] == []
    assert (executed / "default" / SUITE / "r1/00/sandbox/result.txt").read_text() == "positive"
    suite = json.loads((executed / "default" / SUITE / "suite.json").read_text())
    assert suite["rows_not_graded"] == 3 and suite["passed"] is False

    done = assay("evaluate", str(executed), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert metrics_of(executed) == expected
    row = json.loads((executed / "default" / SUITE / "r3/00/task.json").read_text())
    assert row["final_status"] == "FAILURE"
    run = json.loads((executed / "run.json").read_text())
    assert run["stage"] == "evaluate"
    assert run["selections"][0]["selection"]["rows_file"] == "selection.jsonl"
    assert list(selected_rows(executed)) == ["r1", "r2", "r3"]


def test_evaluate_without_kept_sandbox_refuses_and_changes_nothing(tmp_path: Path) -> None:
    task = copy_example(tmp_path)
    assert assay("run", task, cwd=tmp_path).returncode == 0
    row_file = latest(tmp_path) / "default" / SUITE / "r1/00/task.json"
    before = row_file.read_text()
    done = assay("evaluate", str(latest(tmp_path)), cwd=tmp_path)
    assert done.returncode == 2
    assert "3 row(s) have criteria that read the sandbox" in done.stderr
    assert "nothing was changed" in done.stderr
    assert row_file.read_text() == before


def test_evaluate_response_criteria_needs_no_sandbox(tmp_path: Path) -> None:
    text = (
        "task_id: echo\ndescription: d\ninitial_prompt: ${row.text}\n"
        "agent: {type: command, command: cat}\n"
        "dataset: {rows: [{id: a, text: 'yes'}, {id: b, text: 'no'}]}\n"
        "success_criteria:\n  - {type: response_match, expected: 'yes',"
        " suite_thresholds: {mean: 0.5}}\n"
    )
    (tmp_path / "echo.yaml").write_text(text)
    assert assay("run", "echo.yaml", cwd=tmp_path).returncode == 0
    done = assay("evaluate", str(latest(tmp_path)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    suite = json.loads((latest(tmp_path) / "default/echo/suite.json").read_text())
    assert suite["criterion_aggregates"][0]["metrics"]["mean"] == 0.5


def test_evaluate_refuses_a_row_whose_answer_file_is_gone(tmp_path: Path) -> None:
    """Found in review: a passing row whose ``response.txt`` was deleted was graded again as
    a wrong answer ("the final response is missing"); a file the run wrote that is gone is
    refused like a sandbox it did not keep, and nothing changes."""
    text = (
        "task_id: echo\ndescription: d\ninitial_prompt: ${row.text}\n"
        "agent: {type: command, command: cat}\n"
        "dataset: {rows: [{id: a, text: 'yes'}, {id: b, text: 'no'}]}\n"
        "success_criteria:\n  - {type: response_match, expected: 'yes'}\n"
    )
    (tmp_path / "echo.yaml").write_text(text)
    assay("run", "echo.yaml", cwd=tmp_path)
    row = latest(tmp_path) / "default" / "echo" / "a" / "00"
    (row / "response.txt").unlink()
    before = (row / "task.json").read_text()
    done = assay("evaluate", str(latest(tmp_path)), cwd=tmp_path)
    assert done.returncode == 2
    assert "1 row(s) answered in the run, but their response.txt is gone" in done.stderr
    assert "(first: default/echo/a/00/response.txt)" in done.stderr
    assert (row / "task.json").read_text() == before


def test_report_rebuilds_identical_suite(tmp_path: Path) -> None:
    task = copy_example(tmp_path)
    assert assay("run", task, cwd=tmp_path).returncode == 0
    run_dir = latest(tmp_path)
    suite_file = run_dir / "default" / SUITE / "suite.json"
    before = suite_file.read_text()
    suite_file.unlink()
    (run_dir / "default" / SUITE / "suite.md").unlink()
    done = assay("report", str(run_dir), "--junit-xml", str(tmp_path / "j.xml"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(suite_file.read_text()) == json.loads(before)
    assert (run_dir / "default" / SUITE / "suite.md").exists()
    assert (tmp_path / "j.xml").exists()


def test_evaluate_missing_dir_exits_2(tmp_path: Path) -> None:
    done = assay("evaluate", "runs/nothing", cwd=tmp_path)
    assert done.returncode == 2
    assert "run directory not found" in done.stderr


def test_evaluate_gives_criteria_the_row_environment_and_exact_response(tmp_path: Path) -> None:
    text = (
        "task_id: envcheck\ndescription: d\ninitial_prompt: hi\n"
        "agent: {type: command, command: \"printf 'a\\\\r\\\\nb'\"}\n"
        "dataset: {rows: [{id: r1}]}\n"
        "success_criteria:\n"
        "  - {type: run_command, command: 'test \"$ASSAY_ROW_ID\" = r1'}\n"
        '  - {type: response_match, expected: "a\\r\\nb", case_sensitive: true}\n'
    )
    (tmp_path / "env.yaml").write_text(text)
    assert assay("run", "env.yaml", "--keep-sandboxes", cwd=tmp_path).returncode == 0
    row_file = latest(tmp_path) / "default/envcheck/r1/00/task.json"
    assert json.loads(row_file.read_text())["final_status"] == "SUCCESS"
    done = assay("evaluate", str(latest(tmp_path)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(row_file.read_text())["final_status"] == "SUCCESS"
