"""One row-task's use of the bridge: its credential, model, limits, and every call it made.

The agent opens a session before it starts its CLI and gives the CLI the session's token as
its API key; every request the CLI sends carries it, so each call is attributed to its row.
The session counts tokens and cost as calls end and stops (refusing further calls and
setting :attr:`BridgeSession.stopped`) when a limit is crossed, so the agent can end the CLI
mid-run.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from dataclasses import dataclass, field
from typing import Literal

from assay.providers.base import Usage
from assay.providers.pool import ModelKey
from assay.providers.pricing import Price, PriceTable
from assay.providers.retry import Attempt

TOKEN_PREFIX = "assay-row-"
TOKEN_PATTERN = TOKEN_PREFIX + "[0-9a-f]{32}"
"""What every row's bridge credential looks like (redacted by this pattern: one for all rows)."""
BRIDGE_KEY_NAME = "ASSAY_BRIDGE_KEY"
"""The name row credentials are redacted as (``[redacted:ASSAY_BRIDGE_KEY]``)."""

StopKind = Literal["token_budget", "cost_budget", "max_turns", "max_tool_calls", "early_stop"]
Protocol = Literal["anthropic", "responses", "chat", "gemini"]


@dataclass(frozen=True)
class SessionLimits:
    """A row's limits: total tokens, US dollars, model calls, tool calls (``run_limits``)."""

    max_total_tokens: int | None = None
    max_usd: float | None = None
    max_turns: int | None = None
    max_tool_calls: int | None = None


@dataclass
class CallLog:
    """One model call through the bridge.

    Attributes:
        index: 1-based, in the order calls started.
        protocol: the wire the CLI spoke.
        model: the assay model that answered (``anthropic/<name>`` when passed through).
        started_ns, ended_ns: Unix nanoseconds.
        status: the HTTP status the CLI received.
        usage: tokens the endpoint counted (``None`` when it reported none).
        cost_usd: priced from ``usage`` (``None`` without a price).
        stop_reason: why the answer ended (``tool_calls``, ``stop``, ``length``, …).
        tool_calls: names of the tools the answer called, in order.
        text: the answer's text (the start of it).
        error: why the call failed, if it did.
        attempts: retried attempts.
        passthrough: the request was forwarded untranslated.
        cached: the answer came from the response cache.
        refused: the bridge answered the call itself, no model asked: a limit was reached,
            or an earlier call of the row failed so that this one would (an outage, the
            same request refused).
    """

    index: int
    protocol: Protocol
    model: str
    started_ns: int
    ended_ns: int = 0
    status: int = 200
    usage: Usage | None = None
    cost_usd: float | None = None
    stop_reason: str | None = None
    tool_calls: list[str] = field(default_factory=list)
    text: str = ""
    error: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    passthrough: bool = False
    cached: bool = False
    refused: bool = False


@dataclass
class BridgeSession:
    """The bridge's state for one row-task (see the module docstring).

    Attributes:
        label: the row-task and replicate, for messages.
        model_key: the model every call goes to.
        keep_model: pass the CLI's own model name through (an ``anthropic/`` model left
            unset in the task: the CLI chooses).
        price: what a call costs, or ``None``.
        prices: the run's price table, for a model the CLI chose (``keep_model``).
        limits: the row's budgets.
        script_vars: ``row.<field>`` and ``sandbox``, for ``mock/`` scripts.
        replicate: part of the response cache key.
        token: the credential the CLI sends (``assay-row-`` and 32 hex digits).
        outage: why a call of this row failed as an outage, after the bridge's retries: the
            row's later calls are answered with it, the model not called again.
        failed_requests: why each request that the model refused failed (not an outage),
            by :func:`~assay.bridge.calls.request_digest`: the same request sent again is
            answered with it, the model not called again.
    """

    label: str
    model_key: ModelKey
    keep_model: bool = False
    price: Price | None = None
    prices: PriceTable | None = None
    limits: SessionLimits = field(default_factory=SessionLimits)
    script_vars: dict[str, str] = field(default_factory=dict)
    replicate: int = 0
    token: str = field(default_factory=lambda: TOKEN_PREFIX + secrets.token_hex(16))
    calls: list[CallLog] = field(default_factory=list)
    stopped: StopKind | None = None
    stop_message: str | None = None
    outage: str | None = None
    failed_requests: dict[str, str] = field(default_factory=dict)
    stop_event: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def usage(self) -> Usage:
        """Tokens of every call so far."""
        total = Usage()
        for call in self.calls:
            if call.usage is not None:
                total = total + call.usage
        return total

    @property
    def usage_known(self) -> bool:
        """Every call the model answered reported its usage (a server that sends none
        leaves the row's tokens and cost unknown, never 0)."""
        return all(c.usage is not None for c in self.calls
                   if c.error is None and not c.refused and c.status < 400)  # fmt: skip

    @property
    def cost_usd(self) -> float | None:
        """US dollars of every call so far; ``None`` when no call could be priced."""
        costs = [c.cost_usd for c in self.calls if c.cost_usd is not None]
        # Rounded to a millionth of a cent: a sum of float prices drifts in its last digits
        # (0.289 + 0.0 = 0.28900000000000003), which must not cross a budget of 0.289.
        return round(math.fsum(costs), 8) if costs else None

    def begin(self, protocol: Protocol, model: str, *, passthrough: bool = False) -> CallLog:
        """Record a call as started and return its log; the caller fills it in and calls
        :meth:`end`."""
        log = CallLog(len(self.calls) + 1, protocol, model, time.time_ns(),
                      passthrough=passthrough)  # fmt: skip
        self.calls.append(log)
        return log

    def refusal(self) -> str | None:
        """Why the next call may not be made (a limit already reached), or ``None``."""
        if self.stopped is not None:
            return self.stop_message
        turns = self.limits.max_turns
        if turns is not None and len(self.calls) >= turns:
            self.stop("max_turns", f"the agent asked for model call {len(self.calls) + 1}; "
                                   f"run_limits.max_turns is {turns}")  # fmt: skip
            return self.stop_message
        tools, cap = self.tool_calls, self.limits.max_tool_calls
        if cap is not None and tools >= cap:
            calls = "1 tool call" if tools == 1 else f"{tools} tool calls"
            self.stop("max_tool_calls", f"the agent's model asked for {calls}; "
                                        f"run_limits.max_tool_calls is {cap}")  # fmt: skip
            return self.stop_message
        return None

    @property
    def tool_calls(self) -> int:
        """Tool calls the model's answers asked for so far."""
        return sum(len(call.tool_calls) for call in self.calls)

    def end(self, log: CallLog, *, price_model: str | None = None) -> None:
        """Close ``log``: time, cost, and the budgets (crossing one stops the session)."""
        log.ended_ns = time.time_ns()
        price = self.price
        if self.keep_model and price_model and self.prices is not None:
            price = self.prices.lookup(f"anthropic/{price_model}")
        if log.usage is not None and price is not None:
            log.cost_usd = price.cost(log.usage)
        self._check_budgets()

    def stop(self, kind: StopKind, message: str) -> None:
        """Refuse every further call and tell the agent to end its CLI."""
        if self.stopped is None:
            self.stopped, self.stop_message = kind, message
            self.stop_event.set()

    def _check_budgets(self) -> None:
        tokens, budget = self.usage.total_tokens, self.limits.max_total_tokens
        if budget is not None and tokens > budget:
            self.stop("token_budget", f"the agent's model calls used {tokens} tokens; "
                                      f"run_limits.max_total_tokens is {budget}")  # fmt: skip
            return
        cost, limit = self.cost_usd, self.limits.max_usd
        if limit is not None and cost is not None and cost > limit:
            self.stop("cost_budget", f"the agent's model calls cost ${cost:.6f}; "
                                     f"run_limits.max_usd is {limit}")  # fmt: skip
