"""The transcript: its summary, and its OTLP spans read back into the same transcript."""

from __future__ import annotations

from typing import Any

import pytest

from assay.agents.base import DialogState
from assay.results.trace import Span, new_trace_id, split_traces, to_otlp_json
from assay.results.transcript import TokenBuckets, Transcript, TranscriptEvent
from assay.results.transcript_otlp import from_session, from_trace, to_spans
from assay.store.traces import conversation, final_output, merge


def sample() -> Transcript:
    usage = TokenBuckets(input=100, output=10, cache_read=60, total=110)
    events = [
        TranscriptEvent("model_call", 1_000, name="mock/m", usage=usage, cost_usd=0.5,
                        stop_reason="tool_calls", duration_ns=400),
        TranscriptEvent("text", 1_100, text="Let me look."),
        TranscriptEvent("tool_call", 1_200, name="Bash", call_id="c1",
                        arguments={"command": "ls nope"}),
        TranscriptEvent("tool_result", 1_300, name="Bash", call_id="c1",
                        text="Exit code 2\nno such file", is_error=True),
        TranscriptEvent("command", 1_300, name="Bash", call_id="c1", command="ls nope",
                        exit_code=2),
        TranscriptEvent("tool_call", 1_400, name="Write", call_id="c2",
                        arguments={"file_path": "a.txt"}),
        TranscriptEvent("tool_result", 1_500, name="Write", call_id="c2", text="ok"),
        TranscriptEvent("file_change", 1_500, name="Write", call_id="c2", path="a.txt",
                        change="add"),
        TranscriptEvent("tool_call", 1_600, name="Edit", call_id="c3", arguments="raw text"),
        TranscriptEvent("tool_result", 1_700, name="Edit", call_id="c3", text="denied",
                        is_error=True),
        TranscriptEvent("denial", 1_700, name="Edit", call_id="c3", text="needs approval"),
        TranscriptEvent("model_call", 2_000, name="mock/m", usage=usage, cost_usd=0.25,
                        stop_reason="stop", duration_ns=300),
        TranscriptEvent("final", 2_100, text="All done."),
    ]  # fmt: skip
    cli = TokenBuckets(input=200, output=19, total=219)
    return Transcript(agent="claude-code", events=events, stop_reason="end_turn",
                      cli={"version": "2.1.332"}, cli_usage=cli, cli_cost_usd=0.9,
                      skills_offered=["pdf"], usage_source="bridge")  # fmt: skip


def test_summary_counts_what_the_agent_did() -> None:
    summary = sample().summary()
    assert summary.model_calls == 2 and summary.tool_calls == 3
    assert summary.tool_calls_by_name == {"Bash": 1, "Write": 1, "Edit": 1}
    assert summary.tool_errors == 2 and summary.commands == 1 and summary.commands_failed == 1
    assert summary.files_changed == ["a.txt"]
    assert [(d.tool, d.reason) for d in summary.denials] == [("Edit", "needs approval")]
    assert summary.usage == TokenBuckets(input=200, output=20, cache_read=120, total=220)
    assert summary.cost_usd == 0.75
    # the CLI saw 19 output tokens where the bridge counted 20: recorded, not dropped
    assert summary.usage_difference == "output 20 (bridge) vs 19 (CLI)"
    assert summary.last_lines[-1] == "final answer: All done."
    assert "  $ ls nope → exit 2" in summary.last_lines


def test_tool_uses_join_calls_results_exit_codes_and_denials() -> None:
    uses = sample().tool_uses()
    assert [(u.name, u.is_error, u.denied, u.exit_code) for u in uses] == [
        ("Bash", True, False, 2),
        ("Write", False, False, None),
        ("Edit", True, True, None),
    ]


def test_spans_read_back_into_the_same_transcript() -> None:
    transcript = sample()
    root = Span("row t/r", new_trace_id())
    agent = root.child("invoke_agent claude-code")
    agent.start_ns, agent.end_ns = 900, 2_100
    spans = to_spans(transcript, agent)
    names = [s.name for s in spans]
    assert names == ["chat mock/m", "execute_tool Bash", "execute_tool Write",
                     "execute_tool Edit", "chat mock/m"]  # fmt: skip
    trace = to_otlp_json([root, agent, *spans])
    back = from_trace(trace)
    assert back is not None
    assert back.summary() == transcript.summary()
    assert [e.kind for e in back.events] == [e.kind for e in transcript.events]
    assert back.tool_uses() == transcript.tool_uses()
    assert final_output(trace) == "All done."  # what the store grades a trace-backed row on


def test_a_trace_without_an_agent_span_has_no_transcript() -> None:
    root = Span("something else", new_trace_id())
    root.end()
    assert from_trace(to_otlp_json([root])) is None


def _run_trace(transcript: Transcript, start: int) -> dict[str, Any]:
    root = Span("row t/r", new_trace_id(), start_ns=start, end_ns=start + 5_000)
    agent = root.child("invoke_agent claude-code")
    agent.start_ns, agent.end_ns = start + 900, start + 2_100
    return to_otlp_json([root, agent, *to_spans(transcript, agent)])


def test_a_session_reads_back_every_trace_in_start_order() -> None:
    first, second = sample(), sample()
    second.events[-1] = TranscriptEvent("final", 2_000, text="Second answer.")
    first.skills_offered, first.skills_loaded = ["a"], ["plug:a"]
    second.skills_offered, second.skills_loaded = ["a", "b"], ["plug:b", "plug:a"]
    late, early = _run_trace(second, 10_000_000), _run_trace(first, 0)
    session = merge([late, early])  # stored out of order
    parts = split_traces(session)
    assert [final_output(p) for p in parts] == ["All done.", "Second answer."]
    whole = from_session(session)
    assert whole is not None
    assert whole.of_kind("final")[0].text == "All done."
    assert whole.final == "Second answer."
    assert whole.summary().tool_calls == 2 * first.summary().tool_calls
    assert whole.skills_offered == ["a", "b"] and whole.skills_loaded == ["plug:a", "plug:b"]
    assert from_session(to_otlp_json([Span("x", new_trace_id())])) is None
    assert conversation(session) == "Turn 1\nOutput: All done.\n\nTurn 2\nOutput: Second answer."


def test_long_tool_output_is_cut_at_whitespace_in_task_log_and_trace() -> None:
    secret = "hunter2!Correct-Horse#Battery"
    output = "line " * 30 + secret + " tail" + " more" * 3000
    transcript = Transcript(agent="claude-code", events=[
        TranscriptEvent("tool_call", 1_200, name="Bash", call_id="c1",
                        arguments={"command": "cat log"}),
        TranscriptEvent("tool_result", 1_300, name="Bash", call_id="c1", text=output),
    ])  # fmt: skip
    root = Span("row t/r", new_trace_id())
    agent = root.child("invoke_agent claude-code")
    result = to_spans(transcript, agent)[0].attributes["gen_ai.tool.call.result"]
    for shown in ["\n".join(transcript.lines()), result]:
        pieces = [secret[:n] for n in range(3, len(secret))] + [secret[-n:] for n in range(3, 29)]
        whole = shown.count(secret)
        assert not any(shown.count(p) > whole for p in pieces), shown[-60:]


def _bash(call_id: str, command: str, exit_code: int, at: int) -> list[TranscriptEvent]:
    return [TranscriptEvent("tool_call", at, name="Bash", call_id=call_id,
                            arguments={"command": command}),
            TranscriptEvent("command", at + 1, name="Bash", call_id=call_id, command=command,
                            exit_code=exit_code),
            TranscriptEvent("tool_result", at + 2, name="Bash", call_id=call_id,
                            text=f"exit {exit_code}", is_error=exit_code != 0)]  # fmt: skip


@pytest.mark.parametrize("call_id", ["call_0", ""])
def test_two_calls_with_one_id_keep_their_own_outcomes(call_id: str) -> None:
    """A server that numbers calls per turn (``call_0`` each turn), one that sends empty ids,
    or the text protocol's ids in a dialog's later turns: the second result replaced the
    first, so a failing command counted as a success (a break-test)."""
    read = TranscriptEvent("tool_call", 0, name="Read", call_id=call_id, arguments={})
    events = [read, TranscriptEvent("tool_result", 1, name="Read", call_id=call_id, text="x"),
              *_bash(call_id, "false", 1, 10), *_bash(call_id, "true", 0, 20)]  # fmt: skip
    uses = Transcript(agent="llm", events=events).tool_uses()
    codes = (1, 0) if call_id else (None, None)  # a command without an id joins no call
    assert [(u.name, u.result, u.is_error, u.exit_code) for u in uses] == [
        ("Read", "x", False, None),
        ("Bash", "exit 1", True, codes[0]),
        ("Bash", "exit 0", False, codes[1]),
    ]
    summary = Transcript(agent="llm", events=events).summary()
    assert (summary.tool_errors, summary.commands_failed) == (1, 1)


def test_a_result_recorded_before_its_call_still_joins_it() -> None:
    events = [TranscriptEvent("tool_result", 0, name="Bash", call_id="c", text="late"),
              TranscriptEvent("tool_call", 1, name="Bash", call_id="c")]  # fmt: skip
    assert [u.result for u in Transcript(agent="llm", events=events).tool_uses()] == ["late"]


def _buckets(input_tokens: int, output: int, cache_read: int = 0) -> TokenBuckets:
    return TokenBuckets(input=input_tokens, output=output, cache_read=cache_read,
                        total=input_tokens + output)  # fmt: skip


def test_a_running_total_less_an_earlier_one_is_what_was_added() -> None:
    later, earlier = _buckets(12935, 12, 4000), _buckets(4309, 4, 1000)
    assert later.since(earlier) == _buckets(8626, 8, 3000)
    assert later.since(later) == TokenBuckets()
    assert earlier.since(later) is None  # not a running total of the later one's
    assert _buckets(10, 5).since(_buckets(9, 6)) is None  # one bucket went down


def test_a_resumed_cli_turn_counts_its_own_tokens_only() -> None:
    state = DialogState()
    first = state.turn_usage(_buckets(4309, 4))
    assert first == _buckets(4309, 4)  # the first turn: the session's total is its own
    state.session_id = "thread-1"
    assert state.turn_usage(_buckets(8626, 8)) == _buckets(4317, 4)
    # a failed turn reports nothing: the next one's count holds its tokens too (a break-test)
    assert state.turn_usage(None) is None
    assert state.turn_usage(_buckets(12935, 12)) == _buckets(4309, 4)
    assert state.turn_usage(_buckets(50, 1)) == _buckets(50, 1)  # went down: as reported
    assert first + _buckets(4317, 4) == _buckets(8626, 8)
