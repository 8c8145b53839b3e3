"""``cache: true`` on a task's model caches that model's answers without ``--cache``: a
second run asks a real (counting) OpenAI-compatible server nothing it already answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import assay
from tests.helpers import write
from tests.openai_server import scripted_server

TASK = """\
task_id: {name}
description: one model, cache {cache}
initial_prompt: "{name} ${{row.text}}"
agent: {{type: llm, model: openai/m, base_url: "{url}", api_key_env: CACHE_KEY, cache: {cache}}}
dataset:
  rows: [{{id: a, text: one}}, {{id: b, text: two}}, {{id: c, text: three}}]
success_criteria:
  - {{type: response_match, expected: echo, match: contains}}
"""


def reply(body: dict[str, Any]) -> str:
    return "echo " + body["messages"][-1]["content"]


def prompts(requests: list[dict[str, Any]]) -> list[str]:
    return sorted(r["messages"][-1]["content"] for r in requests)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CACHE_KEY", "k")
    monkeypatch.chdir(tmp_path)


def test_a_task_with_cache_true_calls_its_model_once_over_two_runs(tmp_path: Path) -> None:
    with scripted_server(reply) as server:
        path = write(
            tmp_path / "t.yaml", TASK.format(name="kept", cache="true", url=server.base_url)
        )
        first = assay.run(path)
        assert first.exit_code == 0 and len(server.requests) == 3
        second = assay.run(path)
        assert second.exit_code == 0
        assert len(server.requests) == 3  # the second run made 0 calls
    assert (tmp_path / ".assay" / "cache.db").exists()


def test_only_the_tasks_that_ask_for_the_cache_are_served_from_it(tmp_path: Path) -> None:
    with scripted_server(reply) as server:
        kept = write(
            tmp_path / "kept.yaml", TASK.format(name="kept", cache="true", url=server.base_url)
        )
        fresh = write(
            tmp_path / "fresh.yaml", TASK.format(name="fresh", cache="false", url=server.base_url)
        )
        assert assay.run([kept, fresh]).exit_code == 0
        assert len(server.requests) == 6
        assert assay.run([kept, fresh]).exit_code == 0
        again = server.requests[6:]
    assert prompts(again) == ["fresh one", "fresh three", "fresh two"]
