"""The ray executor on this machine: a local Ray cluster of simulated nodes (issue 19).

A cluster made here with ``ray.cluster_utils.Cluster`` (every node on 127.0.0.1, its own
``RAY_TMPDIR`` and token) stays up for the whole benchmark, as a real cluster would; each
figure is a whole ``assay run`` process (connecting, starting a runner per node, the rows,
the reports), interleaved local / ray, medians of the repeats:

1. **coding agent**: the worked example of bench/coding_agent.py (the real Claude Code CLI
   through the model bridge, a scripted Anthropic API with a fixed latency), the local
   executor at ``-j 4`` against 2 nodes at ``-j 2`` each (the same rows in flight).
   Target: the cluster's rows/s at least 80% of the local executor's.
2. **overhead task** (bench/coder_eval/overhead.yaml, ``agent: none``): local ``-j 8``
   against 2 nodes at ``-j 4``: the engine's cost per row where rows cost nothing.
3. **rows/s per node**: rows that wait 0.5 s (``sleep``), ``-j 2`` per node, on 1, 2 and 3
   nodes: what each added node brings while the driver keeps up.

Usage: python bench/ray_executor.py [REPEATS]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from coding_agent import KEY, free_port, prepare, start_upstream
from common import ASSAY, BENCH, WORK, save, timed, write_rows

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # loopback stays loopback (see tests)


class LocalCluster:
    """A head node and worker nodes on 127.0.0.1 (the head runs rows too)."""

    def __init__(self, nodes: int) -> None:
        self.folder = tempfile.mkdtemp(prefix="assay-bench-ray-", dir="/tmp")
        token = os.path.join(self.folder, "token")
        Path(token).write_text("assay-bench-token-" + "0" * 32)
        os.environ.update({"RAY_TMPDIR": self.folder, "RAY_AUTH_MODE": "token",
                           "RAY_AUTH_TOKEN_PATH": token})  # fmt: skip
        from ray.cluster_utils import Cluster

        self.cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "include_dashboard": False, "node_ip_address": "127.0.0.1"})  # fmt: skip
        self.workers: list[Any] = []
        self.resize(nodes)

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def resize(self, nodes: int) -> None:
        """Have ``nodes`` nodes (the head included)."""
        while len(self.workers) + 1 < nodes:
            self.workers.append(self.cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1"))
        while len(self.workers) + 1 > nodes:
            self.cluster.remove_node(self.workers.pop())
        self.cluster.wait_for_nodes(timeout=60)

    def close(self) -> None:
        self.cluster.shutdown()
        shutil.rmtree(self.folder, ignore_errors=True)


def rate(rows: int, seconds: list[float]) -> dict[str, object]:
    median = statistics.median(seconds)
    return {"seconds": median, "rows_per_s": rows / median, "all_seconds": seconds}


def compare(
    folder: Path, task: str, rows: int, repeats: int, local_jobs: int, node_jobs: int,
    cluster: LocalCluster, env: dict[str, str] | None = None,
) -> dict[str, object]:  # fmt: skip
    """Local ``-j local_jobs`` against the cluster at ``-j node_jobs`` per node."""
    seconds: dict[str, list[float]] = {"local": [], "ray": []}
    for _ in range(repeats):
        run = timed([*ASSAY, "run", task, "-j", str(local_jobs), "-q", "--run-dir", "runs"],
                    cwd=folder, env=env)  # fmt: skip
        seconds["local"].append(run.seconds)
        run = timed([*ASSAY, "run", task, "-j", str(node_jobs), "-q", "--run-dir", "runs",
                     "--executor", "ray", "--ray-address", cluster.address],
                    cwd=folder, env=env)  # fmt: skip
        seconds["ray"].append(run.seconds)
        shutil.rmtree(folder / "runs", ignore_errors=True)
    out = {name: rate(rows, values) for name, values in seconds.items()}
    local, ray = (statistics.median(seconds[n]) for n in ("local", "ray"))
    return {**out, "ray_share_of_local": local / ray}


def coding_agent(cluster: LocalCluster, repeats: int, rows: int = 50) -> dict[str, object]:
    folder = WORK / "ray-coding-agent"
    shutil.rmtree(folder, ignore_errors=True)
    port = free_port()
    upstream = f"http://127.0.0.1:{port}"
    prepare(folder, rows, upstream)
    server = start_upstream(port, 0.2)
    try:
        return compare(folder, "tasks/sentiment_classification.yaml", rows, repeats, 4, 2,
                       cluster, env={"BENCH_ANTHROPIC_KEY": KEY})  # fmt: skip
    finally:
        server.terminate()


def overhead(cluster: LocalCluster, repeats: int, rows: int = 500) -> dict[str, object]:
    folder = WORK / "ray-overhead"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    write_rows(folder / "rows.jsonl", rows)
    shutil.copy(BENCH / "coder_eval" / "overhead.yaml", folder / "task.yaml")
    return compare(folder, "task.yaml", rows, repeats, 8, 4, cluster)


def per_node(cluster: LocalCluster, repeats: int, rows: int = 60) -> dict[str, object]:
    folder = WORK / "ray-per-node"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    lines = "".join(json.dumps({"id": f"r{i:03d}"}) + "\n" for i in range(rows))
    (folder / "rows.jsonl").write_text(lines)
    (folder / "task.yaml").write_text(
        "task_id: wait\ndescription: rows that wait half a second\n"
        "dataset: {paths: [rows.jsonl]}\ninitial_prompt: go\n"
        "agent: {type: command, command: 'sleep 0.5; echo ok'}\n"
        "success_criteria: [{type: file_check, includes: [ok], description: answered}]\n"
    )
    out: dict[str, object] = {}
    for nodes in (1, 2, 3):
        cluster.resize(nodes)
        seconds = []
        for _ in range(repeats):
            command = [*ASSAY, "run", "task.yaml", "-j", "2", "-q", "--run-dir", "runs",
                       "--executor", "ray", "--ray-address", cluster.address]  # fmt: skip
            run = timed(command, cwd=folder)
            seconds.append(run.seconds)
            shutil.rmtree(folder / "runs", ignore_errors=True)
        out[str(nodes)] = rate(rows, seconds)
    cluster.resize(2)
    return out


def main(repeats: int = 3) -> dict[str, object]:
    cluster = LocalCluster(2)
    try:
        figures = {
            "coding_agent": coding_agent(cluster, repeats),
            "overhead": overhead(cluster, repeats),
            "per_node": per_node(cluster, repeats),
        }
    finally:
        cluster.close()
    save("ray_executor", figures)
    return figures


if __name__ == "__main__":
    print(json.dumps(main(*(int(a) for a in sys.argv[1:2])), indent=2))
