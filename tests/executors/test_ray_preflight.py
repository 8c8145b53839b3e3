"""What stops a Ray run before any row: each with a message that says what to do."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import assay
from assay.errors import UsageError
from tests.agents.coding import CODEX_BIN
from tests.executors.conftest import RayCluster
from tests.helpers import write

REPO = Path(__file__).resolve().parents[2]
TASK = """\
task_id: tiny
description: one row
initial_prompt: say ok
agent: {type: command, command: echo ok}
success_criteria: [{type: file_check, includes: [ok], description: answered}]
"""


def _assay(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=180, env={**os.environ, **(env or {})})  # fmt: skip


def test_no_ray_installed_says_which_extra(tmp_path: Path) -> None:
    write(tmp_path / "task.yaml", TASK)
    write(tmp_path / "hide" / "ray" / "__init__.py", "raise ImportError('No module named ray')\n")
    done = _assay("run", "task.yaml", "--executor", "ray", cwd=tmp_path,
                  env={"PYTHONPATH": str(tmp_path / "hide")})  # fmt: skip
    assert done.returncode == 2
    assert "--executor ray needs Ray, which is not installed" in done.stderr
    assert "make install-dev (in " in done.stderr and "(Ray 2.60.0)" in done.stderr  # a clone
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").glob("2*/*/"))


def test_ray_flags_without_the_ray_executor_are_refused(tmp_path: Path) -> None:
    write(tmp_path / "task.yaml", TASK)
    with pytest.raises(
        UsageError,
        match=r"ray_address and ray_files \(--ray-address, --ray-files\) need "
        r"executor='ray' \(--executor ray\)",
    ):
        assay.run(tmp_path / "task.yaml", run_dir=tmp_path / "runs", ray_address="auto")
    with pytest.raises(UsageError, match="unknown executor 'dask'; choose one of local, ray"):
        assay.run(tmp_path / "task.yaml", run_dir=tmp_path / "runs", executor="dask")  # type: ignore[typeddict-item]


@pytest.mark.ray
def test_an_unreachable_address_is_refused_at_once(tmp_path: Path) -> None:
    write(tmp_path / "task.yaml", TASK)
    before = _assay("run", "task.yaml", cwd=tmp_path)
    assert before.returncode in (0, 1), before.stderr
    (earlier,) = [p.name for p in (tmp_path / "runs").iterdir() if p.name != "latest"]
    done = _assay("run", "task.yaml", "--executor", "ray", "--ray-address", "127.0.0.1:9",
                  cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    assert "cannot reach the Ray cluster at 127.0.0.1:9 (127.0.0.1:9): Connection refused" in (
        done.stderr
    )
    # nothing ran: no folder without run.json is left, and latest names the run before
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [earlier, "latest"]
    assert os.readlink(tmp_path / "runs" / "latest") == earlier
    assert "start its head node (`ray start --head`)" in done.stderr
    done = _assay("run", "task.yaml", "--executor", "ray", "--ray-address", "ray://h:10001",
                  cwd=tmp_path)  # fmt: skip
    assert "Ray Client addresses (ray://) are not supported" in done.stderr


@pytest.mark.ray
def test_a_token_the_cluster_refuses_is_named(ray_cluster: RayCluster, tmp_path: Path) -> None:
    write(tmp_path / "task.yaml", TASK)
    write(tmp_path / "wrong-token", "not-the-clusters-token-" + "1" * 32)
    wrong = {"RAY_AUTH_TOKEN_PATH": str(tmp_path / "wrong-token")}
    done = _assay("run", "task.yaml", "--executor", "ray", "--ray-address", ray_cluster.address,
                  cwd=tmp_path, env=wrong)  # fmt: skip
    assert done.returncode == 2
    assert (f"the Ray cluster at {ray_cluster.address} refused this process's authentication "
            "token") in done.stderr  # fmt: skip
    assert "RAY_AUTH_TOKEN_PATH=<the cluster's token file>" in done.stderr


@pytest.mark.ray
def test_a_node_without_the_agents_cli_is_named(
    restore_nodes: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver has Codex; a node started without it on its PATH refuses the run."""
    path = os.environ.get("PATH", "")
    monkeypatch.setenv("PATH", f"{CODEX_BIN}{os.pathsep}{path}")
    assert shutil.which("codex") is not None
    bare = os.pathsep.join(p for p in path.split(os.pathsep)
                           if not (Path(p) / "codex").exists())  # fmt: skip
    restore_nodes.add_worker(PATH=bare, ASSAY_CLI_DIR=str(tmp_path / "no-clis"))
    write(tmp_path / "task.yaml", TASK.replace("{type: command, command: echo ok}",
                                               "{type: codex, model: mock/echo}"))  # fmt: skip
    with pytest.raises(UsageError) as caught:
        assay.run(tmp_path / "task.yaml", run_dir=tmp_path / "runs", executor="ray",
                  ray_address=restore_nodes.address)  # fmt: skip
    assert "the codex CLI was not found (agent.cli_path, then PATH, then" in caught.value.message
    assert caught.value.message.startswith("node ")
    assert "npm install -g @openai/codex@0.171.0" in (caught.value.hint or "")


@pytest.mark.ray
def test_a_node_that_cannot_make_a_bwrap_sandbox_is_named(
    restore_nodes: RayCluster, tmp_path: Path
) -> None:
    """The driver makes bwrap sandboxes; a node whose bwrap fails (here a ``bwrap`` first on
    its PATH that refuses, as one without user namespaces does) refuses the run."""
    fake = tmp_path / "bin"
    write(fake / "bwrap", "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                          "exit 1\n")  # fmt: skip
    (fake / "bwrap").chmod(0o755)
    restore_nodes.add_worker(PATH=f"{fake}{os.pathsep}{os.environ.get('PATH', '')}")
    write(tmp_path / "task.yaml", TASK + "sandbox: {driver: bwrap}\n")
    with pytest.raises(UsageError) as caught:
        assay.run(tmp_path / "task.yaml", run_dir=tmp_path / "runs", executor="ray",
                  ray_address=restore_nodes.address)  # fmt: skip
    message = caught.value.message
    assert message.startswith("node ")
    assert (
        "the machine cannot make a bwrap sandbox: bwrap: No permissions to create new "
        "namespace" in message
    )
    assert caught.value.hint


@pytest.mark.ray
def test_without_an_address_a_local_ray_instance_is_started_and_stopped(tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples" / "sentiment", tmp_path / "sentiment")
    scratch = Path(tempfile.mkdtemp(prefix="assay-ray-", dir="/tmp"))  # short: socket paths
    env = {"RAY_TMPDIR": str(scratch), "HOME": str(tmp_path / "home")}
    for name in ("RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE", "RAY_ADDRESS"):
        env[name] = ""
    done = _assay("run", "sentiment", "--executor", "ray", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "3 row-task(s): 2 passed, 1 failed, 0 errored" in done.stdout
    assert not (tmp_path / "home" / ".ray").exists()  # its token was a temporary file
    left = subprocess.run(["pgrep", "-f", str(scratch)], capture_output=True, text=True)
    shutil.rmtree(scratch, ignore_errors=True)
    assert left.stdout == ""  # every process of the instance ended


@pytest.mark.ray
def test_a_local_instance_that_cannot_start_says_why(tmp_path: Path) -> None:
    write(tmp_path / "task.yaml", TASK)
    deep = tmp_path / ("x" * 90)  # Ray's socket paths would pass 107 characters
    deep.mkdir()
    env = {"RAY_TMPDIR": str(deep), "RAY_AUTH_TOKEN_PATH": "", "RAY_ADDRESS": ""}
    done = _assay("run", "task.yaml", "--executor", "ray", cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert "could not start a local Ray instance: " in done.stderr
    assert "AF_UNIX path length cannot exceed 107 bytes" in done.stderr
