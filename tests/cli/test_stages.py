"""`assay execute` → `assay evaluate` gives what `assay run` gives; `assay report` rebuilds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.cli.test_run import EXAMPLES, assay, latest

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
    assert run["selections"][0]["selection"]["row_ids"] == ["r1", "r2", "r3"]


def test_evaluate_without_kept_sandbox_says_so(tmp_path: Path) -> None:
    task = copy_example(tmp_path)
    assay("run", task, cwd=tmp_path)
    done = assay("evaluate", str(latest(tmp_path)), cwd=tmp_path)
    assert done.returncode == 1
    row = json.loads((latest(tmp_path) / "default" / SUITE / "r1/00/task.json").read_text())
    assert "sandbox was not kept" in row["success_criteria_results"][0]["error"]


def test_report_rebuilds_identical_suite(tmp_path: Path) -> None:
    task = copy_example(tmp_path)
    assay("run", task, cwd=tmp_path)
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
