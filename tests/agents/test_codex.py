"""The real Codex CLI (``codex exec --json``), driven through the bridge's Responses wire by
mock scripts: commands, patches, errors, limits, and what is recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.coding import codex_path, row_file, run_assay, task_json
from tests.helpers import write

pytestmark = pytest.mark.coding_agent

SCRIPT = """\
replies:
  - match: "job: build"
    steps:
      - tool: exec_command
        input: {cmd: "printf '${row.word}' > out.txt && cat out.txt"}
      - tool: apply_patch
        input: "*** Begin Patch\\n*** Add File: notes.md\\n+made by ${row.id}\\n*** End Patch\\n"
      - tool: exec_command
        input: {cmd: "ls missing-file"}
      - tool: Write
        input: {file_path: x}
      - reply: "built ${row.word}"
  - match: "job: broken"
    error: "no capacity"
    status: 503
  - match: "job: slow"
    reply: late
    delay: 60
  - match: "job: loop"
    steps:
      - {tool: exec_command, input: {cmd: "echo 1"}}
      - {tool: exec_command, input: {cmd: "echo 2"}}
      - {tool: exec_command, input: {cmd: "echo 3"}}
      - reply: never
"""

TASK = """\
task_id: {task_id}
description: codex through the bridge
agent: {{type: codex, model: mock/../script.yaml, system_prompt: "Be terse."}}
run_limits: {limits}
dataset:
  rows: {rows}
initial_prompt: "job: ${{row.job}}"
success_criteria:
  - {{type: file_check, path: out.txt, includes: ["${{row.word}}"], description: the word}}
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("codex")
    write(cwd / "script.yaml", SCRIPT)
    tasks = {
        "rows": ([{"id": "build", "job": "build", "word": "alpha"},
                  {"id": "broken", "job": "broken", "word": "x"}], "{task_timeout: 120}"),
        "slow": ([{"id": "slow", "job": "slow", "word": "x"}], "{task_timeout: 4}"),
        "turns": ([{"id": "loop", "job": "loop", "word": "x"}], "{max_turns: 2}"),
        "tools": ([{"id": "loop", "job": "loop", "word": "1"}], "{max_tool_calls: 2}"),
    }  # fmt: skip
    for task_id, (rows, limits) in tasks.items():
        write(
            cwd / "tasks" / f"{task_id}.yaml",
            TASK.format(task_id=task_id, rows=json.dumps(rows), limits=limits),
        )
    done = run_assay("run", "tasks", "-j", "4", cwd=cwd, env={"PATH": codex_path()})
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return cwd


def test_commands_and_patches_are_run_and_recorded(ran: Path) -> None:
    result = task_json(ran, "rows", "build")
    assert result["final_status"] == "SUCCESS", result["error_message"]
    assert result["agent_type"] == "codex"
    summary = result["transcript"]
    assert summary["tool_calls_by_name"] == {"Bash": 2, "Write": 1}
    assert summary["commands"] == 2 and summary["commands_failed"] == 1
    assert summary["files_changed"] == ["notes.md"]
    assert summary["model_calls"] == 5 and summary["stop_reason"] == "end_turn"
    # Codex has no Write tool: the call the model asked for shows only here
    assert summary["tool_calls_requested"] == {"exec_command": 2, "apply_patch": 1, "Write": 1}
    assert summary["usage_source"] == "bridge"
    assert summary["cli_usage"]["input"] == summary["usage"]["input"] > 0
    assert row_file(ran, "rows", "build", "response.txt") == "built alpha"
    log = row_file(ran, "rows", "build", "task.log")
    assert "printf 'alpha' > out.txt && cat out.txt" in log
    assert "ls missing-file' → exit 2" in log


def test_an_upstream_failure_ends_the_row_error(ran: Path) -> None:
    result = task_json(ran, "rows", "broken")
    assert result["final_status"] == "ERROR"
    assert result["error_message"].startswith("the codex CLI ended with an API error:")
    assert "no capacity" in result["error_message"]


def test_a_hanging_codex_is_killed_at_the_timeout(ran: Path) -> None:
    result = task_json(ran, "slow", "slow")
    assert result["final_status"] == "TIMEOUT"
    assert result["error_message"] == "the codex CLI was killed after 4 s (task_timeout)"


def test_the_bridge_enforces_max_turns_on_codex(ran: Path) -> None:
    result = task_json(ran, "turns", "loop")
    assert result["final_status"] == "MAX_TURNS_EXHAUSTED"
    assert result["error_message"] == (
        "the agent asked for model call 3; run_limits.max_turns is 2"
    )
    summary = result["transcript"]
    assert summary["tool_calls_by_name"] == {"Bash": 2}
    assert summary["model_calls"] == 2  # the refused third call asked no model


def test_max_tool_calls_ends_the_agent_and_the_row_is_still_graded(ran: Path) -> None:
    """Coder Eval's run_limits.max_tool_calls: the round that reaches the cap finishes, the
    next model call is refused, and the criteria grade what the agent left."""
    result = task_json(ran, "tools", "loop")
    assert result["final_status"] == "FAILURE"  # graded: out.txt was never written
    assert result["success_criteria_results"][0]["error"] is None
    assert result["agent"]["stopped_early"] == (
        "the agent's model asked for 2 tool calls; run_limits.max_tool_calls is 2"
    )
    assert result["transcript"]["tool_calls_by_name"] == {"Bash": 2}
    suite = json.loads((ran / "runs" / "latest" / "default" / "tools" / "suite.json").read_text())
    assert suite["stopped_early"] == {"max_tool_calls": 1}


def test_codex_warns_about_coder_evals_claude_fields_and_refuses_claudes_own(
    tmp_path: Path,
) -> None:
    """Issue 29 item 3: Coder Eval's task files give codex permission_mode, allowed_tools
    and sdk_options; they load with one warning each saying what codex does instead."""
    write(tmp_path / "t.yaml", "task_id: c\ndescription: d\ninitial_prompt: go\n"
          "agent: {type: codex, model: mock/echo, permission_mode: acceptEdits,\n"
          "        allowed_tools: [Write], sdk_options: {effort: high}}\n"
          "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env={"PATH": codex_path()})
    assert done.returncode == 0, done.stderr
    for field in ("permission_mode", "allowed_tools"):
        assert done.stderr.count(f"agent.{field}") == 1
    assert "codex has no permission modes or tool lists" in done.stderr
    assert "these are Claude Agent SDK options; codex takes none" in done.stderr
    write(tmp_path / "t.yaml", "task_id: c\ndescription: d\ninitial_prompt: go\n"
          "agent: {type: codex, model: mock/echo, setting_sources: [user]}\n"
          "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env={"PATH": codex_path()})
    assert done.returncode == 2
    assert "agent.setting_sources: field 'setting_sources' is not accepted here" in done.stderr
