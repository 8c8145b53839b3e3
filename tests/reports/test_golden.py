"""Report renderings against golden files, and the seed task against Coder Eval's own numbers."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.cli.test_run import EXAMPLES, assay, latest

GOLDEN = Path(__file__).resolve().parents[1] / "golden"

# What Coder Eval 0.12.16 wrote for the same task (reference/coder_eval_samples), kept here
# as literals so the test does not read outside the repository.
CODER_EVAL_RUN_COMMAND_METRICS = {
    "count": 3.0, "mean": 1.0, "median": 1.0, "std": 0.0, "min": 1.0, "max": 1.0,
    "completion_rate": 1.0,
}  # fmt: skip
CODER_EVAL_CLASSIFICATION_METRICS = {
    "count": 3.0, "mean": 0.6666666666666666, "median": 1.0, "std": 0.4714045207910317,
    "min": 0.0, "max": 1.0, "precision.negative": 1.0, "recall.negative": 0.5,
    "f1.negative": 0.6666666666666666, "precision.positive": 0.5, "recall.positive": 1.0,
    "f1.positive": 0.6666666666666666, "accuracy": 0.6666666666666666,
    "macro_f1": 0.6666666666666666, "weighted_f1": 0.6666666666666666,
    "micro_f1": 0.6666666666666666, "completion_rate": 1.0,
}  # fmt: skip


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_seed_task_matches_coder_eval_numbers_and_golden(tmp_path: Path) -> None:
    shutil.copytree(GOLDEN / "seed_sentiment", tmp_path / "tasks")
    done = assay("run", "tasks/task.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    suite_dir = latest(tmp_path) / "default" / "sentiment_classification"
    suite = json.loads((suite_dir / "suite.json").read_text())
    run_command, classification = suite["criterion_aggregates"]
    assert run_command["metrics"] == CODER_EVAL_RUN_COMMAND_METRICS
    assert classification["metrics"] == pytest.approx(CODER_EVAL_CLASSIFICATION_METRICS)
    assert [c["actual_value"] for c in classification["threshold_checks"]] == pytest.approx(
        [2 / 3, 2 / 3, 1.0]
    )
    assert (suite["rows_passed"], suite["rows_failed"], suite["passed"]) == (2, 1, True)
    assert suite["failed_samples"][0]["failure_reasons"] == [
        "observed='positive', expected='negative'"
    ]
    check_golden("seed_sentiment.suite.md", (suite_dir / "suite.md").read_text())


def test_sentiment_example_suite_md_golden(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "sentiment", tmp_path / "sentiment")
    assay("run", "sentiment/sentiment_classification.yaml", cwd=tmp_path)
    text = (latest(tmp_path) / "default/sentiment-classification/suite.md").read_text()
    check_golden("sentiment_example.suite.md", text)
