"""Codex, the Gemini CLI, Qwen Code, OpenCode and Pi through the model bridge against a fair
loop: Coder Eval's sentiment worked example on each real CLI (issue #30).

A scripted model server answers every call after a fixed latency with a call of the CLI's
shell tool that writes ``result.txt``, then ``done`` (two model calls and one command per
row): bench/openai_server.py on OpenAI's wires (Responses for Codex, Chat Completions for
Qwen Code, OpenCode and Pi), bench/gemini_server.py on the Gemini API. Side by side,
interleaved, each a whole process:

- **bare**: the same CLI invocations assay makes (its files, environment and flags, a fresh
  home, ``setsid``) run by a shell loop, ``-j`` at a time, straight at the server's wire for
  that CLI (bench/bare_codex_loop.sh, bench/bare_cli_loop.sh): the ceiling;
- **assay**: ``assay run -j 4`` on the worked example with the CLI as its agent, ``model:
  openai/gpt-5.5`` and ``base_url`` = the server: the CLI's calls go to the model bridge,
  which translates them to the server's Chat Completions wire and back (Codex's Responses
  and the Gemini CLI's Gemini requests; the Chat Completions of the others pass through the
  same translation); every row gets its sandbox, transcript, trace and reports; in a
  ``tempdir`` sandbox (``-D sandbox.driver=tempdir``);
- **assay bwrap**: the same in the ``bwrap`` driver (the default for these agents).

The example's ``permission_mode`` and ``allowed_tools`` (Claude Code's ``acceptEdits`` with
``Write`` alone) are dropped, so each CLI may run the shell command (Qwen Code's ``yolo``
approval mode, OpenCode's allow-all permission, Pi's default tools; the Gemini CLI runs with
``--yolo`` and Codex bypasses approvals in any case).
Target: assay ≥ 90% of the bare loop's rows/s (issue #30's fair loop, as for Claude Code).
Usage: python bench/cli_agents.py CLI [ROWS] [REPEATS] [LATENCY_SECONDS]
(CLI: codex, gemini, qwen-code, opencode or pi; results in results/cli_agents_CLI.json)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from coding_agent import JOBS, example_tasks, free_port, side_by_side, start_upstream
from common import BENCH, REPO, WORK, save

KEY = "bench-key"
BIN = REPO / ".tools" / "npm" / "node_modules" / ".bin"
EXECUTABLES = {"codex": "codex", "gemini": "gemini", "qwen-code": "qwen",
               "opencode": "opencode", "pi": "pi"}  # fmt: skip
CLAUDE_ONLY = '  permission_mode: "acceptEdits"\n  allowed_tools: ["Write"]\n'


def prepare(folder: Path, kind: str, rows: int, upstream: str, cli: Path) -> Path:
    """The worked example with a ``kind`` agent (the CLI at ``cli``) pointed at the
    upstream, with ``rows`` rows and without Claude Code's permission fields."""
    agent = (f'  type: "{kind}"\n  model: openai/gpt-5.5\n  base_url: {upstream}/v1\n'
             f"  api_key_env: BENCH_OPENAI_KEY\n  cli_path: {cli}\n")  # fmt: skip
    tasks = example_tasks(folder, rows, agent=agent, name=f"{kind}.yaml")
    task = tasks / f"{kind}.yaml"
    task.write_text(task.read_text().replace(CLAUDE_ONLY, ""))
    return tasks


def bare_loop(kind: str, cli: Path, rows_file: Path, upstream: str) -> list[str]:
    """The fair loop's command line for ``kind``."""
    if kind == "codex":
        return [str(BENCH / "bare_codex_loop.sh"), str(cli), str(rows_file), str(JOBS), upstream]
    return [str(BENCH / "bare_cli_loop.sh"), kind, str(cli), str(rows_file), str(JOBS), upstream]


def main(kind: str, rows: int = 24, repeats: int = 2, latency: float = 0.2) -> dict[str, object]:
    if kind not in EXECUTABLES:
        raise SystemExit(f"unknown CLI {kind!r}: one of {', '.join(EXECUTABLES)}")
    cli = BIN / EXECUTABLES[kind]
    if not cli.exists():
        raise SystemExit(f"the {kind} CLI is not installed: make install-dev")
    port = free_port()
    upstream = f"http://127.0.0.1:{port}"
    tasks = prepare(WORK / f"cli_agents_{kind}", kind, rows, upstream, cli)
    script = "gemini_server.py" if kind == "gemini" else "openai_server.py"
    server = start_upstream(port, latency, script)
    bare = bare_loop(kind, cli, tasks / "datasets" / "sentiment.jsonl", upstream)
    try:
        figures = {"cli": kind, "rows": rows, "jobs": JOBS, "latency_s": latency,
                   **side_by_side(tasks, rows, repeats, bare=bare, task_file=f"tasks/{kind}.yaml",
                                  env={"BENCH_OPENAI_KEY": KEY})}  # fmt: skip
    finally:
        server.terminate()
    save(f"cli_agents_{kind}", figures)
    return figures


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        raise SystemExit(__doc__)
    figures = main(args[0], *(int(a) for a in args[1:3]), *(float(a) for a in args[3:4]))
    print(json.dumps(figures, indent=2))
