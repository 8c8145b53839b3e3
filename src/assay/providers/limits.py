"""Limits on a model server that hold across a whole run: calls in flight and calls per second.

``-j`` bounds the calls in flight per server from one process (with the adaptive limiter of
:mod:`assay.providers.limiter`); :class:`EndpointLimits` (``--max-connections``,
``--max-rate``) bound them across every row of the run, whichever process or machine runs
it. Every call of a model (and every call the model bridge passes through) holds a permit of
its server's :class:`Gate` while it is sent: :class:`LocalGate` within one process; on a Ray
cluster, a gate backed by one limiter actor with leases
(:mod:`assay.orchestration.running.executors.ray_limiter`).

Rate: calls start at most ``max_rate`` per second per server, evenly spaced (a token bucket
of depth one: no burst), as providers state their limits in requests per unit of time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from assay.errors import UsageError


@dataclass(frozen=True)
class EndpointLimits:
    """Limits of each model server over the whole run.

    Attributes:
        max_connections: calls in flight at once per server (``None``: only ``-j``).
        max_rate: calls started per second per server (``None``: no limit).
    """

    max_connections: int | None = None
    max_rate: float | None = None

    def __post_init__(self) -> None:
        if self.max_connections is not None and self.max_connections < 1:
            raise UsageError(f"max_connections must be at least 1, got {self.max_connections}")
        if self.max_rate is not None and not self.max_rate > 0:
            raise UsageError(f"max_rate must be a positive number of calls per second, "
                             f"got {self.max_rate}")  # fmt: skip

    @property
    def any(self) -> bool:
        """Some limit is set."""
        return self.max_connections is not None or self.max_rate is not None


class Gate(Protocol):
    """Permits to call a model server, shared by every row of a run."""

    def hold(self, server: str) -> AbstractAsyncContextManager[None]:
        """Wait for a permit of ``server`` and hold it for the block."""
        ...


class Spacing:
    """Start times at most ``rate`` per second, evenly spaced, first come first served."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self._next = 0.0

    def delay(self, now: float) -> float:
        """Book the next start; seconds to wait before it (0: start now)."""
        start = max(now, self._next)
        self._next = start + self.interval
        return start - now


class LocalGate:
    """A :class:`Gate` for one process: a semaphore of ``max_connections`` and a
    :class:`Spacing` of ``max_rate`` per server."""

    def __init__(self, limits: EndpointLimits) -> None:
        self.limits = limits
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._spacing: dict[str, Spacing] = {}

    @asynccontextmanager
    async def hold(self, server: str) -> AsyncIterator[None]:
        """A permit of ``server``: a connection slot first, then the next start time."""
        slots = None
        if self.limits.max_connections is not None:
            slots = self._slots.setdefault(server, asyncio.Semaphore(self.limits.max_connections))
            await slots.acquire()
        try:
            if self.limits.max_rate is not None:
                spacing = self._spacing.setdefault(server, Spacing(self.limits.max_rate))
                wait = spacing.delay(time.monotonic())
                if wait > 0:
                    await asyncio.sleep(wait)
            yield
        finally:
            if slots is not None:
                slots.release()
