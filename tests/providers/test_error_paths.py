"""The providers' error paths, each with the message a user reads, against a real HTTP server
on 127.0.0.1 (or a port nothing listens on), a real local server process, and real files."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from assay.errors import MissingKeyError, ModelError, UsageError
from assay.providers.anthropic_messages import AnthropicModel
from assay.providers.base import Choice, JsonSchema, Message, ModelRequest, ModelResponse
from assay.providers.cache import parse_duration
from assay.providers.constraints import (
    gbnf_literal,
    llamacpp_fields,
    openai_response_format,
    read_choice,
)
from assay.providers.local import LocalServer
from assay.providers.mock import load_mock
from assay.providers.openai_compat import OpenAICompatibleModel
from assay.providers.pool import ModelKey, ModelPool, PoolSettings, default_registry
from assay.providers.pricing import PriceTable, parse_price
from assay.providers.retry import (
    CallRecord,
    RetryPolicy,
    TransientModelError,
    call_with_retries,
    parse_retry_after,
)
from tests.helpers import write
from tests.openai_server import Fault, scripted_server

CHAT = ModelRequest(messages=(Message("system", "Be brief."), Message("user", "hi")),
                    max_tokens=4)  # fmt: skip


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def generate(model: Any, request: ModelRequest = CHAT) -> ModelResponse:
    async def go() -> ModelResponse:
        try:
            response: ModelResponse = await model.generate(request)
            return response
        finally:
            await model.aclose()

    return asyncio.run(go())


# --- anthropic ------------------------------------------------------------------------------


def anthropic(base_url: str, api_key: str | None = "k") -> AnthropicModel:
    return AnthropicModel(name="anthropic/m", model="m", base_url=base_url, api_key=api_key,
                          timeout=10)  # fmt: skip


def test_anthropic_without_a_key_says_which_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingKeyError) as info:
        generate(anthropic("http://127.0.0.1:9", api_key=None))
    assert info.value.message == (
        "model 'anthropic/m' needs an API key in the environment variable ANTHROPIC_API_KEY"
    )
    assert (
        info.value.hint == "export it, or name another variable with api_key_env beside the model"
    )


def test_anthropic_has_no_completion_endpoint() -> None:
    request = ModelRequest(prompt="Review: good\nSentiment:", max_tokens=4)
    with pytest.raises(ModelError) as info:
        generate(anthropic("http://127.0.0.1:9"), request)
    assert str(info.value) == (
        "anthropic/m: the Messages API has no completion endpoint; use prompt_format: chat"
    )


def test_anthropic_client_error_is_not_retryable_and_names_the_status() -> None:
    with scripted_server(lambda body: Fault(400)) as server, pytest.raises(ModelError) as info:
        generate(anthropic(server.base_url.removesuffix("/v1")))
    assert not isinstance(info.value, TransientModelError)
    assert str(info.value).startswith("anthropic/m: HTTP 400 from the API: ")
    assert "scripted 400" in str(info.value)


def test_anthropic_unreachable_is_transient() -> None:
    with pytest.raises(TransientModelError) as info:
        generate(anthropic(f"http://127.0.0.1:{closed_port()}"))
    assert str(info.value).startswith("anthropic/m: cannot reach the API: ")


def test_anthropic_sends_system_stop_and_top_p_and_reads_a_json_schema_answer() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    request = ModelRequest(messages=CHAT.messages, max_tokens=4, stop=("\n",), top_p=0.5,
                           constraint=JsonSchema(schema))  # fmt: skip
    with scripted_server(lambda body: '{"n": 7}') as server:
        answer = generate(anthropic(server.base_url.removesuffix("/v1")), request)
    assert json.loads(answer.text) == {"n": 7}
    (body,) = server.requests
    assert body["system"] == "Be brief."
    assert body["stop_sequences"] == ["\n"]
    assert body["top_p"] == 0.5
    assert body["tools"][0]["input_schema"] == schema


def test_anthropic_label_outside_the_labels_is_an_error() -> None:
    request = ModelRequest(messages=CHAT.messages, max_tokens=4,
                           constraint=Choice(("positive", "negative")))  # fmt: skip
    with (
        scripted_server(lambda body: '{"answer": "maybe"}') as server,
        pytest.raises(ModelError) as info,
    ):
        generate(anthropic(server.base_url.removesuffix("/v1")), request)
    assert str(info.value) == "anthropic/m: answered 'maybe', not one of the labels"


# --- openai-compatible ----------------------------------------------------------------------


def openai(base_url: str | None, api_key: str | None = "k") -> OpenAICompatibleModel:
    return OpenAICompatibleModel(name="openai/m", model="m", base_url=base_url, api_key=api_key,
                                 timeout=10)  # fmt: skip


def test_openai_default_endpoint_without_a_key_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(MissingKeyError) as info:
        generate(openai(None, api_key=None))
    assert info.value.message == "model 'openai/m' needs an API key"
    assert info.value.hint == (  # the judge's block and the agent's both take these fields
        "set OPENAI_API_KEY (and OPENAI_BASE_URL for a non-OpenAI server), or give base_url "
        "and api_key_env beside the model"
    )


def test_openai_unreachable_is_transient() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(TransientModelError) as info:
        generate(openai(url))
    assert str(info.value).startswith(f"openai/m: cannot reach {url}: ")


def test_openai_sends_top_p_stop_and_seed() -> None:
    request = ModelRequest(messages=CHAT.messages, max_tokens=4, top_p=0.5, stop=("\n",), seed=3)
    with scripted_server(lambda body: "ok") as server:
        assert generate(openai(server.base_url), request).text == "ok"
    (body,) = server.requests
    assert (body["top_p"], body["stop"], body["seed"]) == (0.5, ["\n"], 3)


def test_openai_constrained_completion_needs_a_llamacpp_server() -> None:
    request = ModelRequest(prompt="x", max_tokens=4, constraint=Choice(("a", "b")))
    with pytest.raises(ModelError) as info:
        generate(openai("http://127.0.0.1:9/v1"), request)
    assert str(info.value) == (
        "openai/m: constrained answers on the completion endpoint need a llama.cpp server "
        "(local/...); use prompt_format: chat, or pass your server's own field in "
        "agent.extra_body"
    )


def test_openai_reply_without_a_choice_is_transient_and_usage_may_be_missing() -> None:
    with (
        scripted_server(lambda body: Fault(body='{"choices": [], "usage": null}')) as server,
        pytest.raises(TransientModelError) as info,
    ):
        generate(openai(server.base_url))
    assert (
        str(info.value)
        == "openai/m: the response has no choice: IndexError('list index out of range')"
    )
    reply = '{"choices": [{"message": {"content": "hi"}}], "usage": null}'
    with scripted_server(lambda body: Fault(body=reply)) as server:
        answer = generate(openai(server.base_url))
    assert (answer.text, answer.usage) == ("hi", None)


def test_openai_error_body_that_is_not_json_is_quoted_as_text() -> None:
    with (
        scripted_server(lambda body: Fault(400, body="<html>bad gateway</html>")) as server,
        pytest.raises(ModelError) as info,
    ):
        generate(openai(server.base_url))
    assert str(info.value) == "openai/m: HTTP 400 from the endpoint: <html>bad gateway</html>"


# --- the local server -----------------------------------------------------------------------


def test_a_local_server_that_cannot_load_its_weights_reports_its_exit(tmp_path: Path) -> None:
    not_gguf = write(tmp_path / "broken.gguf", "not a GGUF file\n")
    server = LocalServer(gguf=not_gguf, alias="broken", parallel=1)
    with pytest.raises(ModelError) as info:
        server.start()
    server.stop()
    assert str(info.value).startswith("the local model server exited with code ")


def test_a_local_server_not_healthy_in_time_is_stopped(tmp_path: Path) -> None:
    not_gguf = write(tmp_path / "broken.gguf", "not a GGUF file\n")
    server = LocalServer(gguf=not_gguf, alias="broken", parallel=1, startup_timeout=0)
    with pytest.raises(ModelError) as info:
        server.start()  # the deadline has passed before the first health check
    assert str(info.value).startswith("the local model server did not answer within 0 s:")
    assert server._process is None  # stopped


# --- constraints, requests, prices, retries, the pool, the cache, mock scripts ---------------


def test_gbnf_literals_escape_control_characters() -> None:
    assert gbnf_literal('a"b\\c\nd\re\tf\x01') == '"a\\"b\\\\c\\nd\\re\\tf\\x01"'


def test_constraint_fields_for_each_server() -> None:
    schema = {"type": "object"}
    assert llamacpp_fields(JsonSchema(schema)) == {"json_schema": schema}
    assert llamacpp_fields(None) == {}
    assert openai_response_format(JsonSchema(schema)) == {
        "type": "json_schema", "json_schema": {"name": "answer", "schema": schema},
    }  # fmt: skip
    assert openai_response_format(None) is None


def test_read_choice_forms_and_refusal() -> None:
    labels = ("positive", "negative")
    assert read_choice('"positive"', labels, wrapped=False) == "positive"
    assert read_choice('{"answer": "negative"}', labels, wrapped=True) == "negative"
    assert read_choice("positive", labels, wrapped=True) == "positive"  # not JSON: taken as is
    with pytest.raises(ModelError) as info:
        read_choice("{not json", labels, wrapped=True)
    assert str(info.value).startswith(
        "the model answered '{not json', not one of the labels ['positive', 'negative']: "
    )


def test_a_request_has_exactly_one_of_messages_and_prompt() -> None:
    for fields in ({}, {"messages": CHAT.messages, "prompt": "x"}):
        with pytest.raises(ValueError) as info:
            ModelRequest(**fields)  # type: ignore[arg-type]
        assert str(info.value) == "a ModelRequest needs exactly one of messages and prompt"
    assert ModelRequest(prompt="p").last_user_text == "p"
    assert ModelRequest(messages=(Message("system", "s"),)).last_user_text == ""


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a: [\n", "cannot read the price file: "),
        ("- a\n", "a price file maps model names to prices"),
        ("o/m: 3\n", "o/m: give input_per_mtok and output_per_mtok"),
        ("o/m: {input_per_mtok: x, output_per_mtok: 1}\n",
         "o/m: give input_per_mtok and output_per_mtok as numbers"),
        ("o/m: {input_per_mtok: -1, output_per_mtok: 1}\n", "o/m: prices cannot be negative"),
        ("m: {input_per_mtok: 1, output_per_mtok: 1}\n",  # every row was left unpriced
         "m: name the model as a task does, provider/name (openai/m)"),
    ],
)  # fmt: skip
def test_bad_price_files_are_refused_by_name(tmp_path: Path, content: str, message: str) -> None:
    path = write(tmp_path / "p.yaml", content)
    with pytest.raises(UsageError) as info:
        PriceTable().extended(path)
    assert message in info.value.message
    assert str(path) in str(info.value)
    with pytest.raises(UsageError, match="cannot read the price file"):
        PriceTable().extended(tmp_path / "missing.yaml")
    with pytest.raises(UsageError, match=r"^x: give input_per_mtok and output_per_mtok$"):
        parse_price([1, 2], where="x")


def test_a_price_that_prices_no_model_of_the_run_is_warned_of(tmp_path: Path) -> None:
    path = write(tmp_path / "p.yaml", "openai/fake-modle: {input_per_mtok: 2, output_per_mtok: 1}\n"
                 "openai/used-*: {input_per_mtok: 2, output_per_mtok: 1}\n")  # fmt: skip
    table = PriceTable().extended(path)
    assert table.unused(["openai/fake-model", "openai/used-1"]) == [
        f"{path}: openai/fake-modle prices no model of this run; did you mean openai/fake-model?"
    ]
    assert PriceTable().unused(["openai/x"]) == []  # the built-in table is never warned of


def test_retry_after_ignores_what_it_cannot_read() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after({"retry-after-ms": "soon", "retry-after": "2"}) == 2.0


def test_without_retries_a_transient_error_is_raised_as_it_is() -> None:
    async def fail() -> str:
        raise TransientModelError("m: HTTP 503 from the endpoint: down", status=503)

    record = CallRecord()
    with pytest.raises(TransientModelError) as info:
        asyncio.run(call_with_retries(fail, RetryPolicy(max_retries=0), record))
    assert str(info.value) == "m: HTTP 503 from the endpoint: down"  # no "gave up after"
    assert record.retries == 0


def test_a_provider_prefix_is_registered_once() -> None:
    registry = default_registry()
    with pytest.raises(ValueError) as info:
        registry.register("mock", lambda key, settings: None)  # type: ignore[arg-type,return-value]
    assert str(info.value) == "provider 'mock' is already registered"


def test_an_empty_api_key_variable_is_refused_before_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ASSAY_TEST_EMPTY_KEY", "")
    key = ModelKey("openai/m", base_url="http://127.0.0.1:9/v1", api_key_env="ASSAY_TEST_EMPTY_KEY")
    with pytest.raises(UsageError) as info:
        default_registry().preflight(key)
    assert "ASSAY_TEST_EMPTY_KEY" in info.value.message


def test_the_pool_uses_a_model_added_for_a_key_and_its_servers_limiter() -> None:
    pool = ModelPool(default_registry(), PoolSettings(parallel=3))
    key = ModelKey("mock/echo")
    scripted = load_mock("mock/echo", Path("."))
    pool.add(key, scripted)
    assert pool.get(key).model is scripted
    assert pool.limiter(key).ceiling == 3

    async def started() -> str:
        managed = pool.get(key)
        await managed.start()
        return (await managed.generate(ModelRequest(prompt="hello"))).text

    assert asyncio.run(started()) == "hello"


def test_a_negative_cache_expiry_is_refused() -> None:
    with pytest.raises(ValueError) as info:
        parse_duration("-5m")
    assert str(info.value) == "'-5m' is negative"


def test_a_numeric_mock_reply_is_its_text(tmp_path: Path) -> None:
    write(tmp_path / "m.yaml", "replies:\n  - {match: '.', reply: 42}\n")
    assert generate(load_mock("mock/m.yaml", tmp_path), ModelRequest(prompt="x")).text == "42"


@pytest.mark.parametrize("tail", ["?api-version=2024-06-01", "/?api-version=2024-06-01&x=1"])
def test_a_base_url_with_a_query_string_keeps_the_request_path(tail: str) -> None:
    """Found by a break-test: ``base_url: http://h/v1?api-key=X`` sent ``POST
    /v1?api-key=X/chat/completions`` (the path pasted into the query): Azure's
    ``api-version`` and a ``?key=`` endpoint could not work."""
    with scripted_server(lambda body: "ok") as server:
        answer = generate(openai(server.base_url + tail))
    assert answer.text == "ok"
    (path,) = server.paths
    assert path.startswith("/v1/chat/completions?api-version=2024-06-01")
