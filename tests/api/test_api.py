"""The Python API end to end: the same numbers as the command line, tasks built in Python,
lazy rows, errors from the exception tree (never SystemExit)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import assay
from assay.errors import DatasetError, TaskFileError, UsageError, UserError
from tests.cli.inproc import run_in_process
from tests.helpers import write

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SENTIMENT = "sentiment/sentiment_classification.yaml"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command line in-process (tests/cli/inproc.py), to compare with the API."""
    return run_in_process(*args, cwd=cwd)


def suite_file(run_dir: Path, suite: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "default" / suite / "suite.json").read_text())
    return data


def test_run_gives_the_command_lines_numbers(workdir: Path) -> None:
    shutil.copytree(EXAMPLES / "sentiment", workdir / "sentiment")
    result = assay.run(SENTIMENT, run_dir="api-runs")
    done = cli("run", SENTIMENT, "--run-dir", "cli-runs", cwd=workdir)
    assert result.exit_code == done.returncode == 0
    suite = result.suite("sentiment-classification")
    assert round(suite.metrics["accuracy"] or 0, 3) == 0.667
    assert suite.metrics["recall.negative"] == 0.5 and suite.metrics["precision.positive"] == 0.5
    assert [(g.metric, g.min_value, g.passed) for g in suite.gates] == [
        ("accuracy", 0.6, True), ("macro_f1", 0.5, True), ("recall.positive", 0.9, True)
    ]  # fmt: skip
    by_cli = suite_file((workdir / "cli-runs" / "latest").resolve(), "sentiment-classification")
    by_api = suite_file(result.run_dir, "sentiment-classification")
    assert by_api["criterion_aggregates"] == by_cli["criterion_aggregates"]
    assert result.run_dir.resolve() == (workdir / "api-runs" / "latest").resolve()
    rows = list(suite.rows())
    assert [r.row_id for r in rows] == ["r1", "r2", "r3"]
    assert [r.final_status.value for r in rows] == ["SUCCESS", "SUCCESS", "FAILURE"]
    assert [r.row_id for r in result.rows(suite="sentiment-classification")] == ["r1", "r2", "r3"]
    reopened = assay.RunResult.open(result.run_dir)
    assert reopened.exit_code == 0 and reopened.suite("sentiment-classification").passed
    task_id = rows[2].task_id
    found = reopened.row(task_id, suite="sentiment-classification", row_id="r3")
    assert found is not None and found.row_id == "r3" and found.final_status.value == "FAILURE"
    path = reopened.row_file(task_id, suite="sentiment-classification", row_id="r3")
    assert path.is_file() and path.is_relative_to(result.run_dir.resolve())
    assert reopened.row("sentiment-classification", suite="sentiment-classification",
                        row_id="r9") is None  # fmt: skip
    assert reopened.row(task_id, suite="sentiment-classification", row_id="r3",
                        replicate=1) is None  # fmt: skip


def test_a_failed_gate_gives_exit_code_1_like_the_command_line(workdir: Path) -> None:
    shutil.copytree(EXAMPLES / "sentiment", workdir / "sentiment")
    path = workdir / SENTIMENT
    path.write_text(path.read_text().replace("accuracy: 0.6", "accuracy: 0.9"))
    result = assay.run(SENTIMENT)
    assert result.exit_code == cli("run", SENTIMENT, cwd=workdir).returncode == 1
    gates = result.suite("sentiment-classification").gates
    assert [(g.metric, g.passed) for g in gates if not g.passed] == [("accuracy", False)]
    assert not result.passed and not result.suite("sentiment-classification").passed


def frame_task() -> dict[str, Any]:
    return {
        "task_id": "frame",
        "description": "rows from a DataFrame",
        "agent": {"type": "llm", "model": "mock/echo"},
        "initial_prompt": "${row.said}",
        "success_criteria": [
            {
                "type": "classification_match",
                "expected_label": "${row.expected}",
                "allowed_labels": ["pos", "neg"],
                "suite_thresholds": {"accuracy": 0.7},
            }
        ],
    }


def test_a_task_built_in_python_from_a_pandas_frame(workdir: Path) -> None:
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "said": ["pos", "neg", "pos", "neg"],
            "expected": ["pos", "neg", "neg", "neg"],
            "score": [1.5, float("nan"), 3.0, 4.0],  # NaN becomes null
            "count": pd.Series([1, 2, 3, 4], dtype="int64"),
        }
    )
    result = assay.run(assay.task(frame_task(), rows=frame))
    suite = result.suite("frame")
    assert suite.metrics["accuracy"] == 0.75  # 3 of 4 echoed labels are the expected ones
    assert result.exit_code == 0 and [g.passed for g in suite.gates] == [True]
    rows = {r.row_id: r for r in suite.rows()}
    assert rows["b"].row == {"id": "b", "said": "neg", "expected": "neg", "score": None,
                             "count": 2}  # fmt: skip
    assert rows["c"].final_status.value == "FAILURE"
    saved = result.run_dir / "python-tasks" / "frame.json"
    assert json.loads(saved.read_text())["dataset"]["rows"][1]["score"] is None


def test_a_task_from_a_list_and_a_pydantic_definition(workdir: Path) -> None:
    given = {"rows": [{"id": "x", "said": "y", "expected": "pos"}]}
    with pytest.raises(TaskFileError, match=r"rows= and dataset.rows both give the rows"):
        assay.task({**frame_task(), "dataset": given}, rows=[{"id": "a"}])
    rows = [{"id": "a", "said": "pos", "expected": "pos"}, {"id": "b", "said": "neg",
                                                             "expected": "pos"}]  # fmt: skip
    # a definition with gates needs its dataset block; empty rows are filled by rows=
    definition = assay.TaskDefinition.model_validate({**frame_task(), "dataset": {"rows": []}})
    built = assay.task(definition, rows=rows)
    assert built.display == "<python:frame>"
    result = assay.run([built])
    assert result.suite("frame").metrics["accuracy"] == 0.5
    assert result.exit_code == 1  # the gate (0.7) failed


def test_a_run_of_a_python_task_resumes_from_its_saved_copy(workdir: Path) -> None:
    rows = [{"id": f"r{i}", "said": "pos", "expected": "pos"} for i in range(4)]
    result = assay.run(assay.task(frame_task(), rows=rows))
    (result.run_dir / "default" / "frame" / "r2" / "00" / "task.json").unlink()
    plan = json.loads((result.run_dir / "plan.json").read_text())
    assert plan["tasks"][0]["base_dir"] == str(workdir)
    resumed = assay.resume(result.run_dir)
    assert resumed.summary.sessions == 2 and resumed.suite("frame").rows_total == 4
    assert [r.row_id for r in resumed.rows()] == ["r0", "r1", "r2", "r3"]
    done = cli("report", str(result.run_dir), cwd=workdir)
    assert done.returncode == 0, done.stderr


def test_rows_from_something_else_are_refused_with_the_reason(workdir: Path) -> None:
    with pytest.raises(DatasetError, match=r"rows must be a list of dicts, a pandas or Polars "):
        assay.task(frame_task(), rows="a,b")
    with pytest.raises(DatasetError, match=r"rows\[1\] is not an object: 3"):
        assay.task(frame_task(), rows=[{"id": "a"}, 3])
    with pytest.raises(
        DatasetError, match=r"rows\[0\].when holds a value of type set, which is not JSON"
    ):
        assay.task(frame_task(), rows=[{"id": "a", "when": {1}}])
    with pytest.raises(TaskFileError, match=r"<python:frame>: success_criteria\[0\]"):
        assay.task({**frame_task(), "success_criteria": [{"type": "classification_matc"}]})


def test_errors_are_the_exception_tree_never_system_exit(workdir: Path) -> None:
    write(workdir / "bad.yaml", "task_id: bad\ndescription: x\ninitial_promt: hi\n")
    with pytest.raises(TaskFileError) as caught:
        assay.run("bad.yaml")
    assert "bad.yaml:3: initial_promt: unknown field" in str(caught.value)
    with pytest.raises(UsageError, match=r"task file not found: missing\.yaml"):
        assay.plan("missing.yaml")
    with pytest.raises(UsageError, match="sample must be at least 1, got 0"):
        assay.plan("bad.yaml", sample=0)
    with pytest.raises(UsageError, match="run directory not found: nowhere"):
        assay.report("nowhere")
    assert issubclass(UsageError, UserError)


def test_run_inside_an_event_loop_points_at_run_async(workdir: Path) -> None:
    shutil.copytree(EXAMPLES / "dataset_example", workdir / "d")

    async def inside() -> assay.RunResult:
        with pytest.raises(UsageError, match=r"assay.run\(\) was called inside a running event"):
            assay.run("d")
        with pytest.raises(UsageError, match=r"asyncio.to_thread\(assay.evaluate_predictions"):
            assay.evaluate_predictions("p.jsonl")
        return await assay.run_async("d", jobs=2)

    result = asyncio.run(inside())
    assert result.exit_code == 0 and result.suite("dataset-example").rows_total == 2


def test_plan_evaluate_report_and_compare(workdir: Path) -> None:
    shutil.copytree(EXAMPLES / "sentiment", workdir / "sentiment")
    planned = assay.plan(SENTIMENT, sample=2)
    by_cli = json.loads(cli("plan", SENTIMENT, "--sample", "2", "--json", cwd=workdir).stdout)
    assert [t.task_id for t in planned.tasks[0].expansion.row_tasks] == (
        by_cli["tasks"][0]["task_ids"]
    )
    assert len(by_cli["tasks"][0]["task_ids"]) == 2
    first = assay.run(SENTIMENT, stage="execute")
    assert first.suite("sentiment-classification").rollup.rows_not_graded == 3
    graded = assay.evaluate(first.run_dir)
    assert round(graded.suite("sentiment-classification").metrics["accuracy"] or 0, 3) == 0.667
    rebuilt = assay.report(first.run_dir, junit_xml="out/junit.xml")
    assert rebuilt.exit_code == 0 and (workdir / "out" / "junit.xml").is_file()
    second = assay.run(SENTIMENT)
    compared = assay.compare(first.run_dir, second.run_dir, output="cmp")
    assert (workdir / "cmp" / "compare.md").is_file()
    assert [c.suite_id for c in compared.comparisons] == ["sentiment-classification"]
    assert compared.comparisons[0].rows == 3 and compared.comparisons[0].became_fail_total == 0


def test_rows_are_read_lazily_suite_by_suite(workdir: Path) -> None:
    rows = [{"id": f"r{i}", "said": "pos", "expected": "pos"} for i in range(3)]
    first = assay.task(frame_task(), rows=rows)
    second = assay.task({**frame_task(), "task_id": "other"}, rows=rows)
    result = assay.run([first, second])
    (result.run_dir / "default" / "other" / "r1" / "00" / "task.json").write_text("{broken")
    assert len(list(result.suite("frame").rows())) == 3  # never opens other/
    assert len(list(result.rows(suite="frame"))) == 3
    with pytest.raises(UsageError, match=r"other/r1/00/task.json is not a valid task.json"):
        list(result.suite("other").rows())
    with pytest.raises(UsageError, match=r"no suite 'nope'"):
        result.suite("nope")


def test_store_verbs_from_python(workdir: Path) -> None:
    write(workdir / "rows.jsonl", '{"id": "a", "text": "fine"}\n{"id": "b", "text": "bad"}\n')
    write(workdir / "more.csv", "id,text\nc,ok\n")
    with assay.store.Store(f"sqlite:///{workdir / 'store.db'}") as store:
        first = store.import_file("notes", workdir / "rows.jsonl")
        second = store.add_files("notes", [workdir / "more.csv"])
        assert (first.number, second.number, second.item_count) == (1, 2, 3)
        assert store.export("notes", workdir / "v1.csv", version=1) == 2
        with pytest.raises(UsageError, match="Parquet is binary"):
            store.export("notes", sys.stdout.buffer, format="parquet")
    assert (workdir / "v1.csv").read_text().splitlines() == ["id,text", "a,fine", "b,bad"]


def test_bad_arguments_are_named(workdir: Path) -> None:
    shutil.copytree(EXAMPLES / "dataset_example", workdir / "d")
    with pytest.raises(UsageError, match=r"^jobs must be at least 1, got 0$"):
        assay.run("d", jobs=0)
    with pytest.raises(UsageError, match=r"^max_retries must be 0 or more, got -1$"):
        assay.run("d", max_retries=-1)
    with pytest.raises(UsageError, match=r"^timeout must be a positive number of seconds, got 0"):
        assay.run("d", timeout=0)
    with pytest.raises(UsageError, match=r"^an override needs a field path, got '\.'$"):
        assay.plan("d", overrides={".": 1})
    with pytest.raises(UsageError, match=r"^-D takes path=value, got 'agent'"):
        assay.plan("d", overrides=["agent"])
    with pytest.raises(UsageError, match=r"^a task is a path, a loaded task, a TaskDefinition "
                       r"or a dict of task fields, not int$"):  # fmt: skip
        assay.plan([3])  # type: ignore[list-item]
    with pytest.raises(TaskFileError, match=r"a task is a dict of task file fields or a "
                       r"TaskDefinition, not list"):  # fmt: skip
        assay.task([])  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"has no valid run\.json \(.*\)\n  hint: rebuild it"):
        assay.RunResult.open(workdir)
    with pytest.raises(UsageError, match=r"^unknown field mapping: "):
        assay.api.convert_qa("in.csv", "out.jsonl", shape="gsm8k", colour="red")


def test_a_suite_in_several_variants_needs_one_named(workdir: Path) -> None:
    shutil.copytree(EXAMPLES / "dataset_example", workdir / "d")
    write(workdir / "two.yaml", "experiment_id: two\nvariants:\n  - variant_id: one\n"
          "  - variant_id: other\n")  # fmt: skip
    result = assay.run("d", experiment="two.yaml")
    with pytest.raises(UsageError, match=r"^suite 'dataset-example' ran in variants \['one', "
                       r"'other'\]; pass variant=$"):  # fmt: skip
        result.suite("dataset-example")
    assert result.suite("dataset-example", variant="other").variant_id == "other"
    assert len(list(result.rows(variant="one"))) == 2


def test_a_row_is_found_by_its_task_and_row_id_alone(workdir: Path) -> None:
    shutil.copytree(EXAMPLES / "sentiment", workdir / "sentiment")
    result = assay.run(SENTIMENT, run_dir="runs")
    task_id = "sentiment-classification"
    for found in (result.row(task_id, row_id="r2"), result.row(f"{task_id}/r2", row_id="r2"),
                  result.row(task_id, suite=task_id, row_id="r2")):  # fmt: skip
        assert found is not None and (found.task_id, found.row_id) == (f"{task_id}/r2", "r2")
    assert result.row(task_id, row_id="r9") is None  # no such row: nothing finished there
    # a mistake is not "did not finish" (each returned None)
    with pytest.raises(UsageError, match=r"the run has no variant 'x'; it has \['default'\]"):
        result.row(task_id, row_id="r2", variant="x")
    with pytest.raises(UsageError, match=r"the run has no suite or task 'sentimnt'"):
        result.row("sentimnt", row_id="r2")
    with pytest.raises(UsageError, match="is a suite of rows: give the row's row_id"):
        result.row(task_id)
    with pytest.raises(UsageError, match=r"the row 'r2' of suite 'sentiment-classification' "
                       r"belongs to the task 'sentiment-classification'"):  # fmt: skip
        result.row("whatever", suite=task_id, row_id="r2")


QA_TASK = {"task_id": "api-qa", "description": "x", "qa": {},
           "agent": {"type": "command", "command": "echo A"},
           "success_criteria": [{"type": "qa"}]}  # fmt: skip
QA_ROW = {"sample_id": "g1", "story": "", "question": "Capital of France?",
          "meta": {"ability": "geo"},
          "answer": {"correct_answers": ["Paris"], "wrong_answers": ["Berlin"]}}  # fmt: skip


def test_qa_rows_given_in_python_are_named_by_place_and_id(workdir: Path) -> None:
    bad = {key: value for key, value in QA_ROW.items() if key != "meta"} | {"sample_id": "b1"}
    with pytest.raises(DatasetError) as missing:
        assay.run(assay.task(QA_TASK, rows=[QA_ROW, bad]))
    assert (missing.value.field, missing.value.row_id) == ("rows[1]", "b1")
    with pytest.raises(DatasetError) as twice:
        assay.run(assay.task(QA_TASK, rows=[QA_ROW, dict(QA_ROW)]))
    assert (twice.value.field, twice.value.row_id) == ("rows[1]", "g1")
    assert (
        twice.value.hint is not None and "first used at <python:api-qa> rows[0]" in twice.value.hint
    )


def test_evaluate_predictions_takes_one_group_path_as_the_cli_does(workdir: Path) -> None:
    result = assay.run(assay.task(QA_TASK, rows=[QA_ROW]))
    prediction = result.run_dir / "default" / "api-qa" / "prediction.jsonl"
    report = assay.evaluate_predictions(prediction, group_by="meta.ability", output="m.json")
    assert report.document["all_metrics"][0]["by_ability"] == {"geo": 1.0}
    with pytest.raises(UsageError, match=r"group_by path 'meta\.\.x' must be dotted"):
        assay.evaluate_predictions(prediction, group_by="meta..x", output="m.json")
    with pytest.raises(TypeError, match="option group_by takes a record path or a list"):
        assay.evaluate_predictions(prediction, group_by=3, output="m.json")  # type: ignore[arg-type]
