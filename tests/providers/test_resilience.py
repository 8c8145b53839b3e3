"""Retries, Retry-After, ERROR vs FAILURE and the adaptive limit, against a real HTTP server."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from assay.errors import ModelError
from assay.providers.base import Message, ModelRequest
from assay.providers.cache import Identity
from assay.providers.limiter import AdaptiveLimiter
from assay.providers.managed import ManagedModel
from assay.providers.openai_compat import OpenAICompatibleModel
from assay.providers.retry import CallRecord, RetryPolicy, parse_retry_after
from tests.cli.test_run import assay, latest
from tests.helpers import wait_for, write
from tests.openai_server import Fault, scripted_server

FAST = RetryPolicy(max_retries=3, initial_wait=0.01, max_wait=0.05)
REQUEST = ModelRequest(messages=(Message("user", "hi"),), max_tokens=4)


def managed(base_url: str, policy: RetryPolicy = FAST, ceiling: int = 4) -> ManagedModel:
    model = OpenAICompatibleModel(name="openai/m", model="m", base_url=base_url, api_key="k",
                                  timeout=5)  # fmt: skip
    return ManagedModel(model, identity=Identity("openai", base_url, "openai/m"),
                        limiter=AdaptiveLimiter(ceiling), policy=policy)  # fmt: skip


def call(model: ManagedModel, record: CallRecord | None = None) -> str:
    async def go() -> str:
        try:
            return (await model.generate(REQUEST, record=record)).text
        finally:
            await model.aclose()

    return asyncio.run(go())


def sequence(*outcomes: str | Fault) -> Any:
    items = iter(outcomes)
    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> str | Fault:
        with lock:
            return next(items)

    return reply


def test_429_with_retry_after_is_honoured_then_succeeds() -> None:
    reply = sequence(Fault(429, {"Retry-After": "0.4"}), Fault(500), "fine")
    with scripted_server(reply) as server:
        record = CallRecord()
        assert call(managed(server.base_url), record) == "fine"
    assert len(server.requests) == 3
    assert [a.status for a in record.attempts] == [429, 500]
    assert [a.number for a in record.attempts] == [1, 2]
    assert record.attempts[0].wait_seconds == pytest.approx(0.4)
    assert server.times[1] - server.times[0] >= 0.38
    assert record.attempts[1].wait_seconds <= 0.05


@pytest.mark.parametrize("status", [408, 409, 502, 503])
def test_transient_statuses_are_retried(status: int) -> None:
    with scripted_server(sequence(Fault(status), "fine")) as server:
        assert call(managed(server.base_url)) == "fine"
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(status: int) -> None:
    with (
        scripted_server(sequence(Fault(status), "never")) as server,
        pytest.raises(ModelError, match=f"HTTP {status}"),
    ):
        call(managed(server.base_url))
    assert len(server.requests) == 1


def test_truncated_body_is_retried() -> None:
    with scripted_server(sequence(Fault(truncate=True, text="half"), "whole")) as server:
        assert call(managed(server.base_url)) == "whole"
    assert len(server.requests) == 2


def test_gives_up_after_max_retries_with_the_cause() -> None:
    with scripted_server(lambda body: Fault(503)) as server:
        record = CallRecord()
        with pytest.raises(ModelError, match=r"HTTP 503 .*gave up after 4 attempts"):
            call(managed(server.base_url), record)
    assert len(server.requests) == 4
    assert record.retries == 3
    assert [a.number for a in record.attempts] == [1, 2, 3]


def test_zero_retries_means_one_attempt() -> None:
    with (
        scripted_server(lambda body: Fault(503)) as server,
        pytest.raises(ModelError, match="HTTP 503"),
    ):
        call(managed(server.base_url, RetryPolicy(max_retries=0)))
    assert len(server.requests) == 1


def test_slow_response_times_out_and_is_retried() -> None:
    reply = sequence(Fault(delay=2.0, text="late"), "quick")
    with scripted_server(reply) as server:
        model = OpenAICompatibleModel(name="openai/m", model="m", base_url=server.base_url,
                                      api_key="k", timeout=0.5)  # fmt: skip
        wrapped = ManagedModel(model, identity=Identity("openai", None, "openai/m"),
                               limiter=AdaptiveLimiter(2), policy=FAST)  # fmt: skip
        record = CallRecord()
        assert call(wrapped, record) == "quick"
    assert "timed out" in record.attempts[0].error


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "99999"}) == 300.0


def test_adaptive_limit_backs_off_on_429_and_recovers() -> None:
    limiter = AdaptiveLimiter(8, cooldown=0.0)

    async def run(outcomes: list[bool]) -> None:
        for rate_limited in outcomes:
            async with limiter.slot() as ticket:
                ticket.rate_limited = rate_limited
                ticket.succeeded = not rate_limited

    asyncio.run(run([True]))
    assert limiter.limit == 4
    asyncio.run(run([True, True]))
    assert limiter.limit == 1
    asyncio.run(run([False] * 1))
    assert limiter.limit == 2
    asyncio.run(run([False] * 2))
    assert limiter.limit == 3
    asyncio.run(run([False] * 100))
    assert limiter.limit == 8


def test_never_more_in_flight_than_the_limit() -> None:
    limiter = AdaptiveLimiter(3)
    live = 0
    peak = 0

    async def one() -> None:
        nonlocal live, peak
        async with limiter.slot() as ticket:
            live += 1
            peak = max(peak, live)
            await asyncio.sleep(0.01)
            live -= 1
            ticket.succeeded = True

    async def many() -> None:
        await asyncio.gather(*(one() for _ in range(30)))

    asyncio.run(many())
    assert peak == 3 == limiter.peak_in_flight


def test_a_waiter_cancelled_after_its_wake_up_passes_the_slot_on() -> None:
    limiter = AdaptiveLimiter(1)

    async def scenario() -> bool:
        release = asyncio.Event()
        waiters: list[asyncio.Task[None]] = []

        async def holder() -> None:
            async with limiter.slot():
                await release.wait()
            # the release woke the first waiter; cancel it before it runs, as a row timeout
            # would, in the same step
            waiters[0].cancel()

        async def waiter() -> None:
            async with limiter.slot():
                pass

        first = asyncio.create_task(holder())
        await asyncio.sleep(0)
        waiters += [asyncio.create_task(waiter()), asyncio.create_task(waiter())]
        await asyncio.sleep(0)
        release.set()
        await first
        try:
            await asyncio.wait_for(waiters[1], timeout=2)  # the free slot is not lost
        except TimeoutError:
            return False
        return limiter.in_flight == 0

    assert asyncio.run(scenario())


def test_waiters_cancelled_as_the_slot_is_released_end_cancelled() -> None:
    """A holder and a waiter cancelled in the same step (Ctrl-C, a shared timeout): the
    release may drop the waiter's cancelled hand-off before the waiter runs."""
    limiter = AdaptiveLimiter(1)

    async def call() -> None:
        async with limiter.slot():
            await asyncio.sleep(10)

    async def scenario() -> list[BaseException | None]:
        holder = asyncio.create_task(call())
        await asyncio.sleep(0)
        waiter = asyncio.create_task(call())
        await asyncio.sleep(0)
        holder.cancel()
        waiter.cancel()
        done = await asyncio.gather(holder, waiter, return_exceptions=True)
        async with asyncio.timeout(2), limiter.slot():  # the slot is free again
            pass
        return [d if isinstance(d, BaseException) else None for d in done]

    outcomes = asyncio.run(scenario())
    assert [type(o).__name__ for o in outcomes] == ["CancelledError", "CancelledError"]
    assert limiter.in_flight == 0


def test_waiters_get_slots_first_come_first_served() -> None:
    limiter = AdaptiveLimiter(1)
    order: list[str] = []

    async def call(name: str, hold: float = 0.0) -> None:
        async with limiter.slot():
            order.append(name)
            await asyncio.sleep(hold)

    async def scenario() -> None:
        first = asyncio.create_task(call("holder", 0.05))
        await asyncio.sleep(0)
        queued = [asyncio.create_task(call(f"waiter{i}")) for i in range(3)]
        await asyncio.sleep(0.02)
        await first
        late = asyncio.create_task(call("newcomer"))  # arrives as the slot is handed over
        await asyncio.gather(*queued, late)

    asyncio.run(scenario())
    assert order == ["holder", "waiter0", "waiter1", "waiter2", "newcomer"]
    assert limiter.in_flight == 0 and limiter.peak_in_flight == 1


def test_rate_limited_endpoint_gets_fewer_concurrent_calls() -> None:
    """-j 8 against an endpoint that answers 429 to the first eight calls: those eight were in
    flight at once (a barrier lets none answer before all eight arrived); afterwards the
    endpoint sees at most half as many. The calls after the 429s are held at the server until
    the client is saturated at its lowered limit (every slot taken, every call that holds one
    arrived), so the count is read when no further call could be sent, not after a delay."""
    ceiling = 8
    burst = threading.Barrier(ceiling, timeout=60)
    release = threading.Event()
    counter = itertools.count()
    held: list[int] = []
    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> str | Fault:
        with lock:
            n = next(counter)
        if n < ceiling:
            burst.wait()  # BrokenBarrierError (a 500) unless all eight are in flight at once
            return Fault(429, {"Retry-After": "0.05"})
        with lock:
            held.append(n)
        release.wait(timeout=60)
        return "ok"

    with scripted_server(reply) as server:
        model = managed(server.base_url, RetryPolicy(max_retries=10, initial_wait=0.01), ceiling)
        limiter = model.limiter

        def saturated() -> bool:
            with lock:
                arrived = len(held)
            return limiter.limit < ceiling and arrived == limiter.in_flight == limiter.limit

        at_release: list[int] = []

        def controller() -> None:
            try:
                wait_for(saturated, 60, "the client saturated at a lowered limit")
            finally:
                with lock:
                    at_release.append(len(held))
                release.set()

        watcher = threading.Thread(target=controller)
        watcher.start()

        async def go() -> list[str]:
            try:
                done = await asyncio.gather(*(model.generate(REQUEST) for _ in range(24)))
                return [d.text for d in done]
            finally:
                await model.aclose()

        texts = asyncio.run(go())
        watcher.join()
    assert texts == ["ok"] * 24
    assert not burst.broken and server.peak_in_flight == ceiling  # the ceiling, reached
    assert limiter.decreases >= 1
    assert 1 <= at_release[0] <= ceiling // 2  # after the 429s: half the calls at most
    assert len(server.requests) == 24 + ceiling  # each 429 retried once


TASK = """\
task_id: flaky
description: a flaky endpoint
initial_prompt: "${{row.text}}"
agent:
  type: llm
  model: openai/m
  base_url: {url}
  api_key_env: FLAKY_KEY
dataset:
  rows: [{{id: a, text: hello}}, {{id: b, text: bye}}]
success_criteria:
  - {{type: response_match, expected: hello, match: contains}}
"""


def test_run_records_attempts_and_keeps_error_apart_from_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = {"b": 0}
    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> str | Fault:
        text = body["messages"][-1]["content"]
        if text == "hello":
            with lock:
                state["b"] += 1
                first = state["b"] == 1
            return Fault(429, {"Retry-After": "0.1"}) if first else "hello"
        return Fault(503)

    monkeypatch.setenv("FLAKY_KEY", "k")
    with scripted_server(reply) as server:
        path = write(tmp_path / "flaky.yaml", TASK.format(url=server.base_url))
        done = assay("run", str(path), "--max-retries", "2", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # an outage never passes CI
    assert "FAILED (no gate, and 1 errored (every row must succeed))" in done.stdout
    run_dir = latest(tmp_path)
    ok = json.loads((run_dir / "default/flaky/a/00/task.json").read_text())
    assert ok["final_status"] == "SUCCESS"
    assert ok["agent"]["retries"] == 1
    assert ok["agent"]["attempts"][0]["status"] == 429
    assert ok["agent"]["attempts"][0]["wait_seconds"] == pytest.approx(0.1)
    bad = json.loads((run_dir / "default/flaky/b/00/task.json").read_text())
    assert bad["final_status"] == "ERROR"
    assert "HTTP 503" in bad["error_message"] and "gave up after 3 attempts" in bad["error_message"]
    assert bad["agent"]["retries"] == 2
    suite = json.loads((run_dir / "default/flaky/suite.json").read_text())
    assert (suite["rows_passed"], suite["rows_failed"], suite["rows_error"]) == (1, 0, 1)
    assert "retrying in" in done.stderr


SHARED = """\
task_id: {name}
description: one of two models served by one server
initial_prompt: "${{row.text}}"
agent: {{type: llm, model: openai/{name}, base_url: "{url}", api_key_env: FLAKY_KEY}}
dataset:
  rows: [{rows}]
success_criteria:
  - {{type: response_match, expected: hello, match: contains}}
"""


def test_models_served_by_one_server_share_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two models behind one base_url (a vLLM or Ollama server comparing them) never have
    more than -j calls in flight between them, however the URL ends."""
    monkeypatch.setenv("FLAKY_KEY", "k")
    rows = ", ".join(f"{{id: r{i}, text: hello}}" for i in range(12))
    first = threading.Barrier(3, timeout=60)  # the first three calls answer together
    counter = itertools.count()
    lock = threading.Lock()

    def reply(body: dict[str, Any]) -> Fault:
        with lock:
            n = next(counter)
        if n < 3:
            first.wait()
        return Fault(delay=0.05, text="hello")

    with scripted_server(reply) as server:
        for name, url in (("one", server.base_url), ("two", server.base_url + "/")):
            write(tmp_path / f"{name}.yaml", SHARED.format(name=name, url=url, rows=rows))
        done = assay("run", "one.yaml", "two.yaml", "-j", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(body["model"] for body in server.requests) == ["one"] * 12 + ["two"] * 12
    assert not first.broken  # -j 3 calls were in flight at once
    assert server.peak_in_flight == 3  # and never more
