"""Codex through the model bridge against a fair loop: Coder Eval's sentiment worked example
on the real Codex CLI (issue #30).

A scripted OpenAI server (bench/openai_server.py) answers every call after a fixed latency
on both of OpenAI's wires: an ``exec_command`` call that writes ``result.txt``, then
``done`` (two model calls and one command per row). Side by side, interleaved, each a whole
process:

- **bare**: the same Codex invocations assay makes (its ``config.toml``, flags, fresh home,
  ``setsid``) run by a shell loop, ``-j`` at a time, straight at the server's Responses wire
  (bench/bare_codex_loop.sh): the ceiling;
- **assay**: ``assay run -j 4`` on the worked example with ``agent: {type: codex, model:
  openai/gpt-5.5}`` and ``base_url`` = the server: Codex's Responses calls go to the model
  bridge, which translates them to the server's Chat Completions wire and back; every row
  gets its sandbox, transcript, trace and reports; in a ``tempdir`` sandbox
  (``-D sandbox.driver=tempdir``);
- **assay bwrap**: the same in the ``bwrap`` driver (the default for this agent).

Target: assay ≥ 90% of the bare loop's rows/s (issue #30's fair loop, as for Claude Code).
Usage: python bench/codex_agent.py [ROWS] [REPEATS] [LATENCY_SECONDS]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from coding_agent import JOBS, example_tasks, free_port, side_by_side, start_upstream
from common import BENCH, REPO, WORK, save

KEY = "bench-key"
CODEX = REPO / ".tools" / "npm" / "node_modules" / ".bin" / "codex"


def prepare(folder: Path, rows: int, upstream: str) -> Path:
    """The worked example with a Codex agent pointed at the upstream, with ``rows`` rows
    (Claude Code's ``permission_mode`` and ``allowed_tools`` are not Codex's: dropped)."""
    agent = (f'  type: "codex"\n  model: openai/gpt-5.5\n  base_url: {upstream}/v1\n'
             "  api_key_env: BENCH_OPENAI_KEY\n")  # fmt: skip
    tasks = example_tasks(folder, rows, agent=agent, name="codex.yaml")
    task = tasks / "codex.yaml"
    claude_only = '  permission_mode: "acceptEdits"\n  allowed_tools: ["Write"]\n'
    task.write_text(task.read_text().replace(claude_only, ""))
    return tasks


def main(rows: int = 24, repeats: int = 2, latency: float = 0.2) -> dict[str, object]:
    if not CODEX.exists():
        raise SystemExit("the Codex CLI is not installed: make install-dev")
    port = free_port()
    upstream = f"http://127.0.0.1:{port}"
    tasks = prepare(WORK / "codex_agent", rows, upstream)
    server = start_upstream(port, latency, "openai_server.py")
    bare = [str(BENCH / "bare_codex_loop.sh"), str(CODEX),
            str(tasks / "datasets" / "sentiment.jsonl"), str(JOBS), upstream]  # fmt: skip
    try:
        figures = {"rows": rows, "jobs": JOBS, "latency_s": latency,
                   **side_by_side(tasks, rows, repeats, bare=bare, task_file="tasks/codex.yaml",
                                  env={"BENCH_OPENAI_KEY": KEY})}  # fmt: skip
    finally:
        server.terminate()
    save("codex_agent", figures)
    return figures


if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps(main(*(int(a) for a in args[:2]), *(float(a) for a in args[2:3])),
                     indent=2))  # fmt: skip
