"""The real Gemini CLI (pinned in the Makefile, installed into .tools/) through the model
bridge's Gemini wire, offline: a scripted model's function calls are run by the CLI (a file
written, a shell command run) and its answer reaches the CLI's stream-json output."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from assay.bridge import Bridge, BridgeSession, SessionLimits
from assay.providers.pool import ModelKey, ModelPool, PoolSettings, default_registry
from tests.agents.coding import CODEX_BIN
from tests.helpers import write

pytestmark = pytest.mark.coding_agent

SCRIPT = """\
replies:
  - match: "make the note"
    steps:
      - tool: write_file
        input: {file_path: "${sandbox}/note.txt", content: "from the bridge"}
      - tool: run_shell_command
        input: {command: "wc -c note.txt > size.txt", description: "count"}
      - reply: The note is written.
default: plain answer
"""
# What the CLI needs to run headless against another endpoint: an API-key login, no folder
# trust prompt (which would turn --yolo off), no telemetry or update checks.
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}


def _gemini() -> Path:
    found = CODEX_BIN / "gemini"
    if not found.exists():
        pytest.fail("the Gemini CLI is not installed: run `make install-dev` (npm)")
    return found


def _run(tmp_path: Path, prompt: str) -> tuple[int, list[dict[str, Any]], BridgeSession]:
    write(tmp_path / "s.yaml", SCRIPT)
    home, work = tmp_path / "home", tmp_path / "work"
    write(home / ".gemini" / "settings.json", json.dumps(SETTINGS))
    work.mkdir()
    key = ModelKey(name="mock/s.yaml", base_dir=str(tmp_path))

    async def main() -> tuple[int, bytes, BridgeSession]:
        pool = ModelPool(default_registry(), PoolSettings(parallel=2))
        await pool.start([key])
        bridge = Bridge(pool)
        await bridge.start()
        session = bridge.open(BridgeSession(label="t/r1#00", model_key=key,
                                            limits=SessionLimits(),
                                            script_vars={"sandbox": str(work)}))  # fmt: skip
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "GEMINI_API_KEY": session.token,
               "GOOGLE_GEMINI_BASE_URL": bridge.url, "GEMINI_CLI_NO_RELAUNCH": "true"}  # fmt: skip
        try:
            process = await asyncio.create_subprocess_exec(
                str(_gemini()), "-p", prompt, "--output-format", "stream-json", "--yolo",
                "-m", "gemini-2.5-pro", cwd=work, env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, _ = await asyncio.wait_for(process.communicate(), 240)
        finally:
            await bridge.aclose()
            await pool.aclose()
        return process.returncode or 0, out, session

    code, out, session = asyncio.run(main())
    events = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    return code, events, session


def test_the_gemini_cli_acts_on_a_scripted_models_function_calls(tmp_path: Path) -> None:
    code, events, session = _run(tmp_path, "make the note")
    assert code == 0, events
    assert (tmp_path / "work" / "note.txt").read_text() == "from the bridge"
    assert (tmp_path / "work" / "size.txt").read_text().split()[0] == "15"
    used = [e["tool_name"] for e in events if e["type"] == "tool_use"]
    assert used == ["write_file", "run_shell_command"]
    assert all(e["status"] == "success" for e in events if e["type"] == "tool_result")
    said = "".join(e["content"] for e in events if e["type"] == "message"
                   and e["role"] == "assistant")  # fmt: skip
    assert said == "The note is written."
    assert events[-1]["type"] == "result" and events[-1]["status"] == "success"
    assert [c.protocol for c in session.calls] == ["gemini"] * 3
    assert [c.tool_calls for c in session.calls] == [["write_file"], ["run_shell_command"], []]
    assert all(c.status == 200 for c in session.calls)
