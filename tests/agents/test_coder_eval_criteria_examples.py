"""examples/coder_eval/criteria/ as a user runs it: the real Claude Code CLI, driven offline
by the folder's scripted model through the bridge, writes code that pylint, the import check
and the reference comparison grade and a second Claude Code judges (agent_judge), and calls
a recorded `gh` that cli_called counts, and writes a UiPath coded agent that UiPath's own
`uipath eval` grades (uipath_eval), and answers a question System One's judge grades, its model
scripted (system_one_judge)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.agents.coding import claude_available, run_assay

pytestmark = pytest.mark.coding_agent

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "coder_eval" / "criteria"


def test_the_criteria_examples_pass_with_the_scripted_model(tmp_path: Path) -> None:
    claude_available()
    shutil.copytree(EXAMPLES, tmp_path / "criteria")
    # pylint's python3 first; UiPath's CLI is found in the clone without PATH
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    done = run_assay("run", "criteria", "--model", "mock/criteria/script.yaml", cwd=tmp_path,
                     env={"PATH": path})  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {}
    for task in (tmp_path / "runs" / "latest").rglob("task.json"):
        data = json.loads(task.read_text())
        rows[data["task_id"]] = [(c["criterion_type"], c["score"], c["details"])
                                 for c in data["success_criteria_results"]]  # fmt: skip
    quality, pull = rows["code-quality"], rows["open-pull-request"]
    assert rows["capital-answer"] == [
        ("system_one_judge", 1.0, "verdict 1: The response names Paris, the capital of France.")
    ]
    assert rows["uipath-agent"] == [
        (
            "uipath_eval",
            1.0,
            "Metrics: ContainsEvaluator 1.000, "
            "ExactMatchEvaluator 1.000, * 1.000. All thresholds met",
        )
    ]
    assert [(kind, score) for kind, score, _ in quality] == [
        ("pylint_score", 1.0), ("import_check", 1.0), ("reference_comparison", 1.0),
        ("agent_judge", 0.9)]  # fmt: skip
    assert quality[1][2] == "Checked: 1, resolved: 1/1"
    assert quality[3][2].startswith("verdict 0.9: mean() sums with math.fsum")
    assert [(kind, score) for kind, score, _ in pull] == [("cli_called", 1.0)] * 2
    assert "gh pr create --title 'Fix bug 12' --draft" in pull[0][2]
