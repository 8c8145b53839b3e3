"""Run-wide limits of each model server on a Ray cluster: one limiter actor, leases.

Every model call on every node holds a lease of its server from :class:`Limiter` (created by
the driver, one per run) while it is sent, so ``--max-connections`` and ``--max-rate`` hold
across the cluster. A lease belongs to a node; each node's :class:`RayGate` renews its
node's leases every few seconds, so when a node dies its leases expire after
``ttl`` seconds (and at once when the driver sees its runner die: :meth:`Limiter.forget`),
and its permits come back. A call cancelled while it waits withdraws its request, so no
lease is granted to nobody.

A ``local/`` model and a ``mock/`` script are served on each node by a server of its own:
their limits hold per node. A server given by URL (a hosted API, ``base_url``) is one server
for the whole cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from assay.providers.limits import EndpointLimits, Spacing

LEASE_TTL = 15.0
RENEW_EVERY = 3.0


@dataclass
class _Server:
    """One server's holders, waiters and start times."""

    held: dict[str, tuple[str, float]] = field(default_factory=dict)  # lease → node, expiry
    waiting: deque[tuple[str, str, asyncio.Future[None]]] = field(default_factory=deque)
    spacing: Spacing | None = None
    peak: int = 0


class Limiter:
    """The limiter actor (an async Ray actor; its methods run in one event loop).

    Args:
        limits: the run's limits.
        ttl: seconds a lease lives without its node renewing it.
    """

    def __init__(self, limits: EndpointLimits, ttl: float = LEASE_TTL) -> None:
        self.limits = limits
        self.ttl = ttl
        self.servers: dict[str, _Server] = {}
        self.expired = 0
        self._withdrawn: set[str] = set()  # released before their request arrived

    def _server(self, name: str) -> _Server:
        found = self.servers.get(name)
        if found is None:
            rate = self.limits.max_rate
            found = self.servers[name] = _Server(spacing=Spacing(rate) if rate else None)
        return found

    async def acquire(self, server: str, node: str, lease: str) -> float:
        """Wait for a permit of ``server``; returns the seconds to wait before starting the
        call (its place in the rate's spacing)."""
        state = self._server(server)
        self._expire(state)
        if lease in self._withdrawn:
            self._withdrawn.discard(lease)
            return 0.0
        limit = self.limits.max_connections
        if limit is not None and (len(state.held) >= limit or state.waiting):
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            state.waiting.append((lease, node, future))
            await future  # granted by _hand_over (the lease is then held)
        else:
            self._grant(state, lease, node)
        if state.spacing is None:
            return 0.0
        return state.spacing.delay(time.monotonic())

    def release(self, server: str, lease: str) -> None:
        """Give a lease back (or withdraw a request still waiting)."""
        state = self._server(server)
        if state.held.pop(lease, None) is None:
            waiting = [entry for entry in state.waiting if entry[0] == lease]
            for entry in waiting:
                state.waiting.remove(entry)
                entry[2].cancel()
            if not waiting:
                self._withdrawn.add(lease)
        self._hand_over(state)

    def renew(self, node: str) -> None:
        """The node is alive: its leases live ``ttl`` seconds more."""
        expiry = time.monotonic() + self.ttl
        for state in self.servers.values():
            for lease, (owner, _) in list(state.held.items()):
                if owner == node:
                    state.held[lease] = (owner, expiry)
            self._expire(state)

    def forget(self, node: str) -> int:
        """The node is gone: its leases come back now; returns how many."""
        count = 0
        for state in self.servers.values():
            for lease, (owner, _) in list(state.held.items()):
                if owner == node:
                    del state.held[lease]
                    count += 1
            for entry in list(state.waiting):
                if entry[1] == node:
                    state.waiting.remove(entry)
                    entry[2].cancel()
            self._hand_over(state)
        return count

    def peaks(self) -> dict[str, int]:
        """Most leases held at once, per server."""
        return {name: state.peak for name, state in self.servers.items()}

    def _grant(self, state: _Server, lease: str, node: str) -> None:
        state.held[lease] = (node, time.monotonic() + self.ttl)
        state.peak = max(state.peak, len(state.held))

    def _expire(self, state: _Server) -> None:
        now = time.monotonic()
        for lease, (_, expiry) in list(state.held.items()):
            if expiry < now:
                del state.held[lease]
                self.expired += 1
        self._hand_over(state)

    def _hand_over(self, state: _Server) -> None:
        limit = self.limits.max_connections
        while state.waiting and (limit is None or len(state.held) < limit):
            lease, node, future = state.waiting.popleft()
            if not future.done():
                self._grant(state, lease, node)
                future.set_result(None)


class RayGate:
    """The :class:`~assay.providers.limits.Gate` of one node: leases from the limiter.

    Args:
        limiter: the limiter actor's handle.
        node: this node's id.
    """

    def __init__(self, limiter: Any, node: str) -> None:
        self.limiter = limiter
        self.node = node
        self._renewing: asyncio.Task[None] | None = None

    def name(self, server: str) -> str:
        """The limiter's name of ``server``: a node's own servers are its own."""
        return server if server.startswith("server|") else f"{self.node}|{server}"

    @contextlib.asynccontextmanager
    async def hold(self, server: str) -> AsyncIterator[None]:
        """A lease of ``server`` for the block (see the module docstring)."""
        self._start_renewing()
        name, lease = self.name(server), uuid.uuid4().hex
        try:
            wait = await self.limiter.acquire.remote(name, self.node, lease)
            if wait > 0:
                await asyncio.sleep(wait)
            yield
        finally:
            self.limiter.release.remote(name, lease)  # also withdraws a request still waiting

    def _start_renewing(self) -> None:
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.get_running_loop().create_task(self._renew())

    async def _renew(self) -> None:
        while True:
            self.limiter.renew.remote(self.node)
            await asyncio.sleep(RENEW_EVERY)

    async def aclose(self) -> None:
        """Stop renewing."""
        if self._renewing is not None:
            self._renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewing
