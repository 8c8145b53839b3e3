"""Faults on a real local Ray cluster: a node killed mid-run, a driver killed and resumed on
another number of nodes, a cluster-wide limit on a model server."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import assay
from tests.agents.test_runaway import assert_capped, capped_run
from tests.executors.conftest import RayCluster
from tests.executors.helpers import NodeProgress
from tests.helpers import write
from tests.openai_server import Fault, scripted_server

pytestmark = pytest.mark.ray
ROWS = 24


def _slow_task(folder: Path, rows: int = ROWS, seconds: float = 0.4) -> Path:
    """A task whose rows each log that they ran (to ``executions.log``), wait, and pass."""
    log = folder / "executions.log"
    lines = "".join(f'{{"id": "r{i:02d}"}}\n' for i in range(rows))
    write(folder / "rows.jsonl", lines)
    return write(
        folder / "task.yaml",
        f"""\
task_id: slow
description: rows that take a while
dataset: {{paths: [rows.jsonl]}}
initial_prompt: "row ${{row.id}}"
agent:
  type: command
  command: 'echo "$ASSAY_ROW_ID" >> {log}; sleep {seconds}; echo ok'
success_criteria:
  - {{type: file_check, includes: [ok], description: the agent answered}}
""",
    )


def _finished(runs: Path) -> list[Path]:
    """The finished rows' ``task.json`` (in the run folder, not again through ``latest``)."""
    return sorted(runs.glob("2*/default/slow/*/00/task.json"))


def _when(condition: Callable[[], bool], then: Callable[[], None], timeout: float = 120) -> None:
    """Call ``then`` (in a thread) once ``condition`` holds."""

    def watch() -> None:
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.05)
        then()

    threading.Thread(target=watch, daemon=True).start()


def _driver_after(
    task: Path, cluster: RayCluster, *, jobs: int, rows: int
) -> subprocess.Popen[bytes]:
    """``assay run`` of ``task`` on the cluster in a process of its own, returned once
    ``rows`` rows are finished (or it ended)."""
    command = [sys.executable, "-m", "assay", "run", str(task), "--executor", "ray",
               "--ray-address", cluster.address, "-j", str(jobs), "--run-dir", "runs",
               "-q"]  # fmt: skip
    driver = subprocess.Popen(command, cwd=task.parent, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 120
    while len(_finished(task.parent / "runs")) < rows and driver.poll() is None:
        assert time.monotonic() < deadline, "the driver finished no row"
        time.sleep(0.05)
    return driver


def _executions(folder: Path) -> list[str]:
    return (folder / "executions.log").read_text().split()


def test_a_node_killed_mid_run_loses_only_the_rows_it_was_running(
    restore_nodes: RayCluster, tmp_path: Path
) -> None:
    """The victim (a node started with ``ASSAY_TEST_NODE=victim``) is killed while it runs a
    row for certain: its rows never end on their own, and the other nodes' rows wait (up to
    90 s) until one has started there, so the run cannot end before the victim takes a row."""
    cluster = restore_nodes
    task = _slow_task(tmp_path)
    started = tmp_path / "victim-started"
    wait = (f'if [ "${{ASSAY_TEST_NODE:-}}" = victim ]; then touch {started}; sleep 60; '
            f"else i=0; while [ ! -e {started} ] && [ $i -lt 900 ]; "
            "do sleep 0.1; i=$((i+1)); done; fi; sleep")  # fmt: skip
    text = task.read_text().replace('"$ASSAY_ROW_ID"', '"$ASSAY_ROW_ID/${ASSAY_TEST_NODE:-}"')
    task.write_text(text.replace("; sleep", f"; {wait}", 1))
    victim = cluster.add_worker(ASSAY_TEST_NODE="victim")
    _when(started.exists, lambda: cluster.remove_worker(victim))
    progress, warnings = NodeProgress(), []
    result = assay.run(task, run_dir=tmp_path / "runs", executor="ray", jobs=2,
                       ray_address=cluster.address, progress=progress,
                       on_warning=warnings.append)  # fmt: skip
    assert result.exit_code == 0
    rows = [r.row_id for r in result.rows()]
    assert sorted(rows) == [f"r{i:02d}" for i in range(ROWS)]  # none lost, none twice
    assert result.summary.tasks_run == ROWS
    ran = [line.split("/")[0] for line in _executions(tmp_path)]
    assert sorted(set(ran)) == sorted(rows) and len(ran) > ROWS  # the lost rows ran again
    assert any("was lost" in w and "run again on other nodes" in w for w in warnings)
    assert sum(1 for label in progress.rows if label.endswith("(lost)")) == 1
    assert sum(progress.rows.values()) == ROWS


def test_a_node_that_joins_mid_run_gets_rows(restore_nodes: RayCluster, tmp_path: Path) -> None:
    """A node started while the run goes (here with ``ASSAY_TEST_NODE=joined`` in its
    environment, which its rows log) gets a runner and rows. However slowly the node starts
    (a busy machine), the run cannot end first: once the node is asked for, the other nodes'
    rows wait (up to 90 s) until a row has run on it."""
    cluster = restore_nodes
    rows = 48
    task = _slow_task(tmp_path, rows=rows)
    gate, joined = tmp_path / "gate", tmp_path / "joined"
    wait = (f'if [ "${{ASSAY_TEST_NODE:-}}" = joined ]; then touch {joined}; '
            f"elif [ -e {gate} ]; then i=0; while [ ! -e {joined} ] && [ $i -lt 900 ]; "
            "do sleep 0.1; i=$((i+1)); done; fi; sleep")  # fmt: skip
    text = task.read_text().replace('"$ASSAY_ROW_ID"', '"$ASSAY_ROW_ID/${ASSAY_TEST_NODE:-}"')
    task.write_text(text.replace("; sleep", f"; {wait}", 1))
    driver = _driver_after(task, cluster, jobs=1, rows=3)
    gate.touch()
    cluster.add_worker(ASSAY_TEST_NODE="joined")  # Ray starts nodes from the main thread
    _, stderr = driver.communicate(timeout=180)
    assert driver.returncode == 0, stderr
    ran = _executions(tmp_path)
    assert sorted({line.split("/")[0] for line in ran}) == [f"r{i:02d}" for i in range(rows)]
    assert len(_finished(tmp_path / "runs")) == rows
    assert any(line.endswith("/joined") for line in ran), ran


def test_a_killed_driver_resumes_on_another_number_of_nodes(
    restore_nodes: RayCluster, tmp_path: Path
) -> None:
    cluster = restore_nodes
    task = _slow_task(tmp_path, seconds=0.3)
    driver = _driver_after(task, cluster, jobs=2, rows=6)
    driver.send_signal(signal.SIGKILL)  # no chance to clean up
    driver.wait()
    before = {p: p.read_bytes() for p in _finished(tmp_path / "runs")}
    assert 6 <= len(before) < ROWS
    cluster.add_worker()  # resumed on four nodes instead of three
    progress = NodeProgress()
    result = assay.resume(tmp_path / "runs" / "latest", executor="ray", jobs=3,
                          ray_address=cluster.address, progress=progress)  # fmt: skip
    assert result.exit_code == 0 and result.summary.sessions == 2
    assert sorted(r.row_id for r in result.rows()) == [f"r{i:02d}" for i in range(ROWS)]
    assert all(path.read_bytes() == data for path, data in before.items())  # kept as they were
    assert len(progress.rows) == 4 and sum(progress.rows.values()) == ROWS - len(before)


def test_a_cluster_wide_limit_holds_at_the_model_server(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    with scripted_server(lambda body: Fault(delay=0.25, text="positive")) as server:
        write(tmp_path / "task.yaml", f"""\
task_id: limited
description: many rows, one server
dataset: {{rows: [{", ".join(f"{{id: r{i}}}" for i in range(ROWS))}]}}
initial_prompt: "row ${{row.id}}"
agent: {{type: llm, model: openai/fixed, base_url: "{server.base_url}"}}
success_criteria: [{{type: file_check, includes: [positive], description: answered}}]
""")  # fmt: skip
        result = assay.run(tmp_path / "task.yaml", run_dir=tmp_path / "runs", executor="ray",
                           ray_address=ray_cluster.address, jobs=4, max_connections=3)  # fmt: skip
    assert result.exit_code == 0 and len(server.requests) == ROWS
    assert server.peak_in_flight == 3  # 3 nodes × -j 4 could send 12 at once


def test_a_nodes_retried_calls_reach_the_drivers_progress(
    ray_cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A field report: with ``--executor ray`` no retry line was shown and none counted (the
    rows' ``task.json`` recorded them); each is now told with the node's next row, its error
    redacted."""
    monkeypatch.setenv("FLAKY_SERVICE_TOKEN", "flaky-token-value-77")
    seen: set[str] = set()
    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> Fault:
        prompt = str(body["messages"][-1]["content"])
        with lock:
            first = prompt not in seen
            seen.add(prompt)
        if first:  # each row's first call fails once, quoting a secret
            return Fault(503, body='{"error": {"message": "busy, key flaky-token-value-77"}}')
        return Fault(text="positive")

    class Retries(NodeProgress):
        def __init__(self) -> None:
            super().__init__()
            self.errors: list[str] = []

        def retry(self, model: str, attempt: Any) -> None:
            self.errors.append(attempt.error)

    progress = Retries()
    with scripted_server(reply) as server:
        write(tmp_path / "task.yaml", f"""\
task_id: flaky
description: every row retried once
dataset: {{rows: [{", ".join(f"{{id: r{i}}}" for i in range(6))}]}}
initial_prompt: "row ${{row.id}}"
agent: {{type: llm, model: openai/fixed, base_url: "{server.base_url}",
         api_key_env: FLAKY_SERVICE_TOKEN}}
success_criteria: [{{type: file_check, includes: [positive], description: answered}}]
""")  # fmt: skip
        result = assay.run(tmp_path / "task.yaml", run_dir=tmp_path / "runs", executor="ray",
                           ray_address=ray_cluster.address, progress=progress)  # fmt: skip
    assert result.exit_code == 0 and len(progress.errors) == 6
    assert all("[redacted:FLAKY_SERVICE_TOKEN]" in e and "flaky-token" not in e
               for e in progress.errors)  # fmt: skip


def test_the_local_executor_holds_the_same_limit(tmp_path: Path) -> None:
    with scripted_server(lambda body: Fault(delay=0.1, text="positive")) as server:
        write(tmp_path / "task.yaml", f"""\
task_id: limited
description: many rows, one server
dataset: {{rows: [{", ".join(f"{{id: r{i}}}" for i in range(12))}]}}
initial_prompt: "row ${{row.id}}"
agent: {{type: llm, model: openai/fixed, base_url: "{server.base_url}"}}
success_criteria: [{{type: file_check, includes: [positive], description: answered}}]
""")  # fmt: skip
        result = assay.run(tmp_path / "task.yaml", run_dir=tmp_path / "runs", jobs=8,
                           max_connections=2, max_rate=20)  # fmt: skip
    assert result.exit_code == 0 and server.peak_in_flight == 2
    span = server.times[-1] - server.times[0]
    assert span >= 11 / 20 * 0.9  # 12 calls started at most 20 a second


def test_secrets_on_a_cluster_are_withheld_by_each_node_and_redacted_by_the_driver(
    restore_nodes: RayCluster, tmp_path: Path
) -> None:
    """A node's own secret variable never reaches its rows; a secret the task gives its agent
    (``agent.env``) is redacted from the files the driver writes, whichever node ran the row."""
    node_secret, task_secret = "node-only-value-0123456789", "task-given-value-9876543210"
    restore_nodes.add_worker(NODE_SERVICE_TOKEN=node_secret)
    lines = "".join(f'{{"id": "r{i:02d}"}}\n' for i in range(12))
    write(tmp_path / "rows.jsonl", lines)
    task = write(
        tmp_path / "task.yaml",
        f"""\
task_id: secrets
description: rows that print what they were given
dataset: {{paths: [rows.jsonl]}}
initial_prompt: "row ${{row.id}}"
agent:
  type: command
  command: 'echo "$AGENT_TOKEN ${{NODE_SERVICE_TOKEN:-withheld}}"'
  env: {{AGENT_TOKEN: {task_secret}}}
success_criteria:
  - {{type: file_check, includes: [withheld], description: the node secret was withheld}}
""",
    )
    progress = NodeProgress()
    result = assay.run(task, run_dir=tmp_path / "runs", executor="ray", jobs=1,
                       ray_address=restore_nodes.address, progress=progress)  # fmt: skip
    assert len(progress.rows) == 4 and all(n > 0 for n in progress.rows.values())
    assert result.exit_code == 0 and result.summary.tasks_run == 12
    assert result.secret_findings == []
    for path in (tmp_path / "runs" / "latest").rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            assert node_secret not in text and task_secret not in text, path
    responses = list((tmp_path / "runs" / "latest").glob("default/secrets/*/00/response.txt"))
    assert len(responses) == 12
    assert all(p.read_text().strip() == "[redacted:AGENT_TOKEN] withheld" for p in responses)


def test_a_nodes_rows_write_their_whole_streams_into_the_run_folder(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    """Issue 28 item 8 on a cluster: the logs of a stream past ``max_output_mb`` (the agent's,
    a pre_run's, a criterion's, a post_run's) are made on the node and written into the
    row's folder by the driver, as on one machine."""
    record, folder = capped_run(tmp_path, "tempdir", executor="ray", jobs=1,
                                ray_address=ray_cluster.address)  # fmt: skip
    assert_capped(record, folder)


def test_a_nodes_logs_are_redacted_by_the_driver(ray_cluster: RayCluster, tmp_path: Path) -> None:
    secret = "task-given-value-5432109876"
    flood = "head -c 300000 /dev/zero | tr '\\\\0' y"
    task = write(tmp_path / "task.yaml", f"""\
task_id: loud
description: an agent that prints a secret around a flood
initial_prompt: go
sandbox: {{limits: {{max_output_mb: 0.125}}}}
agent:
  type: command
  command: "echo $AGENT_TOKEN; {flood}; echo; echo $AGENT_TOKEN"
  env: {{AGENT_TOKEN: {secret}}}
success_criteria:
  - {{type: run_command, command: "true"}}
""")  # fmt: skip
    result = assay.run(task, run_dir=tmp_path / "runs", executor="ray", jobs=1,
                       ray_address=ray_cluster.address)  # fmt: skip
    assert result.exit_code == 0
    log = result.row_file("loud").parent / "agent.stdout.log"
    text = log.read_text()
    assert secret not in text and text.count("[redacted:AGENT_TOKEN]") == 2
    assert text.count("y") == 300000
