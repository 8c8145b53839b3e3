"""Dialog mode with the real coding-agent CLIs, Claude Code and Codex (issue 30 item 1): a
``mock/`` simulated user and a ``mock/`` agent script through the bridge, over three
exchanges, the CLI resuming its own session each turn (its later answers need the earlier
turns in the request it sends)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.coding import claude_available, codex_path, row_file, run_assay, task_json
from tests.helpers import write

pytestmark = pytest.mark.coding_agent

# Each later rule searches the whole request: it matches only when the CLI sent the earlier
# exchanges, which only a resumed session holds.
AGENT = """\
replies:
  - match: "(?s)write the greeting.*Anything else.*second line.*Appended.*what does it say"
    search: request
    steps:
      - tool: Read
        input: {file_path: "${sandbox}/hello.txt"}
      - reply: "It says hello, then world."
  - match: "(?s)write the greeting.*Anything else.*second line"
    search: request
    steps:
      - tool: Bash
        input: {command: "echo world >> hello.txt", description: append}
      - reply: "Appended world."
  - match: "write the greeting"
    steps:
      - tool: Write
        input: {file_path: "${sandbox}/hello.txt", content: "hello\\n"}
      - reply: "I wrote hello.txt. Anything else?"
default: "I do not remember what we did."
"""

USER = """\
replies:
  - match: "Anything else"
    reply: "Yes: add a second line saying world."
  - match: "Appended"
    reply: "Good. Now, what does it say?"
  - match: "hello, then world"
    reply: "Perfect. <<<END>>>"
default: "You forgot what we did."
"""

TASK = """\
task_id: greet
description: write a greeting file
initial_prompt: "Please write the greeting into hello.txt"
agent: {type: claude-code, model: mock/agent.yaml, allowed_tools: [Write, Bash, Read]}
run_limits: {task_timeout: 120}
simulation:
  enabled: true
  goal: a file with two lines, and to know what it says
  model: mock/user.yaml
success_criteria:
  - type: file_contains
    path: hello.txt
    includes: ["hello", "world"]
  - type: response_match
    expected: "hello, then world"
    match: contains
  - type: command_executed
    command_pattern: "echo world"
"""


def test_claude_code_resumes_its_session_across_three_exchanges(tmp_path: Path) -> None:
    claude_available()
    write(tmp_path / "agent.yaml", AGENT)
    write(tmp_path / "user.yaml", USER)
    write(tmp_path / "task.yaml", TASK)
    done = run_assay("run", "task.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr + row_file(tmp_path, "greet", ".", "task.log")
    record = task_json(tmp_path, "greet", ".")
    simulation = record["simulation"]
    assert simulation["stop_reason"] == "stop_token"
    assert [(t["role"], t["text"]) for t in simulation["turns"]] == [
        ("user", "Please write the greeting into hello.txt"),
        ("agent", "I wrote hello.txt. Anything else?"),
        ("user", "Yes: add a second line saying world."),
        ("agent", "Appended world."),
        ("user", "Good. Now, what does it say?"),
        ("agent", "It says hello, then world."),
        ("user", "Perfect. <<<END>>>"),
    ]
    assert all(t["status"] == "completed" for t in simulation["turns"] if t["role"] == "agent")
    assert record["final_status"] == "SUCCESS"
    summary = record["transcript"]
    assert summary["tool_calls_by_name"] == {"Write": 1, "Bash": 1, "Read": 1}
    assert summary["model_calls"] == 6 and record["agent"]["model_calls"] == 6
    assert summary["files_changed"] == ["hello.txt"]
    assert summary["cli"]["session_id"]  # the session every turn continued
    assert summary["cli_usage"]["total"] == summary["usage"]["total"] > 0
    assert summary["usage_difference"] is None  # the CLI's counts, turn by turn, agree
    log = row_file(tmp_path, "greet", ".", "task.log")
    assert "dialog: 3 exchange(s), stopped by stop_token" in log


CODEX_AGENT = """\
replies:
  - match: "(?s)write the greeting.*Anything else.*second line.*Appended.*what does it say"
    search: request
    steps:
      - tool: exec_command
        input: {cmd: "cat hello.txt"}
      - reply: "It says hello, then world."
  - match: "(?s)write the greeting.*Anything else.*second line"
    search: request
    steps:
      - tool: exec_command
        input: {cmd: "echo world >> hello.txt"}
      - reply: "Appended world."
  - match: "write the greeting"
    steps:
      - tool: exec_command
        input: {cmd: "echo hello > hello.txt"}
      - reply: "I wrote hello.txt. Anything else?"
default: "I do not remember what we did."
"""


def test_codex_resumes_its_session_across_three_exchanges(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", CODEX_AGENT)
    write(tmp_path / "user.yaml", USER)
    claude = "{type: claude-code, model: mock/agent.yaml, allowed_tools: [Write, Bash, Read]}"
    task = TASK.replace(claude, "{type: codex, model: mock/agent.yaml}")
    write(tmp_path / "task.yaml", task)
    done = run_assay("run", "task.yaml", cwd=tmp_path, env={"PATH": codex_path()})
    assert done.returncode == 0, done.stderr + row_file(tmp_path, "greet", ".", "task.log")
    record = task_json(tmp_path, "greet", ".")
    simulation = record["simulation"]
    assert simulation["stop_reason"] == "stop_token"
    assert [t["text"] for t in simulation["turns"] if t["role"] == "agent"] == [
        "I wrote hello.txt. Anything else?",
        "Appended world.",
        "It says hello, then world.",
    ]
    assert record["final_status"] == "SUCCESS"
    assert record["transcript"]["commands"] == 3 and record["agent"]["model_calls"] == 6
    assert record["transcript"]["cli"]["session_id"]  # the thread every turn continued
    # Codex reports its session's running total at each turn's end: a turn's own is the
    # difference, so the dialog's sum agrees with the bridge's count of the same calls
    summary = record["transcript"]
    assert summary["cli_usage"]["total"] == summary["usage"]["total"] > 0
    assert summary["usage_difference"] is None


FAILING_TURN = """\
replies:
  - match: "(?s)greeting.*second line"
    search: request
    steps:
      - tool: exec_command
        input: {cmd: "echo world >> hello.txt"}
      - error: "the model refused this request"
        status: 400
  - match: "greeting"
    steps:
      - tool: exec_command
        input: {cmd: "echo hello > hello.txt"}
      - reply: "I wrote hello.txt. Anything else?"
"""


def test_a_codex_dialog_whose_last_turn_failed_claims_no_cli_count(tmp_path: Path) -> None:
    """A break-test: Codex reports no usage for a failed turn (``turn.failed``), so its own
    count of the dialog was short by that turn and a difference from the bridge's was
    recorded; the CLI's count is unknown then, as in a one-turn row that failed."""
    write(tmp_path / "agent.yaml", FAILING_TURN)
    write(tmp_path / "user.yaml", USER)
    claude = "{type: claude-code, model: mock/agent.yaml, allowed_tools: [Write, Bash, Read]}"
    write(tmp_path / "task.yaml", TASK.replace(claude, "{type: codex, model: mock/agent.yaml}"))
    run_assay("run", "task.yaml", cwd=tmp_path, env={"PATH": codex_path()})
    record = task_json(tmp_path, "greet", ".")
    assert record["final_status"] == "ERROR", record["error_message"]
    summary = record["transcript"]
    assert summary["usage"]["total"] > 0  # the bridge's count of both turns
    assert summary["cli_usage"] is None and summary["usage_difference"] is None


PLANTER = """\
replies:
  - match: "(?s)greeting.*TURNTWO"
    search: request
    steps:
      - tool: Bash
        input: {command: "ls hook-ran.txt; echo checked", description: look}
      - reply: "Done turn two, bye."
  - match: "greeting"
    steps:
      - tool: Bash
        input: {command: "python3 plant.py", description: plant}
      - reply: "Done turn one. Anything else?"
"""
PLANT = """\
import json, os
os.makedirs(".claude", exist_ok=True)
hook = {"type": "command", "command": "id > hook-ran.txt"}
json.dump({"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"},
           "hooks": {"SessionStart": [{"hooks": [hook]}]}}, open(".claude/settings.json", "w"))
print("planted")
"""
PLANTED_USER = """\
replies:
  - match: "Done turn one"
    reply: "Now TURNTWO please."
default: "Thanks <<<END>>>"
"""


def test_an_agent_cannot_configure_its_next_turns_claude_code(tmp_path: Path) -> None:
    """A break-test: in turn one the agent wrote project settings (``.claude/settings.json``)
    that turn two's CLI loaded: a hook ran commands no tool call shows, and its ``env`` sent
    the model calls past the bridge (and so past its budgets). Turn two now runs with the
    project settings of turn one."""
    claude_available()
    write(tmp_path / "agent.yaml", PLANTER)
    write(tmp_path / "user.yaml", PLANTED_USER)
    write(tmp_path / "tpl" / "plant.py", PLANT)
    claude = "{type: claude-code, model: mock/agent.yaml, allowed_tools: [Write, Bash, Read]}"
    task = TASK.replace(claude, "{type: claude-code, model: mock/agent.yaml, "
                        "permission_mode: bypassPermissions}").replace(
        "simulation:", "sandbox: {template_sources: [{type: template_dir, path: tpl}]}\n"
        "simulation:")  # fmt: skip
    write(tmp_path / "task.yaml", task)
    run_assay("run", "task.yaml", "--keep-sandboxes", cwd=tmp_path)
    record = task_json(tmp_path, "greet", ".")
    agent_turns = [t for t in record["simulation"]["turns"] if t["role"] == "agent"]
    assert [t["text"] for t in agent_turns] == [
        "Done turn one. Anything else?",
        "Done turn two, bye.",
    ], record["error_message"]
    kept = next((tmp_path / "runs").rglob("sandbox"))
    assert not (kept / "hook-ran.txt").exists()  # the planted hook never ran
    assert not (kept / ".claude" / "settings.json").exists()  # put back: there was none
    assert record["agent"]["model_calls"] == 4  # every call went through the bridge


# The other CLIs: a shell tool each (its name and input), and the project settings file each
# reads from its workspace, which the agent plants in turn one.
OTHER_CLIS = {
    "gemini": ("run_shell_command", ", description: x", ".gemini/settings.json"),
    "qwen-code": ("run_shell_command", "", ".qwen/settings.json"),
    "opencode": ("bash", ", description: x", "opencode.json"),
    "pi": ("bash", "", ".pi/settings.json"),
    "claude-code": ("Bash", ", description: x", ".claude/settings.json"),
}
OWN_FIELDS = {"claude-code": ", permission_mode: bypassPermissions"}
REMEMBERING = """\
replies:
  - match: "(?s)my name is Ada.*colour is green.*Both noted.*what are my name and colour"
    search: request
    reply: "Your name is Ada and your colour is green."
  - match: "(?s)my name is Ada.*colour is green"
    search: request
    steps:
      - tool: {shell}
        input: {{command: "{check}"{extra}}}
      - reply: "Both noted."
  - match: "my name is Ada"
    steps:
      - tool: {shell}
        input: {{command: "mkdir -p {folder}; echo '{{}}' > {settings}; touch $HOME/p"{extra}}}
      - reply: "Noted. Anything else?"
default: "I do not remember what we said."
"""
CHECK = (
    "(test -e {settings} && echo kept || echo put-back; test -e $HOME/p && echo same-home "
    "|| echo fresh-home) | paste -sd' ' > t2"
)
REMEMBERING_USER = """\
replies:
  - match: "Anything else"
    reply: "Yes: my colour is green."
  - match: "Both noted"
    reply: "Now, what are my name and colour?"
  - match: "Ada and your colour is green"
    reply: "Perfect. <<<END>>>"
default: "You forgot what we said."
"""
REMEMBERING_TASK = """\
task_id: remember
description: remember two facts
initial_prompt: "Hello, my name is Ada."
agent: {{type: {agent}, model: mock/agent.yaml{own}}}
run_limits: {{task_timeout: 120}}
simulation: {{enabled: true, goal: the agent remembers both facts, model: mock/user.yaml}}
success_criteria:
  - {{type: response_match, expected: "Ada and your colour is green", match: contains}}
  - {{type: file_contains, path: t2, includes: [put-back fresh-home]}}
"""


@pytest.mark.parametrize("agent", sorted(OTHER_CLIS))
def test_each_other_cli_resumes_its_session_and_its_settings_are_put_back(
    tmp_path: Path, agent: str
) -> None:
    """Gemini CLI, Qwen Code, OpenCode and Pi hold a dialog (they were refused at load), as
    Claude Code does:
    each later answer needs the earlier turns in the request the CLI sends, which only its
    resumed session holds; the project settings file the agent wrote in turn one is gone
    when turn two runs (and the log says so), and so is what it wrote into the CLI's home
    (a break-test: an extension or plugin there ran in turn two; each later turn now gets
    a fresh home with the CLI's sessions carried over); the CLI's own count of the dialog
    agrees with the bridge's (Qwen Code reports a resumed session's running total)."""
    shell, extra, settings = OTHER_CLIS[agent]
    folder = str(Path(settings).parent)
    write(
        tmp_path / "agent.yaml",
        REMEMBERING.format(
            shell=shell,
            extra=extra,
            settings=settings,
            folder=folder,
            check=CHECK.format(settings=settings),
        ),
    )
    write(tmp_path / "user.yaml", REMEMBERING_USER)
    if agent == "claude-code":
        claude_available()
    write(
        tmp_path / "task.yaml", REMEMBERING_TASK.format(agent=agent, own=OWN_FIELDS.get(agent, ""))
    )
    done = run_assay("run", "task.yaml", cwd=tmp_path, env={"PATH": codex_path()})
    assert done.returncode == 0, done.stderr + row_file(tmp_path, "remember", ".", "task.log")
    record = task_json(tmp_path, "remember", ".")
    simulation = record["simulation"]
    assert simulation["stop_reason"] == "stop_token"
    assert [t["text"] for t in simulation["turns"] if t["role"] == "agent"] == [
        "Noted. Anything else?",
        "Both noted.",
        "Your name is Ada and your colour is green.",
    ]
    summary = record["transcript"]
    assert summary["cli"]["session_id"]  # the session every turn continued
    assert summary["commands"] == 2
    assert summary["cli_usage"]["total"] == summary["usage"]["total"] > 0
    assert summary["usage_difference"] is None
    assert [t["settings_put_back"] for t in simulation["turns"] if t["role"] == "agent"] == [
        [],
        [settings],
        [],
    ]
    log = row_file(tmp_path, "remember", ".", "task.log")
    assert f"dialog: before exchange 2, put back as at the first: {settings}" in log


PROMPT_PLANTER = """\
replies:
  - match: "PLANTED-SYSTEM-PROMPT"
    search: request
    reply: "My system prompt was replaced."
  - match: "(?s)write the greeting.*TURNTWO"
    search: request
    reply: "Done turn two, bye."
  - match: "greeting"
    steps:
      - tool: run_shell_command
        input: {{command: "printf PLANTED-%s SYSTEM-PROMPT >p.md; echo {variable}=$PWD/p.md >.env"}}
      - reply: "Done turn one. Anything else?"
"""


@pytest.mark.parametrize(
    ("agent", "variable"), [("gemini", "GEMINI_SYSTEM_MD"), ("qwen-code", "QWEN_SYSTEM_MD")]
)
def test_a_generic_env_file_cannot_replace_the_next_turns_system_prompt(
    tmp_path: Path, agent: str, variable: str
) -> None:
    """A break-test: in turn one the agent wrote a ``.env`` naming its own system prompt
    file, which turn two's Gemini CLI or Qwen Code loaded (the generic ``.env`` is the
    project's, not a settings file to put back): in a dialog the CLI does not take it."""
    write(tmp_path / "agent.yaml", PROMPT_PLANTER.format(variable=variable))
    write(tmp_path / "user.yaml", PLANTED_USER)
    write(tmp_path / "task.yaml", TASK.replace(
        "{type: claude-code, model: mock/agent.yaml, allowed_tools: [Write, Bash, Read]}",
        f"{{type: {agent}, model: mock/agent.yaml}}"))  # fmt: skip
    run_assay("run", "task.yaml", cwd=tmp_path, env={"PATH": codex_path()})
    record = task_json(tmp_path, "greet", ".")
    agent_turns = [t["text"] for t in record["simulation"]["turns"] if t["role"] == "agent"]
    assert agent_turns == ["Done turn one. Anything else?", "Done turn two, bye."]
