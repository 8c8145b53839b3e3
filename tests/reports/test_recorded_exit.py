"""A run's recorded verdict is the exit it had: when a QA metrics hook fails the process
exits 2, and ``run.json``/``run.md`` say 2 and the suite is not green (never exit 0 and
PASSED)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.results.run_file import read_summary
from tests.cli.test_qa_run import make_task, suite_folder
from tests.cli.test_run import assay, latest

BROKEN_HOOKS = {
    "invalid-dict": "def compute_metrics(records, results):\n    return {}\n",
    "raises": "def compute_metrics(records, results):\n    raise RuntimeError('boom')\n",
    "not-a-dict": "def compute_metrics(records, results):\n    return [1, 2]\n",
}


@pytest.mark.parametrize("hook", BROKEN_HOOKS.values(), ids=BROKEN_HOOKS.keys())
def test_a_failed_metrics_hook_is_recorded_as_the_exit_the_run_had(
    tmp_path: Path, hook: str
) -> None:
    make_task(tmp_path / "t", hook=hook)
    done = assay("run", "t/task.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    run_dir = latest(tmp_path)
    summary = read_summary(run_dir / "run.json")
    assert summary.exit_code == 2
    assert "**Exit code**: 2" in (run_dir / "run.md").read_text()
    suite = json.loads((suite_folder(tmp_path) / "suite.json").read_text())
    assert suite["passed"] is False
    assert "the QA metrics hook failed (metrics.json not written)" in suite["result_reasons"]
    assert summary.suites and all(not s.passed for s in summary.suites)
