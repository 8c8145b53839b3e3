"""The real Pi coding agent as an agent type (``agent: {type: pi}``), its model calls
through the bridge's Chat Completions wire to a scripted model, offline and contained by
bwrap: files written, commands run (with their exit codes) and graded, its tool allowlist
from Claude Code's names, the system prompt and plugin skills reaching the model, a live
early stop, the user's OpenAI keys never passed on."""

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
  - match: "Sign every answer with the word zebra"
    search: request
    reply: "zebra"
  - match: "Keeps notes the okapi way"
    search: request
    reply: "okapi"
  - match: "job: note"
    steps:
      - tool: write
        input: {path: "${sandbox}/note.txt", content: "${row.word}"}
      - tool: bash
        input: {command: "wc -c note.txt > size.txt; env > env.txt"}
      - tool: bash
        input: {command: "ls missing-file"}
      - reply: "The note is written."
  - match: "job: stop"
    steps:
      - {tool: bash, input: {command: "echo one"}}
      - {tool: bash, input: {command: "rm -rf build"}}
      - {tool: bash, input: {command: "echo late > late.txt"}}
      - reply: "done"
  - match: "job: plain"
    reply: "plain answer"
"""

TASK = """\
task_id: {task_id}
description: the pi CLI through the bridge
agent: {{type: pi, model: mock/../script.yaml{agent}}}
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
OPENAI_KEY = "sk-users-own-openai-key-never-passed-on"
SKILL = "---\nname: notes\ndescription: Keeps notes the okapi way.\n---\nWrite notes.\n"


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("pi")
    write(cwd / "script.yaml", SCRIPT)
    write(cwd / "plug" / "skills" / "notes" / "SKILL.md", SKILL)
    tasks = {
        "note": ("", [{"id": "a", "job": "note", "word": "alpha"}], NOTE),
        "readonly": (", allowed_tools: [Read, Write, Bash], disallowed_tools: [Bash]",
                     [{"id": "r", "job": "note", "word": "beta"}], NOTE),
        "stop": ("", [{"id": "s", "job": "stop", "word": "x"}], STOP),
        "told": (", system_prompt: 'Sign every answer with the word zebra.'",
                 [{"id": "t", "job": "plain", "word": "x"}],
                 "  - {type: response_match, expected: zebra, description: told}\n"),
        "skill": (", plugins: [{type: local, path: ../plug}]",
                  [{"id": "k", "job": "plain", "word": "x"}],
                  "  - {type: response_match, expected: okapi, description: offered}\n"),
    }  # fmt: skip
    for name, (agent, rows, criteria) in tasks.items():
        write(cwd / "tasks" / f"{name}.yaml", TASK.format(
            task_id=name, agent=agent, rows=json.dumps(rows), criteria=criteria))  # fmt: skip
    done = run_assay("run", "tasks", "-j", "4", "--keep-sandboxes", cwd=cwd,
                     env={"PATH": codex_path(), "OPENAI_API_KEY": OPENAI_KEY},
                     timeout=600)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # two rows fail on purpose
    assert "Traceback" not in done.stderr, done.stderr
    assert OPENAI_KEY not in done.stdout + done.stderr
    return cwd


def test_the_cli_acts_and_its_work_is_graded(ran: Path) -> None:
    result = task_json(ran, "note", "a")
    assert result["final_status"] == "SUCCESS", result["error_message"]
    assert result["agent_type"] == "pi"
    assert [c["score"] for c in result["success_criteria_results"]] == [1.0, 1.0, 1.0]
    summary = result["transcript"]
    assert summary["tool_calls_by_name"] == {"Write": 1, "Bash": 2}
    assert summary["files_changed"] == ["note.txt"]
    assert summary["usage_source"] == "bridge" and summary["model_calls"] == 4
    assert summary["usage_difference"] is None  # its own counts agree with the bridge's
    assert row_file(ran, "note", "a", "response.txt") == "The note is written."


def test_each_commands_exit_code_is_read_from_the_cli(ran: Path) -> None:
    assert task_json(ran, "note", "a")["transcript"]["commands_failed"] == 1
    assert command_exit_codes(ran, "note", "a") == {
        "wc -c note.txt > size.txt; env > env.txt": "0",
        "ls missing-file": "2",
    }


def test_the_users_openai_key_never_reaches_the_cli(ran: Path) -> None:
    env = ran / "runs" / "latest" / "default" / "note" / "a" / "00" / "sandbox" / "env.txt"
    text = env.read_text()
    assert OPENAI_KEY not in text and "OPENAI_API_KEY" not in text
    assert "ASSAY_BRIDGE_KEY=" in text  # the row's bridge credential (redacted when kept)


def test_a_tool_left_out_of_the_allowlist_does_not_run(ran: Path) -> None:
    result = task_json(ran, "readonly", "r")
    summary = result["transcript"]
    assert summary["commands"] == 0 and summary["tool_errors"] == 2
    assert [d["tool"] for d in summary["denials"]] == ["Bash", "Bash"]
    assert summary["files_changed"] == ["note.txt"]
    assert [c["score"] for c in result["success_criteria_results"]] == [1.0, 0.0, 1.0]


def test_the_system_prompt_and_the_plugin_skills_reach_the_model(ran: Path) -> None:
    assert task_json(ran, "told", "t")["final_status"] == "SUCCESS"
    skill = task_json(ran, "skill", "k")
    assert skill["final_status"] == "SUCCESS", skill["error_message"]
    assert skill["transcript"]["skills_offered"] == ["notes"]


def test_a_live_verdict_ends_the_pi_cli(ran: Path) -> None:
    """Its own count of a run assay ended is cut where it was killed: not recorded, and no
    difference from the bridge's is claimed (a break-test: a token cap recorded one)."""
    result = task_json(ran, "stop", "s")
    assert result["agent"]["early_stop"]["reason"] == "criterion_failed"
    assert result["transcript"]["commands"] == 2
    assert result["final_status"] == "FAILURE"
    summary = result["transcript"]
    assert summary["cli_usage"] is None and summary["usage_difference"] is None
    assert summary["usage"]["total"] > 0  # the bridge's


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("route: direct, cli_model: m", "through the model bridge only"),
        ("claude_settings: {a: 1}", "a claude-code field"),
        ("allowed_tools: [WebFetch]", "pi has no tool 'WebFetch'"),
        ("disallowed_tools: ['Bash(git push:*)']", "it takes no rules"),
        ("system_prompt_mode: replace", "needs a non-blank system_prompt"),
    ],
)
def test_what_pi_cannot_take_is_refused_at_plan(tmp_path: Path, extra: str,
                                                message: str) -> None:  # fmt: skip
    done = plan_agent(tmp_path, f"type: pi, {extra}")
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_coder_evals_claude_fields_load_with_one_warning_each(tmp_path: Path) -> None:
    done = plan_agent(
        tmp_path,
        ("type: pi, model: mock/echo, permission_mode: acceptEdits, sdk_options: {effort: high}"),
    )
    assert done.returncode == 0, done.stderr
    for field in ("permission_mode", "sdk_options"):
        assert done.stderr.count(f"agent.{field}") == 1
    assert "not enforced: pi has no permission modes" in done.stderr


def test_a_missing_cli_is_refused_with_how_to_install_it(tmp_path: Path) -> None:
    done = plan_agent(tmp_path, "type: pi, model: mock/echo", path="/usr/bin:/bin")
    assert done.returncode == 2, done.stderr
    assert "the pi CLI was not found" in done.stderr
    assert "@mariozechner/pi-coding-agent@0.73.1" in done.stderr
    assert "make .tools/.installed-pi" in done.stderr


def test_a_token_cap_that_ends_the_cli_claims_no_count_of_its_own(tmp_path: Path) -> None:
    """A break-test: the bridge answers the call that crosses ``max_total_tokens`` and then
    ends the CLI, whose own count lacks that call: a difference from the bridge's count was
    recorded. The CLI's count of a run assay ended is not recorded; the bridge's stands."""
    write(tmp_path / "script.yaml", SCRIPT)
    task = TASK.format(task_id="capped", agent="", rows=json.dumps([{"id": "c", "job": "note",
                       "word": "gamma"}]), criteria=NOTE)  # fmt: skip
    write(tmp_path / "tasks" / "capped.yaml",
          task + "run_limits: {task_timeout: 60, max_total_tokens: 1000}\n")  # fmt: skip
    run_assay("run", "tasks", cwd=tmp_path, env={"PATH": codex_path()})
    result = task_json(tmp_path, "capped", "c")
    summary = result["transcript"]
    assert "run_limits.max_total_tokens is 1000" in result["agent"]["stopped_early"]
    assert summary["usage"]["total"] > 1000 and summary["model_calls"] >= 2
    assert summary["cli_usage"] is None and summary["usage_difference"] is None
