"""A model call that fails through the bridge is final: the CLIs that retry a 5xx or 429 on
their own (Qwen Code, Pi, OpenCode, Gemini CLI: none can be told not to) send it once, since
the bridge answers a failed model with a 4xx after its own retries (real CLIs, a scripted
model that refuses every request)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.coding import run_assay, task_json
from tests.helpers import write

pytestmark = pytest.mark.coding_agent

CLIS = ("qwen-code", "pi", "opencode", "gemini")

SCRIPT = """\
replies:
  - match: "boom"
    reply: "never"
    fail: {status: 400, times: 100}
"""

TASK = """\
task_id: e400-{cli}
description: the model refuses every request
initial_prompt: "boom ({cli})"
agent: {{type: {cli}, model: mock/script.yaml}}
success_criteria:
  - {{type: response_match, expected: "x", match: contains}}
"""


def test_a_refused_model_call_is_sent_once_whatever_the_cli(tmp_path: Path) -> None:
    write(tmp_path / "script.yaml", SCRIPT)
    for cli in CLIS:
        write(tmp_path / f"{cli}.yaml", TASK.format(cli=cli))
    done = run_assay("run", *(f"{cli}.yaml" for cli in CLIS), "-j", "4", "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    for cli in CLIS:
        found = task_json(tmp_path, f"e400-{cli}", "")
        assert found["final_status"] == "ERROR"
        # the scripted failure counts its calls: the first was the only one
        assert "scripted HTTP 400 (1 of 100)" in found["error_message"], (cli, found)
