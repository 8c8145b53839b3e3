"""Adaptive concurrency per model endpoint: back off when rate-limited, grow when it recovers.

Additive increase, multiplicative decrease (the rule of TCP congestion control): the limit
starts at ``ceiling`` (the run's ``-j``); a rate-limited call (HTTP 429) halves it (at most once
per ``cooldown`` seconds, so one burst of 429s counts once); every ``limit`` successful calls
in a row raise it by one, never above ``ceiling``. At no time are more than ``limit`` calls in
flight.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass
class Ticket:
    """The outcome of one call, reported by the caller before the slot is released."""

    rate_limited: bool = False
    succeeded: bool = False


class AdaptiveLimiter:
    """Bounds the calls in flight to one endpoint.

    Args:
        ceiling: the maximum (``-j``), also the starting limit.
        cooldown: seconds after a decrease during which further 429s do not decrease again.
    """

    def __init__(self, ceiling: int, *, cooldown: float = 1.0) -> None:
        self.ceiling = max(1, ceiling)
        self.limit = self.ceiling
        self.cooldown = cooldown
        self.in_flight = 0
        self.peak_in_flight = 0
        self.decreases = 0
        self._successes = 0
        self._last_decrease = -float("inf")
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Ticket]:
        """Hold one of ``limit`` slots for one call; mark the ticket with its outcome."""
        async with self._changed:
            try:
                await self._changed.wait_for(lambda: self.in_flight < self.limit)
            except asyncio.CancelledError:
                # a cancelled waiter may have consumed the wake-up meant for a free slot
                self._changed.notify(max(0, self.limit - self.in_flight))
                raise
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        ticket = Ticket()
        try:
            yield ticket
        finally:
            async with self._changed:
                self.in_flight -= 1
                self._account(ticket)
                # Wake only as many waiters as there are free slots: waking all of them at
                # every release costs a scan of every waiting call, per call.
                self._changed.notify(max(0, self.limit - self.in_flight))

    def _account(self, ticket: Ticket) -> None:
        if ticket.rate_limited:
            self._successes = 0
            now = time.monotonic()
            if now - self._last_decrease >= self.cooldown:
                self._last_decrease = now
                self.limit = max(1, self.limit // 2)
                self.decreases += 1
        elif ticket.succeeded:
            self._successes += 1
            if self._successes >= self.limit and self.limit < self.ceiling:
                self._successes = 0
                self.limit += 1
