"""The real OpenCode CLI as an agent type (``agent: {type: opencode}``), its model calls
through the bridge's Chat Completions wire to a scripted model, offline and contained by
bwrap: files written, commands run (with their exit codes) and graded, a denied tool taken
away from the model, the system prompt in its instructions, a live early stop, the user's
OpenAI keys never passed on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.spec.coding_agents import OPENCODE_UNASKED as UNASKED
from assay.spec.coding_agents import opencode_permission
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
  - match: "job: note"
    steps:
      - tool: write
        input: {filePath: "${sandbox}/note.txt", content: "${row.word}"}
      - tool: bash
        input: {command: "wc -c note.txt > size.txt; env > env.txt", description: count}
      - tool: bash
        input: {command: "ls missing-file", description: list}
      - reply: "The note is written."
  - match: "job: stop"
    steps:
      - {tool: bash, input: {command: "echo one", description: a}}
      - {tool: bash, input: {command: "rm -rf build", description: b}}
      - {tool: bash, input: {command: "echo late > late.txt", description: c}}
      - reply: "done"
  - match: "job: plain"
    reply: "plain answer"
"""

TASK = """\
task_id: {task_id}
description: the opencode CLI through the bridge
agent: {{type: opencode, model: mock/../script.yaml{agent}}}
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
ANSWER = """\
  - {type: response_match, expected: zebra, description: the instructions reached it}
"""
OPENAI_KEY = "sk-users-own-openai-key-never-passed-on"


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("opencode")
    write(cwd / "script.yaml", SCRIPT)
    tasks = {
        "note": ("", [{"id": "a", "job": "note", "word": "alpha"}], NOTE),
        "denied": (", disallowed_tools: [Bash]", [{"id": "d", "job": "note", "word": "beta"}],
                   NOTE),
        "planned": (", permission_mode: plan", [{"id": "p", "job": "note", "word": "gamma"}],
                    NOTE),
        "prefixed": (", permission_mode: default, allowed_tools: ['Bash(wc:*)']",
                     [{"id": "w", "job": "note", "word": "delta"}], NOTE),
        "stop": ("", [{"id": "s", "job": "stop", "word": "x"}], STOP),
        "told": (", system_prompt: 'Sign every answer with the word zebra.'",
                 [{"id": "t", "job": "plain", "word": "x"}], ANSWER),
    }  # fmt: skip
    for name, (agent, rows, criteria) in tasks.items():
        write(cwd / "tasks" / f"{name}.yaml", TASK.format(
            task_id=name, agent=agent, rows=json.dumps(rows), criteria=criteria))  # fmt: skip
    done = run_assay("run", "tasks", "-j", "4", "--keep-sandboxes", cwd=cwd,
                     env={"PATH": codex_path(), "OPENAI_API_KEY": OPENAI_KEY},
                     timeout=600)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # four rows fail on purpose
    assert "Traceback" not in done.stderr, done.stderr
    assert OPENAI_KEY not in done.stdout + done.stderr
    return cwd


def test_the_cli_acts_and_its_work_is_graded(ran: Path) -> None:
    result = task_json(ran, "note", "a")
    assert result["final_status"] == "SUCCESS", result["error_message"]
    assert result["agent_type"] == "opencode"
    assert [c["score"] for c in result["success_criteria_results"]] == [1.0, 1.0, 1.0]
    summary = result["transcript"]
    assert summary["tool_calls_by_name"] == {"Write": 1, "Bash": 2}
    assert summary["files_changed"] == ["note.txt"]
    assert summary["usage_source"] == "bridge" and summary["model_calls"] == 4
    assert summary["cli_usage"]["output"] > 0
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


def test_a_disallowed_tool_is_taken_away_and_its_calls_are_denials(ran: Path) -> None:
    result = task_json(ran, "denied", "d")
    summary = result["transcript"]
    assert summary["commands"] == 0
    assert [d["tool"] for d in summary["denials"]] == ["Bash", "Bash"]
    assert summary["files_changed"] == ["note.txt"]
    assert [c["score"] for c in result["success_criteria_results"]] == [1.0, 0.0, 1.0]


def test_plan_mode_denies_every_write_and_command(ran: Path) -> None:
    summary = task_json(ran, "planned", "p")["transcript"]
    assert summary["commands"] == 0 and summary["files_changed"] == []
    assert [d["tool"] for d in summary["denials"]] == ["Write", "Bash", "Bash"]


def test_default_mode_runs_only_what_allowed_tools_names(ran: Path) -> None:
    result = task_json(ran, "prefixed", "w")
    summary = result["transcript"]
    assert summary["files_changed"] == [] and summary["commands"] == 0  # no edits here
    # Bash(wc:*) allows commands that start with wc, and OpenCode checks each command of a
    # line: "wc -c …; env > env.txt" is refused for its env, "ls missing-file" for its ls
    assert [d["tool"] for d in summary["denials"]] == ["Write", "Bash", "Bash"]
    assert "specified a rule which prevents" in summary["denials"][1]["reason"]
    assert [c["score"] for c in result["success_criteria_results"]] == [0.0, 0.0, 0.0]


def test_the_system_prompt_reaches_the_model_as_instructions(ran: Path) -> None:
    result = task_json(ran, "told", "t")
    assert result["final_status"] == "SUCCESS", result["error_message"]


def test_a_live_verdict_ends_the_opencode_cli(ran: Path) -> None:
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
        ("system_prompt_mode: replace", "opencode adds system_prompt to its own instructions"),
        ("disallowed_tools: [NoSuchTool]", "opencode has no permission for 'NoSuchTool'"),
        ("disallowed_tools: ['Write(x)']", "opencode takes a rule on Bash only"),
        ("allowed_tools: [Telepathy]", "allowed_tools: opencode has no permission for"),
        ("allowed_tools: [' Bash']", "opencode has no permission for ' Bash'"),
        ("disallowed_tools: ['Bash(:*)']", "'Bash(:*)' names no command"),
        ("permission_mode: sometimes", "permission_mode"),
    ],
)
def test_what_opencode_cannot_take_is_refused_at_plan(tmp_path: Path, extra: str,
                                                      message: str) -> None:  # fmt: skip
    done = plan_agent(tmp_path, f"type: opencode, {extra}")
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_claude_codes_permission_fields_load_and_only_sdk_options_warns(tmp_path: Path) -> None:
    done = plan_agent(
        tmp_path,
        (
            "type: opencode, model: mock/echo, "
            "permission_mode: acceptEdits, allowed_tools: [Write], sdk_options: {effort: high}"
        ),
    )
    assert done.returncode == 0, done.stderr
    assert "agent.permission_mode" not in done.stderr
    assert "agent.allowed_tools" not in done.stderr
    assert done.stderr.count("agent.sdk_options") == 1


@pytest.mark.parametrize(
    ("mode", "allowed", "denied", "rules"),
    [
        (None, None, None, {"*": "allow"}),
        ("bypassPermissions", ["Read"], ["Bash(git push:*)"],
         {"*": "allow", "bash": {"*": "allow", "git push": "deny", "git push *": "deny"}}),
        ("acceptEdits", None, None, {"*": "deny", **dict.fromkeys(UNASKED, "allow"),
                                     "edit": "allow"}),
        (None, ["Bash"], ["Read"], {"*": "deny", **dict.fromkeys(UNASKED[1:], "allow"),
                                    "edit": "allow", "bash": "allow", "read": "deny"}),
        ("default", ["Bash(wc:*)", "WebFetch"], ["Bash(wc -l:*)"],
         {"*": "deny", **dict.fromkeys(UNASKED, "allow"), "webfetch": "allow",
          "bash": {"*": "deny", "wc": "allow", "wc *": "allow", "wc -l": "deny",
                   "wc -l *": "deny"}}),
        ("plan", ["Write", "Bash", "WebSearch"], None,
         {"*": "deny", **dict.fromkeys(UNASKED, "allow"), "websearch": "allow"}),
    ],
)  # fmt: skip
def test_claude_codes_permissions_become_opencodes_rules_in_order(
    mode: str | None, allowed: list[str] | None, denied: list[str] | None,
    rules: dict[str, object],
) -> None:  # fmt: skip
    made = opencode_permission(mode, allowed, denied)
    assert made == rules
    assert list(made) == list(rules)  # the last matching rule wins: order is meaning
    for key, value in made.items():
        if isinstance(value, dict):
            assert list(value) == list(rules[key])  # type: ignore[arg-type]


def test_a_missing_cli_is_refused_with_how_to_install_it(tmp_path: Path) -> None:
    done = plan_agent(tmp_path, "type: opencode, model: mock/echo", path="/usr/bin:/bin")
    assert done.returncode == 2, done.stderr
    assert "the opencode CLI was not found" in done.stderr
    assert "opencode-ai@1.18.33" in done.stderr and "make .tools/.installed-opencode" in done.stderr


@pytest.mark.docker
def test_opencode_works_in_a_docker_container_far_from_the_folder_assay_ran_in(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A break-test: on docker every OpenCode row failed ("Unexpected server error"): the
    row's ``PWD`` was the folder assay ran in, which OpenCode took for its project and which
    the container does not have. A row's programs get no ``PWD`` of the host's."""
    _, image = request.getfixturevalue("docker_image")
    write(tmp_path / "script.yaml", SCRIPT)
    write(tmp_path / "tasks" / "task.yaml", TASK.format(
        task_id="note", agent="", rows=json.dumps([{"id": "a", "job": "note", "word": "dock"}]),
        criteria=NOTE).replace("dataset:", f"sandbox: {{driver: docker, docker: {{image: "
                               f"'{image}'}}}}\ndataset:"))  # fmt: skip
    # run from tmp_path in a shell, which sets PWD (the container has no such folder)
    done = run_assay("run", "tasks/task.yaml", cwd=tmp_path,
                     env={"PATH": codex_path(), "PWD": str(tmp_path)})  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    result = task_json(tmp_path, "note", "a")
    assert result["final_status"] == "SUCCESS", (result["error_message"], done.stderr)
