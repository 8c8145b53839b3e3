"""``assay doctor``: every driver tried for real on this machine; one that does not work says
why and how to fix it (bubblewrap missing, no container engine, a daemon that does not
answer), and one that works names the limits it enforces."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from assay.sandbox import cgroups
from assay.sandbox.doctor import SUBREAPER, TEMPDIR, cgroup_note, check_drivers
from tests.agents.coding import run_assay

VENV_BIN = str(Path(sys.executable).parent)
GROUPS = isinstance(cgroups.find(), cgroups.Hierarchies)  # rows get cgroups of their own here


def doctor(env: dict[str, str], tmp_path: Path) -> dict[str, list[str]]:
    done = run_assay("doctor", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    found: dict[str, list[str]] = {}
    name = ""
    for line in done.stdout.splitlines():
        if line.startswith("  "):
            found[name].append(line.strip())
        else:
            matched = re.match(r"(.+?): ((works|does not work).*)$", line)
            assert matched is not None, line
            name = matched.group(1)
            found[name] = [matched.group(2)]
    return found


def test_without_bubblewrap_or_an_engine_each_driver_says_why_and_the_fix(tmp_path: Path) -> None:
    found = doctor({"PATH": VENV_BIN}, tmp_path)
    assert found["tempdir"][0].startswith("works")
    assert found["bwrap"][0].startswith("does not work") and "not installed" in found["bwrap"][0]
    assert "apt-get install bubblewrap" in found["bwrap"][1]
    assert found["docker"][0] == "does not work — docker is not installed"
    assert "apt-get install docker.io" in found["docker"][1]
    assert "apt-get install podman" in found["docker (engine: podman)"][1]


def test_a_docker_daemon_that_does_not_answer_is_named_with_how_to_start_one(
    tmp_path: Path,
) -> None:
    env = {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
           "DOCKER_HOST": f"unix://{tmp_path}/no-daemon.sock"}  # fmt: skip
    found = doctor(env, tmp_path)
    if found["docker"][0] == "does not work — docker is not installed":
        pytest.skip("docker driver tests left out: the docker CLI is not installed")
    assert "its daemon does not answer" in found["docker"][0]
    assert "no-daemon.sock" in found["docker"][0]
    assert "--iptables=false" in found["docker"][1] and "DOCKER_HOST" in found["docker"][1]


def test_the_drivers_that_work_here_name_the_limits_they_enforce(tmp_path: Path) -> None:
    env = {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"}
    env.update({k: os.environ[k] for k in ("DOCKER_HOST",) if k in os.environ})
    found = doctor(env, tmp_path)
    grouped = "max_memory_mb, max_cpus, max_pids, " if GROUPS else ""
    assert found["tempdir"][1] == f"sandbox.limits enforced: {grouped}max_output_mb, max_log_mb"
    assert found["bwrap"][0].startswith("works") and cgroup_note() in found["bwrap"][0]
    assert cgroup_note() in found["tempdir"][0]
    assert ("max_memory_mb" in found["bwrap"][1]) is GROUPS and "max_pids" in found["bwrap"][1]
    if found["docker"][0].startswith("works"):
        assert "max_memory_mb, max_cpus" in found["docker"][1]


def test_without_cgroups_the_tempdir_line_names_the_subreaper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cgroups, "find", lambda **_: "no cgroup v1 hierarchy here")
    tempdir = check_drivers(path_variable="/usr/bin:/bin")[0]
    assert tempdir.detail == (f"{TEMPDIR}; max_memory_mb and max_cpus not enforced: no cgroup "
                              f"v1 hierarchy here; {SUBREAPER}")  # fmt: skip
    assert tempdir.limits == ("max_output_mb", "max_log_mb")


def test_the_cgroup_note_says_whether_rows_get_groups_here() -> None:
    found = cgroups.find()
    if GROUPS:
        assert cgroup_note() == ("each row in cgroups of its own (cgroup v1: memory, cpu, pids): "
                                 "max_memory_mb, max_cpus and max_pids enforced")  # fmt: skip
    else:
        assert cgroup_note() == f"max_memory_mb and max_cpus not enforced: {found}"


PLANNED = ("task_id: t\ndescription: d\ninitial_prompt: p\n"
           "agent: {type: command, command: 'true'}\n"
           "sandbox: {SANDBOX, limits: {max_memory_mb: 64, max_pids: 10, cpu_seconds: 5}}\n"
           "success_criteria: [{type: file_exists, path: a, description: d}]\n")  # fmt: skip


@pytest.mark.parametrize(
    "driver", ["tempdir", "bwrap", pytest.param("docker", marks=pytest.mark.docker)]
)
def test_assay_plan_names_the_limits_the_driver_enforces_and_those_it_does_not(
    tmp_path: Path, driver: str, request: pytest.FixtureRequest
) -> None:
    sandbox = f"driver: {driver}"
    env = {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"}
    if driver == "docker":
        _, image = request.getfixturevalue("docker_image")
        sandbox += f", docker: {{image: '{image}'}}"
        env.update({k: os.environ[k] for k in ("DOCKER_HOST",) if k in os.environ})
    (tmp_path / "t.yaml").write_text(PLANNED.replace("SANDBOX", sandbox))
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith(f"  limits ({driver}):"))
    expected = {  # max_memory_mb (and tempdir's max_pids) where this machine gives row cgroups
        "tempdir": "max_memory_mb 64, max_pids 10, max_output_mb 10, max_log_mb 256; unset: "
        "max_cpus; not enforced by tempdir: cpu_seconds"
        if GROUPS
        else "max_output_mb 10, max_log_mb 256; not enforced by tempdir: "
        "cpu_seconds, max_memory_mb, max_pids",
        "bwrap": "max_pids 10, cpu_seconds 5, max_file_size_mb 1024, max_open_files 4096, "
        + (
            "max_memory_mb 64, max_output_mb 10, max_log_mb 256; unset: max_cpus"
            if GROUPS
            else "max_output_mb 10, max_log_mb 256; not enforced by bwrap: max_memory_mb"
        ),
        "docker": "max_pids 10, cpu_seconds 5, max_file_size_mb 1024, max_open_files 4096, "
        "max_memory_mb 64, max_output_mb 10, max_log_mb 256; unset: max_cpus",
    }
    assert line == f"  limits ({driver}): {expected[driver]}"
    warned = "sandbox.limits.max_memory_mb is enforced by the docker driver" in done.stderr
    assert warned == (driver != "docker" and not GROUPS)


def test_each_coding_agents_cli_is_found_or_named_with_how_to_install_it(tmp_path: Path) -> None:
    missing = doctor({"PATH": VENV_BIN, "ASSAY_CLI_DIR": str(tmp_path / "none")}, tmp_path)
    for agent, package, target in [
        ("qwen-code", "@qwen-code/qwen-code@0.24.4", ".installed-qwen"),
        ("opencode", "opencode-ai@1.18.33", ".installed-opencode"),
        ("pi", "@mariozechner/pi-coding-agent@0.73.1", ".installed-pi"),
    ]:
        line, fix = missing[f"agent {agent}"]
        assert line.startswith("does not work") and "CLI was not found" in line
        assert package in fix and f"make .tools/{target}" in fix
    assert missing["agent gemini"][0].startswith("does not work")
    tools = Path(__file__).resolve().parents[2] / ".tools" / "npm" / "node_modules" / ".bin"
    found = doctor({"PATH": f"{tools}:{VENV_BIN}:/usr/bin:/bin"}, tmp_path)
    for agent, program in [("codex", "codex"), ("gemini", "gemini"), ("qwen-code", "qwen"),
                           ("opencode", "opencode"), ("pi", "pi")]:  # fmt: skip
        assert found[f"agent {agent}"] == [f"works — {tools / program}"]


def test_the_programs_criteria_run_in_a_row_are_tried_or_named_with_the_fix(
    tmp_path: Path,
) -> None:
    """pytest and pylint_score run a program in the row (found on the rows' PATH and run
    for real), uipath_eval the uipath CLI (the rows' PATH, else the clone's pinned copy)."""
    found = doctor({"PATH": f"{VENV_BIN}:/usr/bin:/bin"}, tmp_path)
    assert re.fullmatch(rf"works — pytest \S+ \({re.escape(VENV_BIN)}/pytest\)",
                        found["criterion pytest"][0])  # fmt: skip
    assert re.fullmatch(rf"works — pylint \S+ \({re.escape(VENV_BIN)}/python3\)",
                        found["criterion pylint_score"][0])  # fmt: skip
    tools = Path(__file__).resolve().parents[2] / ".tools" / "uipath" / "bin" / "uipath"
    assert re.fullmatch(rf"works — uipath version \S+ \({re.escape(str(tools))}\)",
                        found["criterion uipath_eval"][0])  # fmt: skip
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pytest").write_text("#!/bin/sh\nexit 3\n")  # on PATH but does not run
    (fake / "pytest").chmod(0o755)
    (fake / "python3").symlink_to("/bin/false")
    missing = doctor({"PATH": str(fake)}, tmp_path)
    assert missing["criterion pytest"] == [
        f"does not work — pytest: {fake / 'pytest'} exited with 3",
        "fix: pip install pytest where the rows run (on their PATH)",
    ]
    gone = doctor({"PATH": str(tmp_path / "none")}, tmp_path)
    assert gone["criterion pytest"][0] == "does not work — pytest: not on the rows' PATH"
    assert missing["criterion pylint_score"][0].startswith("does not work")
    assert "pylint>=3" in missing["criterion pylint_score"][1]


def test_a_program_that_gives_no_answer_is_named_and_its_group_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.criteria import base

    monkeypatch.setattr(base, "ANSWER_SECONDS", 1)
    marker = tmp_path / "child-still-there"
    hang = tmp_path / "pytest"
    hang.write_text(f"#!/bin/sh\n(/bin/sleep 3; /usr/bin/touch {marker}) &\n/bin/sleep 30\n")
    hang.chmod(0o755)
    check = base.answering_program("pytest", ["pytest", "--version"],
                                   path_variable=str(tmp_path), fix="f")  # fmt: skip
    assert (check.found, check.fix) == (None, f"see why {hang} hangs")
    assert check.reason == f"{hang} gave no answer within 1 s"
    import time

    time.sleep(3.5)
    assert not marker.exists()  # its background child was killed with it
