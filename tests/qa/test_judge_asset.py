"""A QA suite that names a judge asset (``qa.judge: FILE`` or a store judge ``NAME@N``): its
rubric sees the item's fields and the answer, its verdict marks the answer right or wrong,
``task.json`` records it, ``assay evaluate`` grades again with it, and a judge that cannot
say right or wrong is refused at load with the task file's line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from tests.cli.test_run import assay, latest

from assay import report
from assay.errors import TaskFileError
from assay.judges import add_judge
from assay.orchestration.loading.task_loader import load_task
from assay.orchestration.planning.plan import PlanOptions, build_plan

ROWS = [
    {"sample_id": "q1", "story": "", "question": "when did the last crewed moon landing end",
     "answer": {"correct_answers": ["December 1972"], "wrong_answers": ["1969"]}, "meta": {}},
    {"sample_id": "q2", "story": "", "question": "who wrote 1984",
     "answer": {"correct_answers": ["George Orwell"], "wrong_answers": []}, "meta": {}},
    {"sample_id": "q3", "story": "", "question": "what is the boiling point of water at sea level",
     "answer": {"correct_answers": ["100 degrees Celsius"], "wrong_answers": []}, "meta": {}},
]  # fmt: skip

# none of these answers matches by rule: each goes to the judge
ANSWERS = """\
replies:
  - {match: "moon", reply: "it was late in 1972"}
  - {match: "1984", reply: "the author Eric Blair"}
default: "it boils at about 80 degrees"
"""

# the asset's rubric must have reached the judge with the row's fields and the answer
JUDGE_SCRIPT = r"""
replies:
  - match: 'ASSET-RUBRIC(.|\n)*Q: when did(.|\n)*Accepted: \["December 1972"\](.|\n)*Wrong:
      \["1969"\](.|\n)*Type: open(.|\n)*A: it was late in 1972'
    reply: '{"reason": "late 1972 is December 1972", "verdict": true}'
  - match: 'ASSET-RUBRIC(.|\n)*A: the author Eric Blair'
    reply: '{"reason": "Eric Blair wrote as George Orwell", "verdict": true}'
default: '{"reason": "not 100 degrees", "verdict": false}'
"""

RUBRIC = """\
ASSET-RUBRIC
Q: ${row.question}
Accepted: ${row.correct_answers}
Wrong: ${row.wrong_answers}
Type: ${row.prompt_type}
A: ${response}
"""


def judge_file(folder: Path, *, verdict: str = "{kind: binary}", rubric: str = RUBRIC) -> Path:
    (folder / "judges").mkdir(exist_ok=True)
    (folder / "judges" / "judge.yaml").write_text(JUDGE_SCRIPT)
    path = folder / "judges" / "open.yaml"
    path.write_text(
        "name: open-qa\nmodel: mock/judge.yaml\nverdict: " + verdict + "\nrubric: |\n"
        + textwrap.indent(rubric, "  ")
    )  # fmt: skip
    return path


def write_task(folder: Path, judge_block: str) -> Path:
    (folder / "rows.qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (folder / "answers.yaml").write_text(ANSWERS)
    task = folder / "task.yaml"
    task.write_text(
        textwrap.dedent("""\
        task_id: asset-judged
        description: open questions graded by a judge asset
        agent: {type: llm, model: mock/answers.yaml}
        dataset: {paths: [rows.qa.jsonl], id_field: sample_id}
        qa:
          as_open: true
        """)
        + textwrap.indent(judge_block, "  ")
    )
    return task


def suite(folder: Path) -> dict[str, object]:
    return report(latest(folder)).suite("asset-judged").metrics


def recorded_judge(folder: Path) -> dict[str, object]:
    task_json = next(latest(folder).glob("*/asset-judged/*/*/task.json"))
    judge = json.loads(task_json.read_text())["task_config"]["resolved"]["qa"]["judge"]
    assert isinstance(judge, dict)
    return judge


def test_a_judge_file_grades_the_open_answers_and_is_recorded(tmp_path: Path) -> None:
    judge_file(tmp_path)
    task = write_task(tmp_path, "judge: {judge: judges/open.yaml, check: false}\n")
    done = assay("run", str(task), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # one answer is wrong
    metrics = suite(tmp_path)
    assert metrics["accuracy"] == pytest.approx(2 / 3)
    judge = recorded_judge(tmp_path)
    asset = judge["asset"]
    assert isinstance(asset, dict)
    assert asset["name"] == "open-qa" and asset["source"].startswith("file:")
    assert len(asset["content_hash"]) == 64
    rows = report(latest(tmp_path)).suite("asset-judged").rows()
    details = {row.row_id: row.success_criteria_results[0].details for row in rows}
    assert "Eric Blair wrote as George Orwell" in details["q2"]
    assert "wrong_answer" in details["q3"] and "not 100 degrees" in details["q3"]


def test_the_short_form_names_the_judge_and_evaluate_grades_again_with_it(
    tmp_path: Path,
) -> None:
    judge_file(tmp_path)
    task = write_task(tmp_path, "judge: judges/open.yaml\n")
    done = assay("run", str(task), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert suite(tmp_path)["accuracy"] == pytest.approx(2 / 3)
    # the run's rows graded again: the recorded asset, not the task file, is the judge
    (tmp_path / "judges" / "open.yaml").unlink()
    again = assay("evaluate", str(latest(tmp_path)), cwd=tmp_path)
    assert again.returncode == 1, again.stdout + again.stderr
    assert suite(tmp_path)["accuracy"] == pytest.approx(2 / 3)
    # the suite's prediction file graded from its records
    predictions = next(latest(tmp_path).glob("*/asset-judged/prediction.jsonl"))
    out = tmp_path / "metrics.json"
    graded = assay("evaluate", str(predictions), "-o", str(out), cwd=tmp_path)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert json.loads(out.read_text())["avg_metrics"]["accuracy"] == pytest.approx(2 / 3)


def test_evaluate_with_a_task_file_resolves_its_judge(tmp_path: Path) -> None:
    judge_file(tmp_path)
    done = assay("run", str(write_task(tmp_path, "judge: {model: mock/echo}\n")), cwd=tmp_path)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    predictions = next(latest(tmp_path).glob("*/asset-judged/prediction.jsonl"))
    task = write_task(tmp_path, "judge: judges/open.yaml\n")
    out = tmp_path / "graded.json"
    graded = assay("evaluate", str(predictions), "--task", str(task), "-o", str(out),
                   cwd=tmp_path)  # fmt: skip
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert json.loads(out.read_text())["avg_metrics"]["accuracy"] == pytest.approx(2 / 3)


def test_a_store_judge_by_name_and_version(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    path = judge_file(tmp_path)
    first, _ = add_judge("open-qa", path, store=store)
    path.write_text(path.read_text().replace("ASSET-RUBRIC", "OTHER-RUBRIC"))
    second, _ = add_judge("open-qa", path, store=store)
    assert (first.version, second.version) == (1, 2)
    task = write_task(tmp_path, "judge: open-qa@1\n")
    done = assay("run", str(task), "--store", store, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert suite(tmp_path)["accuracy"] == pytest.approx(2 / 3)
    asset = recorded_judge(tmp_path)["asset"]
    assert isinstance(asset, dict)
    assert (asset["version"], asset["source"]) == (1, "store:open-qa@1")
    # a prediction file graded with a task file that names the store judge, from --store
    predictions = next(latest(tmp_path).glob("*/asset-judged/prediction.jsonl"))
    out = str(tmp_path / "graded.json")
    graded = assay("evaluate", str(predictions), "--task", str(task), "--store", store, "-o",
                   out, cwd=tmp_path)  # fmt: skip
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert json.loads(Path(out).read_text())["avg_metrics"]["accuracy"] == pytest.approx(2 / 3)
    run_dir = assay("evaluate", str(latest(tmp_path)), "--store", store, cwd=tmp_path)
    assert run_dir.returncode == 2 and "--store apply to a prediction.jsonl" in run_dir.stderr
    # the latest version's rubric is not the one the judge script accepts
    task = write_task(tmp_path, "judge: open-qa\n")
    done = assay("run", str(task), "--store", store, cwd=tmp_path)
    assert done.returncode == 1 and suite(tmp_path)["accuracy"] == 0.0


def test_a_labels_judge_passes_its_pass_labels(tmp_path: Path) -> None:
    judge_file(tmp_path, verdict="{kind: labels, labels: [right, close, wrong], "
                                 "pass_labels: [right, close]}")  # fmt: skip
    script = (tmp_path / "judges" / "judge.yaml").read_text()
    script = script.replace('"verdict": true}', '"label": "close"}')
    script = script.replace('"verdict": false}', '"label": "wrong"}')
    (tmp_path / "judges" / "judge.yaml").write_text(script)
    task = write_task(tmp_path, "judge: judges/open.yaml\n")
    done = assay("run", str(task), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert suite(tmp_path)["accuracy"] == pytest.approx(2 / 3)


def test_an_unreadable_verdict_is_a_judge_error_outside_accuracy(tmp_path: Path) -> None:
    judge_file(tmp_path)
    (tmp_path / "judges" / "judge.yaml").write_text('default: "I think it is fine"\n')
    task = write_task(tmp_path, "judge: judges/open.yaml\n")
    done = assay("run", str(task), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    result = report(latest(tmp_path)).suite("asset-judged")
    assert {row.final_status for row in result.rows()} == {"ERROR"}
    assert "accuracy" not in result.metrics or result.metrics["accuracy"] is None
    # the sanity probes got no verdict either, and the warning says so in words
    assert "'Paris' judged a judge error" in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("verdict", "rubric", "message"),
    [
        ("{kind: scale, min: 1, max: 5}", RUBRIC, "a QA answer is right or wrong"),
        ("{kind: labels, labels: [a, b]}", RUBRIC, "add pass_labels"),
        ("{kind: binary}", "Q: ${row.meta}\nA: ${response}\n",
         "uses ${row.meta}, which a QA item does not have"),
    ],
)  # fmt: skip
def test_a_judge_that_cannot_grade_qa_is_refused_at_the_qa_judge_line(
    tmp_path: Path, verdict: str, rubric: str, message: str
) -> None:
    judge_file(tmp_path, verdict=verdict, rubric=rubric)
    task = write_task(tmp_path, "judge: judges/open.yaml\n")
    with pytest.raises(TaskFileError) as caught:
        build_plan([str(task)], PlanOptions())
    assert message in caught.value.message
    assert (caught.value.field, caught.value.line) == ("qa.judge", 7)
    done = assay("plan", str(task), cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("judge: {judge: judges/open.yaml, model: mock/echo}\n", "whose model is its own"),
        ("judge: {judge: judges/open.yaml, retries: 4, prompt: '${response}'}\n",
         "remove retries, prompt"),
        ("judge: {check: false}\n", "needs a model"),
        ("judge: 'not a name!'\n", "neither a judge file"),
        ("judge: {judge: judges/open.yaml, asset: {}}\n", "written by assay"),
    ],
)  # fmt: skip
def test_a_bad_qa_judge_block_is_refused_at_load(tmp_path: Path, block: str,
                                                 message: str) -> None:  # fmt: skip
    judge_file(tmp_path)
    with pytest.raises(TaskFileError) as caught:
        load_task(write_task(tmp_path, block))
    assert message in str(caught.value)
    assert caught.value.line is not None and caught.value.line >= 6


def test_a_missing_judge_file_and_an_unknown_store_judge_name_the_line(tmp_path: Path) -> None:
    task = write_task(tmp_path, "judge: judges/nowhere.yaml\n")
    with pytest.raises(TaskFileError) as caught:
        build_plan([str(task)], PlanOptions())
    assert "judge file not found: judges/nowhere.yaml" in caught.value.message
    assert caught.value.field == "qa.judge"
    store = f"sqlite:///{tmp_path / 'store.db'}"
    add_judge("open-qa", judge_file(tmp_path), store=store)
    task = write_task(tmp_path, "judge: open-qa@7\n")
    done = assay("plan", str(task), "--store", store, cwd=tmp_path)
    assert done.returncode == 2 and "open-qa" in done.stderr and "qa.judge" in done.stderr


def test_the_sanity_check_asks_the_judge_asset_itself(tmp_path: Path) -> None:
    judge_file(tmp_path)  # its script rejects every probe: "Paris" is judged wrong
    task = write_task(tmp_path, "judge: judges/open.yaml\n")
    done = assay("run", str(task), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "judge open-qa (sha256 " in said and "failed its sanity check" in said
    assert "'Paris' judged False" in said and "'Berlin' judged" not in said
    script = (tmp_path / "judges" / "judge.yaml").read_text()
    probes = (
        "  - match: 'ASSET-RUBRIC(.|\\n)*capital of France(.|\\n)*A: (The capital of France is )?"
        'Paris\'\n    reply: \'{"reason": "right", "verdict": true}\'\n'
    )
    (tmp_path / "judges" / "judge.yaml").write_text(
        script.replace("replies:\n", "replies:\n" + probes)
    )
    done = assay("run", str(task), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sanity check" not in done.stdout + done.stderr


def test_the_example_judge_asset_can_judge_qa_answers(tmp_path: Path) -> None:
    from assay.judges.assets import JudgeResolver
    from assay.judges.prompt import rubric_fields
    from assay.qa.open_judge import asset_problem

    example = Path(__file__).resolve().parents[2] / "examples" / "qa" / "judges"
    resolver = JudgeResolver(store_url=f"sqlite:///{tmp_path / 'none.db'}")
    asset = resolver.named_asset("open-answer.yaml", base_dir=example)
    assert asset.name == "open-answer" and asset_problem(asset) is None
    assert len(asset.definition.few_shot) == 2
    # the fields a QA run's rows added to a dataset have: it calibrates on them as it grades
    assert rubric_fields(asset.definition.rubric) <= {"question", "story", "answer"}


def test_the_plan_names_the_qa_judge(tmp_path: Path) -> None:
    judge_file(tmp_path)
    done = assay("plan", str(write_task(tmp_path, "judge: judges/open.yaml\n")), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "qa judge: open-qa (sha256 " in done.stdout
    assert "); model mock/judge.yaml" in done.stdout


def test_the_reports_name_the_asset_and_keep_its_failed_sanity_check(tmp_path: Path) -> None:
    judge_file(tmp_path)  # rejects every probe: the sanity check fails
    done = assay("run", str(write_task(tmp_path, "judge: judges/open.yaml\n")), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    folder = next(latest(tmp_path).glob("*/asset-judged"))
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["judge"].startswith("open-qa (sha256 ")
    assert metrics["judge"].endswith(") on mock/judge.yaml")
    assert len(metrics["judge_warnings"]) == 1 and "sanity check" in metrics["judge_warnings"][0]
    summary = (folder / "suite.md").read_text()
    assert "judge: `open-qa (sha256 " in summary and "rules only" not in summary


def test_a_resumed_run_keeps_the_store_judge_version_it_started_with(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    path = judge_file(tmp_path)
    script = tmp_path / "judges" / "judge.yaml"
    good = script.read_text()
    script.write_text('default: "no verdict here"\n')  # every row a judge_error
    add_judge("open-qa", path, store=store)
    task = write_task(tmp_path, "judge: {judge: open-qa, check: false}\n")
    done = assay("run", str(task), "--store", store, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    script.write_text(good)
    path.write_text(path.read_text().replace("ASSET-RUBRIC", "OTHER-RUBRIC"))
    assert add_judge("open-qa", path, store=store)[0].version == 2
    again = assay("run", "--resume", str(latest(tmp_path)), "--retry-errors", "--store", store,
                  cwd=tmp_path)  # fmt: skip
    assert again.returncode == 1, again.stdout + again.stderr
    assert suite(tmp_path)["accuracy"] == pytest.approx(2 / 3)  # version 1's rubric


def test_a_resume_after_the_judge_file_changed_names_the_judge(tmp_path: Path) -> None:
    path = judge_file(tmp_path)
    script = tmp_path / "judges" / "judge.yaml"
    script.write_text('default: "no verdict here"\n')
    task = write_task(tmp_path, "judge: {judge: judges/open.yaml, check: false}\n")
    assert assay("run", str(task), cwd=tmp_path).returncode == 1
    path.write_text(path.read_text().replace("ASSET-RUBRIC", "OTHER-RUBRIC"))
    again = assay("run", "--resume", str(latest(tmp_path)), "--retry-errors", cwd=tmp_path)
    assert again.returncode == 2
    assert "judge open-qa (file:" in again.stderr and "has content hash" in again.stderr
    assert "restore the judge as it was" in again.stderr


def test_an_even_number_of_samples_is_warned_about(tmp_path: Path) -> None:
    path = judge_file(tmp_path)
    path.write_text(path.read_text() + "samples: 2\n")
    done = assay("plan", str(write_task(tmp_path, "judge: judges/open.yaml\n")), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "task.yaml:7: qa.judge: judge open-qa takes the majority of 2 samples" in done.stderr


def test_a_literal_placeholder_in_the_rubric_is_not_a_field(tmp_path: Path) -> None:
    judge_file(tmp_path, rubric=RUBRIC + "Write $${row.foo} literally.\n")
    done = assay("plan", str(write_task(tmp_path, "judge: judges/open.yaml\n")), cwd=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("judge: {judge: judges/open.yaml, retries: 2}\n", "whose retries is its own"),
        ("judge: {judge: judges/open.yaml, cache: false}\n", "whose cache is its own"),
    ],
)
def test_an_asset_setting_written_with_its_default_value_is_refused(
    tmp_path: Path, block: str, message: str
) -> None:
    judge_file(tmp_path)
    with pytest.raises(TaskFileError, match=message):
        load_task(write_task(tmp_path, block))


def test_a_rubric_that_asks_for_files_is_refused(tmp_path: Path) -> None:
    judge_file(tmp_path, rubric=RUBRIC + "${files}\n")
    with pytest.raises(TaskFileError, match=r"places \$\{files\}, and a QA answer has no files"):
        build_plan([str(write_task(tmp_path, "judge: judges/open.yaml\n"))], PlanOptions())


def test_evaluate_says_an_assets_settings_are_its_own(tmp_path: Path) -> None:
    judge_file(tmp_path)
    task = write_task(tmp_path, "judge: judges/open.yaml\n")
    assert assay("run", str(task), cwd=tmp_path).returncode == 1
    predictions = next(latest(tmp_path).glob("*/asset-judged/prediction.jsonl"))
    for flag in (["--judge-retries", "0"], ["--include-story"]):
        done = assay("evaluate", str(predictions), "-o", str(tmp_path / "m.json"), *flag,
                     cwd=tmp_path)  # fmt: skip
        assert done.returncode == 2
        assert "the judge is the judge asset open-qa" in done.stderr
        assert "give --judge MODEL" in done.stderr
    done = assay("evaluate", str(predictions), "-o", str(tmp_path / "m.json"), "--judge",
                 "open-qa@1", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and "must be named provider/name" in done.stderr


def test_a_version_too_large_for_the_store_is_no_version(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    add_judge("open-qa", judge_file(tmp_path), store=store)
    task = write_task(tmp_path, "judge: open-qa@99999999999999999999\n")
    done = assay("plan", str(task), "--store", store, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "judge 'open-qa' has no version 99999999999999999999 (versions 1 to 1)" in done.stderr


def test_evaluate_says_which_judge_graded_or_that_none_did(tmp_path: Path) -> None:
    judge_file(tmp_path)
    task = write_task(tmp_path, "judge: judges/open.yaml\n")
    assert assay("run", str(task), cwd=tmp_path).returncode == 1
    predictions = next(latest(tmp_path).glob("*/asset-judged/prediction.jsonl"))
    out = str(tmp_path / "m.json")
    done = assay("evaluate", str(predictions), "-o", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "; judge: open-qa (sha256 " in done.stdout
    alone = tmp_path / "elsewhere" / "prediction.jsonl"  # out of its run: no settings
    alone.parent.mkdir()
    alone.write_bytes(predictions.read_bytes())
    done = assay("evaluate", str(alone), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "settings: defaults; judge: none: the rules alone graded" in done.stdout
    assert json.loads((alone.parent / "metrics.json").read_text())["avg_metrics"]["accuracy"] == 0


def test_a_qa_judge_is_calibrated_on_labelled_qa_rows_and_then_named(tmp_path: Path) -> None:
    """Rows shaped like QA items (the answer lists as lists) fill the rubric as JSON, as a
    QA item does; the calibrated judge then grades the suite and the plan says so."""
    store = f"sqlite:///{tmp_path / 'store.db'}"
    labelled = [
        {"id": "a", "question": "when did the last crewed moon landing end", "story": "",
         "correct_answers": ["December 1972"], "wrong_answers": ["1969"],
         "prompt_type": "open", "answer": "it was late in 1972", "label": "yes"},
        {"id": "b", "question": "what is the boiling point of water at sea level",
         "story": "", "correct_answers": ["100 degrees Celsius"], "wrong_answers": [],
         "prompt_type": "open", "answer": "it boils at about 80 degrees", "label": "no"},
    ]  # fmt: skip
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in labelled))
    add_judge("open-qa", judge_file(tmp_path), store=store)
    steps = [
        ("dataset", "import", "qa-labels", "labels.jsonl", "--store", store),
        ("judge", "calibrate", "open-qa", "--dataset", "qa-labels", "--label", "label",
         "--output-field", "answer", "-o", "cal", "--store", store),
    ]  # fmt: skip
    for step in steps:
        done = assay(*step, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    assert report["rows_compared"] == 2 and report["agreement"]["value"] == 1.0
    task = write_task(tmp_path, "judge: {judge: open-qa, check: false}\n")
    done = assay("plan", str(task), "--store", store, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "qa judge: open-qa@1 (sha256 " in done.stdout
    assert "), calibrated; model mock/judge.yaml" in done.stdout


def test_few_shot_lists_are_shown_as_json_like_the_items(tmp_path: Path) -> None:
    path = judge_file(tmp_path)
    path.write_text(
        path.read_text()
        + "few_shot:\n  - row: {question: q, correct_answers: [Orwell], wrong_answers: [],\n"
        + "          story: '', prompt_type: open}\n    response: Orwell\n    verdict: true\n"
    )
    task = write_task(tmp_path, "judge: {judge: judges/open.yaml, check: false}\n")
    done = assay("run", str(task), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert suite(tmp_path)["accuracy"] == pytest.approx(2 / 3)


ANSWER_RUBRIC = "ASSET-RUBRIC\nQ: ${row.question}\nAnswers: ${row.answer}\nA: ${response}\n"


def test_a_qa_runs_rows_added_to_a_dataset_calibrate_its_judge(tmp_path: Path) -> None:
    """``${row.answer}`` is the QA schema's answer mapping, as a QA row keeps it: the judge
    reads a run's rows added to a dataset (`assay dataset add-run`) as it read the items."""
    script = (
        "replies:\n"
        '  - match: \'Answers: \\{"correct_answers": \\["December 1972"\\], "wrong_answers":'
        ' \\["1969"\\]\\}\\nA: it was late in 1972\'\n'
        '    reply: \'{"reason": "same year", "verdict": true}\'\n'
        "  - match: 'George Orwell(.|\\n)*A: the author Eric Blair'\n"
        '    reply: \'{"reason": "pen name", "verdict": true}\'\n'
        'default: \'{"reason": "no", "verdict": false}\'\n'
    )
    judge_file(tmp_path, rubric=ANSWER_RUBRIC)
    (tmp_path / "judges" / "judge.yaml").write_text(script)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    task = write_task(tmp_path, "judge: {judge: judges/open.yaml, check: false}\n")
    done = assay("run", str(task), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert suite(tmp_path)["accuracy"] == pytest.approx(2 / 3)
    steps = [("dataset", "add-run", "qa-rows", str(latest(tmp_path)), "--store", store),
             ("dataset", "export", "qa-rows", "-o", "rows.jsonl", "--store", store)]  # fmt: skip
    for step in steps:
        done = assay(*step, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    human = {"q1": "yes", "q2": "no", "q3": "no"}  # a reviewer who rejects the pen name
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert isinstance(rows[0]["answer"], dict)
    labelled = [{**row, "label": human[row["id"]]} for row in rows]
    (tmp_path / "labelled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in labelled))
    steps = [("dataset", "import", "qa-labels", "labelled.jsonl", "--store", store),
             ("judge", "add", "open-qa", "judges/open.yaml", "--store", store),
             ("judge", "calibrate", "open-qa", "--dataset", "qa-labels", "--label", "label",
              "--output-field", "actual_output", "-o", "cal", "--store", store)]  # fmt: skip
    for step in steps:
        done = assay(*step, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    assert report["rows_compared"] == 3 and report["agreement"]["value"] == pytest.approx(2 / 3)


def test_what_is_not_a_judge_file_is_named_as_such(tmp_path: Path) -> None:
    judge_file(tmp_path)
    (tmp_path / "judges" / "latin1.yaml").write_bytes(b"model: mock/judge.yaml\nrubric: caf\xe9\n")
    (tmp_path / "judges" / "folder.yaml").mkdir()
    cases = [
        ("task.yaml", "this is a task file (it has task_id), not a judge file"),
        ("judges/latin1.yaml", "judge file is not UTF-8 text"),
        ("judges/folder.yaml", "expected a YAML judge file but got a directory"),
        ("/dev/null", "a judge file must be a regular file"),
    ]
    for reference, message in cases:
        task = write_task(tmp_path, f"judge: {reference}\n")
        done = assay("plan", str(task), cwd=tmp_path)
        assert done.returncode == 2 and message in done.stderr, (reference, done.stderr)


def test_a_field_of_the_short_form_is_set_on_the_command_line(tmp_path: Path) -> None:
    judge_file(tmp_path)
    task = write_task(tmp_path, "judge: judges/open.yaml\n")
    done = assay("run", str(task), "-D", "qa.judge.check=false", "-D", "qa.judge.rules=false",
                 cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sanity check" not in done.stdout + done.stderr  # check: false took effect
    judge = recorded_judge(tmp_path)
    assert (judge["judge"], judge["check"], judge["rules"]) == ("judges/open.yaml", False, False)
    done = assay("plan", str(task), "-D", "qa.judge.retries=3", cwd=tmp_path)
    assert done.returncode == 2 and "whose retries is its own" in done.stderr
