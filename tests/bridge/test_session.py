"""A bridge session's budgets, counted call by call."""

from __future__ import annotations

from assay.bridge.session import BridgeSession, SessionLimits
from assay.providers.base import Usage
from assay.providers.pool import ModelKey
from assay.providers.pricing import Price


def spend(session: BridgeSession, *usages: Usage) -> None:
    for usage in usages:
        log = session.begin("anthropic", "m")
        log.usage = usage
        session.end(log)


def test_a_budget_is_crossed_only_when_the_cost_exceeds_it() -> None:
    # $1 per million input tokens: 100,000 + 189,000 tokens cost 0.1 + 0.189, which float
    # addition makes 0.28900000000000003; exactly the budget is not over it.
    price = Price(1.0, 0.0)
    at = BridgeSession(label="t", model_key=ModelKey("mock/x"), price=price,
                       limits=SessionLimits(max_usd=0.289))  # fmt: skip
    spend(at, Usage(100_000, 0), Usage(189_000, 0))
    assert at.cost_usd == 0.289 and at.stopped is None
    spend(at, Usage(1, 0))
    assert at.stopped == "cost_budget"
    assert at.stop_message == "the agent's model calls cost $0.289001; run_limits.max_usd is 0.289"


def test_a_token_budget_is_crossed_by_the_first_token_over_it() -> None:
    session = BridgeSession(label="t", model_key=ModelKey("mock/x"),
                            limits=SessionLimits(max_total_tokens=10))  # fmt: skip
    spend(session, Usage(6, 4))
    assert session.stopped is None
    spend(session, Usage(1, 0))
    assert session.stopped == "token_budget" and session.stop_event.is_set()
