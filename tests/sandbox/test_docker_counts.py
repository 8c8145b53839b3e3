"""What the docker driver counts and compares without an engine: the forks a row's container
refused since the last look (``docker_exec.refused_forks``, read through a scripted engine
CLI), the image identity asked once per docker block in a plan, and the resume's refusal of
another image for one variant."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

import assay
from assay.errors import UsageError
from assay.orchestration.planning import containment
from assay.orchestration.planning.containment import EngineAnswers, refuse_other_images
from assay.results.plan_record import PlannedTaskRecord
from assay.spec.task import TaskDefinition
from tests.helpers import write


def _launcher() -> ModuleType:
    """The launcher as its own module (it is run as a script, standard library only)."""
    path = Path(containment.__file__).parents[2] / "sandbox" / "docker_exec.py"
    spec = importlib.util.spec_from_file_location("docker_exec_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_refused_forks_count_only_those_since_the_last_look(tmp_path: Path) -> None:
    count = tmp_path / "count"
    engine = write(tmp_path / "engine", f"#!/bin/sh\necho max $(cat {count})\n")
    engine.chmod(0o755)
    config = {"engine": str(engine), "container": "c", "lock": str(tmp_path / "state" / "lock")}
    (tmp_path / "state").mkdir()
    launcher = _launcher()
    seen = []
    for total in (3, 3, 5, 5):
        count.write_text(str(total))
        seen.append(launcher.refused_forks(config))
    assert seen == [3, 0, 2, 0]
    count.write_text("nothing")  # a count it cannot read is no refusal
    assert launcher.refused_forks(config) == 0
    # the memory kills the same way, kept apart: one read after each program
    write(engine, f"#!/bin/sh\necho oom_kill $(cat {count})\n")
    kills = []
    for total in (0, 1, 1, 4):
        count.write_text(str(total))
        kills.append(launcher.new_oom_kills(config))
    assert kills == [0, 1, 0, 3]


REFUSAL = (
    "OCI runtime exec failed: exec failed: unable to start container process: "
    "read init-p: connection reset by peer: unknown"
)
PODMAN_REFUSAL = (
    "Error: OCI runtime error: runc: exec failed: unable to start container "
    "process: read init-p: connection reset by peer"
)


@pytest.mark.parametrize(("stream", "said"), [("", REFUSAL), (">&2", PODMAN_REFUSAL)])
def test_a_copy_into_the_container_is_tried_again_while_the_runtime_could_not_start_it(
    tmp_path: Path, stream: str, said: str
) -> None:
    """Found in CI: at ``max_pids: 8`` on a loaded machine, runc's own start process (its
    threads count against the limit) failed now and then, and the prompt's copy was the
    row's error, as a misleading "Permission denied" of the first try. Docker's CLI says it
    on its standard output (exit 126), Podman's on its standard error (exit 255)."""
    tries = tmp_path / "tries"
    script = (f"#!/bin/sh\necho x >> {tries}\n"
              f"[ $(wc -l < {tries}) -gt 2 ] && {{ cat > /dev/null; exit 0; }}\n"
              f"echo '{said}' {stream}\nexit 126\n")  # fmt: skip
    engine = write(tmp_path / "engine", script)
    engine.chmod(0o755)
    config = {"engine": str(engine), "container": "c", "user": "1:1"}
    folder = tmp_path / "assay-prompt-1"
    write(folder / "prompt", "p")
    assert _launcher().copy_in(config, str(folder)) == ""
    assert len(tries.read_text().splitlines()) == 3


def test_a_copy_that_fails_for_good_is_not_tried_again(tmp_path: Path) -> None:
    tries = tmp_path / "tries"
    missing = ('OCI runtime exec failed: exec failed: unable to start container process: '
               'exec: "sh": executable file not found in $PATH: unknown')  # fmt: skip
    script = f"#!/bin/sh\necho x >> {tries}\ncat > /dev/null\necho '{missing}' >&2\nexit 127\n"
    engine = write(tmp_path / "engine", script)
    engine.chmod(0o755)
    config = {"engine": str(engine), "container": "c", "user": "1:1"}
    folder = tmp_path / "assay-prompt-1"
    write(folder / "prompt", "p")
    said = _launcher().copy_in(config, str(folder))
    assert "executable file not found" in said and "it needs sh and tar" in said
    # the copy, then the parent's opening (under /tmp) that failed too: each once
    assert len(tries.read_text().splitlines()) == 2


def _docker_task(image: str) -> TaskDefinition:
    return assay.task({
        "task_id": "t", "description": "d", "initial_prompt": "p",
        "agent": {"type": "command", "command": "true"},
        "sandbox": {"driver": "docker", "docker": {"image": image}},
        "success_criteria": [{"type": "response_match", "expected": "x", "description": "d"}],
    }).definition  # fmt: skip


def test_a_plan_asks_the_image_once_per_docker_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def identity(task: TaskDefinition, base_dir: Path, *, started: str | None = None,
                 build: object = None) -> str:  # fmt: skip
        assert task.sandbox.docker is not None
        asked.append(str(task.sandbox.docker.image))
        return f"docker {task.sandbox.docker.image} sha256:{'0' * 64}"

    monkeypatch.setattr(containment, "image_identity", identity)
    engines = EngineAnswers()
    for image in ("a:1", "a:1", "b:2", "a:1"):
        assert engines.image(_docker_task(image), tmp_path) == f"docker {image} sha256:{'0' * 64}"
    assert asked == ["a:1", "b:2"]


def test_a_plan_looks_up_or_builds_each_image_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every check of a plan that names a docker task's image (its identity, the programs
    and Node.js in it, Podman's bridge) asks the plan's answers: the build context was
    hashed and the engine asked for every variant and every check."""
    built: list[str] = []

    def task_image(engine: object, task: TaskDefinition, base_dir: Path, *, reuse: bool) -> str:
        assert task.sandbox.docker is not None and reuse is engines.reuse_images
        built.append(str(task.sandbox.docker.image))
        return str(task.sandbox.docker.image)

    class Docker:
        kind = "docker"

    monkeypatch.setattr(containment, "task_image", task_image)
    for engines in (EngineAnswers(), EngineAnswers(reuse_images=True)):  # a new run, a resume
        built.clear()
        for image in ("a:1", "a:1", "b:2", "a:1"):
            assert engines.task_image(Docker(), _docker_task(image), tmp_path) == image  # type: ignore[arg-type]
        assert built == ["a:1", "b:2"]


def test_a_variant_in_another_image_is_refused_by_name() -> None:
    started = f"docker assay-task:1111 sha256:{'a' * 64}"
    record = PlannedTaskRecord(task_id="t", file="/x/t.yaml",
                               images={"default": started, "big": started})  # fmt: skip
    refuse_other_images("t", record.file, {"default": started, "big": started}, record.images)
    with pytest.raises(UsageError, match=r"^/x/t\.yaml: task t \(variant big\) runs in the image "
                       r"assay-task:2222 \(podman, bbbbbbbbbbbb\) now, but the run started in "
                       r"assay-task:1111 \(docker, aaaaaaaaaaaa\)"):  # fmt: skip
        refuse_other_images("t", record.file, {"default": started, "big": f"podman "
                            f"assay-task:2222 sha256:{'b' * 64}"}, record.images)  # fmt: skip


def test_a_refusal_names_the_unset_variables_of_the_build_args(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BT_UNSET_MSG", raising=False)
    monkeypatch.setenv("BT_SET_MSG", "hello")
    task = assay.task({
        "task_id": "t", "description": "d", "initial_prompt": "p",
        "agent": {"type": "command", "command": "true"},
        "sandbox": {"driver": "docker", "docker": {"dockerfile_path": "Dockerfile", "build": {
            "args": {"A": "${BT_UNSET_MSG}", "B": "$BT_SET_MSG"}}}},
        "success_criteria": [{"type": "response_match", "expected": "x", "description": "d"}],
    }).definition  # fmt: skip
    started = {"default": f"docker assay-task:1111 sha256:{'a' * 64}"}
    with pytest.raises(UsageError) as refused:
        refuse_other_images("t", "/x/t.yaml", {"default": "docker assay-task:2222 not-built"},
                            started, task=task)  # fmt: skip
    assert refused.value.hint is not None
    assert refused.value.hint.endswith(
        "; sandbox.docker.build.args names $BT_UNSET_MSG, which is not set here"
    )


def test_a_copy_that_failed_says_what_the_engine_wrote_on_either_stream(tmp_path: Path) -> None:
    """Found by a helper (findings I N3): Docker's CLI writes an exec's failure to start
    (an image without ``sh``) on its standard output; the row's error ended in a colon."""
    message = 'OCI runtime exec failed: exec: "sh": executable file not found in $PATH'
    script = f"#!/bin/sh\ncat > /dev/null\necho '{message}'\nexit 126\n"
    engine = write(tmp_path / "engine", script)
    engine.chmod(0o755)
    folder = tmp_path / "assay-prompt-1"
    write(folder / "prompt", "p")
    config = {"engine": str(engine), "container": "c", "user": "1:1"}
    assert _launcher().copy_in(config, str(folder)).rstrip().endswith(message)
