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
from assay.criteria.uipath_metrics import details, metrics_of, threshold_score
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
    assert metrics.values == {"a": 0.5, "b": 0.125, "*": pytest.approx(0.3125)}
    empty = metrics_of({"evaluationSetResults": []}, needed=set())
    assert empty.values == {"*": 0.0}  # not the report's own fields read as metrics
    flat = {"accuracy": 0.8, "label": "x"}
    assert metrics_of(flat, needed={"accuracy"}).values == flat


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
    scored = metrics_of(report, needed={"exact"})
    # the judge did not grade: no metric of its own, and left out of the macro mean
    assert scored.values == {"exact": 1.0, "*": 1.0}
    assert scored.unscored == {"judge": "Error: Authentication required."}
    assert details(scored, []) == (
        "Metrics: exact 1.000, * 1.000. All thresholds met. Not scored "
        "(left out of *): judge: Error: Authentication required."
    )
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


def test_what_cannot_grade_is_the_criterions_error(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(box.root, ECHO, EXACT, JUDGE)
    with pytest.raises(CriterionError) as offline:
        _grade(box, thresholds={"LLMJudgeOutputEvaluator": 0.5})
    said = str(offline.value)
    assert "evaluator 'LLMJudgeOutputEvaluator' could not score evaluation 'echo'" in said
    assert "Authentication required" in said and "UIPATH_URL" in said
    exact_only = _grade(box, thresholds={"ExactMatchEvaluator": 0.5})  # the judge not needed
    assert (exact_only.score, exact_only.error) == (1.0, None)
    bare = {**os.environ, "PATH": "/usr/bin:/bin"}
    monkeypatch.setattr("assay.criteria.uipath_eval.project_tools", lambda *parts: None)
    with pytest.raises(CriterionError, match=r"could not run in the row's sandbox \(exit code "
                       r"127.*install PyPI's uipath where the row runs"):  # fmt: skip
        _grade(box, env=bare, thresholds={"*": 0.5})
    assert [p.name for p in box.root.iterdir() if p.name.startswith(".assay")] == []


def test_a_uipath_the_agent_planted_in_the_project_is_never_run(box: Sandbox) -> None:
    _project(box.root, CRASH, EXACT)
    fake = box.root / ".venv" / "bin" / "uipath"  # what an agent could write to pass itself
    write(fake, '#!/bin/sh\necho \'{"ExactMatchEvaluator": 1, "*": 1}\' > "$6"\n').chmod(0o755)
    result = _grade(box, thresholds={"ExactMatchEvaluator": 0.5})
    assert result.score == 0.0 and "ExactMatchEvaluator 0.000" in result.details
    bare = {**os.environ, "PATH": "/usr/bin:/bin"}  # the clone's uipath, found without PATH
    assert _grade(box, env=bare, thresholds={"ExactMatchEvaluator": 0.5}).score == 0.0


def test_the_clones_uipath_comes_last_on_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.criteria.uipath_eval import uipath_path

    assert uipath_path("/usr/bin:/bin") == f"/usr/bin:/bin:{UIPATH_BIN}"  # never shadowing
    assert uipath_path(f"{UIPATH_BIN}:/usr/bin") == f"{UIPATH_BIN}:/usr/bin"  # on PATH already
    monkeypatch.setattr("assay.criteria.uipath_eval.project_tools", lambda *parts: None)
    assert uipath_path("/usr/bin:/bin") == "/usr/bin:/bin"


def _task_folder(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An eval set in a task's folder (evals/eval-sets/set.json, evals/evaluators/)."""
    folder = tmp_path / "task"
    _project(folder / "home", ECHO, EXACT, CONTAINS, at="evals")
    shutil.move(folder / "home" / "evals", folder / "evals")
    return folder, {**_with_uipath(), "ASSAY_TASK_DIR": str(folder)}


def test_what_is_wrong_with_the_tasks_eval_set_is_the_criterions_error(
    box: Sandbox, tmp_path: Path
) -> None:
    _project(box.root, ECHO, EXACT)
    folder, env = _task_folder(tmp_path)
    given = {"eval_set": "evals/eval-sets/set.json"}
    assert _grade(box, env=env, **given, thresholds={"ContainsEvaluator": 0.5}).score == 1.0
    with pytest.raises(
        CriterionError,
        match=r"thresholds names 'Typo', which is not an "
        r"evaluator of the eval set .* \(ExactMatchEvaluator, ContainsEvaluator\)",
    ):
        _grade(box, env=env, **given, thresholds={"Typo": 0.5})
    (folder / "evals" / "evaluators" / "ContainsEvaluator.json").unlink()
    with pytest.raises(CriterionError, match="names evaluator 'ContainsEvaluator', which has "
                       "no file in"):  # fmt: skip
        _grade(box, env=env, **given, thresholds={"*": 0.5})
    (folder / "evals" / "eval-sets" / "set.json").write_text('{"evaluations": [')
    with pytest.raises(CriterionError, match=r"set\.json cannot be read as JSON"):
        _grade(box, env=env, **given, thresholds={"*": 0.5})
    (folder / "evals" / "eval-sets" / "set.json").write_text('{"evaluations": []}')
    with pytest.raises(CriterionError, match="has no evaluations"):
        _grade(box, env=env, **given, thresholds={"*": 0.5})
    with pytest.raises(CriterionError, match=r"eval_set 'evals/nope\.json' is neither a file of "
                       "the task's folder"):  # fmt: skip
        _grade(box, env=env, eval_set="evals/nope.json", thresholds={"*": 0.5})


def test_links_in_the_evaluators_folder_are_copied_as_links(box: Sandbox, tmp_path: Path) -> None:
    _project(box.root, ECHO, EXACT)
    folder, env = _task_folder(tmp_path)
    secret = write(tmp_path / "outside" / "id_rsa", "HOST-SECRET")
    (folder / "evals" / "evaluators" / "keys").symlink_to(secret.parent)
    (folder / "evals" / "evaluators" / "gone.txt").symlink_to(tmp_path / "nowhere.txt")
    links: dict[str, bool] = {}
    original = shutil.copytree

    def watch(src: Path, dst: Path, **kwargs: object) -> object:
        done = original(src, dst, **kwargs)  # type: ignore[arg-type]
        links.update({p.name: p.is_symlink() for p in Path(dst).iterdir()})
        return done

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shutil, "copytree", watch)
        result = _grade(box, env=env, eval_set="evals/eval-sets/set.json",
                        thresholds={"ExactMatchEvaluator": 0.5})  # fmt: skip
    assert result.score == 1.0  # a dangling link is no error
    assert links["keys"] and links["gone.txt"]  # never followed into the row
    (folder / "evals" / "evaluators" / "gone.json").symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(CriterionError, match=r"the evaluator file .*gone\.json cannot be read"):
        _grade(box, env=env, eval_set="evals/eval-sets/set.json", thresholds={"*": 0.5})


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
    option = loads(tmp_path, "{type: uipath_eval, agent_name: '-h', eval_set: s, thresholds: {}}")
    assert "would be read by uipath as an option" in option.message
    lax = loads(tmp_path, "{type: uipath_eval, agent_name: m, eval_set: s, thresholds: {a: true}}")
    assert lax.field == "success_criteria[0].thresholds.a"
