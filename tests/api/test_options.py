"""The option objects of run/plan/resume (``assay.Selection``, ``Execution``, ``ModelCalls``,
``Outputs``): the same run as the flat keywords they stand for, each field a keyword with its
default, and what is given wrongly refused by name."""

from __future__ import annotations

import dataclasses
import inspect
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.api.options import OPTION_GROUPS
from assay.api.runs import PlanKeywords, ResumeKeywords, RunKeywords
from assay.cli import run as cli_run
from assay.errors import SelectionError, UsageError
from assay.orchestration.planning.options import plan_options

REPO = Path(__file__).resolve().parents[2]
SENTIMENT = "sentiment/sentiment_classification.yaml"


@pytest.fixture
def sentiment(workdir: Path) -> Path:
    shutil.copytree(REPO / "examples" / "sentiment", workdir / "sentiment")
    return workdir


def _ids(plan: assay.Plan) -> list[str]:
    return [f"{item.row_task.task_id}/{item.replicate}" for item in plan.work_items()]


def test_a_selection_plans_what_its_flat_keywords_plan(sentiment: Path) -> None:
    flat = assay.plan(SENTIMENT, sample=2, repeats=2, overrides=["run_limits.task_timeout=30"])
    grouped = assay.plan(SENTIMENT, selection=assay.Selection(
        sample=2, repeats=2, overrides=["run_limits.task_timeout=30"]))  # fmt: skip
    assert _ids(grouped) == _ids(flat) and len(_ids(flat)) == 4
    assert len(_ids(assay.plan(SENTIMENT))) == 3


def test_a_run_with_option_objects_is_the_run_of_its_keywords(sentiment: Path) -> None:
    seen: list[str] = []
    grouped = assay.run(
        SENTIMENT, run_dir="grouped",
        selection=assay.Selection(repeats=2),
        execution=assay.Execution(jobs=1, keep_sandboxes=True),
        model_calls=assay.ModelCalls(max_retries=0, cache=True),
        outputs=assay.Outputs(junit_xml="out/junit.xml", html=True, on_warning=seen.append,
                              command=["assay", "run", "grouped"]),
    )  # fmt: skip
    flat = assay.run(SENTIMENT, run_dir="flat", repeats=2, jobs=1, keep_sandboxes=True,
                     max_retries=0, cache=True, junit_xml="out/flat.xml", html=True)  # fmt: skip
    assert grouped.exit_code == flat.exit_code == 0
    suite, flat_suite = (r.suite("sentiment-classification") for r in (grouped, flat))
    assert suite.rows_total == flat_suite.rows_total == 6
    assert suite.metrics == flat_suite.metrics
    assert (sentiment / "out" / "junit.xml").is_file() and grouped.html_report is not None
    assert grouped.html_report.is_file()
    recorded = json.loads((grouped.run_dir / "run.json").read_text())
    assert recorded["command"] == ["assay", "run", "grouped"]
    assert any(p.name == "sandbox" or "sandbox" in p.parts for p in grouped.run_dir.rglob("*"))


def test_a_group_sets_only_what_it_changes_and_a_field_given_twice_is_refused(
    sentiment: Path,
) -> None:
    plan = assay.plan(SENTIMENT, sample=2, selection=assay.Selection(repeats=2))
    assert len(_ids(plan)) == 4
    with pytest.raises(TypeError, match=r"^plan\(\) got 'sample' twice: as sample= and in "
                       r"selection=assay\.Selection\(\.\.\.\); give it once$"):  # fmt: skip
        assay.plan(SENTIMENT, sample=2, selection=assay.Selection(sample=3))
    with pytest.raises(TypeError, match=r"^run\(\) got 'jobs' twice"):
        assay.run(SENTIMENT, jobs=2, execution=assay.Execution(jobs=3))


def test_what_is_given_wrongly_is_refused_by_name(sentiment: Path) -> None:
    with pytest.raises(TypeError, match=r"^run\(\)'s execution= takes an assay\.Execution, "
                       r"not dict: execution=assay\.Execution\(\.\.\.\)$"):  # fmt: skip
        assay.run(SENTIMENT, execution={"jobs": 2})  # type: ignore[typeddict-item]
    with pytest.raises(TypeError, match=r"^plan\(\) takes no execution= \(its option objects: "
                       r"selection=\)$"):  # fmt: skip
        assay.plan(SENTIMENT, execution=assay.Execution())  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^run\(\) got an unexpected keyword argument 'job'; "
                       r"did you mean 'jobs'\?$"):  # fmt: skip
        assay.run(SENTIMENT, job=8)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"^resume\(\) got an unexpected keyword argument "
                       r"'stage'"):  # fmt: skip
        assay.resume("runs/latest", stage="execute")  # type: ignore[call-arg]
    with pytest.raises(UsageError, match=r"^jobs must be at least 1, got 0$"):
        assay.run(SENTIMENT, execution=assay.Execution(jobs=0))
    assert not (sentiment / "runs").exists()
    with pytest.raises(dataclasses.FrozenInstanceError):
        assay.Execution().jobs = 2  # type: ignore[misc]


def test_resume_checks_a_selection_like_its_keywords(sentiment: Path) -> None:
    first = assay.run(SENTIMENT, run_dir="runs", sample=2)
    with pytest.raises(UsageError, match="sample"):
        assay.resume(first.run_dir, selection=assay.Selection(sample=3))
    with pytest.raises(TypeError, match=r"^resume\(\) takes no rows \(set in selection="
                       r"assay\.Selection\(\.\.\.\)\)$"):  # fmt: skip
        assay.resume(first.run_dir, selection=assay.Selection(rows={"t": ["r1"]}))
    again = assay.resume(first.run_dir, selection=assay.Selection(sample=2),
                         execution=assay.Execution(jobs=1))  # fmt: skip
    assert (
        again.exit_code == first.exit_code
        and again.suite("sentiment-classification").rows_total == 2
    )


def test_every_field_is_a_keyword_of_its_verbs_with_the_same_default() -> None:
    plan_defaults = inspect.signature(plan_options).parameters
    cli_defaults = inspect.signature(cli_run.run).parameters
    for group, cls in OPTION_GROUPS.items():
        verbs: tuple[Any, ...] = (
            (PlanKeywords, RunKeywords, ResumeKeywords) if group == "selection"
            else (RunKeywords, ResumeKeywords)
        )  # fmt: skip
        for verb in verbs:
            assert group in verb.__annotations__, (group, verb)
        for field in dataclasses.fields(cls):
            assert field.name in RunKeywords.__annotations__, field.name
            if field.name in plan_defaults:
                assert plan_defaults[field.name].default == field.default, field.name
            elif field.name in cli_defaults and field.name not in ("tags", "exclude_tags"):
                assert cli_defaults[field.name].default == field.default, field.name
    grouped = {f.name for cls in OPTION_GROUPS.values() for f in dataclasses.fields(cls)}
    flat = set(RunKeywords.__annotations__) - set(OPTION_GROUPS)
    assert flat - grouped == {"run_dir", "stage", "store", "prices", "criteria", "agents"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"jobs": "8"}, r"run\(\) option jobs takes an int or None, not str '8'"),
        ({"jobs": True}, r"option jobs takes an int or None, not bool True"),
        ({"jobs": 2.5}, r"option jobs takes an int or None, not float 2\.5"),
        ({"sample": "3"}, r"option sample takes an int or None, not str '3'"),
        ({"timeout": "30"}, r"option timeout takes a finite number of seconds or None, not str"),
        ({"cache_expiry": [1]}, r"option cache_expiry takes"),
        ({"cache": "no"}, r"option cache takes True or False"),
        ({"keep_sandboxes": "no"}, r"option keep_sandboxes takes True or False"),
        ({"command": "assay run x"}, r"option command takes a list"),
        ({"progress": "yes"}, r"option progress takes True, False or"),
        ({"stage": "grade"}, r"option stage takes one of 'run', 'execute', not str 'grade'"),
        ({"ray_files": "nfs"}, r"option ray_files takes one of 'ship', 'shared'"),
        ({"tags": 3}, r"option tags takes a list of tags"),
        ({"criteria": int}, r"option criteria takes a list of classes \(\[int\]\)"),
        ({"rows": ["r1"]}, r"option rows takes a dict of task id to row ids"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_before_anything_is_written(
    sentiment: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        assay.run(SENTIMENT, run_dir="runs", **options)
    assert not (sentiment / "runs").exists()


def test_tags_and_row_ids_are_taken_in_the_forms_a_notebook_has(sentiment: Path) -> None:
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    assert len(_ids(assay.plan(SENTIMENT, tags="classification, other"))) == 3
    with pytest.raises(UsageError, match="no task to run"):
        assay.plan(SENTIMENT, exclude_tags="classification")  # one tag, not its letters
    for tags in (np.array(["classification"]), pd.Series(["classification"])):
        chosen = assay.plan(SENTIMENT, selection=assay.Selection(tags=tags))
        assert len(_ids(chosen)) == 3
    one = assay.plan(SENTIMENT, rows={"sentiment-classification": "r2"})
    assert [t.row_task.row_id for t in one.work_items()] == ["r2"]
    with pytest.raises(UsageError, match=r"^rows names the task 'sentiment-classificatio', "
                       r"which is not among the tasks planned \(sentiment-classification\); "
                       r"did you mean 'sentiment-classification'\?\n"):  # fmt: skip
        assay.plan(SENTIMENT, rows={"sentiment-classificatio": ["r1"]})
    with pytest.raises(SelectionError, match=r"row id\(s\) \['r9'\] of task 'sentiment-"
                       r"classification' are not in its dataset \(3 rows;"):  # fmt: skip
        assay.plan(SENTIMENT, rows={"sentiment-classification": ["r9"]})
    with pytest.raises(UsageError, match=r"cache_expiry must be a positive duration, got -1"):
        assay.run(SENTIMENT, cache_expiry=-1)


def test_a_plan_shows_itself_in_one_line(sentiment: Path) -> None:
    assert repr(assay.plan(SENTIMENT, repeats=2)) == "Plan(1 task, 6 work items, 1 variant)"


def test_what_a_second_try_found_is_refused_or_counted_right(sentiment: Path) -> None:
    task = "sentiment-classification"
    twice = assay.run(SENTIMENT, run_dir="runs", rows={task: ["r1", "r1"]})
    assert twice.suite(task).rows_total == 1 and twice.exit_code == 0  # each id once
    with pytest.raises(UsageError, match=f"rows gives task '{task}' no row id"):
        assay.plan(SENTIMENT, rows={task: []})
    both = assay.plan(SENTIMENT, rows={task: ["r3", "r1"]}, sample=1, split="test")
    assert [t.row_task.row_id for t in both.work_items()] == ["r1", "r3"]  # the rows named
    assert [w for w in both.warnings if w.startswith("rows ")] == [
        f"rows names the rows of task '{task}': sample=1 and split='test' not applied to it "
        "(the 2 row(s) named run)"
    ]
    assert not [w for w in assay.plan(SENTIMENT, rows={task: ["r1"]}).warnings
                if w.startswith("rows ")]  # fmt: skip
    for name, empty in (("experiment", ""), ("split", " "), ("model", ""), ("run_dir", "")):
        flag = "--" + name.replace("_", "-")
        with pytest.raises(UsageError, match=rf"^{name} \({flag}\): an empty value: give one, "
                           r"or leave the option out$"):  # not "none"  # fmt: skip
            assay.run(SENTIMENT, **{name: empty})  # type: ignore[arg-type]
    for bad in (5, [5], [("agent.timeout", 5)], {3: 1}):
        with pytest.raises(TypeError, match="option overrides takes a dict of field path"):
            assay.plan(SENTIMENT, overrides=bad)

    class OnlyAdvance:
        def advance(self, *args: object) -> None: ...

    for progress in (OnlyAdvance(), OnlyAdvance):
        with pytest.raises(TypeError, match=r"option progress takes True, False or a "
                           r"Progress object .*start\(\), advance\(\), retry\(\), "
                           r"stop\(\)"):  # fmt: skip
            assay.run(SENTIMENT, run_dir="runs", progress=progress)
    for name in ("timeout", "cache_expiry"):
        with pytest.raises(TypeError, match=f"option {name} takes a finite number"):
            assay.run(SENTIMENT, run_dir="runs", **{name: float("nan")})
    with pytest.raises(TypeError, match=r"resume\(\) takes the run folder as a path"):
        assay.resume(None)  # type: ignore[arg-type]
    for call in (lambda: twice.row(task, row_id="r1", replicate="1"),
                 lambda: twice.row(task, row_id=1),
                 lambda: twice.row(None, row_id="r1"),
                 lambda: twice.row(task, row_id="r1", replicate=True)):  # fmt: skip
        with pytest.raises(TypeError, match=r"row\(\)'s "):
            call()
    assert sorted(p.name for p in (sentiment / "runs").iterdir()) == sorted(
        [twice.run_dir.name, "latest"]
    )  # nothing refused made a folder


def test_an_empty_or_equal_value_in_an_object_counts_as_unset(sentiment: Path) -> None:
    np = pytest.importorskip("numpy")
    plan = assay.plan(SENTIMENT, tags=["classification"], selection=assay.Selection(tags=[]))
    assert len(_ids(plan)) == 3
    assert len(_ids(assay.plan(SENTIMENT, rows={"sentiment-classification": ["r1"]},
                               selection=assay.Selection(rows={})))) == 1  # fmt: skip
    ran = assay.run(SENTIMENT, run_dir="runs", max_retries=1, execution=assay.Execution(
        keep_sandboxes=True), model_calls=assay.ModelCalls(max_retries=np.int64(4)))  # fmt: skip
    assert ran.exit_code == 0


@pytest.mark.parametrize(("made", "says"), [
    (lambda: assay.Selection(sample="2"), "Selection() option sample takes an int or None, "
     "not str '2'"),
    (lambda: assay.Execution(jobs="4"), "Execution() option jobs takes an int"),
    (lambda: assay.ModelCalls(max_retries=1.5), "ModelCalls() option max_retries takes an int"),
    (lambda: assay.ModelCalls(cache="no"), "ModelCalls() option cache takes True or False"),
    (lambda: assay.Outputs(progress="yes"), "Outputs() option progress takes True, False or"),
])  # fmt: skip
def test_an_option_object_is_checked_when_it_is_made(made: Any, says: str) -> None:
    """Where the mistake is written (it was only refused when a run used the object)."""
    with pytest.raises(TypeError) as caught:
        made()
    assert str(caught.value).startswith(says)
