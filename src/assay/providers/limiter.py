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
from collections import deque
from dataclasses import dataclass


@dataclass
class Ticket:
    """The outcome of one call, reported by the caller before the slot is released."""

    rate_limited: bool = False
    succeeded: bool = False


class AdaptiveLimiter:
    """Bounds the calls in flight to one endpoint.

    A semaphore whose size changes: a call takes a free slot at once when nobody waits;
    otherwise it queues, first come first served, and a released slot is handed to the
    longest waiter directly (taken on its behalf), so no newcomer overtakes it. A waiter
    cancelled after it was handed a slot passes the slot on.

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
        self._waiters: deque[asyncio.Future[None]] = deque()

    def slot(self) -> _Slot:
        """Hold one of ``limit`` slots for one call (``async with limiter.slot() as
        ticket``); mark the ticket with its outcome before the block ends."""
        return _Slot(self)

    async def _acquire(self) -> None:
        if self.in_flight < self.limit and not self._waiters:
            self._take()
            return
        handed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(handed)
        try:
            await handed
        except asyncio.CancelledError:
            if handed.done() and not handed.cancelled():
                self.in_flight -= 1  # handed a slot, but cancelled before using it
                self._hand_over()
            elif handed in self._waiters:  # a hand-over may already have dropped it
                self._waiters.remove(handed)
            raise

    def _release(self, ticket: Ticket) -> None:
        self.in_flight -= 1
        self._account(ticket)
        self._hand_over()

    def _take(self) -> None:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _hand_over(self) -> None:
        """Give free slots to the longest waiters (only as many as are free)."""
        while self._waiters and self.in_flight < self.limit:
            handed = self._waiters.popleft()
            if not handed.done():
                self._take()
                handed.set_result(None)

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


class _Slot:
    """``async with`` for one slot of an :class:`AdaptiveLimiter`; yields the call's
    :class:`Ticket`."""

    def __init__(self, limiter: AdaptiveLimiter) -> None:
        self._limiter = limiter
        self._ticket = Ticket()

    async def __aenter__(self) -> Ticket:
        await self._limiter._acquire()
        return self._ticket

    async def __aexit__(self, *exc: object) -> None:
        self._limiter._release(self._ticket)
