"""The Gemini API's generateContent / streamGenerateContent through the model bridge (what
the Gemini CLI sends), over real HTTP: the scripted model's tool call comes back as a
functionCall, a functionResponse reaches the model as a tool result, the stream is SSE
chunks, credentials come in Gemini's header or query, errors in Google's shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from assay.bridge import Bridge, BridgeSession
from assay.providers.base import (
    Message,
    ModelRequest,
    ModelResponse,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)
from assay.providers.wire import WireError
from assay.providers.wire import gemini as wire
from tests.bridge.test_bridge import events_of, run

TOOLS = [{"functionDeclarations": [{"name": "Write", "description": "write a file",
                                    "parameters": {"type": "OBJECT", "properties": {
                                        "file_path": {"type": "STRING"}}}}]}]  # fmt: skip
PATH = "/v1beta/models/gemini-2.5-pro:{}"


def _body(*turns: dict[str, Any]) -> dict[str, Any]:
    return {"contents": list(turns), "tools": TOOLS,
            "systemInstruction": {"parts": [{"text": "You are a CLI."}]},
            "generationConfig": {"temperature": 0, "maxOutputTokens": 500}}  # fmt: skip


def test_generate_content_plain_streamed_and_with_a_function_response(tmp_path: Path) -> None:
    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        key = {"x-goog-api-key": session.token}
        ask = {"role": "user", "parts": [{"text": "write hi"}]}
        plain = await client.post(PATH.format("generateContent"), json=_body(ask), headers=key)
        assert plain.status_code == 200, plain.text
        answer = plain.json()
        (part,) = answer["candidates"][0]["content"]["parts"]
        call = part["functionCall"]
        assert call["name"] == "Write"
        assert call["args"] == {"file_path": "/sb/out.txt", "content": "hi r1"}
        assert answer["candidates"][0]["finishReason"] == "STOP"
        assert answer["modelVersion"] == "gemini-2.5-pro"
        assert answer["usageMetadata"]["totalTokenCount"] > 0
        done = {"role": "user", "parts": [{"functionResponse": {
            "name": "Write", "response": {"output": "written"}}}]}  # fmt: skip
        turn = {
            "role": "model",
            "parts": [{"functionCall": {"name": "Write", "args": call["args"]}}],
        }
        streamed = await client.post(PATH.format("streamGenerateContent") + "?alt=sse",
                                     json=_body(ask, turn, done),
                                     params={"key": session.token})  # fmt: skip
        assert streamed.status_code == 200
        assert streamed.headers["content-type"].startswith("text/event-stream")
        chunks = [c for _, c in events_of(streamed.content)]
        assert chunks[-1]["candidates"][0]["content"]["parts"] == [{"text": "Done."}]
        assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
        assert "usageMetadata" in chunks[-1]
        counted = await client.post(PATH.format("countTokens"), json=_body(ask), headers=key)
        assert counted.status_code == 200 and counted.json()["totalTokens"] > 0

    session = run(tmp_path, scenario)
    assert [c.protocol for c in session.calls] == ["gemini", "gemini"]
    assert session.calls[0].tool_calls == ["Write"]


def test_gemini_refusals_come_in_googles_error_shape(tmp_path: Path) -> None:
    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        anonymous = await client.post(PATH.format("generateContent"), json=_body())
        assert anonymous.status_code == 401
        assert anonymous.json()["error"]["status"] == "UNAUTHENTICATED"
        key = {"x-goog-api-key": session.token}
        bad = await client.post(PATH.format("generateContent"), json={"contents": "hi"},
                                headers=key)  # fmt: skip
        assert bad.status_code == 400
        assert bad.json()["error"] == {
            "code": 400,
            "status": "INVALID_ARGUMENT",
            "message": bad.json()["error"]["message"],
        }
        assert "'contents' list" in bad.json()["error"]["message"]
        other = await client.post(PATH.format("embedContent"), json={}, headers=key)
        assert other.status_code == 404 and "embedContent" in other.json()["error"]["message"]

    session = run(tmp_path, scenario)
    assert [c.status for c in session.calls] == [400]


def test_a_request_round_trips_through_the_wire() -> None:
    request = ModelRequest(
        messages=(
            Message("system", "be brief"),
            Message("user", "list files"),
            Message("assistant", "", (ToolCall("c1", "Bash", '{"command": "ls"}'),)),
            Message("user", "", tool_results=(ToolResult("c1", "a.txt"),)),
        ),
        tools=(Tool("Bash", "run", {"type": "object"}),),
        tool_choice="Bash",
    )
    body = wire.request_to_wire(request)
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["Bash"]}
    }
    back = wire.request_from_wire(body)
    assert back.messages == request.messages and back.tools == request.tools
    assert back.tool_choice == "Bash"


def ToolResult_(call_id: str, output: str) -> Any:
    from assay.providers.base import ToolResult

    return ToolResult(call_id, output)


def test_calls_without_ids_are_matched_by_name_and_schemas_lowercased() -> None:
    body = {"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"thought": True, "text": "hmm"},
                                    {"functionCall": {"name": "Read", "args": {"p": "a"}}},
                                    {"functionCall": {"name": "Read", "args": {"p": "b"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "Read", "response": {"x": 1}}},
                                   {"inlineData": {"mimeType": "image/png", "data": ""}}]},
    ], "tools": TOOLS, "toolConfig": {"functionCallingConfig": {"mode": "NONE"}},
        "generationConfig": {"responseMimeType": "application/json",
                             "responseSchema": {"type": "OBJECT"},
                             "stopSequences": "END"}}  # fmt: skip
    request = wire.request_from_wire(body)
    assert request.messages is not None
    model_turn, answer = request.messages[1], request.messages[2]
    assert model_turn.content == "" and [c.id for c in model_turn.tool_calls] == [
        "call_contents1-1", "call_contents1-2"]  # fmt: skip
    assert answer.tool_results[0].call_id == "call_contents1-2"  # the latest unanswered
    assert answer.tool_results[0].output == '{"x": 1}'
    assert answer.content == "[inlineData omitted]"
    assert request.tools[0].parameters == {
        "type": "object",
        "properties": {"file_path": {"type": "string"}},
    }
    assert request.tool_choice == "none" and request.stop == ("END",)
    assert request.constraint is not None and request.constraint.schema == {"type": "object"}


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({}, "'contents' list"),
        ({"contents": [{"role": "tool", "parts": []}]}, "role must be 'user' or 'model'"),
        ({"contents": [{"role": "user"}]}, "needs a 'parts' list"),
        ({"contents": [{"role": "user", "parts": ["x"]}]}, "a part must be an object"),
        (
            {"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "R"}}]}]},
            "answers no call",
        ),
        (
            {"contents": [{"role": "user", "parts": [{"functionCall": {"name": "R"}}]}]},
            "a user turn cannot carry a functionCall",
        ),
        ({"contents": [], "tools": [{"functionDeclarations": [{}]}]}, "needs 'name'"),
    ],
)
def test_untranslatable_bodies_name_the_field(body: dict[str, Any], said: str) -> None:
    with pytest.raises(WireError, match=said):
        wire.request_from_wire(body)


def test_usage_counts_thoughts_as_reasoning_inside_output() -> None:
    usage = Usage(input_tokens=100, output_tokens=30, cache_read_tokens=40, reasoning_tokens=10)
    wired = wire.usage_to_wire(usage)
    assert wired == {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 130,
                     "cachedContentTokenCount": 40, "thoughtsTokenCount": 10}  # fmt: skip
    assert wire.usage_from_wire(wired) == usage
    response = ModelResponse(text="hi", usage=usage, finish_reason="length")
    decoded = wire.response_from_wire(json.loads(json.dumps(
        wire.response_to_wire(response, model="g"))))  # fmt: skip
    assert (decoded.text, decoded.finish_reason, decoded.usage) == ("hi", "length", usage)
