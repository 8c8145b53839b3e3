"""Coding agents on the docker driver: the real Claude Code CLI in a container of its own per
row (the model bridge through its unix socket), against the same rows in bwrap.

Each row's CLI gets a scripted model (``mock/``: a ``Write`` tool call, then ``done``: two
model calls and one file, no network), so the figures are the sandboxes' cost. Interleaved,
whole processes: ``assay run -j 4`` of ROWS rows in ``bwrap`` and in ``docker`` (the tests'
offline image, tests/docker_images.py). Figures: rows/s of each, docker's as a ratio to
bwrap's, and the seconds docker adds per row (its agent container's start, ``exec`` and
removal, spread over the jobs); then one agent container's life alone (``docker run -d``,
``exec true``, ``rm -f``) against ``true`` in a bwrap sandbox, one at a time.
Usage: python bench/docker_agents.py [ROWS] [REPEATS]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import ASSAY, REPO, WORK, median, save, timed

sys.path.insert(0, str(REPO))

from tests.docker_images import make_test_image

JOBS = 4
SCRIPT = """\
replies:
  - match: "row"
    steps:
      - tool: Write
        input: {file_path: "${sandbox}/answer.txt", content: "${row.id}"}
      - reply: "done"
"""
TASK = """\
task_id: agents
description: a coding agent's row in its sandbox
agent: {{type: claude-code, model: mock/script.yaml, permission_mode: bypassPermissions}}
sandbox: {sandbox}
dataset: {{rows: [{rows}]}}
initial_prompt: "row ${{row.id}}"
success_criteria:
  - {{type: file_exists, path: answer.txt, description: written by the CLI}}
"""


def setup(rows: int, image: str) -> Path:
    """The task files of both drivers, in bench/work/docker_agents."""
    folder = WORK / "docker_agents"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    (folder / "script.yaml").write_text(SCRIPT)
    listed = ", ".join(f"{{id: r{i}}}" for i in range(rows))
    docker = f"{{driver: docker, docker: {{image: '{image}'}}}}"
    for name, sandbox in (("bwrap", "{driver: bwrap}"), ("docker", docker)):
        (folder / f"{name}.yaml").write_text(TASK.format(sandbox=sandbox, rows=listed))
    return folder


def container_life(engine: str, image: str, repeats: int) -> dict[str, float]:
    """Median seconds of one agent container's life (start, ``exec true``, remove) and of
    ``true`` in a bwrap sandbox, one at a time."""
    lives, jails = [], []
    for index in range(repeats):
        name = f"assay-bench-{os.getpid()}-{index}"
        started = time.perf_counter()
        subprocess.run([engine, "run", "-d", "--name", name, "--network", "none", "--read-only",
                        "--init", "--entrypoint", "sleep", image, "infinity"],
                       capture_output=True, check=True)  # fmt: skip
        subprocess.run([engine, "exec", name, "true"], capture_output=True, check=True)
        subprocess.run([engine, "rm", "-f", name], capture_output=True, check=True)
        lives.append(time.perf_counter() - started)
        started = time.perf_counter()
        subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "true"], check=True)
        jails.append(time.perf_counter() - started)
    return {"container_life_s": median(lives), "bwrap_true_s": median(jails)}


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    found = make_test_image("docker")
    assert not isinstance(found, str), found
    engine, image = found
    folder = setup(rows, image)
    path = f"{REPO / '.tools' / 'npm' / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}"
    seconds: dict[str, list[float]] = {"bwrap": [], "docker": []}
    for _ in range(repeats):
        for name in seconds:
            shutil.rmtree(folder / "runs", ignore_errors=True)
            run = timed([*ASSAY, "run", f"{name}.yaml", "-j", str(JOBS)], cwd=folder,
                        env={"PATH": path})  # fmt: skip
            assert run.returncode == 0, f"{name}: a row did not pass"
            seconds[name].append(run.seconds)
    result: dict[str, object] = {"rows": rows, "jobs": JOBS, "repeats": repeats}
    for name, values in seconds.items():
        result[f"{name}_s"] = median(values)
        result[f"{name}_rows_per_s"] = rows / median(values)
    result["docker_vs_bwrap_rows_per_s"] = median(seconds["bwrap"]) / median(seconds["docker"])
    added = (median(seconds["docker"]) - median(seconds["bwrap"])) * JOBS / rows
    result["docker_added_s_per_row"] = added
    result.update(container_life(str(engine.path), image, 10))
    print(result)
    save("docker_agents", result)


if __name__ == "__main__":
    main()
