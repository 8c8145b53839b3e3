"""``system_one_judge``: an inline judge with System One's defaults (Coder Eval v0.12.5),
graded and reported like ``llm_judge``; run against a real OpenAI-compatible server."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from assay.criteria.registry import default_criteria
from assay.errors import TaskFileError
from assay.orchestration.loading.task_loader import load_task
from tests.cli.inproc import run_in_process
from tests.openai_server import scripted_server

REGISTRY = default_criteria(entry_points=False)


def one(**fields: Any) -> Any:
    return REGISTRY.validate([{"type": "system_one_judge", "description": "d", **fields}])[0]


def test_its_defaults_are_coder_evals() -> None:
    judge = one(prompt="Is ${response} correct?")
    assert (judge.model, judge.base_url, judge.api_key_env) == (
        "openai/jev-latest", "https://api.typesafe.ai/v1", "TYPESAFE_API_KEY")  # fmt: skip
    assert judge.pass_threshold == 0.7 and judge.credential_variable == "TYPESAFE_API_KEY"
    moved = one(prompt="x", model="openai/jev-2", base_url="http://127.0.0.1:9/v1")
    assert (moved.model, moved.base_url) == ("openai/jev-2", "http://127.0.0.1:9/v1")


def test_it_takes_no_judge_file_and_needs_a_rubric(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(textwrap.dedent("""\
        task_id: t
        description: d
        initial_prompt: go
        agent: {type: llm, model: mock/echo}
        success_criteria:
          - {type: system_one_judge, description: d, judge: judges/x.yaml}
        """))  # fmt: skip
    with pytest.raises(TaskFileError, match="use type: llm_judge"):
        load_task(path)
    path.write_text(path.read_text().replace("judge: judges/x.yaml", "samples: 2"))
    with pytest.raises(TaskFileError, match="needs a judge"):
        load_task(path)


def test_a_run_grades_through_the_endpoint_with_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def reply(body: dict[str, Any]) -> str:
        good = "Paris" in json.dumps(body["messages"]).split("Response:")[-1]
        return json.dumps({"score": 1.0 if good else 0.0, "reason": "checked"})

    with scripted_server(reply) as server:
        (tmp_path / "t.yaml").write_text(textwrap.dedent(f"""\
            task_id: capitals
            description: answers graded by System One
            agent: {{type: llm, model: mock/echo}}
            initial_prompt: "${{row.answer}}"
            dataset:
              rows:
                - {{id: good, answer: "Paris"}}
                - {{id: bad, answer: "Lyon"}}
            success_criteria:
              - type: system_one_judge
                description: the capital of France
                prompt: "Is the response the capital of France? Response: ${{response}}"
                base_url: {server.base_url}
            """))  # fmt: skip
        monkeypatch.setenv("TYPESAFE_API_KEY", "ts-key-never-written-anywhere")
        done = run_in_process("run", "t.yaml", cwd=tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr  # one row fails
        assert server.requests and all(r["model"] == "jev-latest" for r in server.requests)
        assert all(h["authorization"] == "Bearer ts-key-never-written-anywhere"
                   for h in server.headers)  # fmt: skip
    run = (tmp_path / "runs" / "latest").resolve()
    rows = {p.parent.parent.name: json.loads(p.read_text()) for p in run.rglob("task.json")}
    assert rows["good"]["final_status"] == "SUCCESS" and rows["bad"]["final_status"] == "FAILURE"
    result = rows["good"]["success_criteria_results"][0]
    assert result["criterion_type"] == "system_one_judge" and result["result_kind"] == "judge"
    assert result["judge"]["model"] == "openai/jev-latest"
    suite = json.loads(next(run.rglob("suite.json")).read_text())
    assert suite["criterion_aggregates"][0]["metrics"]["pass_rate"] == 0.5
    assert "**Judge**" in next(run.rglob("suite.md")).read_text()
    written = "".join(p.read_text(errors="replace") for p in run.rglob("*") if p.is_file())
    assert "ts-key-never-written-anywhere" not in written
