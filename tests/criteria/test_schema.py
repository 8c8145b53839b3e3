"""``assay schema``: the task file's JSON Schema, made from the criterion registry. Every
task file of ``examples/`` validates against it, and what a user gets wrong is named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import assay
from tests.criteria.word_count import WordCount

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PLUGIN = EXAMPLES / "plugins" / "word-count"
AGENT_PLUGIN = EXAMPLES / "plugins" / "python-agent"


def task_files() -> list[Path]:
    """Every YAML file under examples/ that is a task file (a mapping with a task_id)."""
    found = []
    for path in sorted(EXAMPLES.rglob("*.y*ml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "task_id" in data:
            found.append(path)
    return found


def errors(schema: dict[str, Any], data: Any) -> list[tuple[list[Any], str]]:
    checker = jsonschema.Draft202012Validator(schema)
    return [(list(e.absolute_path), e.message) for e in checker.iter_errors(data)]


def test_every_example_task_file_validates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGIN))  # the plugin example's task names its criterion
    monkeypatch.syspath_prepend(str(AGENT_PLUGIN))  # and the agent example's its agent type
    from assay_python_agent import PythonFunctionRunner
    from assay_word_count import WordCount as PluginWordCount

    schema = assay.task_schema(criteria=[PluginWordCount], agents=[PythonFunctionRunner])
    jsonschema.Draft202012Validator.check_schema(schema)
    files = task_files()
    assert len(files) >= 15 and PLUGIN / "tasks" / "words.yaml" in files
    assert AGENT_PLUGIN / "tasks" / "sums.yaml" in files
    for path in files:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert errors(schema, data) == [], path


def base_task(**criterion: Any) -> dict[str, Any]:
    return {"task_id": "t", "description": "d", "initial_prompt": "p",
            "success_criteria": [{"type": "file_check", "path": "a.txt", **criterion}]}  # fmt: skip


@pytest.mark.parametrize(
    ("criterion", "where", "message"),
    [
        ({"includs": ["x"]}, ["success_criteria", 0],
         "Additional properties are not allowed ('includs' was unexpected)"),
        ({"includes": "x"}, ["success_criteria", 0, "includes"], "'x' is not of type 'array'"),
        ({"type": "file_chek"}, ["success_criteria", 0, "type"], "'file_chek' is not one of"),
        ({"suite_thresholds": {"mean": {"lowr": 0.5}}},
         ["success_criteria", 0, "suite_thresholds"], "is not valid under any"),
    ],
)  # fmt: skip
def test_a_wrong_criterion_field_is_named(
    criterion: dict[str, Any], where: list[Any], message: str
) -> None:
    found = errors(assay.task_schema(), base_task(**criterion))
    assert len(found) == 1 and found[0][0] == where and message in found[0][1], found


def test_what_the_loader_accepts_the_schema_accepts() -> None:
    """The forms the loader reads beside the plain one: a gate on a bound, a qa: task
    without success_criteria, a Coder Eval field assay warns about."""
    schema = assay.task_schema()
    bound = base_task(suite_thresholds={"mean": {"min": 0.5, "lower": 0.4}, "count": 2})
    assert errors(schema, bound) == []
    qa = {"task_id": "q", "description": "d", "qa": {}, "dataset": {"paths": ["q.jsonl"]}}
    assert errors(schema, qa) == []
    assert errors(schema, {"task_id": "q", "description": "d"})  # neither: refused
    assert errors(schema, base_task(stop_when="done")) == []


def test_user_criteria_appear_in_the_schema() -> None:
    schema = assay.task_schema(criteria=[WordCount])
    assert schema["$defs"]["WordCount"]["properties"]["min_words"]["type"] == "integer"
    task = base_task() | {"success_criteria": [{"type": "word_count", "min_word": 2}]}
    [(where, message)] = errors(schema, task)
    assert where == ["success_criteria", 0] and "'min_word' was unexpected" in message
    assert "word_count" not in json.dumps(assay.task_schema())


def test_assay_schema_prints_it_and_writes_it(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "assay", "schema"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == assay.task_schema()
    written = tmp_path / "task.schema.json"
    done = subprocess.run([sys.executable, "-m", "assay", "schema", "-o", str(written)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and json.loads(written.read_text(encoding="utf-8"))["$schema"]
