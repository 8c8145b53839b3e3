"""A CLI agent that assay does not have, added as a user adds one: one module and its
stream parser (``tests/agents/toy_agent.py``, ``toy_stream.py``) and one registration line
(``agents=[ToyCliRunner]``), run end to end by :func:`assay.run`: planned, contained by
bwrap (it may act), its model calls through the bridge to a mock script, its tool calls in
the transcript and graded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import assay
from assay.errors import TaskFileError
from tests.agents.toy_agent import ToyCliRunner
from tests.helpers import write

SCRIPT = """\
replies:
  - match: "word: "
    steps:
      - tool: write_file
        input: {path: out.txt, text: "${row.word}"}
      - reply: "wrote ${row.word}"
"""

TASK = """\
task_id: toy
description: a CLI agent of the user's own
agent: {type: toy-cli, model: mock/script.yaml}
dataset:
  rows: [{id: a, word: alpha}, {id: b, word: beta}]
initial_prompt: "word: ${row.word}"
success_criteria:
  - {type: file_check, path: out.txt, includes: ["${row.word}"], description: the word}
  - {type: tool_called, tool: write_file, require_success: true, description: wrote it}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write(tmp_path / "script.yaml", SCRIPT)
    write(tmp_path / "toy.yaml", TASK)
    return tmp_path


def test_a_cli_agent_of_ones_own_runs_end_to_end(folder: Path) -> None:
    result = assay.run(folder / "toy.yaml", run_dir=folder / "runs", agents=[ToyCliRunner])
    assert result.exit_code == 0
    for row, word in (("a", "alpha"), ("b", "beta")):
        folder = result.run_dir / "default" / "toy" / row / "00"
        data = json.loads((folder / "task.json").read_text())
        assert data["final_status"] == "SUCCESS", data.get("error_message")
        assert (data["agent_type"], data["agent"]["model_calls"]) == ("toy-cli", 2)
        assert (folder / "response.txt").read_text() == f"wrote {word}"
        log = (folder / "task.log").read_text()
        assert f'tool write_file({{"path": "out.txt", "text": "{word}"}})' in log


def test_its_capabilities_come_from_its_classes(folder: Path) -> None:
    planned = assay.plan(folder / "toy.yaml", agents=[ToyCliRunner])
    task = planned.tasks[0].variants[0].definition
    assert task.agent.type == "toy-cli"
    assert task.sandbox_driver == "bwrap"
    assert task.agent.uses_bridge and task.agent.takes_turns


def test_without_its_registration_the_type_is_unknown(folder: Path) -> None:
    with pytest.raises(TaskFileError) as error:
        assay.plan(folder / "toy.yaml")
    assert "toy-cli" in str(error.value)


def test_its_preflight_refuses_a_missing_cli(folder: Path) -> None:
    write(
        folder / "toy.yaml",
        TASK.replace("model: mock/script.yaml", "model: mock/script.yaml, cli_path: nowhere"),
    )
    with pytest.raises(TaskFileError) as error:
        assay.plan(folder / "toy.yaml", agents=[ToyCliRunner])
    assert error.value.field == "agent.cli_path"
    assert error.value.line == 3
    assert "toy-cli is not at" in error.value.message


def test_execute_and_resume_take_the_agent_too(folder: Path) -> None:
    executed = assay.run(folder / "toy.yaml", run_dir=folder / "runs", agents=[ToyCliRunner],
                         stage="execute")  # fmt: skip
    row = json.loads((executed.run_dir / "default" / "toy" / "a" / "00" / "task.json")
                     .read_text())  # fmt: skip
    assert row["final_status"] == "NOT_GRADED"
    with pytest.raises(TaskFileError, match="toy-cli"):
        assay.resume(executed.run_dir)  # the run's own agent type is not given
    resumed = assay.resume(executed.run_dir, agents=[ToyCliRunner])
    assert resumed.run_dir == executed.run_dir
