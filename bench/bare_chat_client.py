"""The ceiling for the latency benchmark: a bare asyncio + httpx client, N chat requests at a
fixed concurrency. Usage: python bench/bare_chat_client.py CONCURRENCY BASE_URL N"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import httpx


async def run(concurrency: int, base_url: str, n: int) -> float:
    limit = asyncio.Semaphore(concurrency)
    pool = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=pool) as client:

        async def one(i: int) -> None:
            body = {"model": "fixed", "messages": [{"role": "user", "content": f"Review {i}"}],
                    "temperature": 0, "max_tokens": 3}  # fmt: skip
            async with limit:
                response = await client.post("/chat/completions", json=body)
                response.raise_for_status()
                response.json()

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - started


if __name__ == "__main__":
    concurrency, base_url, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    seconds = asyncio.run(run(concurrency, base_url, n))
    print(json.dumps({"n": n, "seconds": seconds, "req_per_s": n / seconds}))
