"""``examples/skills``: the activation suite run by the real Claude Code CLI offline; its
confusion matrices, metrics and gates, and a gate that fails."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.agents.coding import claude_available, codex_path, run_assay
from tests.helpers import write

pytestmark = pytest.mark.coding_agent

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "skills"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    claude_available()
    cwd = tmp_path_factory.mktemp("skills")
    shutil.copytree(EXAMPLE, cwd / "skills")
    done = run_assay("run", "skills/activation.yaml", "-j", "4", cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    found: dict[str, Any] = json.loads(
        next((cwd / "runs").glob("*/default/skill-activation/suite.json")).read_text()
    )
    found["cwd"] = cwd
    return found


def test_weather_report_confusion_and_gates(suite: dict[str, Any]) -> None:
    weather = suite["criterion_aggregates"][0]
    assert weather["details"]["confusion"] == [
        {"expected": "no", "observed": "no", "count": 8},
        {"expected": "no", "observed": "yes", "count": 1},
        {"expected": "yes", "observed": "no", "count": 1},
        {"expected": "yes", "observed": "yes", "count": 3},
    ]
    metrics = weather["metrics"]
    assert (metrics["recall.yes"], metrics["precision.yes"], metrics["f1.yes"]) == (
        0.75, 0.75, 0.75)  # fmt: skip
    assert metrics["macro_f1"] == pytest.approx((0.75 + 8 / 9) / 2)
    assert [(c["metric"], c["passed"]) for c in weather["threshold_checks"]] == [
        ("recall.yes", True), ("precision.yes", True)]  # fmt: skip


def test_unit_convert_is_perfect(suite: dict[str, Any]) -> None:
    unit = suite["criterion_aggregates"][1]
    assert (unit["metrics"]["recall.yes"], unit["metrics"]["precision.yes"]) == (1.0, 1.0)
    assert suite["passed"] is True and suite["rows_total"] == 13 and suite["rows_error"] == 0


def test_the_cli_loaded_the_plugins_skills(suite: dict[str, Any]) -> None:
    row = json.loads(next(suite["cwd"].glob("runs/*/default/skill-activation/w1/00/task.json"))
                     .read_text())  # fmt: skip
    loaded = row["transcript"]["skills_loaded"]
    assert {"activation-demo:weather-report", "activation-demo:unit-convert"} <= set(loaded)
    assert row["transcript"]["skills_offered"] == ["unit-convert", "weather-report"]
    assert row["transcript"]["tool_calls_by_name"] == {"Skill": 1}


def test_a_stricter_gate_fails_the_run(tmp_path: Path) -> None:
    claude_available()
    shutil.copytree(EXAMPLE, tmp_path / "skills")
    task = tmp_path / "skills" / "activation.yaml"
    task.write_text(task.read_text().replace("precision.yes: 0.7", "precision.yes: 0.8", 1))
    done = run_assay("run", "skills/activation.yaml", "-j", "4", cwd=tmp_path)
    assert done.returncode == 1
    suite = json.loads(next((tmp_path / "runs").glob("*/default/skill-activation/suite.json"))
                       .read_text())  # fmt: skip
    checks = suite["criterion_aggregates"][0]["threshold_checks"]
    assert [(c["metric"], c["actual_value"], c["passed"]) for c in checks] == [
        ("recall.yes", 0.75, True), ("precision.yes", 0.75, False)]  # fmt: skip


def test_a_skill_the_plugin_does_not_offer_makes_every_row_error(tmp_path: Path) -> None:
    claude_available()
    shutil.copytree(EXAMPLE, tmp_path / "skills")
    corpus = tmp_path / "skills" / "corpus.jsonl"
    corpus.write_text("\n".join(corpus.read_text().splitlines()[:2]) + "\n")
    task = tmp_path / "skills" / "activation.yaml"
    task.write_text(task.read_text().replace("skill_name: unit-convert", "skill_name: pdf-extract"))
    done = run_assay("run", "skills/activation.yaml", cwd=tmp_path)
    assert done.returncode == 1
    rows = sorted((tmp_path / "runs" / "latest").glob("default/skill-activation/*/00/task.json"))
    for path in rows:
        row = json.loads(path.read_text())
        assert row["final_status"] == "ERROR"
        assert row["error_message"] == (
            "skill_triggered names skill 'pdf-extract' but agent.plugins offered only "
            "['unit-convert', 'weather-report']: the positive control cannot run. Check the "
            "plugin path (a plugin root holds skills/<name>/SKILL.md) and the skill's name (the "
            "name in its SKILL.md front matter)."
        )
    assert len(rows) == 2


def test_codex_offers_the_plugins_skills_to_its_model(tmp_path: Path) -> None:
    """Codex says nothing of the skills it loaded; its request to the model does: a script
    that searches the whole request answers whether it lists the plugin's skill."""
    shutil.copytree(EXAMPLE / "plugin", tmp_path / "plugin")
    write(tmp_path / "script.yaml", "replies:\n  - {match: weather-report, search: request, "
          "reply: LISTED}\n  - {match: '.*', reply: ABSENT}\n")  # fmt: skip
    write(tmp_path / "t.yaml", "task_id: listed\ndescription: d\ninitial_prompt: hello\n"
          "agent: {type: codex, model: mock/script.yaml, plugins: [{type: local, path: plugin}]}\n"
          "success_criteria: [{type: response_match, expected: LISTED, description: d}]\n"
          )  # fmt: skip
    done = run_assay("run", "t.yaml", cwd=tmp_path, env={"PATH": codex_path()})
    assert done.returncode == 0, done.stdout + done.stderr
    row = json.loads(next((tmp_path / "runs" / "latest").rglob("task.json")).read_text())
    assert row["transcript"]["skills_offered"] == ["unit-convert", "weather-report"]
