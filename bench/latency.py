"""Model-bound concurrency: 2,000 rows at -j 32 against a loopback server with 100 ms latency.

bench/latency_server.py answers every chat request after exactly 100 ms (almost no CPU), so
the ceiling is concurrency / latency = 320 requests/s. Three clients, side by side,
interleaved, each timed as a whole process (start-up to exit):
- the bare asyncio + httpx client at concurrency 32 (bench/bare_chat_client.py), the ceiling
  (``bare_requests_only``: its own timer around the requests, without interpreter start-up);
- assay: ``openai/fixed`` with ``base_url`` of that server, ``-j 32``, whole process (plan,
  one sandbox-free row-task per row, task.json per row, reports; ``assay_rows_only``: the
  run's own ``total_duration_seconds``, from the first row-task to the last);
- Inspect AI: ``openai-api/lat/fixed`` pointed at the server, ``--max-connections 32``, when
  installed (bench/setup_anchors.sh).
Target (issue 6): assay at least 90% of the bare client's requests/s.
Usage: python bench/latency.py [ROWS] [REPEATS]
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from common import ASSAY, BENCH, INSPECT_VENV, WORK, rates, save, timed

CONCURRENCY = 32
LATENCY = 0.1

TASK = """\
task_id: latency
description: one short chat request per row against a fixed-latency server
agent:
  type: llm
  model: openai/fixed
  base_url: {base_url}
  api_key_env: LAT_API_KEY
  temperature: 0
  max_tokens: 3
dataset:
  paths: [rows.jsonl]
initial_prompt: "Review ${{row.id}}"
success_criteria:
  - type: classification_match
    expected_label: positive
    allowed_labels: [positive, negative]
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def main(rows: int = 2000, repeats: int = 3) -> dict[str, object]:
    folder = WORK / "latency"
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    (folder / "rows.jsonl").write_text("".join(json.dumps({"id": f"r{i:05d}"}) + "\n"
                                               for i in range(rows)))  # fmt: skip
    (folder / "task.yaml").write_text(TASK.format(base_url=base_url))
    (folder / "inspect_latency.py").write_text(INSPECT_TASK.format(rows=rows))
    server = subprocess.Popen([sys.executable, str(BENCH / "latency_server.py"), str(port),
                               str(LATENCY)], stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert server.stdout is not None and server.stdout.readline().startswith("ready")
    env = {"LAT_API_KEY": "none", "LAT_BASE_URL": base_url}
    inspect = INSPECT_VENV / "bin" / "inspect"
    seconds: dict[str, list[float]] = {
        "bare": [], "bare_requests_only": [], "assay": [], "assay_rows_only": [], "inspect": []
    }  # fmt: skip
    try:
        for _ in range(repeats):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, str(BENCH / "bare_chat_client.py"),
                                   str(CONCURRENCY), base_url, str(rows)],
                                  capture_output=True, text=True, check=True)  # fmt: skip
            seconds["bare"].append(time.perf_counter() - started)
            seconds["bare_requests_only"].append(float(json.loads(done.stdout)["seconds"]))
            command = [*ASSAY, "run", "task.yaml", "-j", str(CONCURRENCY), "-q",
                       "--run-dir", "runs"]  # fmt: skip
            seconds["assay"].append(timed(command, cwd=folder, env=env).seconds)
            summary = json.loads((folder / "runs" / "latest" / "run.json").read_text())
            seconds["assay_rows_only"].append(summary["total_duration_seconds"])
            if inspect.exists():
                logs = str(folder / "inspect-logs")
                command = [str(inspect), "eval", "inspect_latency.py", "--model",
                           "openai-api/lat/fixed", "--max-connections", str(CONCURRENCY),
                           "--display", "none", "--log-dir", logs]  # fmt: skip
                seconds["inspect"].append(timed(command, cwd=folder, env=env).seconds)
    finally:
        server.terminate()
        server.wait()
    result: dict[str, object] = {"rows": rows, "concurrency": CONCURRENCY, "latency_s": LATENCY,
                                 "repeats": repeats,
                                 "theoretical_req_per_s": CONCURRENCY / LATENCY}  # fmt: skip
    result.update(rates(seconds, rows))
    save("latency", result)
    return result


INSPECT_TASK = '''\
"""The latency benchmark as an Inspect AI task: the same {rows} one-line chat prompts."""

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def latency() -> Task:
    samples = [Sample(id=str(i), input=f"Review r{{i:05d}}", target="positive")
               for i in range({rows})]
    return Task(dataset=MemoryDataset(samples, name="latency"), solver=generate(),
                scorer=includes())
'''


if __name__ == "__main__":
    print(json.dumps(main(*(int(a) for a in sys.argv[1:])), indent=2))
