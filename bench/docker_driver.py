"""The docker driver's cost: a row's whole life (pre_run, a command agent, a run_command
criterion) in its own container, against the same rows in the bwrap driver and in tempdir.

Figures: rows/s of each driver at -j 4 (docker's as ratios to bwrap's and tempdir's), the
seconds docker adds per row (its container's start and removal, spread over the jobs), and
one program in a running container (``exec``) against one in a bwrap sandbox.
The image is the tests' offline one (tests/docker_images.py: mmdebstrap, imported once).
Usage: python bench/docker_driver.py [ROWS] [REPEATS]
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from pathlib import Path

from common import ASSAY, REPO, WORK, median, save, timed

sys.path.insert(0, str(REPO))

from tests.docker_images import make_test_image

from assay.sandbox.bwrap import make_policy
from assay.sandbox.docker import make_docker_policy
from assay.sandbox.tempdir import Sandbox
from assay.spec.task import SandboxConfig

JOBS = 4
TASK = """\
task_id: rows
description: a row's whole life in its sandbox
agent: {{type: command, command: 'echo "$ASSAY_PROMPT" > answer.txt'}}
sandbox: {sandbox}
pre_run: [{{command: 'echo ready > pre.txt'}}]
dataset: {{rows: [{rows}]}}
initial_prompt: "answer ${{row.id}}"
success_criteria:
  - {{type: run_command, command: 'test -s answer.txt && test -s pre.txt', description: ran}}
"""


def program_seconds(repeats: int = 20) -> dict[str, float]:
    """Median seconds of ``true`` in a started container and in a bwrap sandbox."""
    found = make_test_image()
    assert not isinstance(found, str), found
    engine, image = found
    out: dict[str, float] = {}
    bwrap = make_policy(path_variable="/usr/bin:/bin")
    docker = make_docker_policy(engine=engine)
    for name in ("bwrap", "docker"):
        box = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
        box.jail = (docker.jail(box.root, image=image, limits={}) if name == "docker"
                    else bwrap.jail(box.root, limits={}))  # fmt: skip
        asyncio.run(box.run("true", env={"PATH": "/usr/bin:/bin"}, timeout=60))  # starts it
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            asyncio.run(box.run("true", env={"PATH": "/usr/bin:/bin"}, timeout=60))
            samples.append(time.perf_counter() - started)
        box.jail.close()
        box.remove()
        out[name] = median(samples)
    return out


def main(rows: int = 40, repeats: int = 3) -> dict[str, object]:
    found = make_test_image()
    assert not isinstance(found, str), found
    _, image = found
    folder = WORK / f"docker-driver-{rows}"
    folder.mkdir(parents=True, exist_ok=True)
    listed = ", ".join(f"{{id: r{i}}}" for i in range(rows))
    drivers = {"tempdir": "{driver: tempdir}", "bwrap": "{driver: bwrap}",
               "docker": f"{{driver: docker, docker: {{image: '{image}'}}}}"}  # fmt: skip
    seconds: dict[str, list[float]] = {name: [] for name in drivers}
    for _ in range(repeats):
        for name, sandbox in drivers.items():
            (folder / f"{name}.yaml").write_text(TASK.format(sandbox=sandbox, rows=listed))
            command = [*ASSAY, "run", f"{name}.yaml", "-j", str(JOBS), "--run-dir",
                       f"runs-{name}", "-q"]  # fmt: skip
            t = timed(command, cwd=folder)
            assert t.returncode == 0, f"{name} run failed ({t.returncode})"
            seconds[name].append(t.seconds)
            shutil.rmtree(folder / f"runs-{name}", ignore_errors=True)
    result: dict[str, object] = {"rows": rows, "jobs": JOBS, "repeats": repeats}
    for name, values in seconds.items():
        result[name] = {"seconds": median(values), "rows_per_s": rows / median(values),
                        "all_seconds": values}  # fmt: skip
    docker, bwrap, tempdir = (median(seconds[n]) for n in ("docker", "bwrap", "tempdir"))
    result["docker_vs_bwrap_rows_per_s"] = bwrap / docker
    result["docker_vs_tempdir_rows_per_s"] = tempdir / docker
    result["docker_added_seconds_per_row"] = (docker - bwrap) * JOBS / rows
    result["program_seconds"] = program_seconds()
    save("docker_driver", result)
    return result


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print(main(*args))
