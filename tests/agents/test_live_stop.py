"""Live early stop (Coder Eval's ``stop_early``) on the real Claude Code CLI: a decided
criterion ends the CLI mid-run, the row is graded on its armed criteria, and the reason is
recorded; the kill switch and ``decide_within``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.coding import claude_available, run_assay, task_json
from tests.helpers import write

pytestmark = pytest.mark.coding_agent

# every row runs three commands, the third writing after.txt, unless the agent is ended first
SCRIPT = """\
replies:
  - match: "job: "
    steps:
      - {tool: Bash, input: {command: "echo first", description: a}}
      - {tool: Bash, input: {command: "${row.second}", description: b}}
      - {tool: Bash, input: {command: "echo late > after.txt", description: c}}
      - reply: "all done"
"""

TASK = """\
task_id: {task_id}
description: live early stop
agent: {{type: claude-code, model: mock/../script.yaml, permission_mode: acceptEdits,
        allowed_tools: [Bash]}}
run_limits: {limits}
dataset:
  rows: {rows}
initial_prompt: "job: ${{row.id}}"
success_criteria:
  - type: command_executed
    description: {description}
    command_pattern: "{pattern}"
{counts}
    stop_early: {stop}
  - type: file_exists
    path: after.txt
    description: the third command ran
"""


def task(folder: Path, task_id: str, second: str, *, pattern: str, counts: str, stop: str,
         limits: str = "{task_timeout: 120}", description: str = "command") -> None:  # fmt: skip
    rows = json.dumps([{"id": task_id, "second": second}])
    write(folder / f"{task_id}.yaml", TASK.format(
        task_id=task_id, rows=rows, limits=limits, pattern=pattern, stop=stop,
        counts="\n".join("    " + line for line in counts.splitlines()),
        description=description,
    ))  # fmt: skip


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    claude_available()
    cwd = tmp_path_factory.mktemp("live-stop")
    write(cwd / "script.yaml", SCRIPT)
    tasks = cwd / "tasks"
    never = "min_count: 0\nmax_count: 0"
    task(tasks, "forbidden", "rm -rf build", pattern="rm -rf", counts=never, stop="{}",
         description="never deletes")  # fmt: skip
    task(tasks, "reached", "echo make-test", pattern="make-test", counts="min_count: 1",
         stop="{on_pass: stop}", description="runs the tests")  # fmt: skip
    task(tasks, "continued", "echo make-test", pattern="make-test", counts="min_count: 1",
         stop="{on_pass: continue}")  # fmt: skip
    task(tasks, "undecided", "echo nothing", pattern="make-test", counts="min_count: 1",
         stop="{decide_within: 2}")  # fmt: skip
    task(tasks, "disarmed", "rm -rf build", pattern="rm -rf", counts=never, stop="{}",
         limits="{task_timeout: 120, stop_early: false}")  # fmt: skip
    done = run_assay("run", "tasks", "-j", "4", "--keep-sandboxes", cwd=cwd)
    assert done.returncode == 1, done.stderr  # rows fail on purpose
    assert "Traceback" not in done.stderr, done.stderr
    return cwd


def commands(result: dict[str, object]) -> int:
    summary = result["transcript"]
    assert isinstance(summary, dict)
    return int(summary["commands"])


def test_a_decided_failure_ends_the_cli_before_its_next_command(ran: Path) -> None:
    result = task_json(ran, "forbidden", "forbidden")
    assert result["final_status"] == "FAILURE"
    early = result["agent"]["early_stop"]
    assert early["reason"] == "criterion_failed" and early["tool_call_index"] == 2
    assert early["criterion_type"] == "command_executed" and early["armed"] == [0]
    assert result["agent"]["stopped_early"] == (
        "stopped early after 2 tool call(s): command_executed 'never deletes' failed"
    )
    assert commands(result) == 2  # the third command never ran
    assert [c["score"] for c in result["success_criteria_results"]] == [0.0, 0.0]


def test_a_decided_pass_with_on_pass_stop_passes_on_its_armed_criteria(ran: Path) -> None:
    result = task_json(ran, "reached", "reached")
    early = result["agent"]["early_stop"]
    assert early["reason"] == "criterion_passed" and early["gate_threshold"] == 1.0
    # after.txt was never written (file_exists scores 0), yet the cut row passes: its armed
    # criterion reached the gate threshold (Coder Eval's rule for a cut run)
    assert [c["score"] for c in result["success_criteria_results"]] == [1.0, 0.0]
    assert result["final_status"] == "SUCCESS", result["error_message"]
    assert commands(result) == 2


def test_on_pass_continue_lets_the_agent_finish(ran: Path) -> None:
    result = task_json(ran, "continued", "continued")
    assert result["agent"]["early_stop"] is None and result["agent"]["stopped_early"] is None
    assert result["final_status"] == "SUCCESS" and commands(result) == 3


def test_decide_within_ends_an_undecided_row(ran: Path) -> None:
    result = task_json(ran, "undecided", "undecided")
    early = result["agent"]["early_stop"]
    assert early["reason"] == "decision_budget_exceeded" and early["tool_call_index"] == 2
    assert result["final_status"] == "FAILURE" and commands(result) == 2


def test_the_kill_switch_disarms_every_criterion(ran: Path) -> None:
    result = task_json(ran, "disarmed", "disarmed")
    assert result["agent"]["early_stop"] is None and commands(result) == 3
    assert result["final_status"] == "FAILURE"


def test_evaluate_keeps_the_cut_rows_rule(ran: Path) -> None:
    done = run_assay("evaluate", "runs/latest", cwd=ran)
    assert done.returncode == 1, done.stderr
    assert task_json(ran, "reached", "reached")["final_status"] == "SUCCESS"
    assert task_json(ran, "forbidden", "forbidden")["final_status"] == "FAILURE"


def test_the_suite_report_counts_the_rows_stopped_early_by_why(ran: Path) -> None:
    run = ran / "runs" / "latest" / "default"
    suite = json.loads((run / "forbidden" / "suite.json").read_text())
    assert suite["stopped_early"] == {"criterion_failed": 1}
    assert json.loads((run / "continued" / "suite.json").read_text())["stopped_early"] == {}
    markdown = (run / "forbidden" / "suite.md").read_text()
    assert (
        "**Stopped early**: 1 row(s), graded as their agent left them (criterion_failed 1)"
        in markdown
    )
