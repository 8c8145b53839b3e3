"""Mock scripts that act: steps per turn, tool calls, variables, scripted failures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assay.errors import ModelError, UsageError
from assay.providers.base import Message, ModelRequest, ToolCall, ToolResult
from assay.providers.mock import load_mock
from assay.providers.retry import TransientModelError
from tests.helpers import write

SCRIPT = """\
replies:
  - match: "Write the string '(\\\\w+)'"
    steps:
      - tool: Write
        input: {file_path: "${sandbox}/out.txt", content: "${match.1} for ${row.id}"}
      - tools:
          - {tool: Bash, input: {command: "cat out.txt"}}
          - {tool: apply_patch, input: "*** Begin Patch\\n*** End Patch\\n"}
        text: Checking.
      - reply: Done ${row.id}.
  - match: flaky
    steps:
      - reply: finally
        fail: {status: 429, times: 2, retry_after: 0.01}
  - match: slow
    reply: late
    delay: 0.05
  - match: down
    error: "503 from ${row.id}"
    status: 503
default: fallback
"""


def conversation(prompt: str, turns: int) -> tuple[Message, ...]:
    messages = [Message("system", "sys"), Message("user", prompt)]
    for turn in range(turns):
        call = ToolCall(f"c{turn}", "Write", "{}")
        messages += [
            Message("assistant", "", (call,)),
            Message("user", "<system-reminder/>", tool_results=(ToolResult(call.id, "ok"),)),
        ]
    return tuple(messages)


def ask(tmp_path: Path, prompt: str, turns: int = 0, **variables: str):  # type: ignore[no-untyped-def]
    model = load_mock("mock/s.yaml", tmp_path)
    request = ModelRequest(
        messages=conversation(prompt, turns),
        script_vars={f"row.{k}": v for k, v in variables.items()} | {"sandbox": "/sb"},
    )
    return asyncio.run(model.generate(request)), model


def test_steps_answer_turn_by_turn(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", SCRIPT)
    prompt = "Please: Write the string 'alpha' into out.txt"
    first, _ = ask(tmp_path, prompt, 0, id="r1")
    assert first.text == "" and first.finish_reason == "tool_calls"
    (call,) = first.tool_calls
    assert call.name == "Write" and call.input == {
        "file_path": "/sb/out.txt",
        "content": "alpha for r1",
    }
    second, _ = ask(tmp_path, prompt, 1, id="r1")
    assert second.text == "Checking."
    assert [(c.name, c.kind) for c in second.tool_calls] == [
        ("Bash", "function"),
        ("apply_patch", "custom"),
    ]
    assert second.tool_calls[1].arguments == "*** Begin Patch\n*** End Patch\n"
    third, _ = ask(tmp_path, prompt, 2, id="r1")
    assert third.text == "Done r1." and not third.tool_calls and third.finish_reason == "stop"
    with pytest.raises(
        ModelError,
        match=r"replies\[0\] scripts 3 turn\(s\); the conversation "
        r"asked for turn 4",
    ):
        ask(tmp_path, prompt, 3, id="r1")


def test_a_step_fails_its_first_calls_then_answers(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", SCRIPT)
    model = load_mock("mock/s.yaml", tmp_path)
    request = ModelRequest(messages=(Message("user", "flaky"),))
    for number in (1, 2):
        with pytest.raises(TransientModelError) as error:
            asyncio.run(model.generate(request))
        assert error.value.status == 429 and error.value.rate_limited
        assert f"scripted HTTP 429 ({number} of 2)" in str(error.value)
        assert error.value.retry_after == 0.01
    assert asyncio.run(model.generate(request)).text == "finally"


def test_scripted_status_error_is_transient_and_filled(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", SCRIPT)
    with pytest.raises(TransientModelError, match="scripted error: 503 from r9") as error:
        ask(tmp_path, "down", id="r9")
    assert error.value.status == 503
    assert ask(tmp_path, "nothing matches")[0].text == "fallback"
    assert ask(tmp_path, "slow")[0].text == "late"


def test_unknown_variable_is_a_model_error_naming_what_is_known(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", "replies: [{match: x, reply: '${row.nope}'}]\n")
    with pytest.raises(
        ModelError,
        match=r"uses \$\{row.nope\}, which this call does not have "
        r"\(known: match.0, row.id, sandbox\)",
    ):
        ask(tmp_path, "x", id="1")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("replies: [{match: x}]", "replies[0] needs one of 'reply', 'error', 'tool' or 'tools'"),
        ("replies: [{match: x, steps: []}]", "replies[0].steps must be a non-empty list"),
        (
            "replies: [{match: x, delay: 2, steps: [{reply: a}]}]",
            "replies[0]: delay cannot stand beside steps (a rule with steps scripts each turn in "
            "its own step)",
        ),
        (
            "replies: [{match: x, steps: [{tool: W, input: 3}]}]",
            "tool 'W' input must be a mapping (JSON arguments) or a string",
        ),
        ("replies: [{match: x, steps: [{input: {}}]}]", "replies[0].steps[0].input needs 'tool'"),
        ("replies: [{match: x, reply: a, bogus: 1}]", "replies[0]: unknown key(s) ['bogus']"),
        ("replies: [{match: x, error: e, reply: a}]", "an 'error' step answers nothing else"),
        ("replies: [{match: x, reply: a, fail: {times: 2}}]", "replies[0].fail needs 'status'"),
        ("replies: [{match: x, reply: a, delay: -1}]", "replies[0].delay must be a non-negative"),
        ("replies: []\nstep: 1\n", "unknown key(s) ['step']"),
        ("replies: [{match: '(', reply: a}]", "replies[0].match is not a regex"),
        (
            "replies: [{match: x, reply: a, status: 500}]",
            "replies[0].status goes with 'error' (a failing answer)",
        ),
        ("replies: [{match: x, reply: a, text: b}]", "give 'reply' or 'text'"),
        (
            "replies: [{match: x, reply: a, search: everywhere}]",
            "replies[0].search is 'prompt' (the default) or 'request'",
        ),
    ],
)
def test_malformed_scripts_are_refused_with_where(tmp_path: Path, text: str, message: str) -> None:
    write(tmp_path / "s.yaml", text + "\n")
    with pytest.raises(UsageError) as error:
        load_mock("mock/s.yaml", tmp_path)
    assert message in str(error.value)
    assert error.value.file is not None and error.value.file.endswith("s.yaml")


def test_a_script_path_falls_back_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "scripts" / "s.yaml", "default: here\n")
    monkeypatch.chdir(tmp_path)
    model = load_mock("mock/scripts/s.yaml", tmp_path / "tasks")
    assert asyncio.run(model.generate(ModelRequest(prompt="p"))).text == "here"


def test_a_scripted_4xx_is_not_retried_and_a_5xx_is(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", "replies:\n"
          "  - {match: bad, reply: never, fail: {status: 400}}\n"
          "  - {match: gone, error: no such thing, status: 404}\n")  # fmt: skip
    model = load_mock("mock/s.yaml", tmp_path)
    for prompt in ("bad", "gone"):
        with pytest.raises(ModelError) as error:
            asyncio.run(model.generate(ModelRequest(prompt=prompt)))
        assert not isinstance(error.value, TransientModelError)


def test_rules_match_the_prompt_without_claude_codes_reminders(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", "replies:\n"
          "  - {match: '^hello world$', reply: anchored}\n"
          "  - {match: SECRET-MARKER, search: request, reply: seen in the request}\n")  # fmt: skip
    model = load_mock("mock/s.yaml", tmp_path)
    prompt = "<system-reminder>\nproject notes\n</system-reminder>\nhello world"
    request = ModelRequest(messages=(Message("system", "sys"), Message("user", prompt)))
    assert asyncio.run(model.generate(request)).text == "anchored"
    hidden = ModelRequest(messages=(Message("system", "SECRET-MARKER"), Message("user", "hi")))
    assert asyncio.run(model.generate(hidden)).text == "seen in the request"
    echo = load_mock("mock/echo", tmp_path)
    assert asyncio.run(echo.generate(request)).text == "hello world"


def test_tokens_count_tool_calls_and_results(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", "default: ok\n")
    model = load_mock("mock/s.yaml", tmp_path)
    call = ToolCall("c", "Bash", '{"command": "ls -la"}')
    request = ModelRequest(
        messages=(
            Message("user", "one two"),
            Message("assistant", "", (call,)),
            Message("user", "", tool_results=(ToolResult("c", "a b c"),)),
        )
    )
    usage = asyncio.run(model.generate(request)).usage
    # "one two" + '{"command": "ls -la"}' (3 words) + "a b c": 8 words in, "ok" out
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (8, 1)
