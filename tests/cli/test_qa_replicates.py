"""QA suites whose replicates grade different numbers of samples: the suite's accuracy (and
its gate) is the pooled one, metrics.json's ``avg_metrics.accuracy`` ToMEval's mean of the
replicates' accuracies, and every report names which is which (hand-computed oracle)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_run import assay, latest, suite_json
from tests.helpers import write

# replicate 0: r0-r2 crash, r3 right (1 / 1); replicate 1: every row answers, r0 right (1 / 4)
AGENT = r"""
import os, re, sys
prompt = sys.stdin.read()
replicate, row = os.environ["ASSAY_REPLICATE"], os.environ["ASSAY_ROW_ID"]
letters = {m.group(2): m.group(1) for m in re.finditer(r"(?m)^([A-Z])\. (.*)$", prompt)}
if replicate == "0":
    if row != "r3":
        sys.exit(1)
    print(letters["yes"])
else:
    print(letters["yes"] if row == "r0" else letters["no"])
"""

TASK = """\
task_id: avg
description: replicates that grade different numbers of samples
agent: {type: command, command: 'python3 "$ASSAY_TASK_DIR/agent.py"'}
dataset: {paths: [d.qa.jsonl]}
repeats: 2
qa: {group_by: [meta.g]}
success_criteria: [{type: qa, suite_thresholds: {accuracy: 0.5}}]
"""


def make(folder: Path) -> Path:
    rows = [{"sample_id": f"r{i}", "story": "", "question": f"Q{i} pick yes",
             "answer": {"correct_answers": ["yes"], "wrong_answers": ["no"]}, "meta": {"g": "a"}}
            for i in range(4)]  # fmt: skip
    write(folder / "d.qa.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    write(folder / "agent.py", AGENT)
    return write(folder / "task.yaml", TASK)


def test_pooled_and_mean_accuracy_are_named_apart(tmp_path: Path) -> None:
    done = assay("run", str(make(tmp_path)), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # pooled 2 / 5 = 0.4 < 0.5
    suite_dir = latest(tmp_path) / "default" / "avg"
    suite = suite_json(latest(tmp_path), "avg")
    gate = suite["criterion_aggregates"][0]
    assert suite["dataset"]["id_field"] == "sample_id"  # the QA rows' ids, not "id"
    assert gate["metrics"]["accuracy"] == 2 / 5
    average = json.loads((suite_dir / "metrics.json").read_text())["avg_metrics"]
    assert average["accuracy"] == (1 / 1 + 1 / 4) / 2  # ToMEval's mean of the replicates
    assert average["accuracy_pooled"] == 2 / 5 == gate["metrics"]["accuracy"]
    markdown = (suite_dir / "suite.md").read_text()
    assert "| 0 | 1.000 | [0.207, 1.000] | 1 / 1 | 0 | 0 | 0 | 3 | 0 |" in markdown
    assert "| pooled | 0.400 | [" in markdown and "| 2 / 5 | 0 | 0 | 0 | 3 | 0 |" in markdown
    assert "| mean of replicates | 0.625 | — | — |" in markdown
    assert "they differ here (0.400 against 0.625)" in markdown
    assert "| `a` | 0.400 | 5 |" in markdown  # a group's pooled accuracy beside its count

    graded = assay("evaluate", str(suite_dir / "prediction.jsonl"), "-o", "m.json", cwd=tmp_path)
    assert graded.returncode == 1  # the crashed answers did not grade, as the run's exit
    assert "pooled accuracy 0.400 (every replicate's correct over graded)" in graded.stdout
    assert "8 records read, 5 graded;" in graded.stdout


def test_replicates_are_named_by_their_repeat_and_nothing_graded_exits_1(tmp_path: Path) -> None:
    assay("run", str(make(tmp_path)), cwd=tmp_path)
    text = (latest(tmp_path) / "default/avg/prediction.jsonl").read_text()
    records = [json.loads(line) for line in text.splitlines()]
    moved = [{**r, "repeat": 5} if r["repeat"] == 1 else r for r in records]
    write(tmp_path / "moved.jsonl", "".join(json.dumps(r) + "\n" for r in moved))
    done = assay("evaluate", "moved.jsonl", "-o", "m.json", cwd=tmp_path)
    assert "replicate 0: accuracy 1.000" in done.stdout
    assert "replicate 5: accuracy 0.250" in done.stdout and "replicate 1:" not in done.stdout
    crashed = [r for r in records if r["repeat"] == 0 and r["sample_id"] != "r3"]
    write(tmp_path / "crashed.jsonl", "".join(json.dumps(r) + "\n" for r in crashed))
    nothing = assay("evaluate", "crashed.jsonl", "-o", "c.json", cwd=tmp_path)
    assert nothing.returncode == 1
    assert "3 records read, 0 graded;" in nothing.stdout
    assert "exit 1: 3 record(s) did not grade" in nothing.stdout
