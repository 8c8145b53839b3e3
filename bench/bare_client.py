"""The ceiling: a bare asyncio + httpx client sending the benchmark's requests.

It reads the same task file assay runs (its prompt template and generation settings), fills
the template for each SST-2 row, and posts every request to ``/v1/completions`` at a fixed
concurrency. Nothing else: no sandbox, no grading, no files. Prints JSON.
Usage: python bench/bare_client.py CONCURRENCY BASE_URL MODEL TASK_YAML
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import httpx
import yaml


def requests_for(task_file: Path, model: str) -> list[dict[str, object]]:
    """One request body per dataset row, exactly as the task file describes them."""
    task = yaml.safe_load(task_file.read_text(encoding="utf-8"))
    agent = task["agent"]
    rows_file = task_file.parent / task["dataset"]["paths"][0]
    template: str = task["initial_prompt"]
    bodies = []
    for line in rows_file.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        prompt = template.replace("${row.text}", row["text"])
        body = {"model": model, "prompt": prompt}
        body.update(temperature=agent["temperature"], max_tokens=agent["max_tokens"])
        bodies.append(body)
    return bodies


async def run(concurrency: int, base_url: str, bodies: list[dict[str, object]]) -> float:
    """Send every body; return the wall time in seconds."""
    limit = asyncio.Semaphore(concurrency)
    pool = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=300, limits=pool) as client:

        async def one(body: dict[str, object]) -> None:
            async with limit:
                response = await client.post("/completions", json=body)
                response.raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        return time.perf_counter() - started


def main() -> None:
    concurrency, base_url, model, task_file = sys.argv[1:5]
    bodies = requests_for(Path(task_file), model)
    seconds = asyncio.run(run(int(concurrency), base_url, bodies))
    print(json.dumps({"n": len(bodies), "seconds": seconds, "req_per_s": len(bodies) / seconds}))


if __name__ == "__main__":
    main()
