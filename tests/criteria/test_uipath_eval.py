"""``uipath_eval`` (Coder Eval's, ``coder_eval_agents.md`` §2) with the real ``uipath`` CLI
(PyPI ``uipath``, pinned in the Makefile's ``.tools/uipath``) on real sandboxes: UiPath's
deterministic evaluators run offline; its LLM evaluators need UiPath's platform, and the
row's error says so. The metrics and the threshold score are checked against hand-computed
cases."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.criteria.base import CriterionError
from assay.criteria.uipath_eval import metrics_of, threshold_score
from assay.sandbox.tempdir import Sandbox
from tests.criteria.test_file_criteria import box, grade, put
from tests.helpers import write

__all__ = ["box"]  # the fixture, used by name

REPO = Path(__file__).resolve().parents[2]
UIPATH_BIN = REPO / ".tools" / "uipath" / "bin"
ECHO = 'def main(input):\n    return {"message": input["message"]}\n'
PREFIX = ('def main(input):\n    prefix, message = input.get("prefix"), input["message"]\n'
          '    return {"message": f"{prefix}: {message}" if prefix else message}\n')  # fmt: skip
CRASH = "def main(input):\n    raise ValueError('boom')\n"


def _evaluator(ident: str, type_id: str, **config: Any) -> dict[str, Any]:
    return {"version": "1.0", "id": ident, "name": ident, "description": ident,
            "evaluatorTypeId": type_id, "evaluatorConfig": {"name": ident, **config}}  # fmt: skip


EXACT = _evaluator("ExactMatchEvaluator", "uipath-exact-match", targetOutputKey="*")
CONTAINS = _evaluator("ContainsEvaluator", "uipath-contains", targetOutputKey="message")
JUDGE = _evaluator("LLMJudgeOutputEvaluator", "uipath-llm-judge-output-semantic-similarity",
                   model="gpt-4o-mini-2024-07-18")  # fmt: skip


def _eval_set(*evaluators: dict[str, Any]) -> dict[str, Any]:
    """Two evaluations: ``hi`` echoed, and ``hi`` with a prefix (an echo misses it)."""
    names = [e["id"] for e in evaluators]

    def criteria(expected: str, search: str) -> dict[str, Any]:
        given = {"ExactMatchEvaluator": {"expectedOutput": {"message": expected}},
                 "ContainsEvaluator": {"searchText": search},
                 "LLMJudgeOutputEvaluator": {"expectedOutput": {"message": expected}}}  # fmt: skip
        return {name: given[name] for name in names}

    return {"version": "1.0", "id": "set", "name": "set", "evaluatorRefs": names,
            "evaluations": [
                {"id": "e1", "name": "echo", "inputs": {"message": "hi"},
                 "evaluationCriterias": criteria("hi", "hi")},
                {"id": "e2", "name": "prefix", "inputs": {"message": "hi", "prefix": "P"},
                 "evaluationCriterias": criteria("P: hi", "P:")}]}  # fmt: skip


def _project(folder: Path, code: str, *evaluators: dict[str, Any], at: str = "evaluations") -> None:
    """A UiPath project as ``uipath new`` lays it out, with its eval set under ``at``."""
    write(folder / "main.py", code)
    write(folder / "uipath.json", json.dumps({"functions": {"main": "main.py:main"}}))
    for evaluator in evaluators:
        write(folder / at / "evaluators" / f"{evaluator['id']}.json", json.dumps(evaluator))
    write(folder / at / "eval-sets" / "set.json", json.dumps(_eval_set(*evaluators)))


def _with_uipath() -> dict[str, str]:
    if not (UIPATH_BIN / "uipath").exists():
        pytest.fail("the uipath CLI is not installed: run `make install-dev` (.tools/uipath)")
    return {**os.environ, "PATH": f"{UIPATH_BIN}{os.pathsep}{os.environ['PATH']}"}


def _grade(box: Sandbox, env: dict[str, str] | None = None, **fields: Any) -> Any:
    fields = {"agent_name": "main", "eval_set": "evaluations/eval-sets/set.json",
              "thresholds": {}, **fields}  # fmt: skip
    return grade(box, env=env or _with_uipath(), type="uipath_eval", **fields)


# --- the metrics, by hand ------------------------------------------------------------------


def _run(evaluator: str, score: Any, details: Any = None) -> dict[str, Any]:
    result = {"score": score} if details is None else {"score": score, "details": details}
    return {"evaluatorId": evaluator, "result": result}


def test_metrics_are_per_evaluator_means_and_their_macro_mean() -> None:
    report = {"evaluationSetResults": [
        {"evaluationRunResults": [_run("a", 1.0), _run("b", 0.25)]},
        {"evaluationRunResults": [_run("a", 0.0), _run("b", None), {"result": {"score": 1}}]},
        {"evaluationRunResults": [_run("a", 0.5)]}]}  # fmt: skip
    metrics = metrics_of(report, needed={"*"})
    # a: (1 + 0 + 0.5) / 3 = 0.5; b: (0.25 + 0) / 2 = 0.125 (no score counts 0); * = 0.3125
    assert metrics == {"a": 0.5, "b": 0.125, "*": pytest.approx(0.3125)}
    assert metrics_of({"evaluationSetResults": [{"evaluationRunResults": []}]}, needed=set()) == {
        "*": 0.0
    }
    flat = {"accuracy": 0.8, "label": "x"}
    assert metrics_of(flat, needed={"accuracy"}) == flat


def test_the_score_is_the_share_of_thresholds_met() -> None:
    metrics = {"a": 0.5, "b": 0.9, "label": "x"}
    assert threshold_score(metrics, {}) == (1.0, [])
    assert threshold_score(metrics, {"a": 0.5, "b": 0.95}) == (0.5, ["b: 0.900 < 0.95"])
    score, failed = threshold_score(metrics, {"a": 0.4, "gone": 0.1, "label": 0.1})
    assert score == pytest.approx(1 / 3)
    assert failed == ["missing metric: gone", "label: str 'x' is not a number"]


def test_an_evaluator_that_raised_is_an_error_only_where_a_threshold_needs_it() -> None:
    raised = "Exception thrown by evaluator: Error: \x1b[1mAuthentication\x1b[22m required.\nTrace"
    report = {"evaluationSetResults": [{"evaluationName": "echo", "evaluationRunResults": [
        _run("judge", 0.0, raised), _run("exact", 1.0)]}]}  # fmt: skip
    assert metrics_of(report, needed={"exact"})["exact"] == 1.0
    for needed in ({"judge"}, {"*"}):
        with pytest.raises(CriterionError, match=r"evaluator 'judge' could not score evaluation "
                           r"'echo': Error: Authentication required\. \(UiPath's LLM"):  # fmt: skip
            metrics_of(report, needed=needed)


# --- the real CLI ----------------------------------------------------------------------------


def test_uipaths_own_evaluation_grades_the_project(box: Sandbox) -> None:
    _project(box.root, ECHO, EXACT, CONTAINS)
    result = _grade(box, thresholds={"ContainsEvaluator": 0.5, "ExactMatchEvaluator": 0.9,
                                     "*": 0.7})  # fmt: skip
    # the echo passes both on "echo", misses the exact match on "prefix": exact 0.5, contains
    # 0.5 ("P:" is not in "hi"), * 0.5: one threshold of three met
    assert result.error is None, result.error
    assert result.score == pytest.approx(1 / 3)
    assert result.details == ("Metrics: ContainsEvaluator 0.500, ExactMatchEvaluator 0.500, "
                              "* 0.500. Not met: ExactMatchEvaluator: 0.500 < 0.9; "
                              "*: 0.500 < 0.7")  # fmt: skip
    put(box, "main.py", PREFIX)
    assert _grade(box, thresholds={"ExactMatchEvaluator": 1, "*": 1}).score == 1.0
    assert [p.name for p in box.root.iterdir() if p.name.startswith(".assay")] == []


def test_code_that_fails_and_a_project_uipath_cannot_run_score_zero(box: Sandbox) -> None:
    _project(box.root, CRASH, EXACT)
    crashed = _grade(box, thresholds={"ExactMatchEvaluator": 0.5})
    assert (crashed.score, crashed.error) == (0.0, None)
    assert "ExactMatchEvaluator 0.000" in crashed.details
    missing = _grade(box, agent_name="nosuch", thresholds={"*": 0.5})
    assert (missing.score, missing.error) == (0.0, None)
    assert "Entrypoint 'nosuch' not found in uipath.json" in missing.details


def test_what_cannot_grade_is_the_criterions_error(box: Sandbox) -> None:
    _project(box.root, ECHO, EXACT, JUDGE)
    with pytest.raises(CriterionError) as offline:
        _grade(box, thresholds={"LLMJudgeOutputEvaluator": 0.5})
    said = str(offline.value)
    assert "evaluator 'LLMJudgeOutputEvaluator' could not score evaluation 'echo'" in said
    assert "Authentication required" in said and "UIPATH_URL" in said
    exact_only = _grade(box, thresholds={"ExactMatchEvaluator": 0.5})  # the judge not needed
    assert (exact_only.score, exact_only.error) == (1.0, None)
    bare = {**os.environ, "PATH": "/usr/bin:/bin"}
    with pytest.raises(CriterionError, match=r"could not run in the row's sandbox \(exit code "
                       r"127.*install PyPI's uipath where the row runs"):  # fmt: skip
        _grade(box, env=bare, thresholds={"*": 0.5})
    assert [p.name for p in box.root.iterdir() if p.name.startswith(".assay")] == []


def test_the_projects_own_environment_is_used_first(box: Sandbox) -> None:
    _project(box.root, ECHO, EXACT)
    own = box.root / ".venv" / "bin" / "uipath"
    write(own, f'#!/bin/sh\necho "own $*" >&2\nexec {UIPATH_BIN / "uipath"} "$@"\n')
    own.chmod(0o755)
    bare = {**os.environ, "PATH": "/usr/bin:/bin"}
    assert _grade(box, env=bare, thresholds={"ExactMatchEvaluator": 0.5}).score == 1.0
    own.write_text("#!/bin/sh\necho 'the project s own uipath' >&2\nexit 3\n")
    said = _grade(box, env=bare, thresholds={"*": 0.5})
    assert said.score == 0.0 and "the project s own uipath" in said.details


def _task(folder: Path, driver: str, eval_set: str) -> Path:
    return write(
        folder / "task.yaml",
        f"""\
task_id: uipath
description: the agent writes the UiPath agent; UiPath's own evaluation grades it
agent:
  type: command
  command: cp "$ASSAY_TASK_DIR/solution.py" main.py
initial_prompt: write main.py
sandbox:
  driver: {driver}
  template_sources: [{{type: template_dir, path: project}}]
success_criteria:
  - type: uipath_eval
    description: UiPath's evaluation
    agent_name: main
    eval_set: {eval_set}
    thresholds: {{ExactMatchEvaluator: 1.0, ContainsEvaluator: 1.0}}
""",
    )


@pytest.mark.parametrize("driver", ["tempdir", "bwrap"])
def test_a_task_file_runs_end_to_end_with_the_eval_set_in_the_tasks_folder(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, driver: str
) -> None:
    monkeypatch.setenv("PATH", _with_uipath()["PATH"])
    _project(workdir / "evals-home", ECHO, EXACT, CONTAINS, at="evals")
    shutil.move(workdir / "evals-home" / "evals", workdir / "evals")
    write(workdir / "project" / "uipath.json", json.dumps({"functions": {"main": "main.py:main"}}))
    write(workdir / "solution.py", PREFIX)
    result = assay.run(_task(workdir, driver, "evals/eval-sets/set.json"))
    (row,) = list(result.rows())
    (criterion,) = row.success_criteria_results
    assert (criterion.score, criterion.error) == (1.0, None), criterion.details
    assert result.exit_code == 0
    sandbox = workdir / "project"  # the template is copied, never written
    assert sorted(p.name for p in sandbox.iterdir()) == ["uipath.json"]


def test_load_rules(tmp_path: Path) -> None:
    from tests.criteria.test_file_criteria import loads

    missing = loads(tmp_path, "{type: uipath_eval, description: d, agent_name: main, "
                    "eval_set: s.json}")  # fmt: skip
    assert missing.field == "success_criteria[0].thresholds"
    empty = loads(tmp_path, "{type: uipath_eval, agent_name: '', eval_set: s, thresholds: {}}")
    assert empty.field == "success_criteria[0].agent_name"
