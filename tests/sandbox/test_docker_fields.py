"""Coder Eval's ``sandbox.docker`` fields beyond the image: ``agent_isolation``,
``network``, ``working_dir`` and ``build``, each honoured or refused when the task is
loaded, with the reason and the way out (never warned and ignored). Real ``assay``
processes; those that build or run use the real engine (:mod:`tests.docker_images`)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from assay.sandbox.docker import Engine
from tests.agents.coding import claude_available, codex_path, run_assay
from tests.helpers import write
from tests.sandbox.test_docker_runs import env

CODEX = "{type: codex, model: mock/script.yaml}"
CHECK = "{type: file_exists, path: out.txt, description: d}"
RUN = "{type: run_command, command: 'true', description: d}"
UIPATH = "{type: uipath_eval, agent_name: main, eval_set: s.json, thresholds: {}}"


def task_text(*, agent: str = CODEX, sandbox: str, criterion: str = CHECK) -> str:
    return (f"task_id: t\ndescription: d\ninitial_prompt: p\nagent: {agent}\n"
            f"sandbox: {sandbox}\nsuccess_criteria: [{criterion}]\n")  # fmt: skip


@pytest.mark.parametrize(
    ("sandbox", "criterion", "expected"),
    [
        ("{driver: tempdir, docker: {agent_isolation: true}}", CHECK,
         ["t.yaml:5: sandbox.docker.agent_isolation: a tempdir sandbox cannot keep the codex",
          "set sandbox.driver: docker"]),
        ("{driver: docker, docker: {image: i}}", RUN,
         ["t.yaml:6: success_criteria[0].type", "a run_command criterion",
          "would cross it", "set sandbox.docker.agent_isolation: false"]),
        ("{driver: docker, docker: {image: i, agent_isolation: true}}", RUN,
         ["t.yaml:6: success_criteria[0].type", "a run_command criterion"]),
        ("{driver: docker, docker: {image: i}}", UIPATH,
         ["t.yaml:6: success_criteria[0].type", "a uipath_eval criterion (a program the agent's "
          "files can steer", "set sandbox.docker.agent_isolation: false"]),
        ("{driver: docker, docker: {image: i, extra_mounts: ['a:/a']}}", CHECK,
         ["t.yaml:5: sandbox.docker.extra_mounts", "would cross it",
          "agent_isolation: false"]),
        ("{driver: docker, docker: {image: i, working_dir: /work/agent}}", CHECK,
         ["working_dir '/work/agent'", "only 'auto' is accepted"]),
        ("{driver: docker, docker: {image: i, build: {secrets: [id=t,env=T]}}}", CHECK,
         ["build secrets (--secret) need BuildKit", "build.args"]),
        ("{driver: docker, docker: {image: i, build: {args: {1X: v}}}}", CHECK,
         ["build.args name '1X' is not a variable name"]),
        ("{driver: docker, network: true, docker: {image: i, network: none}}", CHECK,
         ["t.yaml:5: sandbox.docker.network", "sandbox.network: true (the host's network) and "
          "sandbox.docker.network: none disagree"]),
        ("{driver: docker, docker: {image: i, network: host}}", CHECK, ["network", "bridge",
                                                                        "none"]),
    ],
)  # fmt: skip
def test_a_field_that_cannot_hold_is_refused_at_load_with_the_way_out(
    tmp_path: Path, sandbox: str, criterion: str, expected: list[str]
) -> None:
    write(tmp_path / "t.yaml", task_text(sandbox=sandbox, criterion=criterion))
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env={"PATH": codex_path()})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "t.yaml" in done.stderr
    for words in expected:
        assert words in done.stderr, done.stderr
    assert "warning:" not in done.stderr  # refused, not warned and ignored


@pytest.mark.parametrize(
    ("sandbox", "criterion"),
    [
        ("{driver: docker, docker: {image: IMAGE, working_dir: auto, network: none}}", CHECK),
        ("{driver: docker, docker: {image: IMAGE, agent_isolation: false, "
         "extra_mounts: ['data:/data']}}", RUN),
        ("{driver: bwrap, docker: {agent_isolation: true}}", RUN),
    ],
)  # fmt: skip
@pytest.mark.docker
def test_what_isolation_allows_plans_without_a_warning_about_the_field(
    tmp_path: Path, docker_image: tuple[Engine, str], sandbox: str, criterion: str
) -> None:
    (tmp_path / "data").mkdir()
    write(tmp_path / "script.yaml", "replies:\n  - {match: p, reply: done}\n")
    write(tmp_path / "t.yaml", task_text(sandbox=sandbox.replace("IMAGE", docker_image[1]),
                                         criterion=criterion))  # fmt: skip
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env={**env(), "PATH": codex_path()})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stderr, done.stderr


@pytest.mark.parametrize("driver", ["tempdir", "bwrap"])
def test_isolation_set_beside_an_agent_without_turns_is_warned_as_doing_nothing(
    tmp_path: Path, driver: str
) -> None:
    import assay

    agent = "{type: command, command: 'cat $ASSAY_TASK_DIR/data.txt'}"
    write(tmp_path / "t.yaml", task_text(agent=agent, sandbox=f"{{driver: {driver}, "
                                         "docker: {agent_isolation: true}}"))  # fmt: skip
    warned = assay.load_task(tmp_path / "t.yaml").warnings
    assert [w.replace(f"{tmp_path}/", "") for w in warned if "agent_isolation" in w] == [
        "t.yaml:5: sandbox.docker.agent_isolation: has no effect on a command agent (it keeps "
        "a coding agent apart from the task's folder and extra_mounts, in a container of its "
        "own); this agent runs in the row's sandbox and sees them"
    ]
    write(tmp_path / "t.yaml", task_text(agent=agent, sandbox=f"{{driver: {driver}}}"))
    assert not [w for w in assay.load_task(tmp_path / "t.yaml").warnings if "isolation" in w]


@pytest.mark.docker
def test_a_bridge_network_the_engine_lacks_is_refused_at_plan(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    engine, image = docker_image
    if engine.run("network", "inspect", "bridge").returncode == 0:
        pytest.skip("this engine has a bridge network (the CI's daemon runs without one)")
    sandbox = f"{{driver: docker, docker: {{image: '{image}', network: bridge}}}}"
    write(tmp_path / "t.yaml", task_text(agent="{type: command, command: 'true'}", sandbox=sandbox))
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env=env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert "t.yaml:5: sandbox.docker.network" in done.stderr
    assert "no working bridge network" in done.stderr and "sandbox.network: true" in done.stderr


@pytest.mark.docker
def test_podmans_bridge_is_tried_at_plan(tmp_path: Path, podman_image: tuple[Engine, str]) -> None:
    """Podman names its default bridge network ``podman`` and takes ``--network bridge``
    for it; whether a container can join it here (its backend, ``netavark``, may be
    missing) is tried at plan: the task runs, or is refused with the engine's reason."""
    _, image = podman_image
    sandbox = f"{{driver: docker, docker: {{engine: podman, image: '{image}', network: bridge}}}}"
    agent = "{type: command, command: 'echo made > out.txt'}"
    write(tmp_path / "t.yaml", task_text(agent=agent, sandbox=sandbox))
    hosts = {**env(), "PATH": env()["PATH"] + ":/usr/sbin:/sbin"}  # netavark runs nft there
    done = run_assay("run", "t.yaml", cwd=tmp_path, env=hosts)
    assert done.returncode == 0, done.stdout + done.stderr
    without = run_assay("plan", "t.yaml", cwd=tmp_path, env=env())  # no /usr/sbin: no nft
    if without.returncode != 0:
        assert without.returncode == 2, without.stdout + without.stderr
        assert (
            "t.yaml:5: sandbox.docker.network: sandbox.docker.network bridge: podman has no "
            "working bridge network here (" in without.stderr
        )


@pytest.mark.docker
def test_build_args_and_extra_args_make_the_image_and_buildkit_is_set(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    engine, image = docker_image
    write(tmp_path / "image" / "Dockerfile", f"FROM {image}\n# {secrets.token_hex(6)}\n"
          "ARG MARK\nRUN echo built with $MARK > /mark.txt\n")  # a context of its own  # fmt: skip
    build = "{args: {MARK: '${TEAM_MARK}-1'}, extra_args: [--label, team.mark=yes]}"
    sandbox = f"{{driver: docker, docker: {{dockerfile_path: image/Dockerfile, build: {build}}}}}"
    agent = "{type: command, command: 'cat /mark.txt | tee out.txt'}"
    write(tmp_path / "t.yaml", task_text(agent=agent, sandbox=sandbox))

    def run(mark: str) -> str:
        done = run_assay("run", "t.yaml", cwd=tmp_path, env={**env(), "TEAM_MARK": mark})
        assert done.returncode == 0, done.stdout + done.stderr
        return next((tmp_path / "runs" / "latest").resolve().rglob("response.txt")).read_text()

    def tags() -> set[str]:  # this test's own (other tests build images at the same time)
        listed = engine.run("images", "--filter", "label=team.mark=yes", "--format",
                            "{{.Repository}}:{{.Tag}}").stdout.split()  # fmt: skip
        return {t for t in listed if t.startswith("assay-task:")}

    start = tags()
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env=env())  # TEAM_MARK not set here
    assert (
        "sandbox.docker.build.args.MARK: $TEAM_MARK is not set here, so the build gets "
        "'${TEAM_MARK}-1' as written" in done.stderr
    ), done.stderr
    before = tags()
    assert run("blue") == "built with blue-1\n"
    first = tags() - before
    assert len(first) == 1
    labels = engine.run("image", "inspect", "--format", "{{json .Config.Labels}}", *first)
    assert json.loads(labels.stdout).get("team.mark") == "yes"
    assert run("green") == "built with green-1\n"  # another argument: another image
    made = tags() - before
    assert len(made) == 2
    engine.run("rmi", *made, *(before - start))

    # buildkit: true sets DOCKER_BUILDKIT=1 for the build: it needs buildx, then
    write(tmp_path / "t.yaml", task_text(agent=agent, sandbox=sandbox.replace(
        "extra_args", "buildkit: true, extra_args").replace("-1'", "-2'")))  # fmt: skip
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env={**env(), "TEAM_MARK": "red"})
    if engine.run("buildx", "version").returncode == 0:
        assert done.returncode == 0, done.stderr
        engine.run("rmi", *(tags() - before))
    else:  # that task's rows would end ERROR with it
        assert done.returncode == 1, done.stderr
        assert "t.yaml:5: sandbox.docker.dockerfile_path" in done.stderr
        assert "BuildKit is enabled but the buildx component is missing" in done.stderr


def agent_reads_the_task_folder(tmp_path: Path, image: str, isolation: str) -> dict[str, Any]:
    write(tmp_path / "script.yaml", "replies:\n  - match: p\n    steps:\n"
          "      - tool: Bash\n        input: {command: 'cat "
          f"{tmp_path / 'answers.txt'}; echo made > out.txt', description: read}}\n"
          "      - reply: done\n")  # fmt: skip
    write(tmp_path / "answers.txt", "the expected answer\n")
    agent = "{type: claude-code, model: mock/script.yaml, permission_mode: bypassPermissions}"
    sandbox = f"{{driver: docker, docker: {{image: '{image}'{isolation}}}}}"
    write(tmp_path / "t.yaml", task_text(agent=agent, sandbox=sandbox,
                                         criterion=RUN if isolation else CHECK))  # fmt: skip
    done = run_assay("run", "t.yaml", cwd=tmp_path, env={**env(), "PATH": codex_path()})
    assert done.returncode == 0, done.stdout + done.stderr
    trace = next((tmp_path / "runs").rglob("trace.json")).read_text()
    result: dict[str, Any] = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    result["trace"] = trace
    return result


@pytest.mark.docker
@pytest.mark.coding_agent
def test_agent_isolation_hides_the_task_folder_and_false_shows_it(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    claude_available()
    isolated = agent_reads_the_task_folder(tmp_path / "on", docker_image[1], "")
    assert isolated["final_status"] == "SUCCESS", isolated["error_message"]
    assert "the expected answer" not in isolated["trace"]
    assert "No such file or directory" in isolated["trace"]
    shared = agent_reads_the_task_folder(tmp_path / "off", docker_image[1],
                                         ", agent_isolation: false")  # fmt: skip
    assert shared["final_status"] == "SUCCESS", shared["error_message"]
    assert "the expected answer" in shared["trace"]


@pytest.mark.parametrize(
    ("agent", "removed", "expected"),
    [
        (CODEX, "/usr/bin/node /usr/bin/nodejs", ["has no node on its PATH", "codex.js) is a "
                                                  "script for it", "apt-get install -y nodejs"]),
        ("{type: claude-code, model: mock/script.yaml}", "/usr/bin/python3*",
         ["has no python3 on its PATH", "the forwarder to the model bridge",
          "apt-get install -y python3"]),
    ],
)  # fmt: skip
@pytest.mark.parametrize("kind", ["docker", "podman"])
@pytest.mark.docker
@pytest.mark.coding_agent
def test_an_image_without_what_the_agents_container_runs_is_refused_at_plan(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str, agent: str, removed: str,
    expected: list[str],
) -> None:  # fmt: skip
    claude_available()
    _, image = request.getfixturevalue(f"{kind}_image")
    write(tmp_path / "image" / "Dockerfile", f"FROM {image}\nRUN rm -f {removed}\n")
    write(tmp_path / "script.yaml", "replies:\n  - {match: p, reply: done}\n")
    sandbox = f"{{driver: docker, docker: {{engine: {kind}, dockerfile_path: image/Dockerfile}}}}"
    write(tmp_path / "t.yaml", task_text(agent=agent, sandbox=sandbox))
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env={**env(), "PATH": codex_path()})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "t.yaml:5: sandbox.docker.dockerfile_path: the image assay-task:" in done.stderr
    for words in expected:
        assert words in done.stderr, done.stderr


@pytest.mark.docker
@pytest.mark.coding_agent
def test_an_image_without_python3_is_refused_at_plan_for_an_agent_judge(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """The judge's CLI runs in a container of the row's image, and its verdict tool on the
    image's ``python3``: the plan says so, not every row."""
    claude_available()
    write(
        tmp_path / "image" / "Dockerfile", f"FROM {docker_image[1]}\nRUN rm -f /usr/bin/python3*\n"
    )
    write(tmp_path / "script.yaml", "replies:\n  - {match: p, reply: done}\n")
    sandbox = "{driver: docker, docker: {dockerfile_path: image/Dockerfile}}"
    judge = ("{type: agent_judge, description: j, prompt: 'is it good?', "
             "agent: {model: mock/script.yaml}}")  # fmt: skip
    write(tmp_path / "t.yaml", task_text(agent="{type: command, command: 'true'}",
                                         sandbox=sandbox, criterion=judge))  # fmt: skip
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env={**env(), "PATH": codex_path()})
    assert done.returncode == 2, done.stdout + done.stderr
    for words in ("t.yaml:5: sandbox.docker.dockerfile_path: the image assay-task:",
                  "has no python3 on its PATH", "an agent_judge's verdict tool runs on it",
                  "apt-get install -y python3"):  # fmt: skip
        assert words in done.stderr, done.stderr


def test_an_image_whose_node_is_older_than_the_cli_asks_is_warned_at_plan(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Debian bookworm's Node.js 18 in the tests' image, and the Gemini CLI asks for >=20 in
    its package.json (on 18 it fails as it starts): the plan warns, at the image field, with
    both versions; Codex asks for >=16 and gets no warning."""
    write(tmp_path / "script.yaml", "replies:\n  - {match: p, reply: done}\n")
    sandbox = f"{{driver: docker, docker: {{image: '{docker_image[1]}'}}}}"
    for agent, warned in (("gemini", True), ("codex", False)):
        write(tmp_path / "t.yaml", task_text(agent=f"{{type: {agent}, model: mock/script.yaml}}",
                                             sandbox=sandbox))  # fmt: skip
        done = run_assay("plan", "t.yaml", cwd=tmp_path, env={**env(), "PATH": codex_path()})
        assert done.returncode == 0, done.stdout + done.stderr
        said = [line for line in done.stderr.splitlines() if "Node.js" in line]
        if not warned:
            assert said == [], done.stderr
            continue
        (line,) = said
        assert line.startswith(f"warning: t.yaml:5: sandbox.docker.image: the image "
                               f"{docker_image[1]} has Node.js v18.")  # fmt: skip
        assert "the gemini CLI asks for >=20 (engines.node in its package.json)" in line


def test_node_versions_are_read_from_the_package_and_compared() -> None:
    from assay.sandbox.node_version import declared_node, too_old
    from tests.agents.coding import CODEX_BIN

    assert declared_node(CODEX_BIN / "gemini") == ">=20"
    assert declared_node(CODEX_BIN / "codex") == ">=16"
    assert declared_node(Path("/bin/sh")) is None
    cases = [("v18.20.4", ">=20", True), ("v20.0.0", ">=20", False), ("v20.5.9", ">=20.6.0", True),
             ("v22.1.0", ">= 22.0", False), ("v18.0.0", "^20", False),
             ("v18.0.0", ">=20 || >=16", False), ("garbage", ">=20", False)]  # fmt: skip
    for version, wanted, old in cases:
        assert too_old(version, wanted) is old, (version, wanted)


@pytest.mark.docker
def test_a_plan_asks_each_engine_once_whether_it_ignores_limits(
    tmp_path: Path, docker_image: tuple[Engine, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two ``docker`` task files with limits: the limits line and the warnings of both come
    from one ``docker info`` (each asked it twice before)."""
    import subprocess

    import assay

    engine, image = docker_image
    sandbox = f"{{driver: docker, docker: {{image: '{image}'}}, limits: {{max_memory_mb: 64}}}}"
    for name in ("a", "b"):
        write(
            tmp_path / f"{name}.yaml",
            task_text(agent="{type: command, command: 'true'}", sandbox=sandbox).replace(
                "t\n", f"{name}\n", 1
            ),
        )
    asked: list[list[str]] = []
    real = subprocess.run

    def counting(args: Any, *rest: Any, **options: Any) -> Any:
        if isinstance(args, list) and args and args[0] == str(engine.path):
            asked.append(args[1:])
        return real(args, *rest, **options)

    monkeypatch.setattr(subprocess, "run", counting)
    monkeypatch.setenv("PATH", f"{engine.path.parent}:/usr/bin:/bin")
    plan = assay.plan([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")])
    assert [t.limits for t in plan.tasks] == [plan.tasks[0].limits] * 2
    assert "max_memory_mb 64" in plan.tasks[0].limits
    assert sum(1 for a in asked if a[0] == "info") == 1, asked


@pytest.mark.docker
@pytest.mark.coding_agent
def test_an_images_own_model_route_does_not_reach_the_coding_agent(
    tmp_path: Path, docker_image: tuple[Engine, str]
) -> None:
    """Found by a helper (findings K): an image whose ENV sets ``CLAUDE_CODE_USE_BEDROCK``
    sent Claude Code to Bedrock, past the model bridge (its limits, its accounting); the
    host's such variables were withheld, the image's were not."""
    claude_available()
    _, image = docker_image
    write(tmp_path / "image" / "Dockerfile", f"FROM {image}\n"
          "ENV CLAUDE_CODE_USE_BEDROCK=1 ANTHROPIC_BEDROCK_BASE_URL=http://192.0.2.1 "
          "AWS_REGION=us-east-1\n")  # fmt: skip
    write(tmp_path / "script.yaml", "replies:\n  - match: p\n    steps:\n"
          "      - tool: Bash\n        input: {command: 'echo made > out.txt', "
          "description: make}\n      - reply: done\n")  # fmt: skip
    agent = "{type: claude-code, model: mock/script.yaml, permission_mode: bypassPermissions}"
    sandbox = "{driver: docker, docker: {dockerfile_path: image/Dockerfile}}"
    write(tmp_path / "t.yaml", task_text(agent=agent, sandbox=sandbox, criterion=CHECK))
    done = run_assay("run", "t.yaml", cwd=tmp_path, env={**env(), "PATH": codex_path()})
    result = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    assert result["final_status"] == "SUCCESS", (result["error_message"], done.stderr)
    assert result["transcript"]["model_calls"] >= 1  # through the bridge
