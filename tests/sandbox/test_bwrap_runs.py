"""``sandbox.driver: bwrap`` in whole runs, as a user starts them: ``pre_run``, the agent,
``run_command`` / ``pytest`` and ``post_run`` all run inside the row's sandbox (its own
hostname, user and network), the run folder and the store stay hidden from them, and
``assay evaluate`` grades again inside a sandbox."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.agents.coding import run_assay
from tests.helpers import write

VENV_BIN = str(Path(sys.executable).parent)
WHERE = "echo $(hostname) $(id -u) $(ls -A $ASSAY_TASK_DIR/runs 2>/dev/null | wc -l)"
TASK = f"""\
task_id: inside
description: every program of the row runs in its bwrap sandbox
agent:
  type: command
  command: '{WHERE}; cat $ASSAY_TASK_DIR/.assay/store.db; cat $ASSAY_PROMPT_FILE'
sandbox: {{driver: bwrap, limits: {{max_pids: 256}}}}
pre_run: [{{command: '{WHERE} > pre.txt'}}]
post_run: [{{command: '{WHERE}'}}]
dataset: {{rows: [{{id: r1}}, {{id: r2}}]}}
initial_prompt: "the prompt of ${{row.id}}"
success_criteria:
  - {{type: run_command, command: 'test "$(hostname)" = assay && test "$(id -u)" != 0',
      description: graded inside}}
  - {{type: file_contains, path: pre.txt, includes: [assay], description: pre_run inside}}
  - {{type: pytest, description: the tests pass inside}}
"""


def task_of(run_dir: Path, row: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((run_dir / "default" / "inside" / row / "00" /
                                        "task.json").read_text())  # fmt: skip
    return found


def test_every_program_of_a_row_runs_inside_and_sees_no_run_or_store(tmp_path: Path) -> None:
    write(tmp_path / "inside.yaml", TASK)
    write(tmp_path / ".assay" / "store.db", "the team's datasets\n")
    write(tmp_path / "test_inside.py", "import socket\n"
          "def test_host(): assert socket.gethostname() == 'assay'\n")  # fmt: skip
    template = "sandbox: {driver: bwrap, limits: {max_pids: 256}, template_sources: [{type: " \
               "template_dir, path: tests}]}"  # fmt: skip
    write(tmp_path / "tests" / "test_inside.py", (tmp_path / "test_inside.py").read_text())
    (tmp_path / "inside.yaml").write_text(TASK.replace(
        "sandbox: {driver: bwrap, limits: {max_pids: 256}}", template))  # fmt: skip
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin"}
    done = run_assay("run", "inside.yaml", "-j", "2", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = (tmp_path / "runs" / "latest").resolve()
    for row in ("r1", "r2"):
        result = task_of(run_dir, row)
        assert result["final_status"] == "SUCCESS", result["success_criteria_results"]
        host, uid, runs = (run_dir / "default" / "inside" / row / "00" /
                           "response.txt").read_text().split()[:3]  # fmt: skip
        assert (host, runs) == ("assay", "0") and uid != "0"
        response = (run_dir / "default" / "inside" / row / "00" / "response.txt").read_text()
        assert "the team's datasets" not in response
        assert f"the prompt of {row}" in response
        assert result["post_run_results"][0]["stdout"].split()[0] == "assay"


def test_assay_evaluate_grades_a_bwrap_run_inside_again(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", "task_id: again\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'echo hi > out.txt'}\nsandbox: {driver: bwrap}\n"
          "success_criteria:\n  - {type: run_command, command: 'test \"$(hostname)\" = assay',"
          " description: inside}\n")  # fmt: skip
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin"}
    executed = run_assay("execute", "t.yaml", cwd=tmp_path, env=env)
    assert executed.returncode == 0, executed.stderr
    evaluated = run_assay("evaluate", str(tmp_path / "runs" / "latest"), cwd=tmp_path, env=env)
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    row = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    assert row["final_status"] == "SUCCESS"
    assert row["success_criteria_results"][0]["score"] == 1.0


def test_a_shared_folder_on_path_is_not_shown_to_the_sandbox(tmp_path: Path) -> None:
    """``/tmp`` (or ``/``) on ``PATH`` once bound the host's whole temporary folder, other
    rows' sandboxes included, into every sandbox; ``ASSAY_SANDBOX`` is absolute even with a
    relative ``--run-dir`` and kept sandboxes."""
    outside = Path(tempfile.mkdtemp(prefix="assay-host-"))  # in /tmp, beside the task folder
    write(outside / "host-secret.txt", "the host's file\n")
    write(tmp_path / "t.yaml", "task_id: shared\ndescription: d\ninitial_prompt: p\n"
          f"agent: {{type: command, command: 'cat {outside}/host-secret.txt; "
          "echo made > \"$ASSAY_SANDBOX/out.txt\"; echo \"$ASSAY_SANDBOX\"'}\n"
          "sandbox: {driver: bwrap}\n"
          "success_criteria: [{type: file_exists, path: out.txt, description: d}]\n")  # fmt: skip
    for shared in ("/tmp", "/"):
        env = {"PATH": f"{shared}:{VENV_BIN}:/usr/bin:/bin"}
        done = run_assay("run", "t.yaml", "--run-dir", "runs", "--keep-sandboxes",
                         cwd=tmp_path, env=env)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        run_dir = (tmp_path / "runs" / "latest").resolve()
        folder = run_dir / "default" / "shared" / "00"
        response = (folder / "response.txt").read_text()
        assert "the host's file" not in response
        assert response.strip() == str(folder / "sandbox")
    shutil.rmtree(outside)


def test_a_row_stopped_by_a_sandbox_limit_names_the_limit(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", "task_id: big\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'head -c 3000000 /dev/zero > big'}\n"
          "sandbox: {driver: bwrap, limits: {max_file_size_mb: 1}}\n"
          "success_criteria: [{type: file_exists, path: big, description: d}]\n")  # fmt: skip
    done = run_assay("run", "t.yaml", cwd=tmp_path, env={"PATH": f"{VENV_BIN}:/usr/bin:/bin"})
    assert done.returncode == 1
    result = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    assert result["final_status"] == "ERROR"
    assert result["error_message"].startswith(
        "the agent command exited with code 153 (SIGXFSZ: a file grew past "
        "sandbox.limits.max_file_size_mb)"
    )
