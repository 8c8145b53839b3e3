"""Coding agents: 50 rows of Coder Eval's sentiment worked example on the real Claude Code CLI.

A scripted Anthropic API (bench/anthropic_server.py) answers every call after a fixed
latency: a ``Write`` tool call, then ``done``, so each row is two model calls and one file
written by the CLI. Side by side, interleaved, each a whole process:

- **bare**: the same CLI invocations run by a shell loop, ``-j`` at a time, straight at the
  upstream (bench/bare_claude_loop.sh): the ceiling;
- **assay**: ``assay run -j 4`` on the worked example with ``model:
  anthropic/claude-sonnet-4-5`` and ``base_url`` = the upstream: every call passes through
  the model bridge, every row gets its sandbox, transcript, trace and reports; in a
  ``tempdir`` sandbox (``-D sandbox.driver=tempdir``);
- **assay bwrap**: the same in the ``bwrap`` driver (the default for this agent): each row's
  CLI in a bubblewrap sandbox, reaching the bridge through its unix socket and the
  forwarder;
- **Coder Eval 0.12.16**: ``coder-eval run -j 4`` on the same task file with
  ``ANTHROPIC_BASE_URL`` = the upstream (the peer figure), when bench/setup_anchors.sh
  installed it.

Then the bridge's own cost per call: the same streamed Messages request sent to the
upstream directly and through the bridge (pass-through), one at a time, interleaved; the
median difference is what the bridge adds. And the bwrap driver's cost per program: ``true``
run plainly, in a row's sandbox, and in one with the bridge forwarder, one at a time.
Targets: assay ≥ 90% of the bare loop's rows/s, the bridge adds ≤ 2 ms median per model
call (issue 11); the bwrap driver gives at most 10% fewer rows/s than tempdir (issue 13).
Usage: python bench/coding_agent.py [ROWS] [REPEATS] [LATENCY_SECONDS]
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from common import ASSAY, BENCH, CE_VENV, REPO, WORK, save, timed

JOBS = 4
EXAMPLE = REPO / "examples" / "coder_eval" / "tasks"
KEY = "bench-key"


def claude_path() -> str:
    from assay.agents.claude_code import bundled_claude

    found = bundled_claude()
    if found is None:
        raise SystemExit("the Claude Code CLI is not installed: make install-dev")
    return str(found)


CLAUDE_BLOCK = '  type: "claude-code"\n'


def example_tasks(folder: Path, rows: int, *, agent: str, name: str) -> Path:
    """The worked example with ``rows`` rows (its three, over and over) in ``folder/tasks``,
    its agent block's first line replaced by ``agent`` in the task file ``name``."""
    tasks = folder / "tasks"
    (tasks / "datasets").mkdir(parents=True, exist_ok=True)
    base = [json.loads(line) for line in
            (EXAMPLE / "datasets" / "sentiment.jsonl").read_text().splitlines()]  # fmt: skip
    with (tasks / "datasets" / "sentiment.jsonl").open("w") as handle:
        for i in range(rows):
            handle.write(json.dumps({**base[i % 3], "id": f"r{i:03d}"}) + "\n")
    text = (EXAMPLE / "sentiment_classification.yaml").read_text()
    (tasks / name).write_text(text.replace(CLAUDE_BLOCK, agent))
    return tasks


def prepare(folder: Path, rows: int, upstream: str) -> Path:
    """The worked example pointed at the upstream, with ``rows`` rows."""
    agent = (f'  type: "claude-code"\n  model: anthropic/claude-sonnet-4-5\n'
             f"  base_url: {upstream}\n  api_key_env: BENCH_ANTHROPIC_KEY\n")  # fmt: skip
    tasks = example_tasks(folder, rows, agent=agent, name="sentiment_classification.yaml")
    (tasks / "coder_eval.yaml").write_text((EXAMPLE / "sentiment_classification.yaml").read_text())
    return tasks


def start_upstream(
    port: int, latency: float, script: str = "anthropic_server.py"
) -> subprocess.Popen[str]:
    """The scripted model server ``bench/<script>`` on ``port``, once it listens."""
    server = subprocess.Popen([sys.executable, str(BENCH / script), str(port),
                               str(latency)], stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert server.stdout is not None and server.stdout.readline().startswith("ready")
    return server


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def whole_runs(tasks: Path, rows: int, repeats: int, upstream: str) -> dict[str, object]:
    """Claude Code: the fair loop, assay on tempdir and bwrap, Coder Eval (when installed)."""
    bare = [str(BENCH / "bare_claude_loop.sh"), claude_path(),
            str(tasks / "datasets" / "sentiment.jsonl"), str(JOBS), upstream]  # fmt: skip
    return side_by_side(tasks, rows, repeats, bare=bare,
                        task_file="tasks/sentiment_classification.yaml",
                        env={"BENCH_ANTHROPIC_KEY": KEY}, upstream=upstream)  # fmt: skip


def side_by_side(
    tasks: Path, rows: int, repeats: int, *, bare: list[str], task_file: str,
    env: dict[str, str], upstream: str | None = None,
) -> dict[str, object]:  # fmt: skip
    """Whole processes, interleaved, ``repeats`` times: the bare loop ``bare``, assay on
    ``task_file`` in a ``tempdir`` and in a ``bwrap`` sandbox, and Coder Eval on the
    unchanged example when installed and ``upstream`` (its Anthropic API) is given; medians,
    rows/s and each one's share of the bare loop's rows/s: of the medians, and the median of
    each repeat's share against the loop run of the same repeat (``share_of_bare_paired``)."""
    seconds: dict[str, list[float]] = {"bare": [], "assay": [], "assay_bwrap": [],
                                       "coder_eval": []}  # fmt: skip
    ce = CE_VENV / "bin" / "coder-eval"
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(bare, check=True, stdout=subprocess.DEVNULL)
        seconds["bare"].append(time.perf_counter() - started)
        for name, driver in (("assay", "tempdir"), ("assay_bwrap", "bwrap")):
            run = timed([*ASSAY, "run", task_file, "-j", str(JOBS),
                         "-q", "--run-dir", "runs", "-D", f"sandbox.driver={driver}"],
                        cwd=tasks.parent, env=env)  # fmt: skip
            seconds[name].append(run.seconds)
        if ce.exists() and upstream is not None:
            peer = timed([str(ce), "run", "tasks/coder_eval.yaml", "-j", str(JOBS)],
                         cwd=tasks.parent, env={"ANTHROPIC_BASE_URL": upstream,
                                                "ANTHROPIC_API_KEY": KEY,
                                                "CLAUDE_CODE_MAX_RETRIES": "0"})  # fmt: skip
            seconds["coder_eval"].append(peer.seconds)
    ceiling = rows / statistics.median(seconds["bare"])
    out: dict[str, object] = {}
    for name, values in seconds.items():
        if values:
            rate = rows / statistics.median(values)
            # each repeat against the loop run just before it, as farm-bench pairs: a
            # machine whose speed drifts over the minutes moves both sides of a pair
            paired = statistics.median(b / v for b, v in zip(seconds["bare"], values, strict=True))
            out[name] = {"seconds": statistics.median(values), "rows_per_s": rate,
                         "share_of_bare": rate / ceiling, "share_of_bare_paired": paired,
                         "all_seconds": values}  # fmt: skip
    tempdir = statistics.median(seconds["assay"])
    bwrap = statistics.median(seconds["assay_bwrap"])
    out["bwrap_vs_tempdir"] = {
        "rows_per_s_ratio": tempdir / bwrap,
        "added_seconds_per_row": (bwrap - tempdir) * JOBS / rows,
    }
    return out


def jail_cost(programs: int) -> dict[str, object]:
    """Median seconds of ``true``: plain, in a row's bwrap sandbox, and with the forwarder
    (bound to a real unix socket), one at a time, interleaved; plus making and closing the
    row's sandbox (its home, its user's files)."""
    import socket
    import tempfile

    from assay.sandbox.bwrap import BridgeLink, make_policy

    folder = Path(tempfile.mkdtemp(prefix="assay-bench-jail-"))
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(folder / "bridge.sock"))
    listener.listen()
    policy = make_policy(path_variable=os.environ.get("PATH", ""),
                         bridge=BridgeLink(folder / "bridge.sock", free_port()))  # fmt: skip
    root = folder / "row"
    root.mkdir()
    times: dict[str, list[float]] = {"plain": [], "jail": [], "jail_forwarder": [],
                                     "open_close": []}  # fmt: skip
    env = {"PATH": "/usr/bin:/bin"}
    for _ in range(programs):
        started = time.perf_counter()
        jail = policy.jail(root, limits={"RLIMIT_NPROC": 1024})
        for name, bridge in (("jail", False), ("jail_forwarder", True)):
            argv, inner = jail.command(["true"], env=env, bridge=bridge)
            began = time.perf_counter()
            subprocess.run(argv, env=inner, check=True)
            times[name].append(time.perf_counter() - began)
        jail.close()
        times["open_close"].append(time.perf_counter() - started - times["jail"][-1]
                                   - times["jail_forwarder"][-1])  # fmt: skip
        began = time.perf_counter()
        subprocess.run(["true"], env=env, check=True)
        times["plain"].append(time.perf_counter() - began)
    listener.close()
    return {name: statistics.median(values) * 1000 for name, values in times.items()} | {
        "unit": "ms",
        "programs": programs,
    }


async def per_call(upstream: str, calls: int) -> dict[str, object]:
    """Median latency of one streamed Messages call, direct and through the bridge."""
    from assay.bridge import Bridge, BridgeSession
    from assay.providers.pool import ModelKey, ModelPool, PoolSettings, default_registry

    os.environ["BENCH_ANTHROPIC_KEY"] = KEY
    key = ModelKey(name="anthropic/claude-sonnet-4-5", base_url=upstream,
                   api_key_env="BENCH_ANTHROPIC_KEY")  # fmt: skip
    pool = ModelPool(default_registry(), PoolSettings(parallel=4))
    await pool.start([key])
    bridge = Bridge(pool)
    await bridge.start()
    session = bridge.open(BridgeSession(label="bench", model_key=key))
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": True,
            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    headers = {"anthropic-version": "2023-06-01", "x-api-key": session.token}
    times: dict[str, list[float]] = {"direct": [], "bridge": []}
    async with httpx.AsyncClient(timeout=30) as client:
        for number in range(calls + 20):
            for name, url in (("direct", upstream), ("bridge", bridge.url)):
                started = time.perf_counter()
                async with client.stream("POST", url + "/v1/messages", json=body,
                                         headers=headers) as answer:  # fmt: skip
                    async for _ in answer.aiter_raw():
                        pass
                if number >= 20:  # the first calls open connections and warm up
                    times[name].append(time.perf_counter() - started)
    await bridge.aclose()
    await pool.aclose()
    direct, through = statistics.median(times["direct"]), statistics.median(times["bridge"])
    return {"calls": calls, "direct_ms": direct * 1000, "bridge_ms": through * 1000,
            "added_ms": (through - direct) * 1000}  # fmt: skip


def main(rows: int = 50, repeats: int = 3, latency: float = 0.2) -> dict[str, object]:
    folder = WORK / "coding_agent"
    port = free_port()
    upstream = f"http://127.0.0.1:{port}"
    tasks = prepare(folder, rows, upstream)
    server = start_upstream(port, latency)
    try:
        figures = {"rows": rows, "jobs": JOBS, "latency_s": latency,
                   **whole_runs(tasks, rows, repeats, upstream)}  # fmt: skip
    finally:
        server.terminate()
    quick = start_upstream(port, 0.0)
    try:
        figures["per_call"] = asyncio.run(per_call(upstream, 300))
    finally:
        quick.terminate()
    figures["jail"] = jail_cost(100)
    save("coding_agent", figures)
    return figures


if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps(main(*(int(a) for a in args[:2]), *(float(a) for a in args[2:3])),
                     indent=2))  # fmt: skip
