"""Report renderings against golden files, and the seed task against Coder Eval's own numbers.

The golden files are assay's own output, recorded once and read by a person (tests/golden/
README.md): they catch a rendering that changes, not a number that was wrong from the start.
So each golden comparison is paired with numbers worked out by hand from the three rows
(:func:`hand_checked_lines`), which the rendered file must contain.
"""

from __future__ import annotations

import json
import math
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


# The three rows of both tasks as (expected, observed): r3 is deliberately mislabelled.
ROWS = [("positive", "positive"), ("negative", "negative"), ("negative", "positive")]


def hand_checked_lines() -> list[str]:
    """suite.md lines for ROWS, computed by hand: scores 1, 1, 0; positive is predicted twice
    (once rightly), negative once (rightly); each label's F1 is 2/3."""
    mean = 2 / 3
    std = math.sqrt(((1 - mean) ** 2 * 2 + (0 - mean) ** 2) / 3)  # population: sqrt(2/9)
    f1_negative = 2 * 1.0 * 0.5 / (1.0 + 0.5)  # precision 1/1, recall 1/2
    f1_positive = 2 * 0.5 * 1.0 / (0.5 + 1.0)  # precision 1/2, recall 1/1
    assert [e == o for e, o in ROWS].count(True) == 2
    return [
        "**Pass rate**: 66.7% (2/3)",
        f"| `mean` | {mean:.3f} |",
        f"| `std` | {std:.3f} |",
        f"| `accuracy` | {2 / 3:.3f} |",
        f"| `macro_f1` | {(f1_negative + f1_positive) / 2:.3f} |",
        "| `precision.positive` | 0.500 |",
        "| `recall.negative` | 0.500 |",
        f"| `negative` | 1.000 | 0.500 | {f1_negative:.3f} | 2 |",
        f"| `positive` | 0.500 | 1.000 | {f1_positive:.3f} | 1 |",
        "| `negative` | 1 | 1 |",  # confusion: negative → negative 1, → positive 1
        "| `positive` | 0 | 1 |",
    ]


def check_golden(name: str, text: str) -> None:
    """``text`` is the golden file and holds every hand-checked line. With UPDATE_GOLDEN set
    the file is rewritten and the test skipped: a refresh checks nothing until it is read."""
    for line in hand_checked_lines():
        assert line in text.splitlines(), line
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
        pytest.skip(f"rewrote {path}; read the diff, then run again without UPDATE_GOLDEN")
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
    done = assay("run", "sentiment/sentiment_classification.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # every gate passes
    text = (latest(tmp_path) / "default/sentiment-classification/suite.md").read_text()
    check_golden("sentiment_example.suite.md", text)
