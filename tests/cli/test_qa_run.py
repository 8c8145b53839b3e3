"""QA tasks end to end, as a user runs them: a `qa:` task file over QA rows, a real answering
program (a command agent), a scripted judge, and the files the stages write."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_run import assay, latest, suite_json
from tests.helpers import write

ANSWERER = r"""
import os, re, sys
prompt = sys.stdin.read()
with open(os.path.join(os.environ["ASSAY_TASK_DIR"], "calls.log"), "a") as log:
    log.write(os.environ["ASSAY_ROW_ID"] + "\n")
question = re.search(r"Question:\n(.*)\n", prompt).group(1)
if "Options:" in prompt:
    if "Pick one" in question:
        print("I like turtles")
        sys.exit(0)
    letters = [m.group(1) for m in re.finditer(r"(?m)^([A-Z])\. (.*)$", prompt)
               if m.group(2) in ("Paris", "2", "4")]
    print("\\boxed{" + ",".join(letters) + "}")
    sys.exit(0)
answers = {
    "When did people last walk on the moon?": "in the early seventies",
    "What does the template print?": "It prints ${row.x} {story} literally",
    "Who is the king of the Moon?": "The story does not say.",
    "What is hard?": "hmm maybe",
}
if question == "Crash please?":
    sys.exit(3)
print(answers[question])
"""

JUDGE = r"""
replies:
  - match: "Model response:\\nin the early seventies"
    reply: '{"is_correct": true, "reason": "1972 is in the early seventies"}'
  - match: "Model response:\\nIt prints \\$\\{row\\.x\\} \\{story\\} literally"
    reply: '{"is_correct": true, "reason": "same text"}'
  - match: "Model response:\\nhmm maybe"
    reply: "not json"
  - match: "could not be read"
    reply: "still not json"
default: '{"is_correct": false, "reason": "no"}'
"""

ROWS = [
    {"sample_id": "fr", "story": "France's capital is Paris.",
     "question": "What is the capital of France?",
     "answer": {"correct_answers": ["Paris"], "wrong_answers": ["Berlin", "Madrid", "Rome"]},
     "meta": {"ability": "geo"}},
    {"sample_id": "even", "story": "", "question": "Which numbers are even?",
     "answer": {"correct_answers": ["2", "4"], "wrong_answers": ["3", "5"]},
     "meta": {"ability": "math"}},
    {"sample_id": "moon", "story": "", "question": "When did people last walk on the moon?",
     "answer": {"correct_answers": ["December 1972"], "wrong_answers": []},
     "meta": {"ability": "history"}},
    {"sample_id": "braces", "story": "", "question": "What does the template print?",
     "answer": {"correct_answers": ["the placeholder text"], "wrong_answers": []},
     "meta": {"ability": "geo"}},
    {"sample_id": "nope", "story": "The Moon has no people.",
     "question": "Who is the king of the Moon?",
     "answer": {"correct_answers": [], "wrong_answers": ["Bob"]},
     "meta": {"ability": "history", "unanswerable": True}},
    {"sample_id": "junk", "story": "", "question": "Pick one",
     "answer": {"correct_answers": ["yes"], "wrong_answers": ["no"]}, "meta": {}},
    {"sample_id": "hard", "story": "", "question": "What is hard?",
     "answer": {"correct_answers": ["diamond"], "wrong_answers": []}, "meta": {"ability": "geo"}},
    {"sample_id": "crash", "story": "", "question": "Crash please?",
     "answer": {"correct_answers": ["ok"], "wrong_answers": []}, "meta": {"ability": "geo"}},
]  # fmt: skip

HOOK = """
def compute_metrics(records, per_sample_results):
    graded = [r for r in per_sample_results if r["is_correct"] is not None]
    correct = sum(1 for r in graded if r["is_correct"])
    return {"accuracy": correct / len(graded), "correct": correct, "total": len(records),
            "per_sample_results": per_sample_results, "records_seen": len(records)}
"""

TASK = f"""
task_id: qa-demo
description: the QA pipeline end to end
agent: {{type: command, command: '{sys.executable} "$ASSAY_TASK_DIR/answerer.py"'}}
dataset: {{paths: [qa.jsonl]}}
repeats: 2
qa:
  group_by: [meta.ability]
  judge: {{model: mock/judge.yaml, retries: 1, check: false}}
  metrics_hook: metrics.py
success_criteria:
  - type: qa
    suite_thresholds: {{accuracy: 0.8}}
"""


def make_task(folder: Path, *, task: str = TASK, hook: str = HOOK) -> Path:
    write(folder / "answerer.py", ANSWERER)
    write(folder / "judge.yaml", JUDGE)
    write(folder / "metrics.py", hook)
    write(folder / "qa.jsonl", "".join(json.dumps(row) + "\n" for row in ROWS))
    return write(folder / "task.yaml", task)


def suite_folder(cwd: Path) -> Path:
    return latest(cwd) / "default" / "qa-demo"


def predictions(cwd: Path) -> list[dict[str, Any]]:
    text = (suite_folder(cwd) / "prediction.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def metrics(cwd: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((suite_folder(cwd) / "metrics.json").read_text())
    return data


@pytest.fixture(scope="module")
def qa_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("qa")
    make_task(cwd / "t")
    done = assay("run", "t/task.yaml", cwd=cwd)
    # the accuracy gate passes, but rows errored and the suite does not gate completion_rate
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gate PASSED · FAILED (4 row(s) errored, and the suite does not gate " in done.stdout
    return cwd


def test_metrics_per_replicate(qa_run: Path) -> None:
    document = metrics(qa_run)
    assert [m["total"] for m in document["all_metrics"]] == [8, 8]
    for replicate in document["all_metrics"]:
        # graded = 8 - 1 judge error - 1 answer error; wrong: only the unreadable letter
        assert (replicate["correct"], replicate["graded"]) == (5, 6)
        assert replicate["accuracy"] == pytest.approx(5 / 6)
        assert (replicate["judge_errors"], replicate["answer_errors"]) == (1, 1)
        assert replicate["extraction_failed"] == 1
        assert replicate["records_seen"] == 8  # from the metrics hook
        assert replicate["by_ability"] == {"geo": 1.0, "history": 1.0, "math": 1.0,
                                           "unknown": 0.0}  # fmt: skip
        # graded per key (the accuracy's denominator): geo's judge and answer errors are out
        assert replicate["by_ability_counts"] == {"geo": 2, "history": 2, "math": 1, "unknown": 1}
        assert replicate["extraction_failed_rate"] == pytest.approx(1 / 6)  # of the graded
        low, high = replicate["accuracy_ci"]["low"], replicate["accuracy_ci"]["high"]
        assert low == pytest.approx(0.4365, abs=1e-4) and high == pytest.approx(0.9699, abs=1e-4)
    assert document["avg_metrics"]["accuracy"] == pytest.approx(5 / 6)
    assert "per_sample_results" not in document["avg_metrics"]
    reasons = {r["sample_id"]: r["error_reason"] for r in document["all_metrics"][0]
               ["per_sample_results"]}  # fmt: skip
    assert reasons == {"fr": None, "even": None, "moon": None, "braces": None, "nope": None,
                       "junk": "extraction_failed", "hard": "judge_error",
                       "crash": "answer_error"}  # fmt: skip


def test_suite_agrees_with_metrics_and_gates(qa_run: Path) -> None:
    suite = suite_json(latest(qa_run), "qa-demo")
    aggregate = suite["criterion_aggregates"][0]
    assert aggregate["metrics"]["accuracy"] == pytest.approx(10 / 12)
    assert aggregate["metrics"]["extraction_failed_rate"] == pytest.approx(2 / 12)
    assert aggregate["threshold_checks"][0]["passed"] is True
    assert (suite["rows_error"], suite["rows_passed"], suite["rows_failed"]) == (4, 10, 2)
    hard = json.loads((suite_folder(qa_run) / "hard" / "00" / "task.json").read_text())
    assert hard["final_status"] == "ERROR"
    assert hard["error_message"].startswith("judge_error: unparseable verdict")
    markdown = (suite_folder(qa_run) / "suite.md").read_text()
    assert "## QA metrics" in markdown and "| 0 | 0.833 | [0.436, 0.970] | 5 / 6 |" in markdown
    # the pooled row's counts are the totals over both replicates, not mean counts; the
    # mean of the replicates' accuracies has no interval or counts of its own
    assert "| pooled | 0.833 | [" in markdown and "| 10 / 12 | 2 | " in markdown
    assert "| mean of replicates | 0.833 | — | — |" in markdown
    assert "they differ here" not in markdown  # both replicates graded 6
    assert "| `geo` | 1.000 | 4 |" in markdown  # graded over both replicates (2 each)
    assert "### Metrics hook" in markdown
    assert "| `records_seen` | 8.000 | 8.000, 8.000 |" in markdown


def test_prediction_records(qa_run: Path) -> None:
    records = predictions(qa_run)
    assert [(r["repeat"], r["sample_id"]) for r in records][:3] == [
        (0, "fr"), (0, "even"), (0, "moon")]  # fmt: skip
    assert len(records) == 16
    fr0, fr1 = records[0], records[8]
    assert fr0["prompt_type"] == "mcq_single" and fr0["dataset"] == "qa-demo"
    assert set(fr0["options"].values()) == {"Paris", "Berlin", "Madrid", "Rome"}
    assert fr0["options"][fr0["correct_letters"][0]] == "Paris"
    assert fr0["pred"]["content"].strip() == "\\boxed{" + fr0["correct_letters"][0] + "}"
    assert fr0["shuffle_seed"] != fr1["shuffle_seed"]
    crash = next(r for r in records if r["sample_id"] == "crash")
    assert crash["pred"]["content"] is None and "exited with code 3" in crash["error"]
    braces = next(r for r in records if r["sample_id"] == "braces")
    assert "${row.x} {story}" in braces["pred"]["content"]
    nope = next(r for r in records if r["sample_id"] == "nope")
    assert nope["prompt_type"] == "open_unanswerable"


def test_option_order_differs_by_replicate_and_repeats_across_runs(tmp_path: Path) -> None:
    make_task(tmp_path / "t")
    first = assay("run", "t/task.yaml", cwd=tmp_path)
    assert first.returncode == 1, first.stderr  # rows errored; completion_rate is not gated
    prompts = [(r["sample_id"], r["repeat"], r["prompt"]) for r in predictions(tmp_path)]
    second = assay("run", "t/task.yaml", cwd=tmp_path)
    assert second.returncode == 1, second.stderr
    assert [(r["sample_id"], r["repeat"], r["prompt"]) for r in predictions(tmp_path)] == prompts
    orders = {}
    for record in predictions(tmp_path):
        if record["options"]:
            orders.setdefault(record["sample_id"], []).append(tuple(record["options"].values()))
    assert any(len(set(order)) > 1 for order in orders.values())


def test_evaluate_a_prediction_file_reproduces_the_metrics(qa_run: Path) -> None:
    before = (qa_run / "t" / "calls.log").read_text()
    out = qa_run / "again.json"
    done = assay("evaluate", str(suite_folder(qa_run) / "prediction.jsonl"), "-o", str(out),
                 cwd=qa_run)  # fmt: skip
    # `assay run`'s rule for rows: the judge errors and the crashed answers exit 1, as the
    # run did (no gate of completion_rate here), and the summary says how many graded
    assert done.returncode == 1, done.stderr
    assert "replicate 0: accuracy 0.833 [0.436, 0.970] · correct 5/6 graded of 8" in done.stdout
    assert "16 records read, 12 graded;" in done.stdout
    assert "exit 1: 4 record(s) did not grade (answer or judge errors, refusals)" in done.stdout
    again = json.loads(out.read_text())
    assert again["all_metrics"] == metrics(qa_run)["all_metrics"]
    assert (qa_run / "t" / "calls.log").read_text() == before  # the answerer was not asked


def test_evaluate_a_prediction_file_refuses_an_output_that_is_a_folder(qa_run: Path) -> None:
    (qa_run / "adir").mkdir()
    done = assay("evaluate", str(suite_folder(qa_run) / "prediction.jsonl"), "-o", "adir",
                 cwd=qa_run)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == "error: --output adir is a folder; give a file name\n"


def test_evaluate_a_copied_prediction_file_with_flags(qa_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "prediction.jsonl"
    shutil.copy(suite_folder(qa_run) / "prediction.jsonl", copy)
    done = assay("evaluate", str(copy), "--group-by", "meta.ability", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # the crashed answers did not grade
    document = json.loads((tmp_path / "metrics.json").read_text())
    first = document["all_metrics"][0]
    # no judge: the open answers the rules cannot match are wrong (exact match), not errors
    assert (first["correct"], first["graded"], first["judge_errors"]) == (3, 7, 0)
    assert first["by_ability"]["math"] == 1.0 and document["judge"] is None


def test_execute_then_evaluate(tmp_path: Path) -> None:
    make_task(tmp_path / "t")
    done = assay("execute", "t/task.yaml", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # rows errored; completion_rate is not gated
    assert len(predictions(tmp_path)) == 16
    assert not (suite_folder(tmp_path) / "metrics.json").exists()
    calls = (tmp_path / "t" / "calls.log").read_text()
    write(tmp_path / "t" / "judge.yaml", JUDGE.replace('reply: "not json"',
          """reply: '{"is_correct": false, "reason": "vague"}'"""))  # fmt: skip
    graded = assay("evaluate", "runs/latest", cwd=tmp_path)
    assert graded.returncode == 1, graded.stdout + graded.stderr  # 5/7 misses the 0.8 gate
    assert (tmp_path / "t" / "calls.log").read_text() == calls
    first = metrics(tmp_path)["all_metrics"][0]
    assert (first["correct"], first["graded"], first["judge_errors"]) == (5, 7, 0)
    hard = json.loads((suite_folder(tmp_path) / "hard" / "00" / "task.json").read_text())
    assert hard["final_status"] == "FAILURE" and hard["error_message"] is None


def test_a_bad_metrics_hook_is_named_after_every_row_is_kept(tmp_path: Path) -> None:
    make_task(tmp_path / "t", hook="def compute_metrics(records, results):\n    return {}\n")
    done = assay("run", "t/task.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "compute_metrics returned a dict without accuracy, correct, total, per_sample_results" \
        in done.stderr  # fmt: skip
    folder = suite_folder(tmp_path)
    assert (folder / "suite.json").is_file() and (folder / "prediction.jsonl").is_file()
    assert "**Not written**: the metrics hook failed: " in (folder / "suite.md").read_text()
    assert len(list(folder.glob("*/*/task.json"))) == 16
    write(tmp_path / "t" / "metrics.py", HOOK)
    rebuilt = assay("report", "runs/latest", cwd=tmp_path)
    assert rebuilt.returncode == 1, rebuilt.stderr  # written; rows errored, no completion gate
    assert metrics(tmp_path)["all_metrics"][0]["records_seen"] == 8


def test_a_judge_that_accepts_anything_is_flagged(tmp_path: Path) -> None:
    task = TASK.replace("check: false", "check: true")
    make_task(tmp_path / "t", task=task)
    write(tmp_path / "t" / "judge.yaml", 'default: \'{"is_correct": true, "reason": "ok"}\'\n')
    done = assay("run", "t/task.yaml", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # an answer error; completion_rate is not gated
    message = (
        "judge mock/judge.yaml failed its sanity check (answers to 'What is the capital of "
        "France?': 'Berlin' judged True; 'I like turtles.' judged True)"
    )
    assert message in " ".join(done.stderr.split())
    run_json = json.loads((latest(tmp_path) / "run.json").read_text())
    assert sum(message in w for w in run_json["warnings"]) == 1
    assert message in " ".join(metrics(tmp_path)["judge_warnings"])
    assert "**Warning**: " + message in (suite_folder(tmp_path) / "suite.md").read_text()


def test_experiment_prompt_mutations_change_each_built_prompt(tmp_path: Path) -> None:
    task = """
task_id: qa-demo
description: mutations on built prompts
agent: {type: llm, model: mock/echo}
dataset: {paths: [qa.jsonl]}
qa: {prompt_mutations: [{type: suffix, content: TASK-SUFFIX}]}
"""
    experiment = """
experiment_id: careful
defaults:
  prompt_mutations: [{type: prefix, content: DEFAULT-PREFIX}]
variants:
  - variant_id: plain
  - variant_id: careful
    prompt_mutations:
      - {type: replace, pattern: "Story:", replacement: "TALE:"}
"""
    write(tmp_path / "qa.jsonl", json.dumps(ROWS[0]) + "\n")
    write(tmp_path / "task.yaml", task)
    write(tmp_path / "careful.yaml", experiment)
    done = assay("run", "task.yaml", "-e", "careful.yaml", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # no gate, and every row failed
    assert "no gate · FAILED (no gate, and 1 failed (every row must succeed))" in done.stdout
    for variant, tale in (("plain", False), ("careful", True)):
        folder = latest(tmp_path) / variant / "qa-demo"
        (record,) = [json.loads(line) for line in (folder / "prediction.jsonl").open()]
        prompt = record["prompt"]
        assert prompt.startswith("DEFAULT-PREFIX\n\n") and prompt.endswith("\n\nTASK-SUFFIX")
        assert ("TALE:" in prompt) is tale and ("Story:" in prompt) is not tale
        assert record["raw_prediction"] == prompt  # the echo model saw the mutated prompt
    report = json.loads((latest(tmp_path) / "experiment.json").read_text())
    for variant in report["variants"]:  # echo repeats the prompt: no letter, accuracy 0 of 1
        accuracy = variant["metrics"]["qa.accuracy"]
        found = (accuracy["value"], accuracy["method"], accuracy["rows"], accuracy["clusters"])
        assert found == (0.0, "cluster exact", 1, 1)
        assert "at least 2 clusters" in accuracy["reason"]
    plan = assay("plan", "task.yaml", "-e", "careful.yaml", cwd=tmp_path)
    assert "qa.prompt_mutations" in plan.stdout and "variant" in plan.stdout


def test_evaluate_with_other_settings_never_replaces_a_runs_metrics(qa_run: Path) -> None:
    target = suite_folder(qa_run) / "metrics.json"
    before = target.read_text()
    prediction = str(suite_folder(qa_run) / "prediction.jsonl")
    done = assay("evaluate", prediction, "--group-by", "meta.other", cwd=qa_run)
    assert done.returncode == 2
    assert "belongs to the run; grading with other settings would replace it" in done.stderr
    assert target.read_text() == before
    same = assay("evaluate", prediction, cwd=qa_run)  # the run's own settings: same metrics
    assert same.returncode == 1, same.stderr  # its errored rows, as the run's exit
    rewritten, original = json.loads(target.read_text()), json.loads(before)
    assert list(rewritten) == list(original)  # the same keys, in the same order
    for key in ("suite_id", "variant_id", "dataset", "judge", "judge_warnings", "all_metrics"):
        assert rewritten[key] == original[key], key
    spelled = assay("evaluate", prediction, "--group-by", "meta.ability", "--judge-retries", "1",
                    cwd=qa_run)  # the run's settings again, given as flags  # fmt: skip
    assert spelled.returncode == 1, spelled.stderr
    assert json.loads(target.read_text())["all_metrics"] == json.loads(before)["all_metrics"]


def test_evaluate_with_the_task_names_what_the_file_leaves_out(qa_run: Path) -> None:
    lines = (suite_folder(qa_run) / "prediction.jsonl").read_text().splitlines()
    first = [json.loads(line) for line in lines if json.loads(line)["repeat"] == 0]
    renamed = {**first[3], "sample_id": "zzz"}
    part = [json.dumps(record) for record in [*first[:3], renamed]]
    write(qa_run / "part.jsonl", "\n".join(part) + "\n")
    done = assay("evaluate", "part.jsonl", "--task", "t/task.yaml", "-o", "part.json",
                 cwd=qa_run)  # fmt: skip
    assert "replicate 0 has no prediction for 5 of the task's 8 samples" in done.stderr
    assert "1 sample id(s) are not in the task's samples (e.g. 'zzz')" in done.stderr
    assert "4 records read" in done.stdout


def test_a_cut_prediction_file_in_its_run_folder_names_what_it_lost(qa_run: Path) -> None:
    """Inside a run folder, the run's rows are known: a truncated file was graded quietly."""
    suite = suite_folder(qa_run)
    original = (suite / "prediction.jsonl").read_text()
    try:
        (suite / "prediction.jsonl").write_text("".join(original.splitlines(True)[:5]))
        done = assay("evaluate", str(suite / "prediction.jsonl"), "-o", "cut.json", cwd=qa_run)
    finally:
        (suite / "prediction.jsonl").write_text(original)
    assert "replicate 0 has no prediction for 3 of the run's 8 samples" in done.stderr


def test_prediction_files_read_as_datasets_are_read(qa_run: Path) -> None:
    text = (suite_folder(qa_run) / "prediction.jsonl").read_bytes()
    write(qa_run / "bom.jsonl", "")
    (qa_run / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + text)  # a BOM, as Excel saves it
    done = assay("evaluate", "bom.jsonl", "-o", "bom.json", cwd=qa_run)
    assert done.returncode == 1, done.stderr  # graded: its errored rows exit 1, as the run
    assert "16 records read" in done.stdout
    second = text.splitlines(keepends=True)
    (qa_run / "latin.jsonl").write_bytes(
        second[0] + second[1].replace(b'"question": "', b'"question": "\xe9', 1)
    )
    latin = assay("evaluate", "latin.jsonl", "-o", "latin.json", cwd=qa_run)
    assert latin.returncode == 2
    assert latin.stderr.startswith("error: latin.jsonl:2: not UTF-8 text (byte ")
    record = json.loads(second[0])
    del record["pred"], record["raw_prediction"]
    write(qa_run / "nopred.jsonl", json.dumps(record) + "\n")
    nopred = assay("evaluate", "nopred.jsonl", "-o", "nopred.json", cwd=qa_run)
    assert nopred.returncode == 2
    assert "nopred.jsonl:1: pred: not a prediction record: it has no 'pred'" in nopred.stderr
    record["raw_prediction"] = "positive"  # alone, it is not what is graded: refused too
    write(qa_run / "rawonly.jsonl", json.dumps(record) + "\n")
    rawonly = assay("evaluate", "rawonly.jsonl", "-o", "raw.json", cwd=qa_run)
    assert rawonly.returncode == 2 and "it has no 'pred'" in rawonly.stderr
