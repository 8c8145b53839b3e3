"""The real Gemini CLI as an agent type (``agent: {type: gemini}``), its model calls through
the bridge's Gemini wire to a scripted model, contained by bwrap: files written, commands
run and graded, the transcript read from its stream, a live early stop, the user's Google
keys never passed on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.coding import (
    codex_path,
    plan_agent,
    row_file,
    run_assay,
    task_json,
)
from tests.helpers import write

pytestmark = pytest.mark.coding_agent

SCRIPT = """\
replies:
  - match: "job: note"
    steps:
      - tool: write_file
        input: {file_path: "${sandbox}/note.txt", content: "${row.word}"}
      - tool: run_shell_command
        input: {command: "wc -c note.txt > size.txt; env > env.txt", description: count}
      - reply: "The note is written."
  - match: "job: stop"
    steps:
      - {tool: run_shell_command, input: {command: "echo one", description: a}}
      - {tool: run_shell_command, input: {command: "rm -rf build", description: b}}
      - {tool: run_shell_command, input: {command: "echo late > late.txt", description: c}}
      - reply: "done"
"""

TASK = """\
task_id: {task_id}
description: the gemini CLI through the bridge
agent: {{type: gemini, model: mock/../script.yaml}}
dataset:
  rows: {rows}
initial_prompt: "job: ${{row.job}}"
success_criteria:
{criteria}
"""

NOTE = """\
  - {type: file_check, path: note.txt, includes: ["${row.word}"], description: the note}
  - {type: command_executed, command_pattern: "wc -c", description: counted}
"""
STOP = """\
  - {type: command_executed, command_pattern: "rm -rf", min_count: 0, max_count: 0,
     description: never deletes, stop_early: {}}
"""
GOOGLE_KEY = "AIzaSy-users-own-google-key-never-passed-on"


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("gemini")
    write(cwd / "script.yaml", SCRIPT)
    write(cwd / "tasks" / "note.yaml", TASK.format(
        task_id="note", rows=json.dumps([{"id": "a", "job": "note", "word": "alpha"}]),
        criteria=NOTE))  # fmt: skip
    write(cwd / "tasks" / "stop.yaml", TASK.format(
        task_id="stop", rows=json.dumps([{"id": "s", "job": "stop", "word": "x"}]),
        criteria=STOP))  # fmt: skip
    done = run_assay("run", "tasks", "-j", "2", "--keep-sandboxes", cwd=cwd,
                     env={"PATH": codex_path(), "GEMINI_API_KEY": GOOGLE_KEY,
                          "GOOGLE_API_KEY": GOOGLE_KEY})  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # the stopped row fails on purpose
    assert "Traceback" not in done.stderr, done.stderr
    assert GOOGLE_KEY not in done.stdout + done.stderr
    return cwd


def test_the_cli_acts_and_its_work_is_graded(ran: Path) -> None:
    result = task_json(ran, "note", "a")
    assert result["final_status"] == "SUCCESS", result["error_message"]
    assert result["agent_type"] == "gemini"
    assert [c["score"] for c in result["success_criteria_results"]] == [1.0, 1.0]
    summary = result["transcript"]
    assert summary["tool_calls_by_name"] == {"Write": 1, "Bash": 1}
    assert summary["commands"] == 1 and summary["files_changed"] == ["note.txt"]
    assert summary["usage_source"] == "bridge" and summary["model_calls"] == 3
    assert row_file(ran, "note", "a", "response.txt") == "The note is written."


def test_the_users_google_keys_never_reach_the_cli(ran: Path) -> None:
    env = ran / "runs" / "latest" / "default" / "note" / "a" / "00" / "sandbox" / "env.txt"
    text = env.read_text()
    assert GOOGLE_KEY not in text and "GOOGLE_API_KEY" not in text
    assert "GEMINI_API_KEY=" in text  # the row's bridge credential (redacted when kept)


def test_a_live_verdict_ends_the_gemini_cli(ran: Path) -> None:
    result = task_json(ran, "stop", "s")
    assert result["agent"]["early_stop"]["reason"] == "criterion_failed"
    assert result["transcript"]["commands"] == 2
    assert result["final_status"] == "FAILURE"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("plugins: [{type: local, path: p}]", "plugin folder not found"),
        ("route: direct, cli_model: gemini-2.5-pro", "through the model bridge only"),
        ("system_prompt: be brief", "gemini takes no system prompt from assay"),
    ],
)
def test_what_gemini_cannot_take_is_refused_at_plan(tmp_path: Path, extra: str,
                                                    message: str) -> None:  # fmt: skip
    done = plan_agent(tmp_path, f"type: gemini, {extra}")
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_coder_evals_claude_fields_load_with_one_warning_each(tmp_path: Path) -> None:
    done = plan_agent(
        tmp_path,
        (
            "type: gemini, model: mock/echo, "
            "permission_mode: acceptEdits, allowed_tools: [Write], sdk_options: {effort: high}"
        ),
    )
    assert done.returncode == 0, done.stderr
    for field in ("permission_mode", "allowed_tools", "sdk_options"):
        assert done.stderr.count(f"agent.{field}") == 1
    assert "not enforced: gemini runs with --yolo" in done.stderr
    assert "these are Claude Agent SDK options; gemini takes none" in done.stderr
