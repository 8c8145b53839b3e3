"""Live verdicts and the early-stop monitor (Coder Eval's ``stop_early``), without a CLI:
each decision, the kill switch, the cut row's gate, and how task files write it."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from assay.criteria.live import LiveMonitor, armed_passed
from assay.criteria.registry import default_criteria
from assay.orchestration.loading.task_loader import load_task
from assay.results.task_result import EarlyStopRecord
from assay.results.transcript import Transcript, TranscriptEvent
from tests.cli.inproc import run_in_process

REGISTRY = default_criteria(entry_points=False)


def criteria(*specs: dict[str, Any]) -> list[Any]:
    base = {"description": "d"}
    return list(REGISTRY.validate([{**base, **spec} for spec in specs]))


def ran(*calls: tuple[str, dict[str, Any]], pending: int = 0) -> Transcript:
    """Tool calls that ran (with results), then ``pending`` calls still waiting for theirs."""
    transcript = Transcript(agent="claude-code")
    for n, (name, arguments) in enumerate(calls):
        transcript.add(
            TranscriptEvent("tool_call", n, name=name, call_id=f"c{n}", arguments=arguments)
        )
        transcript.add(TranscriptEvent("tool_result", n, name=name, call_id=f"c{n}", text="ok"))
    for n in range(pending):
        transcript.add(TranscriptEvent("tool_call", 99, name="Bash", call_id=f"p{n}",
                                       arguments={"command": "rm -rf /"}))  # fmt: skip
    return transcript


def bash(command: str) -> tuple[str, dict[str, Any]]:
    return ("Bash", {"command": command})


NEVER = {"type": "command_executed", "command_pattern": "rm -rf", "min_count": 0, "max_count": 0}
REACH = {"type": "command_executed", "command_pattern": "pytest", "min_count": 2}


def test_command_executed_decides_as_coder_eval_says() -> None:
    never, reach = criteria(NEVER, REACH)
    assert never.live_verdict(ran(bash("ls"))) is None
    assert never.live_verdict(ran(bash("ls"), bash("rm -rf build"))) is False
    assert never.live_verdict(ran(bash("ls"), pending=1)) is None  # not run yet: not counted
    assert reach.live_verdict(ran(bash("pytest -q"))) is None
    assert reach.live_verdict(ran(bash("pytest -q"), bash("bash -lc 'pytest x'"))) is True
    ranged = criteria({**REACH, "max_count": 3})[0]
    assert ranged.live_verdict(ran(*[bash("pytest")] * 3)) is None  # may still exceed
    assert ranged.live_verdict(ran(*[bash("pytest")] * 4)) is False


def test_skill_triggered_decides_once_engaged() -> None:
    wanted, unwanted = criteria(
        {"type": "skill_triggered", "skill_name": "pdf", "expected_skill": "pdf"},
        {"type": "skill_triggered", "skill_name": "pdf", "expected_skill": ""},
    )
    engaged = ran(("Skill", {"skill": "docs:pdf"}))
    assert wanted.live_verdict(ran(bash("ls"))) is None
    assert wanted.live_verdict(engaged) is True and unwanted.live_verdict(engaged) is False


def test_other_criteria_never_decide_early() -> None:
    (files,) = criteria({"type": "file_exists", "path": "x"})
    assert files.live_verdict(ran(bash("rm -rf x"))) is None


def test_the_monitor_stops_on_the_first_decision_and_latches() -> None:
    armed = criteria({**NEVER, "stop_early": {}}, {**REACH, "stop_early": {"on_pass": "stop"}},
                     {"type": "file_exists", "path": "x"})  # fmt: skip
    monitor = LiveMonitor.of(armed, kill_switch=None, gate_threshold=0.5)
    assert monitor is not None and [i for i, _, _ in monitor.armed] == [0, 1]
    assert monitor(ran(bash("pytest"))) is None
    record = monitor(ran(bash("pytest"), bash("pytest")))
    assert record is not None and record.reason == "criterion_passed"
    assert record.tool_call_index == 2 and record.armed == [0, 1] and record.gate_threshold == 0.5
    assert monitor(ran()) is record  # decided once


def test_on_pass_continue_waits_and_a_failure_still_stops() -> None:
    (reach,) = criteria({**REACH, "stop_early": {"on_pass": "continue"}})
    monitor = LiveMonitor.of([reach], kill_switch=True, gate_threshold=1.0)
    assert monitor is not None and monitor(ran(bash("pytest"), bash("pytest"))) is None
    ranged = criteria({**REACH, "max_count": 2, "stop_early": {"on_pass": "continue"}})
    monitor = LiveMonitor.of(ranged, kill_switch=None, gate_threshold=1.0)
    assert monitor is not None
    record = monitor(ran(*[bash("pytest")] * 3))
    assert record is not None and record.reason == "criterion_failed"


def test_decide_within_counts_calls_that_ran() -> None:
    (reach,) = criteria({**REACH, "stop_early": {"decide_within": 2}})
    monitor = LiveMonitor.of([reach], kill_switch=None, gate_threshold=1.0)
    assert monitor is not None
    assert monitor(ran(bash("ls"), pending=3)) is None
    record = monitor(ran(bash("ls"), bash("ls")))
    assert record is not None and record.reason == "decision_budget_exceeded"


def test_nothing_armed_or_the_kill_switch_means_no_monitor() -> None:
    assert LiveMonitor.of(criteria(NEVER), kill_switch=None, gate_threshold=1.0) is None
    armed = criteria({**NEVER, "stop_early": {}})
    assert LiveMonitor.of(armed, kill_switch=False, gate_threshold=1.0) is None


def record(armed: list[int], threshold: float = 1.0) -> EarlyStopRecord:
    return EarlyStopRecord(reason="criterion_passed", criterion_type="t", criterion_description="d",
                           armed=armed, tool_call_index=1, elapsed_seconds=0.1,
                           gate_threshold=threshold)  # fmt: skip


def test_a_cut_row_passes_on_its_armed_criteria_weighted() -> None:
    scores = [(1.0, 1.0, True), (0.0, 3.0, True), (0.0, 1.0, True)]
    assert armed_passed(record([0]), scores)  # the unarmed zeros do not count
    assert not armed_passed(record([0, 1]), scores)  # (1·1 + 0·3) / 4 = 0.25
    assert armed_passed(record([0, 1], 0.25), scores)
    assert not armed_passed(record([0], 1.0), [(1.0, 1.0, False)])  # did not grade
    assert not armed_passed(record([]), scores)


def write_task(tmp_path: Path, criterion: str, limits: str = "{}", agent: str = "") -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(textwrap.dedent(f"""\
        task_id: t
        description: d
        initial_prompt: go
        agent: {agent or "{type: claude-code, model: mock/echo}"}
        run_limits: {limits}
        success_criteria:
          - {criterion}
        """))  # fmt: skip
    return path


def test_task_files_write_it_as_either_era(tmp_path: Path) -> None:
    loaded = load_task(write_task(tmp_path, "{type: command_executed, description: d, "
                                            "command_pattern: x, stop_when: pass}"))  # fmt: skip
    block = loaded.definition.success_criteria[0].stop_early  # type: ignore[attr-defined]
    assert block.on_pass == "stop" and block.decide_within is None
    limits_text = "{stop_early: false, stop_early_gate_threshold: 0.5}"
    loaded = load_task(write_task(tmp_path, "{type: command_executed, description: d, "
                                            "stop_early: {on_pass: stop, decide_within: 5}}",
                                  limits=limits_text))  # fmt: skip
    limits = loaded.definition.run_limits
    assert limits.stop_early is False and limits.stop_early_gate_threshold == 0.5


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        (
            "{type: command_executed, description: d, weight: 0, stop_early: {}}",
            "weight 0 cannot carry stop_early",
        ),
        (
            "{type: command_executed, description: d, stop_early: {decide_within: 0}}",
            "greater than 0",
        ),
        ("{type: command_executed, description: d, stop_early: {on_pass: halt}}", "on_pass"),
        ("{type: command_executed, description: d, stop_when: sometimes}", "stop_when must be"),
        ("{type: command_executed, description: d, stop_when: pass, stop_early: {}}", "not both"),
    ],
)
def test_bad_blocks_are_refused_at_load(tmp_path: Path, criterion: str, message: str) -> None:
    from assay.errors import TaskFileError

    with pytest.raises(TaskFileError, match=message):
        load_task(write_task(tmp_path, criterion))


def test_a_criterion_that_cannot_stop_early_warns(tmp_path: Path) -> None:
    loaded = load_task(write_task(tmp_path, "{type: file_exists, path: x, description: d, "
                                            "stop_early: {on_pass: stop}}"))  # fmt: skip
    assert any("stop_early" in w and "checked once" in w for w in loaded.warnings)


def test_plan_warns_when_the_agent_has_no_event_stream(tmp_path: Path) -> None:
    write_task(tmp_path, "{type: command_executed, description: d, stop_early: {}}",
               agent="{type: llm, model: mock/echo}")  # fmt: skip
    done = run_in_process("plan", "task.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "success_criteria[0].stop_early: agent type 'llm' reports no tool calls" in done.stderr


def test_a_gate_threshold_out_of_range_is_refused() -> None:
    from assay.spec.task import RunLimits

    for value in (0, 1.5, -1):
        with pytest.raises(ValidationError):
            RunLimits(stop_early_gate_threshold=value)
