"""Calibrating a judge against human labels, end to end on the TruthfulQA slice of
``examples/judges`` (human truthfulness labels), with the scripted judge and with
``local/smollm2``; every number checked against scikit-learn / scipy computed from the
verdicts the script's rule gives (an independent reading of the same rows).

Also: trace- and session-backed rows, labels that are not verdicts, unlabelled rows, judge
errors, too few rows for an interval, a judge that always says the same, no variation."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_recall_fscore_support

from assay.api.judges import calibrate_judge
from assay.errors import StoreError
from assay.store import Schema, open_store
from tests.cli.test_run import assay
from tests.helpers import write

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "judges"
RULE = re.compile(
    r"^(No\b|Nothing|There is no|There are no|I have no comment|It depends|.*\b(not|no one|"
    r"nobody|never|unclear)\b)"
)  # the rule of examples/judges/mock-truthful.yaml, applied to the answer itself


def _rows() -> list[dict[str, Any]]:
    lines = (EXAMPLES / "data" / "truthfulqa_labels.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _wilson(k: int, n: int) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def test_calibration_end_to_end_with_the_scripted_judge(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "judges")
    steps = [
        ("dataset", "import", "truthfulqa-labels", "judges/data/truthfulqa_labels.jsonl"),
        ("judge", "add", "truthful", "judges/truthful-mock.yaml"),
        ("judge", "calibrate", "truthful", "--dataset", "truthfulqa-labels@1", "--label",
         "label", "--output-field", "answer", "-o", "cal"),
    ]  # fmt: skip
    for step in steps:
        done = assay(*step, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    rows = _rows()
    human = [r["label"].strip() == "yes" for r in rows]
    judged = [RULE.search(r["answer"]) is not None for r in rows]
    assert report["rows_compared"] == 40 and report["rows_judge_error"] == 0
    assert report["judge"]["name"] == "truthful" and report["judge"]["version"] == 1
    assert report["dataset"]["version"] == 1 and len(report["dataset"]["content_hash"]) == 64
    equal = sum(h == j for h, j in zip(human, judged, strict=True))
    assert report["agreement"]["value"] == pytest.approx(equal / 40)
    assert (report["agreement"]["low"], report["agreement"]["high"]) == pytest.approx(
        _wilson(equal, 40)
    )
    assert report["kappa"]["value"] == pytest.approx(cohen_kappa_score(human, judged))
    matrix = confusion_matrix(human, judged, labels=[True, False])
    cells = {(c["human"], c["judge"]): c["count"] for c in report["confusion"]}
    assert [[cells.get((h, j), 0) for j in ("pass", "fail")] for h in ("pass", "fail")] == (
        matrix.tolist()
    )
    precision, recall, _, _ = precision_recall_fscore_support(human, judged, labels=[True, False])
    per_label = {p["label"]: p for p in report["per_label"]}
    assert per_label["pass"]["precision"] == pytest.approx(precision[0])
    assert per_label["fail"]["recall"] == pytest.approx(recall[1])
    tp = int(matrix[0][0])
    tn = int(matrix[1][1])
    assert report["tpr"]["value"] == pytest.approx(tp / 20)
    assert report["tpr"]["low"] == pytest.approx(_wilson(tp, 20)[0])
    assert report["tnr"]["low"] == pytest.approx(_wilson(tn, 20)[0])
    disagreements = {d["example_id"] for d in report["disagreements"]}
    expected = {r["id"] for r, h, j in zip(rows, human, judged, strict=True) if h != j}
    assert disagreements == expected
    assert all(d["reason"] for d in report["disagreements"])
    markdown = (tmp_path / "cal" / "calibration.md").read_text()
    assert "| Cohen's κ |" in markdown and f"## Disagreements ({len(expected)})" in markdown
    shown = assay("judge", "show", "truthful", "--json", cwd=tmp_path)
    calibration = json.loads(shown.stdout)["calibrations"][0]
    assert calibration["dataset"] == "truthfulqa-labels" and calibration["dataset_version"] == 1
    assert calibration["judge_version"] == 1 and calibration["rows_compared"] == 40
    _suite_is_corrected(tmp_path, tp, tn)


def _suite_is_corrected(tmp_path: Path, tp: int, tn: int) -> None:
    """A suite graded by the calibrated judge reports the Rogan–Gladen pass rate; after a
    rubric change (a new version) it has no calibration to rest on."""
    planned = assay("plan", "judges/task.yaml", cwd=tmp_path).stdout
    assert "criteria: llm_judge (judge truthful@1 (sha256 " in planned
    assert "), calibrated); gates: llm_judge.completion_rate ≥ 1" in planned
    done = assay("run", "judges/task.yaml", "--model", "mock/mock-answers.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    suite = json.loads((tmp_path / "runs/latest/default/truthfulqa-answers/suite.json").read_text())
    aggregate = suite["criterion_aggregates"][0]
    passed = round(aggregate["metrics"]["pass_rate"] * 12)
    raw = (passed / 12 + tn / 20 - 1) / (tp / 20 + tn / 20 - 1)
    assert aggregate["metrics"]["corrected_pass_rate"] == pytest.approx(min(1.0, max(0.0, raw)))
    corrected = aggregate["details"]["corrected_pass_rate"]
    assert corrected["calibrated_on"] == "truthfulqa-labels@1"
    assert corrected["calibration_rows"] == {"positives": 20, "negatives": 20}
    assert aggregate["details"]["judges"][0]["version"] == 1
    suite_md = tmp_path / "runs/latest/default/truthfulqa-answers/suite.md"
    assert "is too narrow" not in suite_md.read_text()  # 12 verdicts in 12 clusters
    assay("run", "judges/task.yaml", "--model", "mock/mock-answers.yaml", "--repeats", "2",
          cwd=tmp_path)  # fmt: skip
    assert ("The corrected pass rate's interval takes the 24 verdicts as independent, and they "
            "fall in 12 clusters") in suite_md.read_text()  # fmt: skip
    text = (tmp_path / "judges/truthful-mock.yaml").read_text()
    write(tmp_path / "judges/truthful-mock.yaml", text.replace("is truthful", "is true"))
    assert assay("judge", "add", "truthful", "judges/truthful-mock.yaml",
                 cwd=tmp_path).stdout.startswith("added judge truthful@2")  # fmt: skip
    assert assay("run", "judges/task.yaml", "--model", "mock/mock-answers.yaml",
                 cwd=tmp_path).returncode == 0  # fmt: skip
    suite = json.loads((tmp_path / "runs/latest/default/truthfulqa-answers/suite.json").read_text())
    aggregate = suite["criterion_aggregates"][0]
    assert "corrected_pass_rate" not in aggregate["metrics"]
    assert aggregate["details"]["corrected_pass_rate"] == {
        "reason": "the judge has no stored binary calibration (assay judge calibrate)"
    }
    assert aggregate["details"]["judges"][0]["version"] == 2


def _judge_file(tmp_path: Path, script: str, rubric: str = "Answer: ${response}",
                verdict: str = "{kind: binary}") -> Path:  # fmt: skip
    write(tmp_path / "script.yaml", script)
    return write(tmp_path / "judge.yaml", f"model: mock/script.yaml\nrubric: '{rubric}'\n"
                 f"verdict: {verdict}\nretries: 0\n")  # fmt: skip


def _store(tmp_path: Path, schema: dict[str, str], rows: list[dict[str, Any]]) -> str:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.create_dataset("labels", Schema(schema))  # type: ignore[arg-type]
        store.add("labels", rows)
    return url


YES_NO = 'replies:\n  - match: \'Answer: yes\'\n    reply: \'{"reason": "y", "verdict": true}\'\n'


def test_judge_errors_and_unlabelled_rows_are_left_out_and_counted(tmp_path: Path) -> None:
    script = (
        YES_NO
        + "  - match: 'Answer: huh'\n    reply: 'I cannot say.'\n"
        + ('default: \'{"reason": "n", "verdict": false}\'\n')
    )
    judge = _judge_file(tmp_path, script)
    rows = [{"id": f"r{i}", "out": out, "human": label} for i, (out, label) in enumerate(
        [("yes", True), ("no", False), ("huh", True), ("yes", None), ("no", "no"),
         ("yes", "PASS"), ("no", 0)])]  # fmt: skip
    url = _store(tmp_path, {"out": "string", "human": "json"}, rows)
    result = calibrate_judge(str(judge), dataset="labels", label_field="human",
                             output_field="out", store=url, output_dir=tmp_path / "c")  # fmt: skip
    report = result.report
    assert (report["rows_total"], report["rows_unlabelled"]) == (7, 1)
    assert report["unlabelled_example_ids"] == ["r3"]
    assert report["rows_judge_error"] == 1 and report["rows_compared"] == 5
    (error,) = report["judge_errors"]
    assert error["example_id"] == "r2" and error["raw"] == "I cannot say."
    assert error["error"] == "unparseable verdict: the judge refused: I cannot say."
    assert report["agreement"]["value"] == 1.0
    assert report["kappa"]["low"] is None  # 5 rows: fewer than an interval needs
    assert report["kappa"]["reason"] == (
        "no interval: 5 rated pair(s), fewer than the 10 a large-sample interval needs"
    )
    assert any("fewer than the 10" in note for note in report["notes"])
    assert report["judge"]["version"] is None and report["judge"]["source"].startswith("file:")


def test_labels_that_are_not_verdicts_are_refused_with_their_examples(tmp_path: Path) -> None:
    judge = _judge_file(tmp_path, YES_NO + 'default: \'{"reason": "n", "verdict": false}\'\n')
    rows = [{"id": "a", "out": "yes", "human": "maybe"}, {"id": "b", "out": "no", "human": "no"},
            {"id": "c", "out": "no", "human": "7"}]  # fmt: skip
    url = _store(tmp_path, {"out": "string", "human": "string"}, rows)
    with pytest.raises(StoreError) as caught:
        calibrate_judge(str(judge), dataset="labels", label_field="human", output_field="out",
                        store=url, output_dir=tmp_path / "c")  # fmt: skip
    assert caught.value.message == (
        "2 example(s) of labels@1 have a 'human' that is not a verdict of judge judge (binary): "
        "a: 'maybe' is not a binary label (true/false, yes/no, pass/fail, 1/0); "
        "c: '7' is not a binary label (true/false, yes/no, pass/fail, 1/0)"
    )
    assert caught.value.field == "human"
    with open_store(url) as store:
        assert store.calibrations(judge_hash="0" * 64) == []
    with pytest.raises(StoreError) as caught:
        calibrate_judge(str(judge), dataset="labels", label_field="truth", output_field="out",
                        store=url)  # fmt: skip
    assert caught.value.message == "dataset 'labels' has no field 'truth' (fields: out, human)"
    with pytest.raises(StoreError) as caught:
        calibrate_judge(str(judge), dataset="labels", label_field="human", store=url)
    assert caught.value.message == (
        "dataset 'labels' has no trace or session field, so there is no stored output to judge"
    )
    assert (
        caught.value.hint == "name the field that holds each row's output with --output-field FIELD"
    )


def test_a_rubric_field_the_examples_lack_is_refused_naming_them(tmp_path: Path) -> None:
    """A rubric's ${row.x} reads the example's fields, and first those of an object field
    ``row`` (a label given in assay view keeps the run's row there); an example with neither
    is named with the field, before any judge call, instead of a crash mid-calibration."""
    script = YES_NO + 'default: \'{"reason": "n", "verdict": false}\'\n'
    judge = _judge_file(tmp_path, script, rubric="Q: ${row.question} Answer: ${response}")
    rows = [{"id": "a", "out": "yes", "human": "yes", "row": {"question": "q1"}},
            {"id": "b", "out": "no", "human": "no", "row": {"topic": "x"}},
            {"id": "c", "out": "no", "human": "no", "row": None},
            {"id": "d", "out": "yes", "human": "no", "row": {"question": ["a", "b"]}}]  # fmt: skip
    url = _store(tmp_path, {"out": "string", "human": "string", "row": "json"}, rows)
    with pytest.raises(StoreError) as caught:
        calibrate_judge(str(judge), dataset="labels", label_field="human", output_field="out",
                        store=url, output_dir=tmp_path / "c")  # fmt: skip
    message = caught.value.message
    assert message.startswith("2 example(s) of labels@1 cannot fill the rubric of judge judge: ")
    assert "b: ${row.question}: key not found" in message
    assert "c: ${row.question}: key not found" in message
    assert "d: " not in message  # a list is placed as its JSON, as a QA item's answers are
    assert "'row' counts too" in (caught.value.hint or "")
    with open_store(url) as store:
        store.remove("labels", ["b", "c", "d"])
    result = calibrate_judge(str(judge), dataset="labels", label_field="human",
                             output_field="out", store=url, output_dir=tmp_path / "ok")  # fmt: skip
    assert result.report["rows_compared"] == 1 and result.report["agreement"]["value"] == 1.0


def test_a_judge_that_always_agrees_on_one_label_explains_its_undefined_numbers(
    tmp_path: Path,
) -> None:
    judge = _judge_file(tmp_path, 'default: \'{"reason": "fine", "verdict": true}\'\n')
    rows = [{"id": f"r{i}", "out": "x", "human": "yes"} for i in range(12)]
    url = _store(tmp_path, {"out": "string", "human": "string"}, rows)
    report = calibrate_judge(str(judge), dataset="labels", label_field="human",
                             output_field="out", store=url,
                             output_dir=tmp_path / "c").report  # fmt: skip
    assert report["kappa"]["value"] is None
    assert "chance agreement is 1" in report["kappa"]["reason"]
    assert report["tnr"]["value"] is None
    assert report["tnr"]["reason"] == "no row is labelled fail, so the true-negative rate is 0/0"
    assert (
        "the judge and the people gave every row 'pass': there is no variation, so κ is "
        "undefined" in report["notes"]
    )
    assert (
        "label(s) 'fail' never occur among the human labels: their recall is undefined"
        in (report["notes"])
    )
    text = json.dumps(report)
    assert "NaN" not in text and "Infinity" not in text
    markdown = (tmp_path / "c" / "calibration.md").read_text()
    assert "chance agreement is 1" in markdown


def _trace(output: str, *, trace_id: str, start: int, prompt: str | None = None) -> dict[str, Any]:
    attributes = [{"key": "output.value", "value": {"stringValue": output}}]
    if prompt is not None:
        attributes.append({"key": "input.value", "value": {"stringValue": prompt}})
    span = {"traceId": trace_id, "spanId": trace_id[:16], "name": "agent",
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 1),
            "attributes": attributes}  # fmt: skip
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [span]}]}]}


def test_trace_and_session_backed_rows_are_judged_on_their_stored_output(tmp_path: Path) -> None:
    script = ("replies:\n  - match: 'Turn 1\\nInput: hi\\nOutput: hello\\n\\nTurn 2'\n"
              "    reply: '{\"reason\": \"whole session seen\", \"score\": 5}'\n"
              "  - match: 'Answer: fine'\n    reply: '{\"reason\": \"ok\", \"score\": 4}'\n"
              "default: '{\"reason\": \"no\", \"score\": 1}'\n")  # fmt: skip
    judge = _judge_file(tmp_path, script, verdict="{kind: scale, min: 1, max: 5}")
    session = {"resourceSpans": [
        *_trace("bye", trace_id="b" * 32, start=20, prompt="and now?")["resourceSpans"],
        *_trace("hello", trace_id="a" * 32, start=10, prompt="hi")["resourceSpans"],
    ]}  # fmt: skip
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.create_dataset("labels", Schema({"session": "session", "human": "number"}))
        store.add("labels", [{"id": "s1", "session": session, "human": 5},
                             {"id": "s2", "session": _trace("fine", trace_id="c" * 32, start=1),
                              "human": 4}])  # fmt: skip
    report = calibrate_judge(str(judge), dataset="labels", label_field="human", store=url,
                             output_dir=tmp_path / "c").report  # fmt: skip
    assert report["output_source"] == "session"
    assert report["disagreements"] == [] and report["agreement"]["value"] == 1.0
    assert report["weighted_kappa"]["value"] == pytest.approx(1.0)
    assert report["spearman"]["value"] == pytest.approx(1.0)
    assert report["mean_absolute_difference"] == 0.0


@pytest.mark.local_model
def test_calibration_with_the_local_model(tmp_path: Path) -> None:
    rows = _rows()
    few = [r for r in rows if r["label"] == " yes"][:3] + [r for r in rows if r["label"] == " no"][
        :3
    ]
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.import_dataset(
            "few",
            Schema(
                {
                    "question": "string",
                    "answer": "string",
                    "label": "string",
                    "source_line": "number",
                }
            ),
            few,
        )
    result = calibrate_judge(str(EXAMPLES / "truthful.yaml"), dataset="few", label_field="label",
                             output_field="answer", store=url, output_dir=tmp_path / "cal",
                             jobs=2)  # fmt: skip
    report = result.report
    assert report["judge"]["model"] == "local/smollm2"
    assert report["rows_compared"] + report["rows_judge_error"] == 6
    compared = report["rows_compared"]
    agree = compared - len(report["disagreements"])
    assert report["agreement"]["value"] == pytest.approx(agree / compared)
    assert report["kappa"]["low"] is None  # 6 rows: no large-sample interval
    assert report["binary_counts"]["positives"] + report["binary_counts"]["negatives"] == compared
    assert (tmp_path / "cal" / "calibration.md").is_file()


def test_a_reason_or_reply_quoting_a_secret_is_written_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "judge-credential-value-91"
    monkeypatch.setenv("MY_JUDGE_CRED", secret)  # named by the judge: a secret by that
    script = (f"replies:\n  - match: 'Answer: yes'\n    reply: '{{\"reason\": \"{secret}\", "
              f"\"verdict\": false}}'\ndefault: 'no idea {secret}'\n")  # fmt: skip
    judge = _judge_file(tmp_path, script)
    judge.write_text(judge.read_text() + "api_key_env: MY_JUDGE_CRED\n")
    rows = [{"id": f"r{i}", "out": out, "human": True} for i, out in enumerate(["yes", "huh"])]
    url = _store(tmp_path, {"out": "string", "human": "json"}, rows)
    result = calibrate_judge(str(judge), dataset="labels", label_field="human",
                             output_field="out", store=url, output_dir=tmp_path / "c")  # fmt: skip
    # in memory and in the store as in the files (a field report: the store kept the secret,
    # and `assay view`'s calibrations page showed it)
    assert result.report["disagreements"][0]["reason"] == "[redacted:MY_JUDGE_CRED]"
    with open_store(url) as store:
        stored = json.dumps([c.report for c in store.calibrations()])
    assert secret not in stored and "[redacted:MY_JUDGE_CRED]" in stored
    for name in ("calibration.json", "calibration.md"):
        text = (tmp_path / "c" / name).read_text()
        assert secret not in text and "[redacted:MY_JUDGE_CRED]" in text
    written = json.loads((tmp_path / "c" / "calibration.json").read_text())
    assert written["disagreements"][0]["reason"] == "[redacted:MY_JUDGE_CRED]"
    assert written["judge_errors"][0]["raw"] == "no idea [redacted:MY_JUDGE_CRED]"
