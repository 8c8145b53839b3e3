"""The Anthropic provider against a real HTTP server, token costs, and run_limits.max_usd."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import assay as api
from assay.providers.base import Usage
from assay.providers.pricing import Price, PriceTable
from tests.cli.test_run import assay, finished, latest
from tests.helpers import write
from tests.openai_server import Fault, scripted_server

TASK = """\
task_id: claude
description: the Messages API, scripted
initial_prompt: "${{row.text}}"
agent:
  type: llm
  model: anthropic/claude-test
  base_url: "{url}"
  api_key_env: ANT_KEY
  system_prompt: Be brief.
  labels: [positive, negative]
{limits}
dataset:
  rows: [{{id: a, text: love}}, {{id: b, text: hate}}]
success_criteria:
  - {{type: classification_match, expected_label: positive, allowed_labels: [positive, negative]}}
"""


def reply(body: dict[str, Any]) -> str:
    text = body["messages"][-1]["content"]
    return json.dumps({"answer": "positive" if "love" in text else "negative"})


def test_anthropic_messages_with_a_forced_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANT_KEY", "sk-test")
    prices = write(tmp_path / "prices.yaml", "anthropic/claude-test: "
                   "{input_per_mtok: 3.0, output_per_mtok: 15.0}\n")  # fmt: skip
    with scripted_server(reply) as server:
        url = server.base_url.removesuffix("/v1")
        path = write(tmp_path / "t.yaml", TASK.format(url=url, limits=""))
        done = assay("run", str(path), "--prices", str(prices), cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # no gate: row b (expected positive) fails
    # rows run concurrently: find row a's request (and its headers) rather than the first
    index = next(i for i, r in enumerate(server.requests) if r["messages"][-1]["content"] == "love")
    body = server.requests[index]
    assert body["model"] == "claude-test"
    assert body["system"] == "Be brief."
    assert body["messages"] == [{"role": "user", "content": "love"}]
    assert body["tool_choice"] == {"type": "tool", "name": "answer"}
    assert body["tools"][0]["input_schema"]["properties"]["answer"]["enum"] == [
        "positive", "negative"]  # fmt: skip
    sent = server.headers[index]
    assert sent.get("x-api-key") == "sk-test" or sent.get("authorization") == "Bearer sk-test"
    row = json.loads((latest(tmp_path) / "default/claude/a/00/task.json").read_text())
    assert row["final_status"] == "SUCCESS"
    assert row["total_token_usage"] == {
        "input_tokens": 11,
        "output_tokens": 3,
        "total_tokens": 14,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
    }
    assert row["cost_usd"] == pytest.approx((11 * 3.0 + 3 * 15.0) / 1e6)
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert run["total_cost_usd"] == pytest.approx(2 * (11 * 3.0 + 3 * 15.0) / 1e6)
    assert run["cost_complete"] is True


def test_overloaded_529_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANT_KEY", "k")
    seen: set[str] = set()

    def first_overloaded(body: dict[str, Any]) -> Fault:
        text = body["messages"][-1]["content"]
        if text in seen:
            return Fault(text=reply(body))
        seen.add(text)
        return Fault(529)

    with scripted_server(first_overloaded) as server:
        url = server.base_url.removesuffix("/v1")
        path = write(tmp_path / "t.yaml", TASK.format(url=url, limits=""))
        finished(assay("run", str(path), "-j", "1", cwd=tmp_path), latest(tmp_path))
    row = json.loads((latest(tmp_path) / "default/claude/a/00/task.json").read_text())
    assert row["agent"]["retries"] == 1 and row["agent"]["attempts"][0]["status"] == 529


def test_max_usd_is_enforced_per_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANT_KEY", "k")
    limits = ("  price: {input_per_mtok: 1000.0, output_per_mtok: 1000.0}\n"
              "run_limits: {max_usd: 0.001}")  # fmt: skip
    with scripted_server(reply) as server:
        url = server.base_url.removesuffix("/v1")
        path = write(tmp_path / "t.yaml", TASK.format(url=url, limits=limits))
        finished(assay("run", str(path), cwd=tmp_path), latest(tmp_path))
    row = json.loads((latest(tmp_path) / "default/claude/a/00/task.json").read_text())
    # the answer was right: a cap hit whose criteria pass is a success (Coder Eval), and the
    # row says which limit stopped it; a wrong answer would end COST_BUDGET_EXCEEDED
    assert row["final_status"] == "SUCCESS"
    assert "run_limits.max_usd is 0.001" in row["agent"]["stopped_early"]
    assert row["cost_usd"] == pytest.approx(14 * 1000.0 / 1e6)


def test_max_usd_without_a_price_is_refused_at_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANT_KEY", "k")
    text = TASK.format(url="http://127.0.0.1:9", limits="run_limits: {max_usd: 1.0}")
    path = write(tmp_path / "t.yaml", text)
    done = assay("plan", str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert "run_limits.max_usd needs a price for anthropic/claude-test" in done.stderr


def test_max_usd_on_a_model_that_costs_nothing_is_warned(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
                 "agent: {type: llm, model: mock/echo}\nrun_limits: {max_usd: 0.01}\n"
                 "success_criteria: [{type: response_match, expected: hi}]\n")  # fmt: skip
    warnings = api.plan([str(path)]).warnings
    assert [w for w in warnings if "max_usd" in w] == [
        f"{path}:5: run_limits.max_usd: mock/echo costs nothing (its price is 0), so this "
        "budget is never reached; give agent.price to test it"]  # fmt: skip
    priced = path.read_text().replace("mock/echo}", "mock/echo, price: {input_per_mtok: 1, "
                                      "output_per_mtok: 2}}")  # fmt: skip
    write(path, priced)
    assert not [w for w in api.plan([str(path)]).warnings if "max_usd" in w]


def test_cost_prices_cache_reads_and_writes_apart() -> None:
    # Anthropic's list prices for Sonnet 4 (USD per million): input 3, output 15, cache read
    # 0.30, cache write 3.75. 1,000 input tokens of which 600 read and 100 written, 50 output:
    # 300·3 + 600·0.30 + 100·3.75 + 50·15 = 900 + 180 + 375 + 750 = 2,205 micro-dollars.
    usage = Usage(1000, 50, cache_read_tokens=600, cache_write_tokens=100)
    assert Price(3.0, 15.0, 0.30, 3.75).cost(usage) == pytest.approx(0.002205)
    # Without cache prices every input token costs the input price: 1000·3 + 50·15.
    assert Price(3.0, 15.0).cost(usage) == pytest.approx(0.00375)


def test_price_table_lookup_and_extension(tmp_path: Path) -> None:
    table = PriceTable()
    assert table.lookup("local/smollm2") == Price(0.0, 0.0)
    assert table.lookup("anthropic/claude-sonnet-4-5") == Price(3.0, 15.0, 0.30, 3.75)
    assert table.lookup("openai/unknown") is None
    extra = write(tmp_path / "p.yaml", "'openai/ft-*': {input_per_mtok: 1, output_per_mtok: 2}\n"
                  "openai/ft-special: {input_per_mtok: 5, output_per_mtok: 5}\n")  # fmt: skip
    bigger = table.extended(extra)
    assert bigger.lookup("openai/ft-x") == Price(1.0, 2.0)
    assert bigger.lookup("openai/ft-special") == Price(5.0, 5.0)
    assert Price(2.0, 4.0).cost(Usage(1_000_000, 500_000)) == pytest.approx(4.0)
    assert table.lookup("openai/ft-x") is None  # the original is unchanged


def test_missing_api_key_is_refused_at_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANT_KEY", raising=False)
    path = write(tmp_path / "t.yaml", TASK.format(url="http://127.0.0.1:9", limits=""))
    for command in ("plan", "run"):
        done = assay(command, str(path), cwd=tmp_path)
        assert done.returncode == 2
        assert "needs an API key in the environment variable ANT_KEY" in done.stderr
    assert not (tmp_path / "runs").exists()
