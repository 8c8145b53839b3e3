"""One endpoint's HTTP connections, split over several small httpx clients.

Why: httpcore's connection pool (httpcore 1.0) re-examines every pooled connection for every
idle one each time a request enters or leaves the pool, and polls each idle socket on the
way, so its CPU cost per request grows with the square of the pool size. At ``-j 32`` against
a fast endpoint that bookkeeping alone costs more CPU than the rest of a row-task (measured in
bench/latency.py). A few clients of at most ``shard_size`` connections each do the same work
with scans of a few connections; each request goes to the client with the fewest requests in
flight, so while fewer than ``max_connections`` requests are in flight one of them always has
a free connection.
"""

from __future__ import annotations

import math
import ssl
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

SHARD_SIZE = 8


def tls_context(url: str) -> ssl.SSLContext:
    """The TLS context of a client of ``url``: httpx's own (the CA bundle, verified) for an
    ``https`` URL; for a plain ``http`` one, where no TLS is spoken, a context that trusts
    no certificate at all (it would fail closed; redirects are not followed), which spares
    loading the CA bundle (about 40 ms of CPU a client, on a run's first model call)."""
    if urlsplit(url).scheme.lower() == "http":
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return httpx.create_ssl_context()


def split_query(url: str) -> tuple[str, httpx.QueryParams]:
    """``url`` without its query string, its path ending in ``/``, and the query's
    parameters: ``http://h/v1?api-version=2`` → ``("http://h/v1/", api-version=2)``, so a
    request path is joined to the path, not pasted into the query."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/") + "/"
    base = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    return base, httpx.QueryParams(parts.query)


class ShardedClient:
    """``max_connections`` keep-alive connections to one ``base_url``, in shards.

    Args:
        base_url: the URL every request path is relative to; a query string it carries
            (Azure's ``?api-version=…``, a ``?key=…``) is sent with every request.
        headers: sent with every request.
        timeout: seconds per request (httpx's connect/read/write/pool timeout).
        max_connections: the total connection bound (at least 1).
        shard_size: connections per client (at least 1).
    """

    def __init__(
        self,
        *,
        base_url: str,
        headers: dict[str, str],
        timeout: float,
        max_connections: int,
        shard_size: int = SHARD_SIZE,
    ) -> None:
        total = max(1, max_connections)
        shards = math.ceil(total / max(1, shard_size))
        sizes = [total // shards + (1 if i < total % shards else 0) for i in range(shards)]
        context = tls_context(base_url)  # the CA bundle loaded once, not once per shard
        base_url, params = split_query(base_url)
        self._clients = [
            httpx.AsyncClient(
                base_url=base_url,
                params=params,
                headers=headers,
                timeout=timeout,
                verify=context,
                limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
            )
            for size in sizes
        ]
        self._in_flight = [0] * shards

    @property
    def shards(self) -> int:
        """How many httpx clients share the connections."""
        return len(self._clients)

    async def post(self, path: str, *, json: Any) -> httpx.Response:
        """POST ``json`` to ``path`` on the least busy client; the body is read in full.

        Raises:
            httpx.TimeoutException, httpx.TransportError: as ``httpx.AsyncClient.post``.
        """
        index = min(range(len(self._clients)), key=self._in_flight.__getitem__)
        self._in_flight[index] += 1
        try:
            return await self._clients[index].post(path, json=json)
        finally:
            self._in_flight[index] -= 1

    async def aclose(self) -> None:
        """Close every client's connections."""
        for client in self._clients:
            await client.aclose()
