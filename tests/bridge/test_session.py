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


def test_a_call_answered_without_usage_leaves_the_sessions_usage_unknown() -> None:
    """A server that sends no usage: a coding agent's row recorded 0 tokens through the
    bridge, as if measured (a break-test); calls that failed or were refused have none and
    leave it known."""
    from assay.agents.base import AgentOutcome
    from assay.agents.cli import _usage_and_cost
    from assay.results.transcript import Transcript

    session = BridgeSession(label="t", model_key=ModelKey("mock/x"), price=Price(1.0, 1.0))
    spend(session, Usage(6, 4))
    failed = session.begin("anthropic", "m")
    failed.error, failed.status = "upstream 503", 503
    session.end(failed)
    assert session.usage_known
    outcome = AgentOutcome()
    _usage_and_cost(outcome, Transcript(agent="claude-code"), session)
    assert outcome.usage == Usage(6, 4) and outcome.cost_usd is not None
    spend(session, None)  # type: ignore[arg-type]
    assert not session.usage_known
    _usage_and_cost(outcome, Transcript(agent="claude-code"), session)
    assert (outcome.usage, outcome.cost_usd) == (None, None)
