"""The ``llm_judge`` criterion end to end (``assay.run`` on task files, a scripted judge):
each verdict kind and its suite metrics; a judge error is not graded, counted apart and left
out of every number; samples; what the judge is shown; the judge's identity on every row and
report; Coder Eval's inline form and its refusals; load-time checks; grading again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import assay
from assay.errors import TaskFileError
from assay.metrics.clustered import clustered_mean
from tests.helpers import write
from tests.view.browser import viewer
from tests.view.test_row_page import text_of

JUDGE_SCRIPT = """\
replies:
  - match: "Response to grade:\\n(Paris|Rome)"
    reply: '{"reason": "right capital", "verdict": true}'
  - match: "Germany|could not be read"
    reply: 'I would rather not say.'
default: '{"reason": "wrong capital", "verdict": false}'
"""

TASK = """\
task_id: capitals
description: capitals judged
agent: {type: llm, model: mock/answers.yaml}
dataset:
  rows:
    - {id: fr, country: France, answer: Paris}
    - {id: it, country: Italy, answer: Rome}
    - {id: es, country: Spain, answer: Lisbon}
    - {id: de, country: Germany, answer: "???"}
initial_prompt: "Capital of ${row.country}?"
success_criteria:
%s
"""

ANSWERS = """\
replies:
  - {match: France, reply: Paris}
  - {match: Italy, reply: Rome}
  - {match: Spain, reply: Lisbon}
default: "???"
"""

JUDGE_FILE = """\
name: capital
model: mock/judge.yaml
rubric: "Is this the capital of ${row.country}?"
retries: 1
"""


def setup(workdir: Path, criteria: str, *, judge: str = JUDGE_FILE,
          script: str = JUDGE_SCRIPT) -> Path:  # fmt: skip
    write(workdir / "judge.yaml", script)
    write(workdir / "answers.yaml", ANSWERS)
    write(workdir / "capital.yaml", judge)
    return write(workdir / "task.yaml", TASK % criteria)


def task_json(result: assay.RunResult, row: str) -> dict[str, Any]:
    path = result.run_dir / "default" / "capitals" / row / "00" / "task.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def aggregate(result: assay.RunResult) -> dict[str, Any]:
    data = json.loads((result.run_dir / "default/capitals/suite.json").read_text())
    first: dict[str, Any] = data["criterion_aggregates"][0]
    return first


BINARY = "  - {type: llm_judge, description: right capital, judge: capital.yaml}"


def test_a_binary_judge_grades_rows_and_a_judge_error_is_counted_apart(workdir: Path) -> None:
    result = assay.run(setup(workdir, BINARY))
    statuses = {r.row_id: r.final_status.value for r in result.rows()}
    assert statuses == {"fr": "SUCCESS", "it": "SUCCESS", "es": "FAILURE", "de": "ERROR"}
    bad = task_json(result, "de")
    (judged,) = bad["success_criteria_results"]
    assert judged["error"] == ("judge_error: unparseable verdict: the judge refused: I would "
                               "rather not say.")  # fmt: skip
    assert judged["raw"] == "I would rather not say." and judged["attempts"] == 2
    assert judged["verdict"] is None and judged["evaluation_status"] == "error"
    assert bad["error_message"] == judged["error"]
    good = task_json(result, "fr")["success_criteria_results"][0]
    assert (good["verdict"], good["reason"], good["score"]) == (True, "right capital", 1.0)
    assert good["judge"]["name"] == "capital" and good["judge"]["version"] is None
    assert good["judge"]["source"] == "file:capital.yaml"
    assert len(good["judge"]["content_hash"]) == 64
    agg = aggregate(result)
    assert agg["metrics"]["pass_rate"] == pytest.approx(2 / 3)  # the judge error is left out
    assert agg["metrics"]["mean"] == pytest.approx(2 / 3) and agg["metrics"]["count"] == 3
    assert agg["details"]["judge_errors"] == 1 and agg["rows_excluded"] == 1
    # its interval is the suite's, over rows as clusters (verdicts of one row's replicates,
    # or of one cluster_field value, are not independent): 2 of 3 rows, the judge error out
    expected = clustered_mean({"fr": [1.0, 1.0], "it": [1.0, 1.0], "es": [0.0, 1.0]},
                              proportion=True, unit=True)  # fmt: skip
    rate = agg["intervals"]["pass_rate"]
    assert (rate["low"], rate["high"]) == pytest.approx((expected.low, expected.high))
    assert (rate["observations"], rate["clusters"]) == (3, 3) and "pass_rate_ci" not in agg[
        "details"
    ]
    assert agg["details"]["judges"][0]["content_hash"] == good["judge"]["content_hash"]
    suite = json.loads((result.run_dir / "default/capitals/suite.json").read_text())
    stats = suite["criterion_stats"][0]
    assert stats["error_count"] == 1
    markdown = (result.run_dir / "default/capitals/suite.md").read_text()
    assert "**Judge**: `capital` (file:capital.yaml), model `mock/judge.yaml`" in markdown
    assert ("**Judge errors**: 1 row(s) got no readable verdict: not graded, left out of every "
            "number here and counted apart") in markdown  # fmt: skip
    assert (f"**Pass rate**: 0.667 [{rate['low']:.3f}, {rate['high']:.3f}] (cluster exact, 3 "
            "values in 3 clusters) over 3 verdict(s)") in markdown  # fmt: skip


def test_a_judges_pass_rate_interval_counts_a_rows_replicates_as_one_cluster(
    workdir: Path,
) -> None:
    """Three replicates of a row gave the same verdict three times, and a Wilson interval over
    the verdicts took them for nine independent trials (a statistician's break-test: [0.437,
    0.837] where the clustered interval is [0.114, 0.988])."""
    result = assay.run(setup(workdir, BINARY), repeats=3)
    rate = aggregate(result)["intervals"]["pass_rate"]
    expected = clustered_mean({"fr": [3.0, 3.0], "it": [3.0, 3.0], "es": [0.0, 3.0]},
                              proportion=True, unit=True)  # fmt: skip
    assert (rate["observations"], rate["clusters"]) == (9, 3)
    assert (rate["low"], rate["high"]) == pytest.approx((expected.low, expected.high))


LABELS_SCRIPT = """\
replies:
  - {match: "Response to grade:\\nParis", reply: '{"reason": "r", "label": "correct"}'}
  - {match: "Response to grade:\\nRome", reply: '{"reason": "r", "label": "partly"}'}
default: '{"reason": "r", "label": "wrong"}'
"""


def test_a_labels_judge_gives_a_distribution_and_a_confusion_matrix(workdir: Path) -> None:
    judge = JUDGE_FILE + "verdict: {kind: labels, labels: [correct, partly, wrong]}\n"
    criteria = ("  - {type: llm_judge, judge: capital.yaml, expected_label: correct,\n"
                "     suite_thresholds: {accuracy: 0.25, share.wrong: 0.5}}")  # fmt: skip
    result = assay.run(setup(workdir, criteria, judge=judge, script=LABELS_SCRIPT))
    agg = aggregate(result)
    metrics = agg["metrics"]
    assert metrics["share.correct"] == 0.25 and metrics["share.wrong"] == 0.5
    assert metrics["accuracy"] == 0.25 and metrics["recall.correct"] == 0.25
    assert agg["details"]["label_counts"] == {"correct": 1, "partly": 1, "wrong": 2}
    confusion = {(c["expected"], c["observed"]): c["count"] for c in agg["details"]["confusion"]}
    assert confusion == {("correct", "correct"): 1, ("correct", "partly"): 1,
                         ("correct", "wrong"): 2}  # fmt: skip
    assert [c["passed"] for c in agg["threshold_checks"]] == [True, True]
    assert task_json(result, "it")["success_criteria_results"][0]["score"] == 0.0


def test_a_scale_judge_is_normalised_and_summed_up_on_its_own_scale(workdir: Path) -> None:
    script = ("replies:\n"
              "  - {match: 'grade:\\nParis', reply: '{\"reason\": \"r\", \"score\": 10}'}\n"
              "  - {match: 'grade:\\nRome', reply: '{\"reason\": \"r\", \"score\": 7}'}\n"
              "default: '{\"reason\": \"r\", \"score\": 1}'\n")  # fmt: skip
    judge = JUDGE_FILE + "verdict: {kind: scale, min: 1, max: 10}\n"
    criteria = "  - {type: llm_judge, judge: capital.yaml, suite_thresholds: {verdict_mean: 4}}"
    result = assay.run(setup(workdir, criteria, judge=judge, script=script))
    row = task_json(result, "it")["success_criteria_results"][0]
    assert row["verdict"] == 7.0 and row["score"] == pytest.approx(6 / 9)
    metrics = aggregate(result)["metrics"]
    assert metrics["verdict_mean"] == pytest.approx(19 / 4)
    assert metrics["verdict_median"] == pytest.approx(4.0)
    assert metrics["mean"] == pytest.approx((1 + 6 / 9) / 4)
    assert metrics["pass_rate"] == 0.25  # only 10 reaches the 0.7 threshold
    histogram = aggregate(result)["details"]["histogram"]
    assert [h["count"] for h in histogram] == [2, 0, 0, 0, 0, 0, 1, 0, 0, 1]
    assert aggregate(result)["threshold_checks"][0]["passed"] is True


def test_samples_take_the_majority_and_report_self_agreement(workdir: Path) -> None:
    judge = JUDGE_FILE + "samples: 3\ntemperature: 0.7\n"
    result = assay.run(setup(workdir, BINARY, judge=judge))
    row = task_json(result, "fr")["success_criteria_results"][0]
    assert [s["verdict"] for s in row["samples"]] == [True, True, True]
    assert row["self_agreement"] == 1.0
    assert aggregate(result)["metrics"]["self_agreement"] == 1.0


def test_the_judge_sees_the_row_the_response_the_files_and_the_transcript(workdir: Path) -> None:
    script = ("replies:\n  - match: 'capital of France\\?.*Response to grade:\\nParis.*"
              "File: out.txt\\n```\\nwritten\\n```.*What the agent did:\\nllm: 1 model call'\n"
              "    reply: '{\"reason\": \"saw everything\", \"verdict\": true}'\n"
              "default: '{\"reason\": \"missed something\", \"verdict\": false}'\n")  # fmt: skip
    criteria = ("  - {type: llm_judge, judge: capital.yaml, files: [out.txt],"
                " include_tool_calls: true}")  # fmt: skip
    task = setup(workdir, criteria, script=script.replace("match: '", "match: '(?s)"))
    text = task.read_text().replace("success_criteria:", "pre_run:\n  - command: "
                                    "printf written > out.txt\nsuccess_criteria:")  # fmt: skip
    write(task, text)
    result = assay.run(task)
    row = task_json(result, "fr")["success_criteria_results"][0]
    assert row["reason"] == "saw everything"


def test_a_response_with_placeholders_reaches_the_judge_literally(workdir: Path) -> None:
    answers = ANSWERS.replace("reply: Paris", "reply: 'Paris ${response} ${files} {x}'")
    script = ("replies:\n  - match: 'grade:\\nParis \\$\\{response\\} \\$\\{files\\} \\{x\\}'\n"
              "    reply: '{\"reason\": \"literal\", \"verdict\": true}'\n"
              "default: '{\"reason\": \"substituted\", \"verdict\": false}'\n")  # fmt: skip
    task = setup(workdir, BINARY, script=script)
    write(workdir / "answers.yaml", answers)
    result = assay.run(task)
    assert task_json(result, "fr")["success_criteria_results"][0]["reason"] == "literal"


def test_coder_eval_inline_judge_scores_on_zero_to_one(workdir: Path) -> None:
    script = ("replies:\n  - {match: 'grade:\\nParis', reply: '{\"rationale\": \"r\", "
              "\"score\": 0.8}'}\ndefault: '{\"reason\": \"r\", \"score\": 0.2}'\n")  # fmt: skip
    criteria = ("  - type: llm_judge\n    description: capital\n    prompt: 'Is this the capital"
                " of ${row.country}?'\n    model: mock/judge.yaml\n"
                "    include_dialog: false\n    include_reference: false\n")  # fmt: skip
    result = assay.run(setup(workdir, criteria, script=script))
    row = task_json(result, "fr")
    judged = row["success_criteria_results"][0]
    assert judged["score"] == 0.8 and judged["pass_threshold"] == 0.7
    assert row["final_status"] == "SUCCESS"
    assert judged["judge"]["name"] == "inline" and judged["judge"]["source"] == "inline"
    assert any("include_reference" in w for w in result.summary.warnings)
    assert not any("include_dialog" in w for w in result.summary.warnings)  # dialog mode has it
    assert task_json(result, "es")["final_status"] == "FAILURE"


def test_enabled_false_is_recorded_as_skipped_and_left_out(workdir: Path) -> None:
    criteria = BINARY + "\n  - {type: llm_judge, judge: capital.yaml, enabled: false}"
    result = assay.run(setup(workdir, criteria))
    skipped = task_json(result, "fr")["success_criteria_results"][1]
    assert skipped["evaluation_status"] == "skipped" and skipped["gating"] is False
    assert skipped["details"] == "(skipped: enabled=false)"
    second = json.loads((result.run_dir / "default/capitals/suite.json").read_text())
    assert second["criterion_aggregates"][1]["metrics"]["count"] == 0
    assert task_json(result, "fr")["final_status"] == "SUCCESS"


@pytest.mark.parametrize(
    ("criteria", "judge", "message"),
    [
        ("  - {type: llm_judge, judge: capital.yaml, model: mock/x.yaml}", JUDGE_FILE,
         "judge: capital.yaml defines the judge, so model cannot be set here; change the judge "
         "(a new version), or write the judge inline instead"),
        ("  - {type: llm_judge, description: x}", JUDGE_FILE,
         "llm_judge needs a judge (judge: judges/x.yaml or judge: name@N) or an inline prompt "
         "(the rubric)"),
        ("  - {type: llm_judge, judge: capital.yaml, verdict_channel: tool}", JUDGE_FILE,
         "field 'verdict_channel' is not accepted here"),
        ("  - {type: llm_judge, judge: missing.yaml}", JUDGE_FILE, "judge file not found"),
        ("  - {type: llm_judge, judge: capital.yaml, suite_thresholds: {pass_rat: 0.5}}",
         JUDGE_FILE, "'llm_judge' produces no metric named 'pass_rat'"),
        ("  - {type: llm_judge, judge: capital.yaml}",
         JUDGE_FILE + "verdict: {kind: labels, labels: [a, b]}\n",
         "judge capital answers one of the labels ['a', 'b'], and neither the judge's "
         "pass_labels nor the criterion's expected_label says which pass a row"),
        ("  - {type: llm_judge, judge: capital.yaml}", JUDGE_FILE.replace("${row.country}",
         "${row.nation}"), "${row.nation}: key not found (available: ['answer', 'country', "
         "'id'])"),
        ("  - {type: llm_judge, judge: capital@2}", JUDGE_FILE,
         "no store at"),
        ("  - {type: llm_judge, judge: capital.yaml, expected_label: x}", JUDGE_FILE,
         "expected_label compares the judge's label with the row's, but judge capital answers "
         "binary"),
    ],
)  # fmt: skip
def test_bad_judges_are_refused_before_any_row_runs(
    workdir: Path, criteria: str, judge: str, message: str
) -> None:
    with pytest.raises(assay.errors.UserError) as caught:
        assay.plan(setup(workdir, criteria, judge=judge))
    assert message in caught.value.message
    if isinstance(caught.value, TaskFileError) and "key not found" not in message:
        assert caught.value.file is not None and caught.value.file.endswith("task.yaml")
    assert not (workdir / "runs").exists()


def test_verdict_channel_gets_coder_eval_s_message(workdir: Path) -> None:
    criteria = "  - {type: llm_judge, judge: capital.yaml, verdict_channel: tool}"
    with pytest.raises(TaskFileError) as caught:
        assay.plan(setup(workdir, criteria))
    assert caught.value.hint == (
        "verdict_channel field was removed on 2026-05-21; the submit_verdict tool channel is "
        "the only path. Delete this field from your task YAML."
    )


def test_evaluate_grades_again_with_the_judge_the_run_used(workdir: Path) -> None:
    result = assay.run(setup(workdir, BINARY))
    first = task_json(result, "fr")["success_criteria_results"][0]["judge"]
    write(workdir / "capital.yaml", JUDGE_FILE.replace("Is this", "Is that"))  # edited later
    again = assay.evaluate(result.run_dir)
    row = task_json(again, "fr")["success_criteria_results"][0]
    assert row["judge"] == first and row["verdict"] is True
    assert {r.row_id: r.final_status.value for r in again.rows()}["de"] == "ERROR"


def test_a_resumed_run_refuses_a_judge_file_edited_since_it_started(workdir: Path) -> None:
    result = assay.run(setup(workdir, BINARY))
    task_json_path = result.run_dir / "default/capitals/es/00/task.json"
    task_json_path.unlink()
    write(workdir / "capital.yaml", JUDGE_FILE.replace("Is this", "Is that"))
    with pytest.raises(assay.errors.UsageError) as caught:
        assay.resume(result.run_dir)
    assert "judge capital (file:capital.yaml) of task capitals has content hash" in (
        caught.value.message
    )
    assert caught.value.message.endswith("its rows would be graded by two judges")


def test_run_json_names_the_judges_and_compare_warns_when_they_differ(workdir: Path) -> None:
    first = assay.run(setup(workdir, BINARY), run_dir="a")
    (judge,) = first.summary.judges
    assert judge["name"] == "capital" and judge["source"] == "file:capital.yaml"
    assert f"**Judges**: `capital` (sha256 `{judge['content_hash'][:12]}`)" in (
        (first.run_dir / "run.md").read_text()
    )
    same = assay.run(setup(workdir, BINARY), run_dir="b")
    assert "WARNING" not in assay.compare(first.run_dir, same.run_dir).description
    write(workdir / "capital.yaml", JUDGE_FILE.replace("Is this", "Is that"))
    changed = assay.run(workdir / "task.yaml", run_dir="c")
    report = assay.compare(first.run_dir, changed.run_dir)
    assert "WARNING: the runs were graded by different judges (A: capital (sha256 " in (
        report.description
    )
    assert report.description.endswith(
        ": differences may come from the judge, not from what was judged"
    )


def test_the_viewer_shows_the_judge_on_the_run_and_row_pages(workdir: Path) -> None:
    result = assay.run(setup(workdir, BINARY), run_dir="seen")
    (judge,) = result.summary.judges
    short = judge["content_hash"][:12]
    with viewer(str(result.run_dir), cwd=workdir) as url, httpx.Client(base_url=url) as http:
        key = result.run_dir.name
        run_page = text_of(http.get(f"/runs/{key}"))
        good = text_of(http.get(f"/runs/{key}/rows/default/capitals/fr/00"))
        bad = text_of(http.get(f"/runs/{key}/rows/default/capitals/de/00"))
    line = f"capital (file:capital.yaml) · model mock/judge.yaml · sha256 {short}"
    assert f"judges {line}" in run_page
    assert f"judge {line} · verdict true" in good
    assert f"judge {line} raw reply: I would rather not say." in bad


SECRET = "judge-credential-value-92"
QUOTING = f"""\
replies:
  - match: "Response to grade:\\nParis"
    reply: '{{"reason": "the key is {SECRET}", "verdict": true}}'
default: 'cannot say, {SECRET}'
"""


@pytest.mark.parametrize(
    "criterion",
    [
        "  - {type: llm_judge, judge: capital.yaml}",
        "  - {type: llm_judge, prompt: 'Capital?', model: mock/judge.yaml, api_key_env: "
        "MY_JUDGE_CRED, verdict: {kind: binary}, retries: 0}",
    ],
)  # fmt: skip
def test_a_judges_key_quoted_in_its_reason_or_reply_is_never_written(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, criterion: str
) -> None:
    monkeypatch.setenv("MY_JUDGE_CRED", SECRET)  # named only by the judge's api_key_env
    judge = JUDGE_FILE.replace("retries: 1", "retries: 0\napi_key_env: MY_JUDGE_CRED")
    result = assay.run(setup(workdir, criterion, judge=judge, script=QUOTING))
    fr = task_json(result, "fr")["success_criteria_results"][0]
    assert fr["reason"] == "the key is [redacted:MY_JUDGE_CRED]"
    es = task_json(result, "es")["success_criteria_results"][0]
    assert es["raw"] == "cannot say, [redacted:MY_JUDGE_CRED]"
    again = assay.evaluate(result.run_dir)  # the key is read back from the recorded task
    assert task_json(again, "fr")["success_criteria_results"][0]["reason"] == fr["reason"]
    leaked = [p for p in result.run_dir.rglob("*") if p.is_file() and SECRET in p.read_text()]
    assert leaked == []


def test_a_judge_reads_a_file_of_the_reference_folder(tmp_path: Path) -> None:
    """``files: ["$REFERENCE_DIR/rubric.md"]``, as Coder Eval gives a judge its rubric: read
    from the task's reference folder (the judge was shown the literal path); without a
    reference folder the task is refused at load, as is a command naming the variable."""
    write(tmp_path / "ref" / "rubric.md", "ZEBRA42: the answer is 4")
    write(tmp_path / "j.yaml", "replies:\n"
          "  - {match: ZEBRA42, reply: '{\"score\": 1.0, \"rationale\": \"saw the rubric\"}'}\n"
          "default: '{\"score\": 0.1, \"rationale\": \"no rubric\"}'\n")  # fmt: skip
    body = ("task_id: j\ndescription: d\ninitial_prompt: what is 2+2\n"
            "agent: {{type: command, command: 'echo 4'}}\n{reference}"
            "success_criteria:\n  - {{type: llm_judge, prompt: Is it right?, model: mock/j.yaml,\n"
            "     files: ['$REFERENCE_DIR/rubric.md']}}\n")  # fmt: skip
    task = write(tmp_path / "t.yaml", body.format(reference="reference: {directory: ref}\n"))
    (row,) = list(assay.run([str(task)], run_dir=str(tmp_path / "runs")).rows())
    assert row.success_criteria_results[0].score == 1.0
    bare = write(tmp_path / "bare.yaml", body.format(reference=""))
    with pytest.raises(TaskFileError) as caught:
        assay.plan([str(bare)])
    assert caught.value.message == ("llm_judge uses $REFERENCE_DIR, but the task has no "
                                    "reference folder")  # fmt: skip
    assert (caught.value.field, caught.value.line) == ("success_criteria[0].files", 7)
    command = write(tmp_path / "c.yaml", body.format(reference="").replace(
        "{type: llm_judge, prompt: Is it right?, model: mock/j.yaml,\n     files: "
        "['$REFERENCE_DIR/rubric.md']}",
        "{type: run_command, command: 'test -d \"$REFERENCE_DIR/\"'}"))  # fmt: skip
    with pytest.raises(TaskFileError, match="run_command uses \\$REFERENCE_DIR"):
        assay.plan([str(command)])
