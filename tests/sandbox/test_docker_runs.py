"""``sandbox.driver: docker`` in whole runs, as a user starts them: ``pre_run``, the agent,
``run_command`` / ``pytest`` and ``post_run`` run in the row's container; an image by name
or built from a Dockerfile (once per content); and every way it can fail says why: no
engine, a missing image, a failed build, a container that cannot start, a row killed for
memory. Real engine (:mod:`tests.docker_images`), real ``assay`` processes."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from assay.sandbox.build_context import context_hash
from assay.sandbox.cgroups import pid_namespace
from assay.sandbox.docker import Engine, has_image, image_tag
from tests.agents.coding import run_assay
from tests.helpers import write

pytestmark = pytest.mark.docker

VENV_BIN = str(Path(sys.executable).parent)
WHERE = "echo $(hostname) $(id -u) $(ls -A $ASSAY_TASK_DIR/runs 2>/dev/null | wc -l)"


def env() -> dict[str, str]:
    found = {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"}
    for name in ("DOCKER_HOST", "CONTAINERS_CONF"):
        if name in os.environ:
            found[name] = os.environ[name]
    return found


def results(tmp_path: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in (tmp_path / "runs").rglob("task.json"):
        data = json.loads(path.read_text())
        found[str(path.relative_to(tmp_path))] = data
    return found


def task(image: str, *, pytest: bool = True, **fields: str) -> str:
    sandbox = fields.pop("sandbox", f"{{driver: docker, docker: {{image: '{image}'}}, "
                                    "limits: {max_pids: 256}}")  # fmt: skip
    agent = fields.pop("agent", "true")
    return f"""\
task_id: inside
description: every program of the row runs in its container
agent:
  type: command
  command: '{WHERE}; cat $ASSAY_TASK_DIR/.assay/store.db; cat $ASSAY_PROMPT_FILE; {agent}'
sandbox: {sandbox}
pre_run: [{{command: '{WHERE} > pre.txt'}}]
post_run: [{{command: '{WHERE}'}}]
dataset: {{rows: [{{id: r1}}, {{id: r2}}]}}
initial_prompt: "the prompt of ${{row.id}}"
success_criteria:
  - {{type: run_command, description: graded inside,
      command: 'test "$(hostname)" = assay && test "$(id -u)" != 0 && test -r /etc/debian_version'}}
  - {{type: file_contains, path: pre.txt, includes: [assay], description: pre_run inside}}
""" + ("  - {type: pytest, description: the tests pass inside}\n" if pytest else "")


@pytest.mark.parametrize("kind", ["docker", "podman"])
def test_every_program_of_a_row_runs_in_its_container(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    _, image = request.getfixturevalue(f"{kind}_image")
    text = task(image).replace("docker: {", f"docker: {{engine: {kind}, ")
    write(tmp_path / "inside.yaml", text.replace(
        "limits: {max_pids: 256}}", "limits: {max_pids: 256}, template_sources: [{type: "
        "template_dir, path: tests}]}"))  # fmt: skip
    write(tmp_path / ".assay" / "store.db", "the team's datasets\n")
    write(tmp_path / "tests" / "test_inside.py", "import socket, sys\n"
          "def test_host(): assert socket.gethostname() == 'assay'\n"
          "def test_image(): assert sys.prefix == '/usr'\n")  # fmt: skip
    done = run_assay("run", "inside.yaml", "-j", "2", cwd=tmp_path, env=env())
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = (tmp_path / "runs" / "latest").resolve()
    for result in results(tmp_path).values():
        row = result["row_id"]
        assert result["final_status"] == "SUCCESS", result["success_criteria_results"]
        response = (run_dir / "default" / "inside" / row / "00" / "response.txt").read_text()
        host, uid, runs = response.split()[:3]
        assert (host, runs) == ("assay", "0") and uid != "0"
        assert "the team's datasets" not in response
        assert f"the prompt of {row}" in response
        assert result["post_run_results"][0]["stdout"].split()[0] == "assay"


@pytest.mark.parametrize("kind", ["docker", "podman"])
def test_a_tmpdir_on_the_way_to_the_task_folder_still_gets_the_prompt_in(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """``TMPDIR`` a folder above the task's (mounted in the row's container): the engine
    makes it, as root, in the container's ``/tmp``, and the prompt's folder (copied in
    there) was refused ("Cannot mkdir: Permission denied")."""
    _, image = request.getfixturevalue(f"{kind}_image")
    work = tmp_path / "team" / "evals"
    write(work / "inside.yaml", task(image, pytest=False).replace(
        "docker: {", f"docker: {{engine: {kind}, "))  # fmt: skip
    done = run_assay("run", "inside.yaml", cwd=work, env={**env(), "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    for result in results(work).values():
        assert result["final_status"] == "SUCCESS", result["agent"]["stderr_tail"]
        folder = work / "runs" / "latest" / "default" / "inside" / result["row_id"] / "00"
        assert f"the prompt of {result['row_id']}" in (folder / "response.txt").read_text()
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith("assay-")] == []


def test_a_dockerfile_is_built_once_per_content_and_a_failed_build_says_why(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    engine, image = docker_image
    write(tmp_path / "image" / "Dockerfile", f"FROM {image}\nCOPY mark.txt /mark.txt\n")
    write(tmp_path / "image" / "mark.txt", "built from the task's Dockerfile\n")
    sandbox = "{driver: docker, docker: {dockerfile_path: image/Dockerfile}}"
    write(tmp_path / "t.yaml", task(image, sandbox=sandbox, agent="cat /mark.txt", pytest=False))
    first = run_assay("run", "t.yaml", cwd=tmp_path, env=env())
    assert first.returncode == 0, first.stdout + first.stderr
    assert all("built from the task's Dockerfile" in (p.read_text()) for p in
               (tmp_path / "runs").rglob("response.txt"))  # fmt: skip
    tag = f"assay-task:{context_hash(tmp_path / 'image' / 'Dockerfile')}"
    built = engine.run("image", "inspect", "--format", "{{.Id}}", tag).stdout
    plan = run_assay("plan", "t.yaml", cwd=tmp_path, env=env())
    assert plan.returncode == 0, plan.stderr
    assert engine.run("image", "inspect", "--format", "{{.Id}}", tag).stdout == built != ""
    assert "is not used" not in plan.stderr
    # found by a helper (findings I N7): an image named beside the Dockerfile is not used
    both = sandbox.replace("{dockerfile_path", f"{{image: '{image}', dockerfile_path")
    write(tmp_path / "both.yaml", task(image, sandbox=both, agent="cat /mark.txt", pytest=False))
    plan = run_assay("plan", "both.yaml", cwd=tmp_path, env=env())
    assert f"sandbox.docker.image: {image} is not used" in plan.stderr, plan.stderr

    write(tmp_path / "image" / "Dockerfile", f"FROM {image}\nRUN echo the step fails >&2; exit 3\n")
    failed = run_assay("plan", "t.yaml", cwd=tmp_path, env=env())
    assert failed.returncode == 1, failed.stdout + failed.stderr  # its rows would be ERROR
    assert "each row of this task ends ERROR with it; the other tasks run" in failed.stderr
    assert "t.yaml:6: sandbox.docker.dockerfile_path" in failed.stderr
    assert str(tmp_path / "image" / "Dockerfile") in failed.stderr
    assert "the step fails" in failed.stderr and "did not build" in failed.stderr
    assert "\x1b[" not in failed.stderr and "DEPRECATED" not in failed.stderr  # no colours


BASE_TASK = """\
task_id: base
description: which base image the rows run in
agent:
  type: command
  command: 'cat /base.txt; touch running; sleep $(cut -d" " -f2 $ASSAY_PROMPT_FILE)'
sandbox: {driver: docker, docker: {dockerfile_path: image/Dockerfile}}
dataset: {rows: [{id: r1, wait: ROW_WAIT}, {id: r2, wait: 0}]}
initial_prompt: "${row.id} ${row.wait}"
success_criteria:
  - {type: run_command, command: 'grep -q one /base.txt', description: on the first base}
"""


@contextmanager
def rebuildable_base(tmp_path: Path, image: str, engine: Engine) -> Iterator[Callable[[str], None]]:
    """A base image under one name (``FROM`` of the task's Dockerfile), rebuilt by calling
    the function with the word its ``/base.txt`` holds; removed afterwards."""
    base = f"assay-test/base-{uuid.uuid4().hex[:8]}:latest"

    def saying(word: str) -> None:
        write(tmp_path / "base" / "Dockerfile", f"FROM {image}\nRUN echo {word} > /base.txt\n")
        built = engine.run("build", "--network", "host", "-t", base, str(tmp_path / "base"),
                           timeout=300)  # fmt: skip
        assert built.returncode == 0, built.stderr

    write(tmp_path / "image" / "Dockerfile", f"FROM {base}\nCOPY mark.txt /mark.txt\n")
    write(tmp_path / "image" / "mark.txt", "the task's layer\n")
    try:
        yield saying
    finally:
        engine.run("rmi", "-f", base)


def bases(run_dir: Path) -> dict[str, str]:
    """Each row's ``/base.txt``, read by its agent."""
    return {p.parts[-3]: p.read_text().split()[0] for p in run_dir.rglob("response.txt")}


def test_a_new_run_builds_on_a_base_image_rebuilt_under_the_same_name(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """The task's Dockerfile is unchanged, its ``FROM`` image rebuilt under the same name: a
    new run's rows see the new base (the engine's cache builds the rest again), while an
    earlier run is graded again in the image it ran in, which the engine still holds,
    though the new build moved the tag."""
    engine, image = docker_image
    with rebuildable_base(tmp_path, image, engine) as base_saying:
        base_saying("one")
        write(tmp_path / "t.yaml", BASE_TASK.replace("ROW_WAIT", "0"))
        first = run_assay("run", "t.yaml", "--keep-sandboxes", cwd=tmp_path, env=env())
        assert first.returncode == 0, first.stdout + first.stderr
        started = (tmp_path / "runs" / "latest").resolve()
        base_saying("two")
        again = run_assay("run", "t.yaml", cwd=tmp_path, env=env())
        assert again.returncode == 1, again.stdout + again.stderr  # graded: not on "one"
        assert bases((tmp_path / "runs" / "latest").resolve()) == {"r1": "two", "r2": "two"}
        graded = run_assay("evaluate", str(started), cwd=tmp_path, env=env())
        assert graded.returncode == 0, graded.stdout + graded.stderr  # in the first image


def test_a_build_that_moves_the_tag_mid_run_changes_nothing_of_the_run(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Rows run by the image id the plan found: a base rebuilt and a plan (which builds)
    while the first row runs leave the second row in the run's image."""
    engine, image = docker_image
    work, scratch = tmp_path / "task", tmp_path / "scratch"  # the rows' folders in scratch
    scratch.mkdir()
    with rebuildable_base(work, image, engine) as base_saying:
        base_saying("one")
        write(work / "t.yaml", BASE_TASK.replace("ROW_WAIT", "20"))
        process = subprocess.Popen([sys.executable, "-m", "assay", "run", "t.yaml", "-j", "1"],
                                   cwd=work, env={**env(), "TMPDIR": str(scratch)},
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while not list(scratch.rglob("running")):  # the first row's agent is running
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.2)
            base_saying("two")
            planned = run_assay("plan", "t.yaml", cwd=work, env=env())
            assert planned.returncode == 0, planned.stderr
            out, err = process.communicate(timeout=300)
        finally:
            process.kill()
        assert process.returncode == 0, out + err
        assert bases((work / "runs" / "latest").resolve()) == {"r1": "one", "r2": "one"}


def test_a_dockerfile_beside_the_task_builds_without_the_runs_or_the_store(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """``COPY . /ctx`` of the task's own folder: earlier runs' answers and the store stay
    out of the image, and a new run (a new run folder) does not make a new image."""
    engine, image = docker_image
    write(tmp_path / "Dockerfile", f"FROM {image}\nCOPY . /ctx\n")
    write(tmp_path / ".assay" / "store.db", "the team's datasets\n")
    write(tmp_path / "notes.txt", "part of the image\n")
    sandbox = "{driver: docker, docker: {dockerfile_path: Dockerfile}}"
    write(tmp_path / "t.yaml", task(image, sandbox=sandbox, pytest=False,
                                    agent="ls -A /ctx; cat /ctx/notes.txt"))  # fmt: skip
    tag = f"assay-task:{context_hash(tmp_path / 'Dockerfile')}"
    first = run_assay("run", "t.yaml", cwd=tmp_path, env=env())
    assert first.returncode == 0, first.stdout + first.stderr
    built = engine.run("image", "inspect", "--format", "{{.Id}}", tag).stdout
    second = run_assay("run", "t.yaml", cwd=tmp_path, env=env())
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"assay-task:{context_hash(tmp_path / 'Dockerfile')}" == tag  # runs left out
    assert engine.run("image", "inspect", "--format", "{{.Id}}", tag).stdout == built != ""
    responses = [p.read_text() for p in (tmp_path / "runs").rglob("response.txt")]
    assert len(responses) == 4
    for response in responses:
        listed = response.split("\n")
        assert "part of the image" in response and "notes.txt" in listed
        assert not {"runs", ".assay"} & set(listed), response
    write(tmp_path / "t.yaml", task(image, sandbox="{driver: docker, docker: "
                                    "{dockerfile_path: .}}", pytest=False))  # fmt: skip
    folder = run_assay("plan", "t.yaml", cwd=tmp_path, env=env())
    assert folder.returncode == 2
    assert "is a folder: sandbox.docker.dockerfile_path names the Dockerfile itself" in (
        folder.stderr
    )


def test_a_resume_or_a_regrade_in_another_image_is_refused(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """The image a docker task's rows ran in is recorded (``plan.json``); its Dockerfile
    edited since, ``assay run --resume`` and ``assay evaluate`` refuse to mix two
    environments in one run, without building the changed one first."""
    engine, image = docker_image
    write(tmp_path / "image" / "Dockerfile", f"FROM {image}\nRUN echo v1 > /version\n")
    sandbox = "{driver: docker, docker: {dockerfile_path: image/Dockerfile}}"
    write(tmp_path / "t.yaml", task(image, sandbox=sandbox, agent="cat /version", pytest=False))
    first = run_assay("execute", "t.yaml", cwd=tmp_path, env=env())
    assert first.returncode == 0, first.stdout + first.stderr
    plan = json.loads((tmp_path / "runs" / "latest" / "plan.json").read_text())
    (started,) = plan["tasks"][0]["images"].values()
    assert started.startswith("docker assay-task:") and " sha256:" in started
    graded = run_assay("evaluate", "runs/latest", cwd=tmp_path, env=env())
    assert graded.returncode == 0, graded.stdout + graded.stderr  # the same image: fine

    engine.run("image", "rm", started.split(" ")[1])  # field report: an image prune
    pruned = run_assay("evaluate", "runs/latest", cwd=tmp_path, env=env())
    assert pruned.returncode == 2, pruned.stdout + pruned.stderr
    assert "which the engine no longer holds (removed since" in pruned.stderr
    assert "`docker load`" in pruned.stderr and "restore the Dockerfile" not in pruned.stderr

    fresh = uuid.uuid4().hex  # a content this engine never built, in no earlier test run
    write(tmp_path / "image" / "Dockerfile", f"FROM {image}\nRUN echo v2 {fresh} > /version\n")
    changed, _ = image_tag(tmp_path / "image" / "Dockerfile")
    for args in (("evaluate", "runs/latest"), ("run", "--resume", "runs/latest")):
        refused = run_assay(*args, cwd=tmp_path, env=env())
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert f"task inside runs in the image {changed} (docker, not built) now" in refused.stderr
        assert not has_image(engine, changed)  # refused before a build that would be wasted
        assert (
            "its Dockerfile, build context, base image or tag changed since, and its rows "
            "would run in two environments" in refused.stderr
        )
        # pruned above too: restoring the Dockerfile alone would meet a second refusal
        assert "restoring the Dockerfile is not enough" in refused.stderr, refused.stderr


@pytest.mark.parametrize("what", ["no engine", "missing image", "no image"])
def test_a_docker_task_that_cannot_run_here_is_refused_at_plan(
    tmp_path: Path, docker_image: tuple[Engine, str], what: str
) -> None:
    _, image = docker_image
    environment = env()
    text = task(image)
    if what == "no engine":
        environment = {"PATH": VENV_BIN}
        expected = ["needs a container engine", "docker is not installed",
                    "apt-get install docker.io", "sandbox.driver"]  # fmt: skip
    elif what == "missing image":
        text = task("assay-test/no-such-image:1")
        expected = ["sandbox.docker.image", "assay-test/no-such-image:1", "never pulls"]
    else:
        text = text.replace(f"docker: {{image: '{image}'}}, ", "")
        expected = ["sandbox.driver docker needs an image", "dockerfile_path"]
    write(tmp_path / "t.yaml", text)
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env=environment)
    assert done.returncode == 2, done.stdout + done.stderr
    for words in expected:
        assert words in done.stderr, done.stderr


def test_a_container_that_cannot_start_fails_its_rows_and_the_run_goes_on(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    _, image = docker_image
    write(tmp_path / "image" / "Dockerfile", "FROM scratch\nCOPY mark.txt /mark.txt\n")
    write(tmp_path / "image" / "mark.txt", "no shell, no sleep\n")
    broken = "{driver: docker, docker: {dockerfile_path: image/Dockerfile}}"
    write(tmp_path / "broken.yaml", task(image, sandbox=broken).replace(
        "task_id: inside", "task_id: broken").replace("pre_run: [", "pre_run_x: ["))  # fmt: skip
    text = (tmp_path / "broken.yaml").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith("pre_run_x"))
    write(tmp_path / "broken.yaml", text + "\n")
    write(
        tmp_path / "good.yaml",
        task(image, pytest=False).replace("task_id: inside", "task_id: good"),
    )
    done = run_assay("run", "broken.yaml", "good.yaml", cwd=tmp_path, env=env())
    assert done.returncode == 1, done.stdout + done.stderr
    found = {(r["task_id"].split("/")[0], r["final_status"], r.get("error_message") or "")
             for r in results(tmp_path).values()}  # fmt: skip
    statuses = {(name, status) for name, status, _ in found}
    assert ("good", "SUCCESS") in statuses and ("broken", "ERROR") in statuses
    errors = [message for name, status, message in found if status == "ERROR"]
    assert errors and all("container did not start" in m for m in errors), errors
    # the image has no sleep, its containers' first program: said, with the fix (F8)
    assert all("the image has no sleep on its PATH" in m and "coreutils" in m for m in errors)


@pytest.mark.parametrize("kind", ["docker", "podman"])
def test_a_row_out_of_processes_names_the_limit(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """A program whose forks the container's ``--pids-limit`` refused fails with the
    shell's "Cannot fork": a last line names ``sandbox.limits.max_pids``."""
    _, image = request.getfixturevalue(f"{kind}_image")
    write(tmp_path / "t.yaml", "task_id: forks\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'for i in $(seq 30); do sleep 5 & done; wait'}\n"
          f"sandbox: {{driver: docker, docker: {{engine: {kind}, image: '{image}'}}, "
          "limits: {max_pids: 8}}\n"
          "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    run_assay("run", "t.yaml", cwd=tmp_path, env=env())
    (result,) = results(tmp_path).values()
    said = re.search(
        r"assay: (\d+) fork\(s\) refused: the row's processes reached "
        r"sandbox\.limits\.max_pids \(8\)",
        result["agent"]["stderr_tail"],
    )
    assert said is not None and int(said[1]) >= 1, result["agent"]["stderr_tail"]


def test_a_coding_agents_command_out_of_processes_names_the_limit(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Found in review: a coding agent's command runs in a container of its own, removed
    when it ends, and its refused forks were counted after the removal (none found) and
    against the row's container's count: the agent was told nothing of ``max_pids``."""
    _, image = docker_image
    forks = "for i in $(seq 30); do sleep 5 & done; wait"
    write(tmp_path / "script.yaml",
          'replies:\n  - match: "p"\n    steps:\n'
          f"      - {{tool: run_command, input: {{command: {json.dumps(forks)}}}}}\n"
          "      - {tool: submit_answer, input: {answer: done}}\n")  # fmt: skip
    write(tmp_path / "t.yaml", "task_id: forks\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: llm, model: mock/script.yaml, tools: [run_command, submit_answer],"
          " max_turns: 3}\n"
          f"sandbox: {{driver: docker, docker: {{image: '{image}'}}, "
          "limits: {max_pids: 8}}\n"
          "success_criteria: [{type: tool_called, tool: run_command}]\n")  # fmt: skip
    run_assay("run", "t.yaml", cwd=tmp_path, env=env())
    (log,) = (tmp_path / "runs").rglob("task.log")
    said = re.search(r"assay: (\d+) fork\(s\) refused: the row's processes reached "
                     r"sandbox\.limits\.max_pids \(8\)", log.read_text())  # fmt: skip
    assert said is not None and int(said[1]) >= 1, log.read_text()


def test_a_row_killed_for_memory_names_the_limit(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    _, image = docker_image
    write(tmp_path / "t.yaml", "task_id: big\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'python3 -c \"x = bytearray(400 * 2**20)\"'}\n"
          f"sandbox: {{driver: docker, docker: {{image: '{image}'}}, "
          "limits: {max_memory_mb: 64, max_cpus: 0.5}}\n"
          "success_criteria: [{type: file_exists, path: big, description: d}]\n")  # fmt: skip
    done = run_assay("run", "t.yaml", cwd=tmp_path, env=env())
    assert done.returncode == 1, done.stdout + done.stderr
    result = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    assert result["final_status"] == "ERROR"
    assert "exited with code 137" in result["error_message"]
    assert "sandbox.limits.max_memory_mb (64 MiB)" in result["error_message"]


def test_extra_mounts_secrets_passed_on_purpose_and_assay_evaluate(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    _, image = docker_image
    write(tmp_path / "data" / "table.txt", "shared data\n")
    write(tmp_path / "cache" / "old.txt", "old\n")
    (tmp_path / "cache").chmod(0o777)  # the row's own user writes there (assay runs as root)
    write(tmp_path / "t.yaml", "task_id: mounts\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'cat /data/table.txt; echo new > /cache/new.txt; "
          "echo no > /data/no.txt; echo ${TEAM_TOKEN:-none} ${OTHER_TOKEN:-none}; "
          "echo made > out.txt'}\n"
          f"sandbox: {{driver: docker, docker: {{image: '{image}', extra_mounts: "
          "['data:/data', 'cache:/cache:rw'], env_passthrough_extra: [TEAM_TOKEN]}}\n"
          "success_criteria: [{type: run_command, command: 'test \"$(hostname)\" = assay "
          "&& test -s out.txt', description: graded inside}]\n")  # fmt: skip
    environment = {**env(), "TEAM_TOKEN": "passed-on-purpose-1", "OTHER_TOKEN": "withheld-2"}
    done = run_assay("execute", "t.yaml", cwd=tmp_path, env=environment)
    assert done.returncode == 0, done.stdout + done.stderr
    response = next((tmp_path / "runs").rglob("response.txt")).read_text()
    assert response.split("\n")[0] == "shared data"
    assert (tmp_path / "cache" / "new.txt").read_text() == "new\n"
    assert not (tmp_path / "data" / "no.txt").exists()
    # the token passed on purpose reached the program (and is redacted from what it wrote)
    assert response.split("\n")[1] == "[redacted:TEAM_TOKEN] none"
    evaluated = run_assay("evaluate", str(tmp_path / "runs" / "latest"), cwd=tmp_path, env=env())
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    result = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    assert result["final_status"] == "SUCCESS", result["success_criteria_results"]

    write(tmp_path / "t.yaml", (tmp_path / "t.yaml").read_text().replace("'cache:", "'gone:"))
    refused = run_assay("plan", "t.yaml", cwd=tmp_path, env=env())
    assert refused.returncode == 2
    assert f"t.yaml:5: sandbox.docker.extra_mounts[1]: {tmp_path / 'gone'} does not exist" in (
        refused.stderr
    )
    assert "expands neither" not in refused.stderr
    # found by a helper (findings I N10): a ~ is taken as written, and now said to be
    write(tmp_path / "t.yaml", (tmp_path / "t.yaml").read_text().replace("'gone:", "'~/gone:"))
    refused = run_assay("plan", "t.yaml", cwd=tmp_path, env=env())
    assert "does not exist (extra_mounts expands neither ~ nor $VARIABLES)" in refused.stderr


@pytest.mark.parametrize("kind", ["docker", "podman"])
def test_an_extra_mount_never_shows_the_runs_or_the_store(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """The task folder mounted again elsewhere (``.:/data``), the runs folder itself
    (``runs:/r``) or a folder inside it: earlier rows' answers and the store stay covered,
    as they are in the task folder's own mount."""
    _, image = request.getfixturevalue(f"{kind}_image")
    write(tmp_path / ".assay" / "store.db", "the team's datasets\n")
    write(tmp_path / "t.yaml", "task_id: peek\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'ls -A /data/runs /r /old /data/.assay; "
          "cat /data/.assay/store.db; echo seen=$(cat /r/*/default/peek/00/response.txt "
          "/old/*/response.txt 2>/dev/null | wc -c)'}\n"
          f"sandbox: {{driver: docker, docker: {{engine: {kind}, image: '{image}', "
          "extra_mounts: ['.:/data:rw', 'runs:/r', 'runs/latest/default:/old']}}\n"
          "success_criteria: [{type: response_match, expected: seen=0, match: contains, "
          "description: nothing of the runs}]\n")  # fmt: skip
    write(tmp_path / "runs" / "2026-01-01_00-00-00" / "default" / "peek" / "00" /
          "response.txt", "an earlier answer\n")  # fmt: skip
    (tmp_path / "runs" / "latest").symlink_to("2026-01-01_00-00-00")
    done = run_assay("run", "t.yaml", cwd=tmp_path, env=env())
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = [p for p in (tmp_path / "runs").rglob("response.txt") if "2026-01" not in str(p)]
    response = path.read_text()
    assert "seen=0" in response and "the team's datasets" not in response
    assert "2026" not in response and "store.db" not in response


@pytest.mark.parametrize("kind", ["docker", "podman"])
def test_the_containers_of_a_killed_run_go_when_the_next_run_starts(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """``kill -9`` of ``assay run`` leaves its rows' containers running (nothing of assay
    is left to remove them); the next run on that engine removes them, and only them: one
    of a live run, or one another tool labelled, stays."""
    engine, image = request.getfixturevalue(f"{kind}_image")
    write(tmp_path / "t.yaml", "task_id: slow\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'touch started; sleep 120'}\n"
          f"sandbox: {{driver: docker, docker: {{engine: {kind}, image: '{image}'}}}}\n"
          "dataset: {rows: [{id: a}, {id: b}]}\n"
          "success_criteria: [{type: file_exists, path: started, description: d}]\n")  # fmt: skip
    other = f"assay-test-other-{os.getpid()}-{kind}"
    engine.run("run", "-d", "--name", other, "--label", "assay.row=1", "--entrypoint", "sleep",
               image, "120")  # fmt: skip
    try:
        run = subprocess.Popen([sys.executable, "-m", "assay", "run", "t.yaml", "-j", "2"],
                               cwd=tmp_path, env={**os.environ, **env()},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        mine = f"label=assay.owner={socket.gethostname()}/"
        for _ in range(600):
            listed = engine.run("ps", "--filter", mine + f"{pid_namespace()}/{run.pid}",
                                "--format", "{{.Names}}").stdout.split()  # fmt: skip
            if len(listed) == 2 or run.poll() is not None:
                break
            time.sleep(0.1)
        assert len(listed) == 2, "the rows' containers did not start"
        run.kill()
        run.wait()
        assert engine.run("ps", "--filter", f"name={listed[0]}", "--format",
                          "{{.Names}}").stdout.split() == [listed[0]]  # fmt: skip
        write(tmp_path / "t.yaml", (tmp_path / "t.yaml").read_text().replace(
            "sleep 120", "true").replace("[{id: a}, {id: b}]", "[{id: c}]"))  # fmt: skip
        done = run_assay("run", "t.yaml", cwd=tmp_path, env=env())
        assert done.returncode == 0, done.stdout + done.stderr
        left = engine.run("ps", "-a", "--format", "{{.Names}}").stdout.split()
        assert not set(listed) & set(left) and other in left
    finally:
        engine.run("rm", "-f", other)


def _plain_task(docker: str) -> str:
    """A one-row task of a command agent on the docker driver, ``docker`` its block's fields."""
    return ("task_id: m\ndescription: d\ninitial_prompt: p\n"
            "agent: {type: command, command: 'true'}\n"
            f"sandbox: {{driver: docker, docker: {{{docker}}}}}\n"
            "success_criteria: [{type: response_match, expected: x, description: d}]\n"
            )  # fmt: skip


@pytest.mark.parametrize(
    ("mounts", "message"),
    [
        ("['data:/etc']", "extra_mounts[0]: /etc is the container's own (its system or its /tmp)"),
        ("['data:/tmp/']", "extra_mounts[0]: /tmp is the container's own"),
        ("['data:/d', 'data:/d:rw']", "extra_mounts[1]: /d is the target of extra_mounts[0] too"),
        # the task's folder is mounted at its host path (a break-test: every row failed)
        ("['data:TASK']", "extra_mounts[0]: TASK is where the task's folder is mounted"),
        ("['data:TASK/runs']", "extra_mounts[0]: TASK/runs is where the task's folder is"),
    ],
)
def test_an_extra_mount_onto_the_containers_own_folders_is_refused_at_plan(
    tmp_path: Path, docker_image: tuple[Engine, str], mounts: str, message: str
) -> None:
    _, image = docker_image
    (tmp_path / "data").mkdir()
    mounts, message = mounts.replace("TASK", str(tmp_path)), message.replace("TASK", str(tmp_path))
    write(tmp_path / "t.yaml", _plain_task(f"image: '{image}', extra_mounts: {mounts}"))
    refused = run_assay("plan", "t.yaml", cwd=tmp_path, env=env())
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"t.yaml:5: sandbox.docker.{message}" in refused.stderr


@pytest.mark.parametrize(
    ("limits", "message"),
    [("max_cpus: 4096.0", "sandbox.limits.max_cpus: 4096 CPUs is more than this machine has"),
     ("max_pids: 3", "sandbox.limits.max_pids: 3 processes are too few for a container")],
)  # fmt: skip
def test_limits_a_container_cannot_start_under_are_refused_at_plan(
    tmp_path: Path, docker_image: tuple[Engine, str], limits: str, message: str
) -> None:
    """The engine refused them at every row, said as something else ("needs sh and tar")
    (a break-test)."""
    _, image = docker_image
    task = _plain_task(f"image: '{image}'").replace("sandbox: {driver: docker,",
                                                    f"sandbox: {{limits: {{{limits}}}, "
                                                    "driver: docker,")  # fmt: skip
    write(tmp_path / "t.yaml", task)
    refused = run_assay("plan", "t.yaml", cwd=tmp_path, env=env())
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"t.yaml:5: {message}" in refused.stderr


def test_podman_taking_over_from_a_silent_docker_is_said(
    tmp_path: Path, podman_image: tuple[Engine, str]
) -> None:
    _, image = podman_image
    write(tmp_path / "t.yaml", _plain_task(f"image: '{image}'"))
    silent = {**env(), "DOCKER_HOST": f"unix://{tmp_path}/no-daemon.sock"}
    planned = run_assay("plan", "t.yaml", cwd=tmp_path, env=silent)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert (
        "sandbox.docker.engine is not set and docker does not answer here, so the rows "
        "run on podman" in planned.stderr
    )
    assert "in " + image.removeprefix("localhost/") in planned.stdout.replace("localhost/", "")
    named = run_assay("plan", "t.yaml", "-D", "sandbox.docker.engine=podman", cwd=tmp_path,
                      env=silent)  # fmt: skip
    assert named.returncode == 0 and "does not answer" not in named.stderr, named.stderr


def launcher_config(argv: list[str]) -> dict[str, Any]:
    """The config a docker row's program is launched with (the launcher's first argument)."""
    from assay.sandbox.docker import LAUNCHER

    config: dict[str, Any] = json.loads(argv[argv.index(str(LAUNCHER)) + 1])
    return config


def test_the_engine_keeps_its_own_home_and_a_rootless_podman_keeps_the_users_id(
    tmp_path: Path, podman_image: tuple[Engine, str]
) -> None:
    """Rootless Podman finds its images in its user's HOME: the launcher runs the engine with
    this process's HOME and gives the program its own (``/tmp``) as ``-e HOME=/tmp``; as
    a user (not root) the container keeps that user's id (``--userns keep-id``), so the row's
    folder is writable inside. (Run for real as a non-root user by hand: see
    docs/sandboxes.md.)"""
    from dataclasses import replace

    from assay.sandbox.docker import make_docker_policy

    engine, image = podman_image
    policy = make_docker_policy(engine=engine)
    home = tmp_path / "cli-home"
    home.mkdir()
    secret_env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "MY_TOKEN": "s3cr3t-value",
                  "XDG_DATA_HOME": str(home / ".local")}  # fmt: skip
    for as_root, agent in ((True, False), (False, False), (False, True)):
        jail = replace(policy, as_root=as_root, user=(1000, 1000)).jail(
            tmp_path, image=image, limits={}
        )
        try:
            argv, launch_env = jail.command(["sh", "-c", "true"], env=secret_env, cwd=tmp_path,
                                            writable=[home], agent=agent)  # fmt: skip
        finally:
            jail.close()
        config = launcher_config(argv)
        assert launch_env["HOME"] == os.environ["HOME"] and launch_env["MY_TOKEN"] == "s3cr3t-value"
        assert launch_env.get("XDG_DATA_HOME") == os.environ.get("XDG_DATA_HOME")
        assert config["set"]["HOME"] == (str(home) if agent else "/tmp")
        assert ("XDG_DATA_HOME" in config["set"]) is agent
        assert not {"HOME", "XDG_DATA_HOME"} & set(config["env"])
        assert "MY_TOKEN" in config["env"] and "s3cr3t-value" not in json.dumps(config)
        assert ("keep-id" in config["start"]) is not as_root


def test_a_root_engine_applies_resource_limits(podman_image: tuple[Engine, str]) -> None:
    """As root (this machine's engines), neither engine is taken to ignore limits; a
    rootless one on cgroup v1 is (checked by hand: `assay doctor` and `assay plan` say so)."""
    engine, _ = podman_image
    assert engine.limits_ignored() is None
    docker = Engine(engine.path.with_name("docker"), "docker")
    if os.environ.get("DOCKER_HOST") and docker.path.exists():
        assert docker.limits_ignored() is None


def test_a_limit_the_engine_ignores_is_warned_at_plan(
    tmp_path: Path, podman_image: tuple[Engine, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a rootless engine on cgroup v1 answers (its `info`, as Podman 4.3 gave it here to a
    user) makes `assay plan` warn at a task that sets such a limit, and only then."""
    from assay import api

    _, image = podman_image
    why = "rootless podman on cgroup v1 ignores memory, CPU and pids limits"
    monkeypatch.setattr(Engine, "limits_ignored", lambda self: why)
    sandbox = f"{{driver: docker, docker: {{engine: podman, image: '{image}'}}"
    limited = write(tmp_path / "limited.yaml", task(image, pytest=False, sandbox=sandbox
                    + ", limits: {max_memory_mb: 64}}"))  # fmt: skip
    plain = write(tmp_path / "plain.yaml", task(image, pytest=False, sandbox=sandbox + "}"))
    planned = api.plan([str(limited)])
    assert any(f"sandbox.limits.max_memory_mb is not enforced: {why}" in w
               for w in planned.warnings)  # fmt: skip
    # the plan's limits line says so too (it listed max_memory_mb as enforced)
    line = planned.tasks[0].limits
    assert line.startswith("limits (docker): ") and line.endswith(
        "; not enforced by docker: max_memory_mb")  # fmt: skip
    assert "max_cpus" not in line and "max_pids" not in line
    plain_plan = api.plan([str(plain)])
    assert not any("is not enforced" in w for w in plain_plan.warnings)
    assert "max_memory_mb" in plain_plan.tasks[0].limits.split("; unset: ")[1]


@pytest.mark.parametrize(
    ("kind", "info", "ignored"),
    [
        ("podman", "v1 true\n", True),  # what Podman 4.3 answered a user here
        ("podman", "v1 false\n", False),
        ("podman", "v2 true\n", False),
        ("docker", '1 ["name=seccomp,profile=default","name=rootless"]\n', True),
        ("docker", '1 ["name=seccomp,profile=default"]\n', False),
        ("docker", '2 ["name=rootless","name=cgroupns"]\n', False),
        ("podman", "", False),
    ],
)
def test_which_engine_answers_mean_limits_are_ignored(kind: str, info: str, ignored: bool) -> None:
    from assay.sandbox.docker import limits_ignored

    found = limits_ignored(kind, info)
    assert (found is not None) is ignored
    if ignored:
        assert found == f"rootless {kind} on cgroup v1 ignores memory, CPU and pids limits"


@pytest.mark.parametrize(
    ("kind", "info", "user"),
    [
        ("docker", '1 ["name=seccomp,profile=default","name=rootless"]\n', (0, 0)),
        ("docker", '2 ["name=rootless","name=cgroupns"]\n', (0, 0)),
        ("docker", '1 ["name=seccomp,profile=default"]\n', None),  # rootful, by its socket
        ("docker", "", None),  # no answer: as before
        ("podman", "v1 true\n", None),  # rootless Podman keeps the uid (--userns keep-id)
    ],
)
def test_rootless_docker_runs_rows_as_its_namespaces_root(
    monkeypatch: pytest.MonkeyPatch, kind: str, info: str, user: tuple[int, int] | None
) -> None:
    """Rootless Docker maps the user to uid 0 inside and has no keep-id: a row run as the
    caller's uid there could not write its own folder (tried here: "Permission denied")."""
    from assay.sandbox.docker import container_user

    monkeypatch.setattr(Engine, "info", lambda self: info)
    engine = Engine(Path("/usr/bin/" + kind), kind)
    assert container_user(engine, as_root=False) == (user or (os.getuid(), os.getgid()))
    assert container_user(engine, as_root=True) == (os.getuid(), os.getgid())


def test_doctor_leaves_out_the_limits_the_engine_ignores(
    podman_image: tuple[Engine, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.sandbox.doctor import check_drivers

    why = "rootless podman on cgroup v1 ignores memory, CPU and pids limits"
    monkeypatch.setattr(Engine, "limits_ignored", lambda self: why)
    podman = next(c for c in check_drivers(path_variable="/usr/bin:/bin")
                  if c.driver == "docker (engine: podman)")  # fmt: skip
    assert podman.works and podman.detail.endswith(
        f"; {why}: max_memory_mb, max_cpus, max_pids not enforced")  # fmt: skip
    assert podman.limits == ("cpu_seconds", "max_file_size_mb", "max_open_files",
                             "max_output_mb", "max_log_mb")  # fmt: skip


def test_an_image_whose_sleep_ends_at_once_is_named(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Found by a helper (G7): a ``sleep`` that exits at once left each row's container
    stopped with "it stopped at once (no message)" and nothing said of ``sleep``; and
    (findings I F6) the error blamed the row's ``pre_run`` command, which never ran."""
    _, image = docker_image
    write(tmp_path / "image" / "Dockerfile", f"FROM {image}\n"
          "RUN printf '#!/bin/sh\\nexit 0\\n' > \"$(command -v sleep)\"\n")  # fmt: skip
    write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'true'}\npre_run: [{command: 'touch made'}]\n"
          "sandbox: {driver: docker, docker: {dockerfile_path: image/Dockerfile}}\n"
          "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    run_assay("run", "t.yaml", cwd=tmp_path, env=env())
    (result,) = results(tmp_path).values()
    said = result["error_message"]
    assert said.startswith("the row's container did not start"), said
    assert "container did not start" in said and "it stopped at once" in said, said
    assert "ended at once, a sleep that waits (sleep infinity)" in said and "coreutils" in said


def test_the_images_own_environment_holds_over_the_hosts(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Found by a helper (findings I F1, F2): rows ran with a fixed ``PATH`` (a venv or
    conda image's tools not found, by the agent or a criterion), and the host's
    ``PYTHONPATH`` or ``JAVA_HOME`` replaced the image's own ``ENV``."""
    _, image = docker_image
    write(tmp_path / "image" / "Dockerfile", f"FROM {image}\n"
          "RUN mkdir -p /opt/venv/bin /opt/lib && printf '#!/bin/sh\\necho mytool-ok\\n' > "
          "/opt/venv/bin/mytool && chmod 755 /opt/venv/bin/mytool && "
          "echo 'X = \"imglib-ok\"' > /opt/lib/imglib.py\n"
          "ENV PATH=/opt/venv/bin:$PATH PYTHONPATH=/opt/lib\n"
          "ENV JAVA_HOME=/opt/java-image\n")  # fmt: skip
    command = ("echo PYTHONPATH=$PYTHONPATH JAVA_HOME=$JAVA_HOME; mytool; "
               "python3 -c 'import imglib; print(imglib.X)'")  # fmt: skip
    write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
          f"agent: {{type: command, command: {json.dumps(command)}}}\n"
          "sandbox: {driver: docker, docker: {dockerfile_path: image/Dockerfile, "
          "env_passthrough: [JAVA_HOME]}}\n"
          "success_criteria: [{type: run_command, command: mytool, "
          "expected_stdout: mytool-ok}]\n")  # fmt: skip
    host = {**env(), "PYTHONPATH": "/host/lib", "JAVA_HOME": "/host/java"}
    run_assay("run", "t.yaml", cwd=tmp_path, env=host)
    (result,) = results(tmp_path).values()
    assert result["final_status"] == "SUCCESS", result.get("error_message")
    response = next((tmp_path / "runs").rglob("response.txt")).read_text()
    # the image's PYTHONPATH; JAVA_HOME passed on purpose: the host's
    assert response.splitlines() == ["PYTHONPATH=/opt/lib JAVA_HOME=/host/java", "mytool-ok",
                                     "imglib-ok"]  # fmt: skip


def test_a_row_killed_for_the_memory_its_tmp_holds_names_the_limit(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Found by a helper (findings I F7): files in the container's ``/tmp`` (a tmpfs:
    memory) got the program killed, and the count was read with a program started in that
    container, still out of memory: not named, and 5 s of retries. One program fills
    ``/tmp`` (the kernel's victim: with ``sh`` and ``head`` alike small, it may pick either,
    and a shell that goes on is a row that went on, see the next test)."""
    _, image = docker_image
    fill = "b = bytes(2**20)\nwith open('/tmp/f', 'wb') as f:\n    for _ in range(300): f.write(b)"
    command = f"python3 -c {shlex.quote(fill)} && echo survived"
    write(tmp_path / "t.yaml", "task_id: tmpfs\ndescription: d\ninitial_prompt: p\n"
          f"agent: {{type: command, command: {json.dumps(command)}}}\n"
          f"sandbox: {{driver: docker, docker: {{image: '{image}'}}, "
          "limits: {max_memory_mb: 100}}\n"
          "success_criteria: [{type: response_match, expected: survived}]\n")  # fmt: skip
    run_assay("run", "t.yaml", cwd=tmp_path, env=env())
    (result,) = results(tmp_path).values()
    assert result["final_status"] == "ERROR"
    assert "sandbox.limits.max_memory_mb (100 MiB)" in result["error_message"], result


def test_a_program_that_went_on_after_a_kill_for_memory_keeps_its_status_and_the_log_says_it(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """As on ``bwrap`` and ``tempdir``: a process the kernel killed for memory while the
    agent's program went on (and succeeded) leaves the row's status to the program, and the
    row's log names the limit (it was only in ``task.json``'s ``stderr_tail``)."""
    _, image = docker_image
    command = "python3 -c 'x = bytearray(400 * 2**20)'; echo survived"
    write(tmp_path / "t.yaml", "task_id: goon\ndescription: d\ninitial_prompt: p\n"
          f"agent: {{type: command, command: {json.dumps(command)}}}\n"
          f"sandbox: {{driver: docker, docker: {{image: '{image}'}}, "
          "limits: {max_memory_mb: 64}}\n"
          "success_criteria: [{type: response_match, expected: survived}]\n")  # fmt: skip
    run_assay("run", "t.yaml", cwd=tmp_path, env=env())
    (result,) = results(tmp_path).values()
    assert result["final_status"] == "SUCCESS", result.get("error_message")
    (log,) = (tmp_path / "runs").rglob("task.log")
    assert (
        "killed for memory: the row's processes passed sandbox.limits.max_memory_mb "
        "(64 MiB); 1 process(es) killed, the program went on"
    ) in log.read_text()


def test_a_task_folder_with_a_colon_or_a_comma_in_its_path_is_mounted(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Found by a helper (findings I F6): ``-v HOST:CONTAINER:ro`` cannot write a path with
    a ``:``: every row failed at its container's start ("too many colons")."""
    _, image = docker_image
    folder = tmp_path / "co:l,on"
    write(folder / "data.txt", "from the task folder\n")
    criteria = "success_criteria: [{type: response_match, expected: from the task folder}]\n"
    write(folder / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'cat \"$ASSAY_TASK_DIR/data.txt\"'}\n"
          f"sandbox: {{driver: docker, docker: {{image: '{image}'}}}}\n{criteria}")  # fmt: skip
    run_assay("run", "t.yaml", cwd=folder, env=env())
    (result,) = (json.loads(p.read_text()) for p in (folder / "runs").rglob("task.json"))
    assert result["final_status"] == "SUCCESS", result.get("error_message")


def test_a_task_folder_inside_one_the_image_closes_is_refused_at_plan(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Found by a helper (findings I F5): as root, a task under ``/root`` (``700`` on the
    host and in Debian's image) passed ``assay plan``, and every row failed with "Permission
    denied": the row's own user could not pass the image's ``/root``. The same shape here:
    a folder closed on the host and in the image, holding the task."""
    if os.geteuid() != 0:
        pytest.skip("as root only: a normal user's rows run as that user")
    _, image = docker_image
    closed = tmp_path / "closed"
    folder = closed / "task"
    write(folder / "image" / "Dockerfile", f"FROM {image}\nRUN mkdir -p -m 700 {closed}\n")
    write(folder / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'true'}\n"
          "sandbox: {driver: docker, docker: {dockerfile_path: image/Dockerfile}}\n"
          "success_criteria: [{type: file_exists, path: x}]\n")  # fmt: skip
    closed.chmod(0o700)
    done = run_assay("plan", "t.yaml", cwd=folder, env=env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"inside {closed}, which the image" in done.stderr, done.stderr
    assert "move the task's folder" in done.stderr
    closed.chmod(0o755)  # open on the host, closed in the image (findings K): refused too
    assert run_assay("plan", "t.yaml", cwd=folder, env=env()).returncode == 2
    write(folder / "image" / "Dockerfile", f"FROM {image}\nRUN mkdir -p -m 755 {closed}\n")
    assert run_assay("plan", "t.yaml", cwd=folder, env=env()).returncode == 0


def test_a_task_whose_image_does_not_build_ends_its_rows_error_and_the_others_run(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Found by a helper (findings I F4): one broken Dockerfile stopped ``assay run`` over a
    folder of tasks before any row ran (Coder Eval: that task is ``BUILD_FAILED``)."""
    _, image = docker_image
    dockerfile = f"FROM {image}\nRUN echo the step fails >&2; exit 3\n"
    write(tmp_path / "tasks" / "bad" / "Dockerfile", dockerfile)
    sandboxes = {"good": f"image: '{image}'", "broken": "dockerfile_path: bad/Dockerfile"}
    for name, where in sandboxes.items():
        write(tmp_path / "tasks" / f"{name}.yaml", f"task_id: {name}\ndescription: d\n"
              "initial_prompt: p\nagent: {type: command, command: 'echo done'}\n"
              "dataset: {rows: [{id: a}, {id: b}]}\n"
              f"sandbox: {{driver: docker, docker: {{{where}}}}}\n"
              "success_criteria: [{type: response_match, expected: done}]\n")  # fmt: skip
    done = run_assay("run", "tasks", cwd=tmp_path, env=env())
    assert done.returncode == 1, done.stdout + done.stderr
    found = {(r["task_id"], r["final_status"]): r.get("error_message") or ""
             for r in results(tmp_path).values()}  # fmt: skip
    assert {key[1] for key in found if key[0].startswith("good")} == {"SUCCESS"}, found
    broken = [message for (task_id, status), message in found.items()
              if task_id.startswith("broken") and status == "ERROR"]  # fmt: skip
    assert len(broken) == 2 and all("did not build" in m and "the step fails" in m
                                    for m in broken), found  # fmt: skip


def test_an_rw_mount_no_row_could_write_is_warned_at_plan(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Found by a helper (findings I F8): as root each row is a user of its own, and a
    ``:rw`` folder of mode 755 was writable by none of them, unsaid until every row failed."""
    if os.geteuid() != 0:
        pytest.skip("as root only: a normal user's rows run as that user")
    _, image = docker_image
    (tmp_path / "shared").mkdir(mode=0o755)
    write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'true'}\n"
          f"sandbox: {{driver: docker, docker: {{image: '{image}', "
          "extra_mounts: ['shared:/shared:rw']}}\n"
          "success_criteria: [{type: file_exists, path: x}]\n")  # fmt: skip
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env=env())
    assert done.returncode == 0, done.stderr
    assert "t.yaml:5: sandbox.docker.extra_mounts[0]" in done.stderr, done.stderr
    assert "is marked rw, but each row runs as a user of its own" in done.stderr
    (tmp_path / "shared").chmod(0o777)
    assert "is marked rw" not in run_assay("plan", "t.yaml", cwd=tmp_path, env=env()).stderr


def test_a_prompt_the_container_cannot_be_shown_is_the_rows_error_not_an_internal_one(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Found by a helper (findings I N4): with ``TMPDIR`` outside ``/tmp`` and ``/var/tmp``
    a command agent's prompt folder cannot be copied into the container; the row said
    "internal error in agent command: SandboxError(...)"."""
    _, image = docker_image
    scratch = Path(tempfile.mkdtemp(prefix="assay-test-", dir="/dev/shm"))
    try:
        write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
              "agent: {type: command, command: 'cat \"$ASSAY_PROMPT_FILE\"'}\n"
              f"sandbox: {{driver: docker, docker: {{image: '{image}'}}}}\n"
              "success_criteria: [{type: response_match, expected: p}]\n")  # fmt: skip
        run_assay("run", "t.yaml", cwd=tmp_path, env={**env(), "TMPDIR": str(scratch)})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    (result,) = results(tmp_path).values()
    said = result["error_message"]
    assert said.startswith("the docker driver cannot show"), said
    assert "set TMPDIR to one of them" in said and "internal error" not in said


def test_an_image_that_did_not_build_when_planned_is_not_built_again_by_the_run(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Found by a helper (findings K): a Dockerfile that built only sometimes failed in the
    plan (its warning said each row ends ERROR) and built in the run (the rows passed, on an
    image no check had looked at; built twice). The run keeps the plan's answer."""
    import assay
    from assay.errors import BuildFailed
    from assay.orchestration.planning.containment import image_key
    from assay.orchestration.running.executors.base import run_containment

    _, image = docker_image
    dockerfile = write(tmp_path / "image" / "Dockerfile", f"FROM {image}\nRUN exit 3\n")
    write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'true'}\n"
          "sandbox: {driver: docker, docker: {dockerfile_path: image/Dockerfile}}\n"
          "success_criteria: [{type: file_exists, path: x}]\n")  # fmt: skip
    plan = assay.plan([str(tmp_path / "t.yaml")])
    (definition,) = plan.definitions
    key = image_key(definition, tmp_path)
    assert "did not build" in plan.build_failures[key]
    write(dockerfile, f"FROM {image}\n")  # it would build now: the run does not try
    pool: Any = SimpleNamespace(settings=SimpleNamespace(cache=None))  # no model: no cache
    containment = run_containment(plan, tmp_path / "runs", None, pool)
    with pytest.raises(BuildFailed, match="did not build"):
        containment.jail(definition, tmp_path / "row", tmp_path)
