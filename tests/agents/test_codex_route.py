"""A ``codex`` agent on ``route: direct`` is refused when the task is loaded (issue 29): by
``assay plan`` and by ``assay run``, exit 2, at the task file's ``agent.route`` line, with the
reason and the fix, whatever credentials the user has (before, a user with ``CODEX_API_KEY``
passed the plan and every row hung until ``task_timeout``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.coding import run_assay
from tests.helpers import write

AGENTS = [
    "  type: codex\n  route: direct\n",
    "  type: codex\n  route: direct\n  model: openai/gpt-5.5\n",
    "  type: codex\n  model: gpt-5.5\n  cli_model: gpt-5.5\n  route: direct\n",
]


@pytest.mark.parametrize("command", ["plan", "run"])
@pytest.mark.parametrize("agent", AGENTS)
def test_codex_on_route_direct_is_refused_before_any_row(
    tmp_path: Path, command: str, agent: str
) -> None:
    write(tmp_path / "t.yaml", "task_id: cx\ndescription: d\ninitial_prompt: go\n"
          f"agent:\n{agent}"
          "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    line = 4 + agent.splitlines().index("  route: direct") + 1
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    write(home / ".codex" / "auth.json", "{}")  # a login: the old preflight let it through
    env = {"HOME": str(home), "CODEX_API_KEY": "sk-test-not-used"}
    done = run_assay(command, "t.yaml", cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"t.yaml:{line}: agent.route: codex runs through the model bridge only" in done.stderr
    assert "remove route: direct (route: bridge is the default)" in done.stderr
    assert "model: openai/gpt-5.5" in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("task.json"))
