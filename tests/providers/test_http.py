"""The sharded HTTP client against a real loopback server: the connection bound holds across
shards, and a request never waits for a busy shard while another has a free connection."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from assay.providers.http import ShardedClient
from tests.openai_server import Fault, scripted_server


@pytest.mark.parametrize(
    ("total", "shard_size", "shards"), [(32, 8, 4), (5, 2, 3), (1, 8, 1), (0, 8, 1), (9, 8, 2)]
)
def test_shards_cover_the_connection_bound(total: int, shard_size: int, shards: int) -> None:
    client = ShardedClient(base_url="http://127.0.0.1:9/", headers={}, timeout=1,
                           max_connections=total, shard_size=shard_size)  # fmt: skip
    assert client.shards == shards
    asyncio.run(client.aclose())


def test_at_most_max_connections_in_flight_and_all_of_them_used() -> None:
    def slow(body: dict[str, Any]) -> Fault:
        return Fault(delay=0.2)

    async def fire(url: str) -> None:
        client = ShardedClient(base_url=url + "/", headers={}, timeout=10, max_connections=5,
                               shard_size=2)  # fmt: skip
        limit = asyncio.Semaphore(5)  # the endpoint limiter's job in assay

        async def one() -> None:
            async with limit:
                response = await client.post("chat/completions", json={"messages": []})
                assert response.status_code == 200

        try:
            await asyncio.gather(*(one() for _ in range(15)))
        finally:
            await client.aclose()

    with scripted_server(slow) as server:
        asyncio.run(fire(server.base_url))
    assert len(server.requests) == 15
    assert server.peak_in_flight == 5  # 5 connections over 3 shards (2, 2, 1), all busy at once


def test_a_plain_http_client_loads_no_ca_and_trusts_no_certificate() -> None:
    import ssl

    from assay.providers.http import tls_context

    plain = tls_context("http://127.0.0.1:8000")
    assert plain.cert_store_stats()["x509_ca"] == 0  # the CA bundle was not loaded
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname  # fails closed
    secure = tls_context("https://api.example.com")
    assert secure.cert_store_stats()["x509_ca"] > 0 and secure.verify_mode == ssl.CERT_REQUIRED
    assert tls_context("HTTP://127.0.0.1").cert_store_stats()["x509_ca"] == 0
