"""The ``ray`` executor gives the run folder, reports and exit code a local run gives."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import assay
from tests.agents.coding import claude_available
from tests.agents.test_new_cli_agent import SCRIPT as TOY_SCRIPT
from tests.agents.test_new_cli_agent import TASK as TOY_TASK
from tests.agents.toy_agent import ToyCliRunner
from tests.cli.test_stop_when_decided import ROWS, TASK, experiment
from tests.executors.conftest import RayCluster
from tests.executors.helpers import NodeProgress, differences, run_contents
from tests.helpers import write

pytestmark = pytest.mark.ray
REPO = Path(__file__).resolve().parents[2]
TOY_ROWS = "[" + ", ".join(f"{{id: r{i}, word: w{i}}}" for i in range(6)) + "]"


def _same_on_both(cluster: RayCluster, tasks: list[str], **options: Any) -> int:
    """Run ``tasks`` locally and on the cluster; the run folders must match. The rows."""
    local = assay.run(tasks, run_dir="local", **options)
    progress = NodeProgress()
    remote = assay.run(tasks, run_dir="ray", executor="ray", ray_address=cluster.address,
                       progress=progress, **options)  # fmt: skip
    assert local.exit_code == remote.exit_code
    assert differences(run_contents(local.run_dir), run_contents(remote.run_dir)) == []
    rows = sum(s.rows_total for s in local.suites)
    assert progress.finished == rows
    assert len(progress.rows) == 3 and sum(progress.rows.values()) == rows  # every node
    return rows


def test_coder_evals_examples_on_a_cluster_each_node_with_its_bridge(
    ray_cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude_available()
    monkeypatch.chdir(tmp_path)
    shutil.copytree(REPO / "examples" / "coder_eval", tmp_path / "coder_eval")
    rows = _same_on_both(ray_cluster, ["coder_eval/tasks"], jobs=2,
                         model="mock/coder_eval/scripts/claude-writes.yaml")  # fmt: skip
    assert rows == 5


def test_command_examples_with_replicates_and_kept_sandboxes_on_a_cluster(
    ray_cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("sentiment", "dataset_example"):
        shutil.copytree(REPO / "examples" / name, tmp_path / name)
    rows = _same_on_both(ray_cluster, ["sentiment", "dataset_example"], jobs=2, repeats=2,
                         keep_sandboxes=True)  # fmt: skip
    assert rows == 10
    kept = sorted(p.relative_to(tmp_path / "ray" / "latest").as_posix()
                  for p in (tmp_path / "ray" / "latest").glob("*/*/*/*/sandbox/*"))  # fmt: skip
    assert "default/dataset-example/alpha/01/sandbox/out.txt" in kept


def test_bwrap_rows_on_a_cluster_read_the_task_folder_each_node_has(
    ray_cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each node contains its rows as a local run does (run as root: a user of the row's
    own, who must be able to read the node's copy of the task folder)."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(REPO / "examples" / "sentiment", tmp_path / "sentiment")
    rows = _same_on_both(ray_cluster, ["sentiment"], jobs=2, repeats=2,
                         overrides=["sandbox.driver=bwrap"])  # fmt: skip
    assert rows == 6
    logs = (tmp_path / "ray" / "latest").glob("default/*/*/*/task.log")
    assert all("sandbox: bwrap" in p.read_text(encoding="utf-8") for p in logs)
    result = assay.RunResult.open(tmp_path / "ray" / "latest")
    assert [s.rollup.rows_passed for s in result.suites] == [4]


def test_an_experiment_stops_when_decided_on_a_cluster(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    """Issue 33 on the ``ray`` executor: the nodes are sent rows in the stopping rule's order
    as they have room, and none once the test is decided; the report says it stopped."""
    task = write(tmp_path / "t.yaml", TASK)
    plan = write(tmp_path / "e.yaml", experiment("{alpha: 0.05}"))
    result = assay.run(task, experiment=plan, run_dir=tmp_path / "runs", executor="ray",
                       ray_address=ray_cluster.address, jobs=1)  # fmt: skip
    stop = json.loads((result.run_dir / "stopping.json").read_text())
    assert stop["stopped"] and stop["decision"] == "b_better"
    finished = len(list(result.run_dir.glob("*/toy/*/00/task.json")))
    assert finished == stop["items_finished"] <= stop["items_scheduled"] < ROWS
    assert stop["rows_decided"] <= stop["rows_scheduled"] < ROWS // 2
    suite = json.loads((result.run_dir / "keyword" / "toy" / "suite.json").read_text())
    assert suite["rows_missing"] == 0 and suite["rows_total"] < ROWS


def test_an_agent_class_given_in_python_runs_on_every_node(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    """``agents=[...]`` reaches the nodes with the plan: a CLI agent of the user's own
    (tests/agents/toy_agent.py) runs its rows on the cluster, contained, through each
    node's bridge, as on one machine."""
    write(tmp_path / "script.yaml", TOY_SCRIPT)
    task = write(
        tmp_path / "toy.yaml",
        TOY_TASK.replace("rows: [{id: a, word: alpha}, {id: b, word: beta}]", "rows: " + TOY_ROWS),
    )
    progress = NodeProgress()
    result = assay.run(task, run_dir=tmp_path / "runs", agents=[ToyCliRunner], executor="ray",
                       ray_address=ray_cluster.address, jobs=1, progress=progress)  # fmt: skip
    assert result.exit_code == 0, [r.error_message for r in result.rows()]
    assert result.summary.tasks_run == 6 and len(progress.rows) == 3
