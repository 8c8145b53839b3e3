"""The model bridge over real HTTP: credentials, the three wires, pass-through, retries,
limits, and what each call records."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from assay.bridge import Bridge, BridgeSession, SessionLimits
from assay.bridge.sse import EventReader
from assay.providers.cache import ResponseCache
from assay.providers.pool import ModelKey, ModelPool, PoolSettings, default_registry
from assay.providers.pricing import Price
from assay.providers.retry import RetryPolicy
from tests.anthropic_upstream import USAGE, Fault, anthropic_upstream
from tests.helpers import write

SCRIPT = """\
replies:
  - match: "write (\\\\w+)"
    steps:
      - tool: Write
        input: {file_path: "${sandbox}/out.txt", content: "${match.1} ${row.id}"}
      - reply: Done.
  - match: storm
    reply: calm
    fail: {status: 429, times: 3, retry_after: 0.01}
  - match: broken
    error: always down
    status: 500
  - match: refuse me
    error: scripted bad request
    status: 400
  - match: namespaced
    steps:
      - tool: mcp__srv__do_it
        input: {x: 1}
      - reply: Done.
default: plain answer
"""

Scenario = Callable[[Bridge, BridgeSession, httpx.AsyncClient], Awaitable[None]]


def run(tmp_path: Path, scenario: Scenario, *, name: str = "mock/s.yaml",
        limits: SessionLimits | None = None, price: Price | None = None,
        keep_model: bool = False, base_url: str | None = None,
        cache: ResponseCache | None = None) -> BridgeSession:  # fmt: skip
    write(tmp_path / "s.yaml", SCRIPT)
    key = ModelKey(
        name=name,
        base_dir=str(tmp_path),
        base_url=base_url,
        api_key_env="UPSTREAM_KEY" if name.startswith("anthropic/") else None,
    )

    async def main() -> BridgeSession:
        settings = PoolSettings(
            parallel=4,
            retry=RetryPolicy(max_retries=4, initial_wait=0.001),
            cache=cache,
            cache_all=cache is not None,
        )
        pool = ModelPool(default_registry(), settings)
        await pool.start([key])
        bridge = Bridge(pool)
        await bridge.start()
        session = bridge.open(
            BridgeSession(
                label="t/r1#00",
                model_key=key,
                keep_model=keep_model,
                price=price,
                limits=limits or SessionLimits(),
                script_vars={"row.id": "r1", "sandbox": "/sb"},
            )
        )
        try:
            async with httpx.AsyncClient(base_url=bridge.url, timeout=30) as client:
                await scenario(bridge, session, client)
        finally:
            await bridge.aclose()
            await pool.aclose()
        return session

    return asyncio.run(main())


def claude(session: BridgeSession) -> dict[str, str]:
    return {
        "x-api-key": session.token,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
    }


def message(text: str, *, stream: bool = True, model: str = "claude-opus-5-5") -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 1000,
        "stream": stream,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        "tools": [{"name": "Write", "input_schema": {"type": "object"}}],
        "thinking": {"type": "adaptive"},
    }


def events_of(body: bytes) -> list[tuple[str, Any]]:
    return [(n, json.loads(d)) for n, d in EventReader().feed(body) if d != "[DONE]"]


def test_requests_without_a_row_credential_are_refused(tmp_path: Path) -> None:
    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        bad = await client.post("/v1/messages", json=message("x"), headers={"x-api-key": "nope"})
        assert bad.status_code == 401
        assert bad.json()["type"] == "error"
        assert bad.json()["error"]["type"] == "authentication_error"
        none = await client.post("/v1/responses", json={"input": "x"})
        assert (
            none.status_code == 401
            and "no valid assay row credential" in (none.json()["error"]["message"])
        )
        lost = await client.get("/v2/other", headers=claude(session))
        assert lost.status_code == 404
        bridge.close(session)
        late = await client.post("/v1/messages", json=message("x"), headers=claude(session))
        assert late.status_code == 401
        assert bridge.refused == 3

    session = run(tmp_path, scenario)
    assert session.calls == []  # refused requests are not the row's calls


def test_messages_streamed_and_plain_answer_with_the_scripted_turns(tmp_path: Path) -> None:
    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        first = await client.post(
            "/v1/messages?beta=true", json=message("please write hello"), headers=claude(session)
        )
        assert first.status_code == 200
        assert first.headers["content-type"].startswith("text/event-stream")
        events = events_of(first.content)
        assert events[0][0] == "message_start" and events[-1][0] == "message_stop"
        start = events[1][1]["content_block"]
        assert start["type"] == "tool_use" and start["name"] == "Write"
        assert json.loads(events[2][1]["delta"]["partial_json"]) == {
            "file_path": "/sb/out.txt",
            "content": "hello r1",
        }
        assert events[0][1]["message"]["model"] == "claude-opus-5-5"  # the name asked for
        body = message("please write hello", stream=False)
        body["messages"] += [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": start["id"], "name": "Write", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": start["id"], "content": "ok"}],
            },
        ]
        second = await client.post("/v1/messages", json=body, headers=claude(session))
        assert second.json()["content"] == [{"type": "text", "text": "Done."}]
        assert second.json()["stop_reason"] == "end_turn"

    session = run(tmp_path, scenario)
    assert [(c.index, c.protocol, c.tool_calls, c.stop_reason) for c in session.calls] == [
        (1, "anthropic", ["Write"], "tool_calls"),
        (2, "anthropic", [], "stop"),
    ]
    assert session.calls[1].text == "Done."
    assert all(c.usage is not None and c.ended_ns >= c.started_ns for c in session.calls)


def test_chat_and_responses_wires(tmp_path: Path) -> None:
    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        auth = {"Authorization": f"Bearer {session.token}"}
        chat = {
            "model": "gpt-x",
            "messages": [{"role": "user", "content": "write hi"}],
            "tools": [{"type": "function", "function": {"name": "Write", "parameters": {}}}],
        }
        plain = await client.post("/v1/chat/completions", json=chat, headers=auth)
        call = plain.json()["choices"][0]["message"]["tool_calls"][0]
        assert call["function"]["name"] == "Write"
        assert plain.json()["choices"][0]["finish_reason"] == "tool_calls"
        streamed = await client.post(
            "/v1/chat/completions", json={**chat, "stream": True}, headers=auth
        )
        assert streamed.content.endswith(b"data: [DONE]\n\n")
        chunks = [c for _, c in events_of(streamed.content)]
        assert chunks[-1]["usage"]["total_tokens"] > 0
        responses = {
            "model": "gpt-5.5",
            "stream": True,
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "anything"}],
                }
            ],
        }
        answer = await client.post("/openai/v1/responses", json=responses, headers=auth)
        named = events_of(answer.content)
        assert named[-1][0] == "response.completed"
        assert named[-1][1]["response"]["output"][0]["content"][0]["text"] == "plain answer"
        listed = await client.get("/v1/models", headers=auth)
        assert listed.json()["data"][0]["id"] == "s.yaml"

    session = run(tmp_path, scenario)
    assert [c.protocol for c in session.calls] == ["chat", "chat", "responses"]


def test_a_namespaced_tool_is_one_name_for_the_model_and_goes_back_with_its_namespace(
    tmp_path: Path,
) -> None:
    """Codex sends each MCP server's tools as a Responses ``namespace``; the model sees
    ``mcp__srv__do_it``, and its call goes back as ``{name: do_it, namespace: mcp__srv}``,
    which is how Codex routes it to the server (a bare name is an "unsupported call")."""
    namespace = {"type": "namespace", "name": "mcp__srv", "description": "srv",
                 "tools": [{"type": "function", "name": "do_it", "parameters": {}}]}  # fmt: skip
    asked = {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "namespaced please"}]}  # fmt: skip

    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        auth = {"Authorization": f"Bearer {session.token}"}
        body = {"model": "gpt-5.5", "input": [asked], "tools": [namespace]}
        first = await client.post("/openai/v1/responses", json=body, headers=auth)
        call = first.json()["output"][0]
        assert (call["type"], call["name"], call["namespace"]) == ("function_call", "do_it",
                                                                   "mcp__srv")  # fmt: skip
        streamed = await client.post("/openai/v1/responses", json={**body, "stream": True},
                                     headers=auth)  # fmt: skip
        done = events_of(streamed.content)[-1][1]["response"]["output"][0]
        assert (done["name"], done["namespace"]) == ("do_it", "mcp__srv")
        history = [asked, call, {"type": "function_call_output", "call_id": call["call_id"],
                                 "output": "did it"}]  # fmt: skip
        second = await client.post("/openai/v1/responses", json={**body, "input": history},
                                   headers=auth)  # fmt: skip
        assert second.json()["output"][0]["content"][0]["text"] == "Done."

    session = run(tmp_path, scenario)
    assert [c.tool_calls for c in session.calls] == [["mcp__srv__do_it"]] * 2 + [[]]


def test_an_untranslatable_request_gets_the_wires_error_and_is_recorded(tmp_path: Path) -> None:
    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        auth = {"Authorization": f"Bearer {session.token}"}
        odd = {"input": [{"type": "computer_call", "call_id": "c"}]}
        refused = await client.post("/v1/responses", json=odd, headers=auth)
        assert refused.status_code == 400
        assert refused.json()["error"]["type"] == "invalid_request_error"
        assert "input items of type 'computer_call'" in refused.json()["error"]["message"]
        garbled = await client.post("/v1/messages", content=b"{not json", headers=claude(session))
        assert garbled.status_code == 400 and garbled.json()["type"] == "error"

    session = run(tmp_path, scenario)
    (call,) = session.calls
    assert call.status == 400 and call.error is not None and "computer_call" in call.error


def test_a_429_storm_is_retried_by_the_bridge_and_a_dead_model_is_final(tmp_path: Path) -> None:
    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        calm = await client.post(
            "/v1/messages", json=message("storm", stream=False), headers=claude(session)
        )
        assert calm.status_code == 200 and calm.json()["content"][0]["text"] == "calm"
        dead = await client.post(
            "/v1/messages", json=message("broken", stream=False), headers=claude(session)
        )
        # a 4xx, not a 5xx: the bridge retried already, and a CLI retries a 5xx on top
        assert dead.status_code == 400
        assert dead.json()["error"]["type"] == "api_error"
        assert "always down" in dead.json()["error"]["message"]

    session = run(tmp_path, scenario)
    storm, broken = session.calls
    assert [a.status for a in storm.attempts] == [429, 429, 429] and storm.error is None
    assert len(broken.attempts) == 4 and broken.status == 400
    assert broken.error is not None and "gave up after 5 attempts" in broken.error


def test_a_request_the_model_refused_is_not_sent_to_it_again_by_the_same_row(
    tmp_path: Path,
) -> None:
    """Field report: Claude Code sent a request the model answered 400 six times (some of
    them the very same request), and a real endpoint got every one."""

    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        bad = message("refuse me", stream=False)
        # Claude Code's repeats drop a feature a translated model never sees (thinking)
        dropped = {**bad, "thinking": {"type": "adaptive", "display": "updates"}}
        for body in (bad, dropped, {**bad, "max_tokens": 999}):
            answer = await client.post("/v1/messages", json=body, headers=claude(session))
            assert answer.status_code == 400
            assert "scripted bad request" in answer.json()["error"]["message"]
        fine = await client.post(
            "/v1/messages", json=message("storm", stream=False), headers=claude(session)
        )
        assert fine.status_code == 200  # not an outage: the row's other requests go on

    session = run(tmp_path, scenario)
    _, again, other, fine = session.calls
    assert [c.refused for c in session.calls] == [False, True, False, False]
    assert again.error is not None and "sent the same request before" in again.error
    assert other.error is not None and "sent the same request" not in other.error
    assert fine.error is None


def test_a_token_budget_stops_the_session(tmp_path: Path) -> None:
    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        first = await client.post(
            "/v1/messages", json=message("one two three", stream=False), headers=claude(session)
        )
        # the call that crosses the budget is counted, and not answered: the agent is being
        # stopped and must not act on it
        assert first.status_code == 400
        assert "run_limits.max_total_tokens is 2" in first.json()["error"]["message"]
        assert session.stop_event.is_set() and session.stopped == "token_budget"
        second = await client.post(
            "/v1/messages", json=message("again", stream=False), headers=claude(session)
        )
        assert second.status_code == 400
        assert "run_limits.max_total_tokens is 2" in second.json()["error"]["message"]

    session = run(tmp_path, scenario, limits=SessionLimits(max_total_tokens=2))
    assert session.stop_message is not None and session.stop_message.startswith(
        "the agent's model calls used 5 tokens"
    )


def test_cost_and_turn_limits(tmp_path: Path) -> None:
    async def two_calls(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        for _ in range(2):
            await client.post(
                "/v1/messages", json=message("hello", stream=False), headers=claude(session)
            )

    # 1 word in, 2 out ("plain answer") at $1M/Mtok in and out: $3 per call.
    priced = run(
        tmp_path, two_calls, price=Price(1_000_000, 1_000_000), limits=SessionLimits(max_usd=4.0)
    )
    assert priced.stopped == "cost_budget" and priced.cost_usd == pytest.approx(6.0)
    turns = run(tmp_path, two_calls, limits=SessionLimits(max_turns=1))
    assert turns.stopped == "max_turns"
    assert turns.stop_message == ("the agent asked for model call 2; run_limits.max_turns is 1")
    assert [c.status for c in turns.calls] == [200, 400]


def test_anthropic_models_are_passed_through_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UPSTREAM_KEY", "sk-ant-upstream-secret")
    blocks = [
        {"type": "thinking", "thinking": "let me see"},
        {"type": "text", "text": "hello"},
        {"type": "tool_use", "id": "toolu_9", "name": "Write", "input": {"a": 1}},
    ]
    with anthropic_upstream(lambda body: blocks) as upstream:
        received: dict[str, bytes] = {}

        async def scenario(bridge: Bridge, session: BridgeSession,
                           client: httpx.AsyncClient) -> None:  # fmt: skip
            async with client.stream(
                "POST", "/v1/messages?beta=true", json=message("hi"), headers=claude(session)
            ) as answer:
                assert answer.status_code == 200
                assert answer.headers["request-id"] == "req_scripted"
                received["body"] = b"".join([c async for c in answer.aiter_raw()])
            plain = await client.post(
                "/v1/messages", json=message("hi", stream=False), headers=claude(session)
            )
            received["plain"] = plain.content

        session = run(
            tmp_path,
            scenario,
            name="anthropic/claude-sonnet-4-5",
            base_url=upstream.url,
            price=Price(3.0, 15.0, 0.30, 3.75),
        )
    assert received["body"] == upstream.sent[0] and received["plain"] == upstream.sent[1]
    sent = upstream.bodies[0]
    assert sent["model"] == "claude-sonnet-4-5"  # the task's model, not the CLI's
    assert sent["thinking"] == {"type": "adaptive"} and sent["tools"][0]["name"] == "Write"
    headers = upstream.headers[0]
    assert headers["x-api-key"] == "sk-ant-upstream-secret"
    assert headers["anthropic-beta"] == "claude-code-20250219,interleaved-thinking-2025-05-14"
    streamed, plain = session.calls
    total_input = USAGE["input_tokens"] + 100 + 5
    for call in (streamed, plain):
        assert call.passthrough and call.model == "anthropic/claude-sonnet-4-5"
        assert call.usage is not None and call.usage.input_tokens == total_input
        assert call.usage.cache_read_tokens == 100 and call.usage.output_tokens == 12
        assert call.tool_calls == ["Write"] and call.text == "hello"
        # 40 uncached × $3 + 100 read × $0.30 + 5 written × $3.75 + 12 out × $15, per million
        assert call.cost_usd == pytest.approx((40 * 3 + 100 * 0.3 + 5 * 3.75 + 12 * 15) / 1e6)
    assert streamed.stop_reason == "tool_use"


def test_pass_through_retries_before_streaming_and_relays_client_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UPSTREAM_KEY", "k")
    statuses = iter([Fault(429, {"retry-after": "0"}), Fault(529)])

    def answer(body: dict[str, Any]) -> list[dict[str, Any]] | Fault:
        if body["messages"][0]["content"][0]["text"] == "bad":
            return Fault(400)
        return next(statuses, None) or [{"type": "text", "text": "finally"}]

    with anthropic_upstream(answer) as upstream:

        async def scenario(bridge: Bridge, session: BridgeSession,
                           client: httpx.AsyncClient) -> None:  # fmt: skip
            ok = await client.post(
                "/v1/messages", json=message("go", stream=False), headers=claude(session)
            )
            assert ok.json()["content"] == [{"type": "text", "text": "finally"}]
            bad = await client.post(
                "/v1/messages", json=message("bad", stream=False), headers=claude(session)
            )
            assert bad.status_code == 400 and bad.json()["error"]["message"] == "scripted 400"

        session = run(
            tmp_path, scenario, name="anthropic/default", keep_model=True, base_url=upstream.url
        )
    assert upstream.bodies[0]["model"] == "claude-opus-5-5"  # left to the CLI
    first, second = session.calls
    assert [a.status for a in first.attempts] == [429, 529]
    assert first.model == "anthropic/claude-opus-5-5"
    assert second.status == 400 and second.error is not None


def test_passed_through_answers_are_cached_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UPSTREAM_KEY", "k")
    blocks = [{"type": "text", "text": "remembered"}]
    with anthropic_upstream(lambda body: blocks) as upstream:
        bodies: list[bytes] = []

        async def scenario(bridge: Bridge, session: BridgeSession,
                           client: httpx.AsyncClient) -> None:  # fmt: skip
            for _ in range(2):
                answer = await client.post(
                    "/v1/messages", json=message("same"), headers=claude(session)
                )
                bodies.append(answer.content)

        cache = ResponseCache(tmp_path / "cache.db")
        session = run(
            tmp_path,
            scenario,
            name="anthropic/claude-sonnet-4-5",
            base_url=upstream.url,
            cache=cache,
        )
    assert len(upstream.bodies) == 1 and bodies[0] == bodies[1] == upstream.sent[0]
    first, second = session.calls
    assert not first.cached and second.cached and second.usage == first.usage
    assert cache.stats().entries == 1


def test_other_wires_reach_an_anthropic_model_translated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex (Responses) on an anthropic/ model: translated to a Messages call and back,
    tool calls included (it failed with the SDK's keyword arguments)."""
    monkeypatch.setenv("UPSTREAM_KEY", "k")
    blocks = [{"type": "tool_use", "id": "toolu_7", "name": "exec_command",
               "input": {"cmd": "ls"}}]  # fmt: skip
    with anthropic_upstream(lambda body: blocks) as upstream:

        async def scenario(bridge: Bridge, session: BridgeSession,
                           client: httpx.AsyncClient) -> None:  # fmt: skip
            body = {"model": "gpt-5.5", "stream": True, "input": "list files",
                    "tools": [{"type": "function", "name": "exec_command",
                               "parameters": {"type": "object"}}]}  # fmt: skip
            answer = await client.post(
                "/v1/responses", json=body, headers={"Authorization": f"Bearer {session.token}"}
            )
            items = [d["item"] for n, d in events_of(answer.content)
                     if n == "response.output_item.done"]  # fmt: skip
            assert items == [{"type": "function_call", "id": items[0]["id"],
                              "call_id": "toolu_7", "name": "exec_command",
                              "arguments": '{"cmd": "ls"}', "status": "completed"}]  # fmt: skip

        session = run(tmp_path, scenario, name="anthropic/claude-sonnet-4-5", base_url=upstream.url)
    sent = upstream.bodies[0]
    assert sent["model"] == "claude-sonnet-4-5" and not sent.get("stream")
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "list files"}]}
    ]
    assert sent["tools"][0]["name"] == "exec_command"
    assert upstream.headers[0]["x-api-key"] == "k"
    (call,) = session.calls
    assert call.tool_calls == ["exec_command"] and not call.passthrough


def test_a_body_the_bridge_cannot_read_is_a_400_not_a_crash(tmp_path: Path) -> None:
    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        odd = await client.post(
            "/v1/messages",
            headers=claude(session),
            content=b'{"max_tokens": 1e400, "messages": []}',
        )
        assert odd.status_code == 400 and odd.json()["type"] == "error"

    run(tmp_path, scenario)


def test_the_bridge_listens_on_loopback_only(tmp_path: Path) -> None:
    async def scenario(bridge: Bridge, session: BridgeSession, client: httpx.AsyncClient) -> None:
        assert bridge.url.startswith("http://127.0.0.1:")

    run(tmp_path, scenario)


def test_the_bridges_server_prints_its_errors_to_the_stream_it_is_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The bridge's web server (uvicorn) prints its warnings to ``log_stream`` (the run's
    redacting console), not to ``sys.stderr`` (issue 27 item 6)."""
    stream = io.StringIO()

    async def main() -> None:
        pool = ModelPool(default_registry(), PoolSettings(parallel=1))
        bridge = Bridge(pool, log_stream=stream)
        await bridge.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", bridge.port)
            writer.write(b"NOT HTTP AT ALL\r\n\r\n")
            await writer.drain()
            await reader.read()  # the server closes the connection
            writer.close()
        finally:
            await bridge.aclose()
            await pool.aclose()

    asyncio.run(main())
    assert "Invalid HTTP request received." in stream.getvalue()
    assert "Invalid HTTP request" not in capsys.readouterr().err
