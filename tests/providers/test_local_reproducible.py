"""A local model's answers at temperature 0 are the same in every run with ``-j 1`` (each run
starting its own server): no batch of concurrent requests and no prompt cached by another
row's request changes an answer then."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.test_run import EXAMPLES, assay, latest


def answers(run_dir: Path) -> dict[str, str]:
    """Each row's criterion results (the label it predicted, its score)."""
    found = {}
    for path in sorted(run_dir.rglob("task.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        found[data["task_id"]] = json.dumps(data["success_criteria_results"], sort_keys=True)
    return found


@pytest.mark.local_model(own_server=True)
def test_the_same_run_twice_with_one_request_at_a_time_gives_the_same_answers(
    tmp_path: Path,
) -> None:
    shutil.copytree(EXAMPLES / "first_task", tmp_path / "first_task")
    runs = []
    for _ in range(2):
        done = assay("run", "first_task/task.yaml", "-j", "1", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        runs.append(answers(latest(tmp_path)))
    assert len(runs[0]) == 12 and runs[0] == runs[1]
