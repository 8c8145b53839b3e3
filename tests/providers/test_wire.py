"""The wire codecs: each protocol's request and response, translated both ways."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.providers.base import (
    JsonSchema,
    Message,
    ModelRequest,
    ModelResponse,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)
from assay.providers.wire import WireError
from assay.providers.wire import anthropic as anthropic_wire
from assay.providers.wire import chat as chat_wire
from assay.providers.wire import responses as responses_wire

WRITE = {
    "name": "Write",
    "description": "Write a file",
    "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
}


def claude_body() -> dict[str, Any]:
    """The shape Claude Code 2.1.332 sends (recorded here): billing header in ``system``, a
    ``role: system`` entry in ``messages``, system reminders, thinking, cache control."""
    return {
        "model": "claude-opus-5-5",
        "max_tokens": 32000,
        "stream": True,
        "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1"},
            {"type": "text", "text": "You are Claude.", "cache_control": {"type": "ephemeral"}},
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>r</system-reminder>"},
                    {"type": "text", "text": "Write hello into out.txt"},
                ],
            },
            {"role": "system", "content": "Primary working directory: /tmp/x"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Write",
                        "input": {"file_path": "out.txt", "content": "hello"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "File created",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
        ],
        "tools": [WRITE, {"type": "web_search_20250305", "name": "web_search"}],
        "tool_choice": {"type": "auto"},
        "thinking": {"type": "adaptive"},
        "metadata": {"user_id": "u"},
    }


def test_anthropic_request_from_claude_code() -> None:
    request = anthropic_wire.request_from_wire(claude_body())
    assert request.messages is not None
    roles = [m.role for m in request.messages]
    assert roles == ["system", "user", "system", "assistant", "user"]
    assert "billing-header" in request.messages[0].content and "You are Claude." in (
        request.messages[0].content
    )
    assert request.exchange() == (
        "<system-reminder>r</system-reminder>\nWrite hello into out.txt",
        1,
    )
    assistant = request.messages[3]
    assert assistant.content == "" and assistant.tool_calls == (
        ToolCall("toolu_1", "Write", '{"file_path": "out.txt", "content": "hello"}'),
    )
    assert request.messages[4].tool_results == (ToolResult("toolu_1", "File created"),)
    assert [t.name for t in request.tools] == ["Write"]  # the server tool stays Anthropic's
    assert request.tool_choice == "auto" and request.max_tokens == 32000


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({}, "messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0]"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}, "tool_use_id"),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "x"}]}]},
            "needs 'id' and 'name'",
        ),
        ({"messages": [], "tools": [{"input_schema": {}}]}, "tools[0]"),
    ],
)
def test_anthropic_request_errors_name_the_field(body: dict[str, Any], where: str) -> None:
    with pytest.raises(WireError, match=None) as error:
        anthropic_wire.request_from_wire(body)
    assert where in str(error.value)


def answer(text: str = "", calls: tuple[ToolCall, ...] = (), finish: str = "stop") -> ModelResponse:
    usage = Usage(100, 7, cache_read_tokens=60, cache_write_tokens=10, reasoning_tokens=2)
    return ModelResponse(text, usage, "tool_calls" if calls else finish, "m", tool_calls=calls)


def test_anthropic_response_and_stream_carry_tool_calls_and_usage() -> None:
    response = answer("Let me write.", (ToolCall("c1", "Write", '{"file_path": "a"}'),))
    message = anthropic_wire.response_to_wire(response, model="claude-x", message_id="msg_1")
    assert message["content"] == [
        {"type": "text", "text": "Let me write."},
        {"type": "tool_use", "id": "c1", "name": "Write", "input": {"file_path": "a"}},
    ]
    assert message["stop_reason"] == "tool_use"
    # Anthropic's input_tokens counts only the uncached input: 100 - 60 read - 10 written.
    assert message["usage"] == {
        "input_tokens": 30,
        "cache_creation_input_tokens": 10,
        "cache_read_input_tokens": 60,
        "output_tokens": 7,
    }
    events = anthropic_wire.stream_events(response, model="claude-x", message_id="msg_1")
    names = [name for name, _ in events]
    assert names == ["message_start"] + [
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    ] * 2 + ["message_delta", "message_stop"]
    partial = events[5][1]["delta"]
    assert partial == {"type": "input_json_delta", "partial_json": '{"file_path": "a"}'}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    # What a client reassembles from the stream is the message itself.
    assert anthropic_wire.response_from_wire(message) == ModelResponse(
        "Let me write.",
        Usage(100, 7, 60, 10),
        "tool_calls",
        "claude-x",
        tool_calls=(ToolCall("c1", "Write", '{"file_path": "a"}'),),
    )


def test_anthropic_request_to_wire_round_trips() -> None:
    request = ModelRequest(
        messages=(
            Message("system", "be brief"),
            Message("user", "go"),
            Message("assistant", "", (ToolCall("c1", "Bash", '{"command": "ls"}'),)),
            Message("user", "", tool_results=(ToolResult("c1", "a.txt", True),)),
        ),
        tools=(
            Tool("Bash", "run", {"type": "object"}),
            Tool("apply_patch", "patch", kind="custom"),
        ),
        tool_choice="required",
        max_tokens=50,
    )
    body = anthropic_wire.request_to_wire(request, model="claude-x")
    assert body["system"] == "be brief" and body["tool_choice"] == {"type": "any"}
    assert body["tools"][1]["input_schema"]["required"] == ["input"]
    back = anthropic_wire.request_from_wire(body)
    assert back.messages is not None and back.messages[1:] == request.messages[1:]
    assert back.tool_choice == "required"


def test_chat_request_merges_tool_messages_and_reads_response_format() -> None:
    body = {
        "model": "m",
        "max_completion_tokens": 99,
        "stop": "END",
        "seed": 3,
        "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}},
        "messages": [
            {"role": "developer", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
    }
    request = chat_wire.request_from_wire(body)
    assert request.messages is not None and len(request.messages) == 4
    assert request.messages[1].content == "hi\n[image_url omitted]"
    assert request.messages[3].tool_results == (ToolResult("a", "1"), ToolResult("b", "2"))
    assert request.constraint == JsonSchema({"type": "object"})
    assert (request.max_tokens, request.stop, request.seed, request.tool_choice) == (
        99,
        ("END",),
        3,
        "f",
    )
    again = chat_wire.request_from_wire(chat_wire.request_to_wire(request, model="m"))
    assert again.messages == request.messages


def test_chat_stream_ends_with_usage_then_done() -> None:
    response = answer("", (ToolCall("c1", "f", '{"x": 1}'), ToolCall("c2", "p", "raw", "custom")))
    chunks = chat_wire.stream_chunks(response, model="m", include_usage=True)
    assert chunks[1]["choices"][0]["delta"]["tool_calls"][0]["function"] == {
        "name": "f",
        "arguments": '{"x": 1}',
    }
    assert chunks[2]["choices"][0]["delta"]["tool_calls"][0]["custom"] == {
        "name": "p",
        "input": "raw",
    }
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["usage"]["prompt_tokens_details"] == {"cached_tokens": 60}
    whole = chat_wire.response_to_wire(response, model="m")
    assert chat_wire.response_from_wire(whole).tool_calls == response.tool_calls


def codex_body() -> dict[str, Any]:
    """The shape Codex 0.171.0 sends (recorded here), after one command and one patch."""
    return {
        "model": "gpt-5.5",
        "stream": True,
        "tool_choice": "auto",
        "store": False,
        "reasoning": {"effort": "medium"},
        "include": ["reasoning.encrypted_content"],
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "You are Codex"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context/>"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "write hello"}],
            },
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "exec_command",
                "arguments": '{"cmd": "echo hello > out.txt"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "exit 0"},
            {
                "type": "custom_tool_call",
                "id": "ctc_1",
                "call_id": "call_2",
                "name": "apply_patch",
                "input": "*** Begin Patch\n*** End Patch\n",
            },
            {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Success"},
        ],
        "tools": [
            {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
            {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
            {"type": "web_search"},
        ],
    }


def test_responses_request_from_codex() -> None:
    request = responses_wire.request_from_wire(codex_body())
    assert request.messages is not None
    assert [m.role for m in request.messages] == [
        "system",
        "user",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert request.exchange() == ("write hello", 2)
    assert request.messages[5].tool_calls == (
        ToolCall("call_2", "apply_patch", "*** Begin Patch\n*** End Patch\n", kind="custom"),
    )
    assert [(t.name, t.kind) for t in request.tools] == [
        ("exec_command", "function"),
        ("apply_patch", "custom"),
    ]


def test_responses_unknown_item_is_refused_by_name() -> None:
    body = {"input": [{"type": "computer_call", "call_id": "x"}]}
    with pytest.raises(WireError, match="input\\[0\\]: input items of type 'computer_call'"):
        responses_wire.request_from_wire(body)


def test_responses_stream_is_numbered_and_completes_with_usage() -> None:
    response = answer("done", (ToolCall("c", "apply_patch", "*** P", "custom"),))
    events = responses_wire.stream_events(response, model="gpt-5.5")
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    done_items = [d["item"] for n, d in events if n == "response.output_item.done"]
    assert [i["type"] for i in done_items] == ["message", "custom_tool_call"]
    assert done_items[1]["input"] == "*** P" and done_items[1]["call_id"] == "c"
    final = events[-1][1]["response"]
    assert events[-1][0] == "response.completed"
    assert final["usage"] == {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 60},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 107,
    }
    cut = responses_wire.stream_events(answer("par", finish="length"), model="m")
    assert cut[-1][0] == "response.incomplete"


def test_exchange_ignores_few_shot_and_counts_tool_rounds() -> None:
    few_shot = ModelRequest(
        messages=(Message("user", "a"), Message("assistant", "b"), Message("user", "prompt"))
    )
    assert few_shot.exchange() == ("prompt", 0)
    assert ModelRequest(prompt="p").exchange() == ("p", 0)
    assert json.loads(ToolCall("c", "t", '{"a": 1}').arguments) == {"a": 1}
    assert ToolCall("c", "t", "").input == {} and ToolCall("c", "t", "not json").input == "not json"
