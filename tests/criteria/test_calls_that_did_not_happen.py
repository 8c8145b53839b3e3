"""A denied or never-run tool call never counts, whatever ``require_success`` says: for
``command_executed``, ``tool_called`` and ``skill_triggered``, on Claude Code's and Codex's
real event streams (``transcripts/``), cut or edited as a run would leave them, and after the
transcript's round trip through the trace (``trace.json``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from assay.agents.claude_stream import ClaudeStreamParser
from assay.agents.codex_stream import CodexStreamParser
from assay.agents.coding_models import plugin_skills
from assay.criteria import default_criteria
from assay.criteria.base import GradingContext
from assay.results.trace import Span, new_trace_id, to_otlp_json
from assay.results.transcript import Transcript
from assay.results.transcript_otlp import from_trace, to_spans

HERE = Path(__file__).resolve().parent / "transcripts"
CRITERION: TypeAdapter[Any] = TypeAdapter(default_criteria().union())


def lines(name: str) -> list[str]:
    return (HERE / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()


def parsed(stream: list[str], *, codex: bool = False) -> Transcript:
    parser: ClaudeStreamParser | CodexStreamParser
    parser = CodexStreamParser() if codex else ClaudeStreamParser()
    for line in stream:
        parser.feed(line)
    parser.ending()
    parser.transcript.skills_offered = sorted(plugin_skills([HERE / "plugin"]))
    return parser.transcript


def denied_bash_cut_before_its_result_event() -> Transcript:
    """The recorded denial, the run ending (killed, timed out) before Claude Code's
    ``result``: only the ``permission_denied`` event says the call was refused."""
    return parsed(lines("denied.claude")[:-1])


def denied_skill_call() -> Transcript:
    """The recorded Skill call, refused the way Claude Code refuses the recorded Bash call."""
    stream = lines("skill-then-work.claude")[:2]
    denial = json.loads(lines("denied.claude")[2])
    denial.update(tool_name="Skill", tool_use_id="call_mock_1", message="Skill needs approval")
    result = json.loads(lines("denied.claude")[3])
    result["message"]["content"][0].update(tool_use_id="call_mock_1", content="needs approval")
    return parsed([*stream, json.dumps(denial), json.dumps(result)])


def bash_not_offered() -> Transcript:
    """The recorded Bash call, answered as Claude Code answers a tool that
    ``disallowed_tools`` removed: no permission event, no denial in its ``result``, only an
    error result (found by a break-test: it counted as a command)."""
    stream = lines("denied.claude")
    result = json.loads(stream[3])
    result["message"]["content"][0].update(
        content="<tool_use_error>Error: No such tool available: Bash</tool_use_error>",
        is_error=True,
    )
    ending = json.loads(stream[5])
    ending.pop("permission_denials", None)
    return parsed([stream[0], stream[1], json.dumps(result), stream[4], json.dumps(ending)])


def bash_refused_before_running(content: str) -> Transcript:
    """The recorded Bash call, answered as Claude Code answers a call it refuses before
    running anything (its input invalid, the command blocked): a ``<tool_use_error>`` result
    (a break-test: it counted as a command that ran)."""
    stream = lines("denied.claude")
    result = json.loads(stream[3])
    result["message"]["content"][0].update(content=content, is_error=True)
    ending = json.loads(stream[5])
    ending.pop("permission_denials", None)
    return parsed([stream[0], stream[1], json.dumps(result), stream[4], json.dumps(ending)])


INVALID = ("<tool_use_error>InputValidationError: Bash failed due to the following issue:\n"
           "The parameter `timeout` type is expected as `number` but provided as `string`"
           "</tool_use_error>")  # fmt: skip
BLOCKED = "<tool_use_error>Blocked: standalone sleep 127. Run blocking commands in the background"


def skill_call_never_answered() -> Transcript:
    """The recorded Skill call, the run ending before any result came back."""
    return parsed(lines("skill-then-work.claude")[:2])


def codex_declined_command() -> Transcript:
    """The recorded Codex ``grep`` command, declined by Codex's approval policy."""
    started, completed = (json.loads(line) for line in lines("codex-commands.codex")[2:4])
    completed["item"].update(status="declined", exit_code=None, aggregated_output="")
    stream = [*lines("codex-commands.codex")[:2], json.dumps(started), json.dumps(completed)]
    return parsed(stream, codex=True)


def codex_command_never_completed() -> Transcript:
    """The recorded Codex ``grep`` command, started, the run ending before it completed."""
    return parsed(lines("codex-commands.codex")[:3], codex=True)


def through_the_trace(transcript: Transcript) -> Transcript:
    """The transcript as a re-grade reads it back from ``trace.json``."""
    agent = Span(name="invoke_agent claude-code", trace_id=new_trace_id())
    agent.end()
    back = from_trace(to_otlp_json([agent, *to_spans(transcript, agent)]))
    assert back is not None
    back.skills_offered = transcript.skills_offered
    return back


def grade(transcript: Transcript, **fields: Any) -> Any:
    spec = CRITERION.validate_python({"description": "d", **fields})
    context = GradingContext(sandbox=None, response=None, transcript=transcript)
    return asyncio.run(spec.check(context))


BASH_CASES = {
    "claude-denied": lambda: parsed(lines("denied.claude")),
    "claude-denied-cut": denied_bash_cut_before_its_result_event,
    "claude-denied-trace": lambda: through_the_trace(parsed(lines("denied.claude"))),
    "claude-not-offered": bash_not_offered,
    "claude-not-offered-trace": lambda: through_the_trace(bash_not_offered()),
    "claude-invalid-input": lambda: bash_refused_before_running(INVALID),
    "claude-blocked": lambda: bash_refused_before_running(BLOCKED + "</tool_use_error>"),
    "codex-declined": codex_declined_command,
    "codex-declined-trace": lambda: through_the_trace(codex_declined_command()),
    "codex-never-completed": codex_command_never_completed,
}


@pytest.mark.parametrize("make", BASH_CASES.values(), ids=BASH_CASES.keys())
@pytest.mark.parametrize("require_success", [False, True])
def test_a_bash_call_that_did_not_run_is_never_counted(make: Any, require_success: bool) -> None:
    transcript = make()
    (bash,) = [u for u in transcript.tool_uses() if u.name == "Bash"]
    assert not bash.ran
    assert not any(e.kind == "command" and e.exit_code == 0 for e in transcript.events)
    executed = grade(transcript, type="command_executed", tool_name="Bash",
                     require_success=require_success)  # fmt: skip
    assert executed.score == 0.0, executed.details
    assert "Matched 0/1 required" in executed.details
    assert "1 denied or never run, not counted" in executed.details
    called = grade(transcript, type="tool_called", tool="Bash", require_success=require_success)
    assert called.score == 0.0, called.details
    never = grade(transcript, type="tool_called", tool="Bash", min_count=0, max_count=0)
    assert never.score == 1.0, never.details


SKILL_CASES = {
    "denied": denied_skill_call,
    "denied-trace": lambda: through_the_trace(denied_skill_call()),
    "never-answered": skill_call_never_answered,
}


@pytest.mark.parametrize("make", SKILL_CASES.values(), ids=SKILL_CASES.keys())
def test_a_skill_call_that_did_not_run_engages_nothing(make: Any) -> None:
    transcript = make()
    result = grade(transcript, type="skill_triggered", skill_name="weather-report",
                   expected_skill="weather-report")  # fmt: skip
    assert result.observed_label == "no", result.details
    assert result.score == 0.0
    assert grade(transcript, type="tool_called", tool="Skill").score == 0.0


def test_the_same_calls_answered_still_count() -> None:
    ran = parsed(lines("skill-then-work.claude"))
    assert grade(ran, type="tool_called", tool="Skill").score == 1.0
    codex = parsed(lines("codex-commands.codex"), codex=True)
    assert grade(codex, type="command_executed", command_pattern="grep").score == 1.0
