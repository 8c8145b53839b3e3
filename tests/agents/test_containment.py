"""The real Claude Code, Codex, Qwen Code, OpenCode and Pi CLIs in the ``bwrap`` driver (the default
for a coding agent that may act): what they write outside the row's folder, read from the host, or
connect to stays out of reach; with ``driver: tempdir`` the same scripted tool calls do reach the
host (the trial that motivated the driver), so these tests fail on an uncontained sandbox."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.results.transcript_otlp import from_trace
from tests.agents.coding import claude_available, codex_path, run_assay
from tests.helpers import host_tcp_server, write

pytestmark = pytest.mark.coding_agent

SCRIPT = """\
replies:
  - match: "job: claude"
    steps:
      - tool: Write
        input: {{file_path: "{outside}/claude-wrote.txt", content: "escaped"}}
      - tool: Bash
        input: {{command: "cat {secret}; echo appended >> {secret}", description: read}}
      - tool: Bash
        input: {{command: "{connect}", description: net}}
      - tool: Write
        input: {{file_path: "${{sandbox}}/inside.txt", content: "kept"}}
      - reply: "done"
  - match: "job: codex"
    steps:
      - tool: exec_command
        input: {{cmd: "echo escaped > {outside}/codex-wrote.txt; cat {secret}"}}
      - tool: exec_command
        input: {{cmd: "echo kept > inside.txt"}}
      - reply: "done"
  - match: "job: qwen"
    steps:
      - tool: run_shell_command
        input: {{command: "echo escaped > {outside}/qwen-wrote.txt; cat {secret}"}}
      - tool: write_file
        input: {{file_path: "{outside}/qwen-wrote-too.txt", content: "escaped"}}
      - tool: run_shell_command
        input: {{command: "echo kept > inside.txt"}}
      - reply: "done"
  - match: "job: opencode"
    steps:
      - tool: bash
        input: {{command: "echo escaped > {outside}/opencode-wrote.txt; cat {secret}",
                 description: out}}
      - tool: bash
        input: {{command: "echo kept > inside.txt", description: in}}
      - reply: "done"
  - match: "job: pi"
    steps:
      - tool: bash
        input: {{command: "echo escaped > {outside}/pi-wrote.txt; cat {secret}"}}
      - tool: write
        input: {{path: "{outside}/pi-wrote-too.txt", content: "escaped"}}
      - tool: bash
        input: {{command: "echo kept > inside.txt"}}
      - reply: "done"
"""
TASK = """\
task_id: {task_id}
description: containment
agent: {agent}
{sandbox}initial_prompt: "job: {job}"
success_criteria:
  - {{type: file_exists, path: inside.txt, description: the row's own folder is writable}}
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The same scripted escapes by both CLIs, in bwrap and in tempdir."""
    claude_available()
    cwd = tmp_path_factory.mktemp("contain")
    outside = tmp_path_factory.mktemp("outside")
    secret = write(outside / "secret.txt", "host-secret\n")
    with host_tcp_server(b"host-answered") as port:
        connect = (f"python3 -c 'import socket; print(socket.create_connection((\\\"127.0.0.1\\\", "
                   f"{port}), 3).recv(20).decode())'")  # fmt: skip
        write(cwd / "script.yaml", SCRIPT.format(outside=outside, secret=secret, connect=connect))
        claude = "{type: claude-code, model: mock/script.yaml, permission_mode: bypassPermissions}"
        codex = "{type: codex, model: mock/script.yaml}"
        qwen = "{type: qwen-code, model: mock/script.yaml}"
        opencode = "{type: opencode, model: mock/script.yaml}"
        pi = "{type: pi, model: mock/script.yaml}"
        for task_id, agent, job, sandbox in [
            ("claude_bwrap", claude, "claude", ""), ("codex_bwrap", codex, "codex", ""),
            ("qwen_bwrap", qwen, "qwen", ""), ("opencode_bwrap", opencode, "opencode", ""),
            ("pi_bwrap", pi, "pi", ""),
            ("claude_tempdir", claude, "claude", "sandbox: {driver: tempdir}\n"),
        ]:  # fmt: skip
            write(cwd / f"{task_id}.yaml", TASK.format(task_id=task_id, agent=agent, job=job,
                                                        sandbox=sandbox))  # fmt: skip
        contained = run_assay("run", "claude_bwrap.yaml", "codex_bwrap.yaml", "qwen_bwrap.yaml",
                              "opencode_bwrap.yaml", "pi_bwrap.yaml", "-j", "4",
                              cwd=cwd, env={"PATH": codex_path()})  # fmt: skip
        assert "Traceback" not in contained.stderr, contained.stderr
        after_contained = {p.name: p.read_text() for p in outside.iterdir()}
        loose = run_assay("run", "claude_tempdir.yaml", cwd=cwd, env={"PATH": codex_path()})
        assert "Traceback" not in loose.stderr, loose.stderr
    yield {"cwd": cwd, "outside": outside, "contained": after_contained, "loose": loose,
           "secret": secret}  # fmt: skip


def row_of(cwd: Path, suite: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        next((cwd / "runs").glob(f"*/default/{suite}/00/task.json")).read_text())  # fmt: skip
    return found


def tool_results(cwd: Path, suite: str) -> list[str]:
    """Every tool result of the row, read back from its trace.json."""
    trace = json.loads(next((cwd / "runs").glob(f"*/default/{suite}/00/trace.json")).read_text())
    transcript = from_trace(trace)
    assert transcript is not None
    return [use.result or "" for use in transcript.tool_uses()]


def test_claude_codes_write_to_an_absolute_path_outside_does_not_reach_the_host(
    runs: dict[str, Any],
) -> None:
    assert runs["contained"] == {"secret.txt": "host-secret\n"}
    row = row_of(runs["cwd"], "claude_bwrap")
    assert row["final_status"] == "SUCCESS", row["error_message"]  # its own folder is writable
    assert row["transcript"]["tool_calls_by_name"] == {"Write": 2, "Bash": 2}


def test_claude_code_reads_no_host_file_and_reaches_no_host_port(runs: dict[str, Any]) -> None:
    text = " ".join(tool_results(runs["cwd"], "claude_bwrap"))
    assert "host-secret" not in text and "host-answered" not in text
    assert "No such file or directory" in text


def test_codex_is_contained_too(runs: dict[str, Any]) -> None:
    row = row_of(runs["cwd"], "codex_bwrap")
    assert row["final_status"] == "SUCCESS", row["error_message"]
    assert "codex-wrote.txt" not in runs["contained"]
    assert "host-secret" not in " ".join(tool_results(runs["cwd"], "codex_bwrap"))


def test_qwen_code_is_contained_too(runs: dict[str, Any]) -> None:
    row = row_of(runs["cwd"], "qwen_bwrap")
    assert row["final_status"] == "SUCCESS", row["error_message"]
    assert row["transcript"]["tool_calls_by_name"] == {"Bash": 2, "Write": 1}
    assert "host-secret" not in " ".join(tool_results(runs["cwd"], "qwen_bwrap"))


def test_opencode_is_contained_too(runs: dict[str, Any]) -> None:
    row = row_of(runs["cwd"], "opencode_bwrap")
    assert row["final_status"] == "SUCCESS", row["error_message"]
    assert row["transcript"]["tool_calls_by_name"] == {"Bash": 2}
    assert "host-secret" not in " ".join(tool_results(runs["cwd"], "opencode_bwrap"))


def test_pi_is_contained_too(runs: dict[str, Any]) -> None:
    row = row_of(runs["cwd"], "pi_bwrap")
    assert row["final_status"] == "SUCCESS", row["error_message"]
    assert row["transcript"]["tool_calls_by_name"] == {"Bash": 2, "Write": 1}
    assert "host-secret" not in " ".join(tool_results(runs["cwd"], "pi_bwrap"))


def test_the_same_calls_escape_a_tempdir_sandbox(runs: dict[str, Any]) -> None:
    outside: Path = runs["outside"]
    assert (outside / "claude-wrote.txt").read_text() == "escaped"
    assert (outside / "secret.txt").read_text() == "host-secret\nappended\n"
    assert "host-answered" in " ".join(tool_results(runs["cwd"], "claude_tempdir"))
    assert "sandbox.driver tempdir: the claude-code agent may write files" in (
        runs["loose"].stderr)  # fmt: skip
