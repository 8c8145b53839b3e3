"""Helpers for the tests that drive the real coding-agent CLIs through the bridge."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CODEX_BIN = REPO / ".tools" / "npm" / "node_modules" / ".bin"


def codex_path() -> str:
    """``PATH`` with the project's Codex CLI first (``make install-dev`` puts it there)."""
    if not (CODEX_BIN / "codex").exists() and shutil.which("codex") is None:
        pytest.fail("the Codex CLI is not installed: run `make install-dev` (npm, @openai/codex)")
    return f"{CODEX_BIN}{os.pathsep}{os.environ.get('PATH', '')}"


def claude_available() -> None:
    """Fail (not skip) without the Claude Code CLI: these tests are part of ``make test``."""
    from assay.agents.claude_code import bundled_claude

    if bundled_claude() is None and shutil.which("claude") is None:
        pytest.fail("the Claude Code CLI is not installed: run `make install-dev` "
                    "(extra 'agents', claude-agent-sdk)")  # fmt: skip


def run_assay(*args: str, cwd: Path, env: dict[str, str] | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``assay ARGS`` as a user runs it (a real process), with ``env`` added."""
    return subprocess.run(
        [sys.executable, "-m", "assay", *args], cwd=cwd, capture_output=True, text=True,
        timeout=timeout, env={**os.environ, **(env or {})},
    )  # fmt: skip


def task_json(cwd: Path, suite: str, row: str) -> dict[str, Any]:
    path = cwd / "runs" / "latest" / "default" / suite / row / "00" / "task.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def row_file(cwd: Path, suite: str, row: str, name: str) -> str:
    return (cwd / "runs" / "latest" / "default" / suite / row / "00" / name).read_text()


def spans(cwd: Path, suite: str, row: str) -> list[dict[str, Any]]:
    trace = json.loads(row_file(cwd, suite, row, "trace.json"))
    found: list[dict[str, Any]] = trace["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return found


def command_exit_codes(cwd: Path, suite: str, row: str) -> dict[str, str | None]:
    """Each command the row's agent ran (its trace's ``assay.command`` spans) and the exit
    code recorded with it (a string, as OTLP keeps integers; ``None``: none recorded)."""
    codes: dict[str, str | None] = {}
    for span in spans(cwd, suite, row):
        found = {a["key"]: str(*a["value"].values()) for a in span.get("attributes", [])
                 if a["key"] in ("assay.command", "assay.exit_code")}  # fmt: skip
        if "assay.command" in found:
            codes[found["assay.command"]] = found.get("assay.exit_code")
    return codes


def plan_agent(folder: Path, agent: str, *, path: str | None = None
               ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``assay plan`` of a one-criterion task in ``folder`` whose ``agent`` block is the flow
    mapping ``agent`` (``type: …, model: …``); ``PATH``: the project's npm CLIs, else
    ``path`` alone (and no folder of project CLIs either)."""
    write_text = (folder / "t.yaml").write_text
    write_text("task_id: t\ndescription: d\ninitial_prompt: go\n"
               f"agent: {{{agent}}}\n"
               "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    env = {"PATH": path or codex_path()}
    if path is not None:  # nor the CLIs `make install-dev` put in this clone
        env["ASSAY_CLI_DIR"] = str(folder / "no-clis")
    return run_assay("plan", "t.yaml", cwd=folder, env=env)
