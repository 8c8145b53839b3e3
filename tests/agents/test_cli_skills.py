"""A plugin's skill reaches Qwen Code, OpenCode and Gemini CLI (each reads skills from a
folder of its own, not from plugin folders): the real CLIs, contained by bwrap, are offered
the skill, call their own skill tool on it (``skill``, ``skill``, ``activate_skill``), the
skill's body reaches the scripted model only through that call, and ``skill_triggered``
sees the call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.coding import codex_path, run_assay
from tests.helpers import write

pytestmark = pytest.mark.coding_agent

SKILL = ("---\nname: notes\ndescription: Keeps notes the okapi way.\n---\n"
         "Always sign notes with the word quokka.\n")  # fmt: skip
SCRIPT = """\
replies:
  - match: "sign notes with the word quokka"
    search: request
    steps:
      - reply: "not reached: only the skill call reads the body"
      - reply: "quokka"
  - match: "job: qwen-code"
    steps: [{tool: skill, input: {skill: notes}}, {reply: "the body never came"}]
  - match: "job: opencode"
    steps: [{tool: skill, input: {name: notes}}, {reply: "the body never came"}]
  - match: "job: gemini"
    steps: [{tool: activate_skill, input: {name: notes}}, {reply: "the body never came"}]
"""
TASK = """\
task_id: {agent}
description: a plugin's skill
agent: {{type: {agent}, model: mock/../script.yaml, plugins: [{{type: local, path: ../plug}}]}}
initial_prompt: "job: {agent}"
success_criteria:
  - {{type: skill_triggered, skill_name: notes, expected_skill: notes, description: engaged}}
  - {{type: response_match, expected: quokka, description: its body was read}}
"""
AGENTS = ("qwen-code", "opencode", "gemini")


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("skills")
    write(cwd / "script.yaml", SCRIPT)
    # the CLIs load a skill by its front matter's name, not its folder's
    write(cwd / "plug" / "skills" / "note-taking" / "SKILL.md", SKILL)
    write(cwd / "plug" / ".claude-plugin" / "plugin.json", '{"name": "plug"}')
    for agent in AGENTS:
        write(cwd / "tasks" / f"{agent}.yaml", TASK.format(agent=agent))
    done = run_assay("run", "tasks", "-j", "3", cwd=cwd, env={"PATH": codex_path()},
                     timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return cwd


@pytest.mark.parametrize("agent", AGENTS)
def test_the_plugins_skill_is_offered_engaged_and_read(ran: Path, agent: str) -> None:
    result = json.loads(
        (ran / "runs" / "latest" / "default" / agent / "00" / "task.json").read_text()
    )
    assert result["final_status"] == "SUCCESS", result["error_message"]
    assert result["transcript"]["skills_offered"] == ["notes"]
    assert result["transcript"]["tool_calls_by_name"] == {"Skill": 1}
    assert [c["score"] for c in result["success_criteria_results"]] == [1.0, 1.0]
    plugin = ran / "plug"
    assert sorted(p.name for p in plugin.rglob("*")) == [
        ".claude-plugin", "SKILL.md", "note-taking", "plugin.json", "skills"]  # fmt: skip
