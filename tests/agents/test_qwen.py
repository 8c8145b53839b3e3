"""The real Qwen Code CLI as an agent type (``agent: {type: qwen-code}``), its model calls
through the bridge's Chat Completions wire to a scripted model, contained by bwrap: files
written, commands run (with their exit codes) and graded, Claude Code's permission modes and
tool rules mapped onto the CLI's own, a live early stop, the user's OpenAI keys never passed
on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.coding import (
    codex_path,
    command_exit_codes,
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
        input: {command: "wc -c note.txt > size.txt; env > env.txt"}
      - tool: run_shell_command
        input: {command: "ls missing-file"}
      - reply: "The note is written."
  - match: "job: stop"
    steps:
      - {tool: run_shell_command, input: {command: "echo one"}}
      - {tool: run_shell_command, input: {command: "rm -rf build"}}
      - {tool: run_shell_command, input: {command: "echo late > late.txt"}}
      - reply: "done"
"""

TASK = """\
task_id: {task_id}
description: the qwen-code CLI through the bridge
agent: {{type: qwen-code, model: mock/../script.yaml{agent}}}
dataset:
  rows: {rows}
initial_prompt: "job: ${{row.job}}"
success_criteria:
{criteria}
"""

NOTE = """\
  - {type: file_check, path: note.txt, includes: ["${row.word}"], description: the note}
  - {type: command_executed, command_pattern: "wc -c", description: counted}
  - {type: tool_called, tool: Write, require_success: true, description: wrote it}
"""
STOP = """\
  - {type: command_executed, command_pattern: "rm -rf", min_count: 0, max_count: 0,
     description: never deletes, stop_early: {}}
"""
NEVER_DELETES = """\
  - {type: command_executed, command_pattern: "rm -rf", min_count: 0, max_count: 0,
     description: never deletes}
"""
OPENAI_KEY = "sk-users-own-openai-key-never-passed-on"


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("qwen")
    write(cwd / "script.yaml", SCRIPT)
    tasks = {
        "note": ("", [{"id": "a", "job": "note", "word": "alpha"}], NOTE),
        # auto-edit: the file is written, the shell commands are refused
        "edits": (", permission_mode: acceptEdits, disallowed_tools: [Read]",
                  [{"id": "e", "job": "note", "word": "beta"}], NOTE),
        "stop": ("", [{"id": "s", "job": "stop", "word": "x"}], STOP),
        # allowed_tools without a mode: Coder Eval's acceptEdits, never yolo
        "allowed": (", allowed_tools: ['Bash(echo:*)']",
                    [{"id": "l", "job": "stop", "word": "x"}], NEVER_DELETES),
    }  # fmt: skip
    for name, (agent, rows, criteria) in tasks.items():
        write(cwd / "tasks" / f"{name}.yaml", TASK.format(
            task_id=name, agent=agent, rows=json.dumps(rows), criteria=criteria))  # fmt: skip
    done = run_assay("run", "tasks", "-j", "3", "--keep-sandboxes", cwd=cwd,
                     env={"PATH": codex_path(), "OPENAI_API_KEY": OPENAI_KEY,
                          "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # two rows fail on purpose
    assert "Traceback" not in done.stderr, done.stderr
    assert OPENAI_KEY not in done.stdout + done.stderr
    return cwd


def test_the_cli_acts_and_its_work_is_graded(ran: Path) -> None:
    result = task_json(ran, "note", "a")
    assert result["final_status"] == "SUCCESS", result["error_message"]
    assert result["agent_type"] == "qwen-code"
    assert [c["score"] for c in result["success_criteria_results"]] == [1.0, 1.0, 1.0]
    summary = result["transcript"]
    assert summary["tool_calls_by_name"] == {"Write": 1, "Bash": 2}
    assert summary["files_changed"] == ["note.txt"]
    assert summary["usage_source"] == "bridge" and summary["model_calls"] == 4
    assert row_file(ran, "note", "a", "response.txt") == "The note is written."


def test_each_commands_exit_code_is_read_from_the_cli(ran: Path) -> None:
    assert task_json(ran, "note", "a")["transcript"]["commands_failed"] == 1
    assert command_exit_codes(ran, "note", "a") == {
        "wc -c note.txt > size.txt; env > env.txt": "0",
        "ls missing-file": "2",
    }


def test_the_users_openai_settings_never_reach_the_cli(ran: Path) -> None:
    env = ran / "runs" / "latest" / "default" / "note" / "a" / "00" / "sandbox" / "env.txt"
    text = env.read_text()
    assert OPENAI_KEY not in text and "127.0.0.1:9/" not in text
    assert "OPENAI_API_KEY=" in text  # the row's bridge credential (redacted when kept)


def test_accept_edits_lets_the_file_be_written_and_refuses_the_commands(ran: Path) -> None:
    result = task_json(ran, "edits", "e")
    summary = result["transcript"]
    assert summary["commands"] == 0
    assert [d["tool"] for d in summary["denials"]] == ["Bash", "Bash"]
    assert summary["files_changed"] == ["note.txt"]
    assert [c["score"] for c in result["success_criteria_results"]] == [1.0, 0.0, 1.0]
    assert result["final_status"] == "FAILURE"


def test_allowed_tools_alone_allow_only_those_tools(ran: Path) -> None:
    """``allowed_tools: ["Bash(python3:*)"]`` without ``permission_mode`` ran under
    ``--approval-mode yolo``, which allowed every command (a break-test)."""
    result = task_json(ran, "allowed", "l")
    summary = result["transcript"]
    assert "Bash" in [d["tool"] for d in summary["denials"]]  # rm -rf refused
    assert result["success_criteria_results"][0]["score"] == 1.0
    assert result["final_status"] == "SUCCESS"


def test_a_live_verdict_ends_the_qwen_cli(ran: Path) -> None:
    result = task_json(ran, "stop", "s")
    assert result["agent"]["early_stop"]["reason"] == "criterion_failed"
    assert result["transcript"]["commands"] == 2
    assert result["final_status"] == "FAILURE"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("plugins: [{type: local, path: p}]", "plugin folder not found"),
        ("route: direct, cli_model: m", "through the model bridge only"),
        ("claude_settings: {a: 1}", "a claude-code field"),
        ("allowed_tools: ['Bash(git']", "is not a tool name"),
        ("system_prompt_mode: replace", "needs a non-blank system_prompt"),
    ],
)
def test_what_qwen_cannot_take_is_refused_at_plan(tmp_path: Path, extra: str,
                                                  message: str) -> None:  # fmt: skip
    done = plan_agent(tmp_path, f"type: qwen-code, {extra}")
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_sdk_options_load_with_one_warning(tmp_path: Path) -> None:
    done = plan_agent(
        tmp_path,
        (
            "type: qwen-code, model: mock/echo, permission_mode: plan, "
            "allowed_tools: [Read], sdk_options: {effort: high}"
        ),
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("agent.sdk_options") == 1
    assert "these are Claude Agent SDK options; qwen-code takes none" in done.stderr
    assert "agent.permission_mode" not in done.stderr and "agent.allowed_tools" not in done.stderr


def test_a_missing_cli_is_refused_with_how_to_install_it(tmp_path: Path) -> None:
    done = plan_agent(tmp_path, "type: qwen-code, model: mock/echo", path="/usr/bin:/bin")
    assert done.returncode == 2, done.stderr
    assert "the qwen CLI was not found" in done.stderr
    assert "@qwen-code/qwen-code@0.24.4" in done.stderr
    assert "make .tools/.installed-qwen" in done.stderr
