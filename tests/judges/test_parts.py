"""The judges' smaller parts, each refusal with its message: verdict and judge specs, human
labels read as verdicts, agreement reports of labels and scales, capture mappings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from sklearn.metrics import cohen_kappa_score

from assay.errors import StoreError, TaskFileError, UsageError
from assay.judges.agreement import Compared, agreement_report
from assay.judges.assets import JudgeResolver, load_judge_file
from assay.judges.calibration import human_value
from assay.judges.verdict import first_line
from assay.spec.criteria import LlmJudge
from assay.spec.judge import JudgeDefinition, VerdictSpec, judge_reference, provider_model
from assay.store.capture import Captured, field_value, parse_mapping, value_kind
from assay.store.schema import Schema
from tests.helpers import write

LABELS = VerdictSpec(kind="labels", labels=["low", "mid", "high"], pass_labels=["high"],
                     ordered=True)  # fmt: skip
SCALE = VerdictSpec(kind="scale", min=1, max=5)
UNIT = VerdictSpec(kind="scale", min=0, max=1)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"labels": ["a", "b"]}, "labels, pass_labels and ordered belong to kind: labels, not "
                                 "kind: binary"),
        ({"kind": "labels", "labels": ["a", "b"], "min": 1}, "min, max and integer belong to "
                                                             "kind: scale, not kind: labels"),
        ({"kind": "scale", "min": 1}, "kind: scale needs min and max (e.g. min: 1, max: 5)"),
        ({"kind": "scale", "min": 5, "max": 5}, "scale min (5) must be below max (5)"),
        ({"kind": "scale", "min": 0.5, "max": 5, "integer": True},
         "an integer scale needs whole-number min and max"),
        ({"kind": "labels", "labels": ["a", "a"]}, "labels lists a label twice"),
        ({"kind": "labels", "labels": ["a", " "]}, "labels has an empty label"),
        ({"kind": "labels", "labels": ["a", "b"], "pass_labels": ["c"]},
         "pass_labels ['c'] are not among labels ['a', 'b']"),
    ],
)  # fmt: skip
def test_verdict_specs_refuse_what_does_not_fit(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        VerdictSpec.model_validate(fields)
    assert message in str(caught.value)


def test_verdict_descriptions_and_integer_scales() -> None:
    assert LABELS.describe() == "labels [low, mid, high]"
    assert SCALE.describe() == "scale 1..5 (integers)" and SCALE.is_integer
    assert not UNIT.is_integer and UNIT.describe() == "scale 0..1"
    assert not VerdictSpec(kind="scale", min=1, max=5, integer=False).is_integer
    assert VerdictSpec().describe() == "binary" and not VerdictSpec().is_integer


def test_judge_definitions_and_references() -> None:
    with pytest.raises(ValidationError, match="judge name '-x' must be letters"):
        JudgeDefinition(name="-x", rubric="r")
    with pytest.raises(ValidationError, match="rubric is empty"):
        JudgeDefinition(rubric="  ")
    assert provider_model("anthropic.claude-sonnet-4-6") == "anthropic/claude-sonnet-4-6"
    assert judge_reference("judges/h.yaml") == ("file", "judges/h.yaml", None)
    assert judge_reference("h.json") == ("file", "h.json", None)
    assert judge_reference("helpful@12") == ("store", "helpful", 12)
    assert judge_reference("helpful") == ("store", "helpful", None)
    with pytest.raises(ValueError, match="neither a judge file"):
        judge_reference("help ful")
    with pytest.raises(ValidationError, match="files has an empty path"):
        LlmJudge.model_validate({"type": "llm_judge", "prompt": "p", "files": [" "]})
    spec = LlmJudge.model_validate({"type": "llm_judge", "prompt": "p",
                                    "model": "anthropic.claude-x"})  # fmt: skip
    assert spec.model == "anthropic/claude-x" and spec.reads_response
    silent = LlmJudge.model_validate({"type": "llm_judge", "prompt": "p",
                                      "include_agent_output": False})  # fmt: skip
    assert not silent.reads_response
    placed = silent.model_copy(update={"prompt": "see ${response}"})
    assert placed.reads_response


def test_a_judge_file_that_is_not_a_mapping_and_an_inline_judge_that_does_not_fit(
    tmp_path: Path,
) -> None:
    with pytest.raises(TaskFileError) as caught:
        load_judge_file(write(tmp_path / "list.yaml", "- a\n- b\n"))
    assert caught.value.message == "a judge file is a YAML mapping with model, rubric and verdict"
    with pytest.raises(TaskFileError) as caught:
        load_judge_file(write(tmp_path / "m.yaml", "model: mock/x\n"))
    assert (caught.value.message, caught.value.field) == ("required field is missing", "rubric")
    few_shot = [{"response": "r", "verdict": "maybe"}]
    spec = LlmJudge.model_validate({"type": "llm_judge", "prompt": "p", "few_shot": few_shot})
    with pytest.raises(TaskFileError) as caught:
        JudgeResolver().resolve_criteria([spec], base_dir=tmp_path, task_id="t",
                                         locate=lambda loc: ("task.yaml", 7))  # fmt: skip
    assert caught.value.message == (
        "invalid inline judge: few_shot[0].verdict: 'maybe' is not a number"
    )
    assert (caught.value.file, caught.value.line) == ("task.yaml", 7)
    assert caught.value.field == "success_criteria[0]"


@pytest.mark.parametrize(
    ("verdict", "label", "value"),
    [
        (VerdictSpec(), " yes", True), (VerdictSpec(), "No", False), (VerdictSpec(), 1, True),
        (VerdictSpec(), 0.0, False), (VerdictSpec(), "PASSED", True), (VerdictSpec(), True, True),
        (LABELS, "MID", "mid"), (LABELS, "high", "high"),
        (SCALE, "4", 4.0), (SCALE, 2, 2.0), (UNIT, 0.5, 0.5),
    ],
)  # fmt: skip
def test_human_labels_are_read_as_verdicts(verdict: VerdictSpec, label: Any, value: Any) -> None:
    assert human_value(verdict, label) == value


@pytest.mark.parametrize(
    ("verdict", "label", "message"),
    [
        (VerdictSpec(), 2, "2 is not a binary label (true/false, yes/no, pass/fail, 1/0)"),
        (LABELS, "medium", "'medium' is not one of the judge's labels ['low', 'mid', 'high']"),
        (SCALE, "four", "'four' is not a number on the scale"),
        (SCALE, True, "True is not a number on the scale"),
        (SCALE, "nan", "'nan' is not a finite number"),
        (SCALE, 9, "9 is outside the judge's scale 1..5"),
    ],
)
def test_labels_that_are_not_verdicts_say_why(
    verdict: VerdictSpec, label: Any, message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        human_value(verdict, label)
    assert str(caught.value) == message


def test_ordered_labels_get_weighted_kappa_against_scikit_learn() -> None:
    humans = ["low", "mid", "high", "high", "mid", "low", "high", "mid", "low", "mid", "high"]
    judged = ["low", "high", "high", "mid", "mid", "mid", "high", "mid", "low", "low", "high"]
    pairs = zip(humans, judged, strict=True)
    compared = [Compared(f"r{i}", h, j, "") for i, (h, j) in enumerate(pairs)]
    report = agreement_report(LABELS, compared)
    order = ["low", "mid", "high"]
    assert report["kappa"]["value"] == pytest.approx(cohen_kappa_score(humans, judged))
    assert report["weighted_kappa"]["value"] == pytest.approx(
        cohen_kappa_score(humans, judged, labels=order, weights="quadratic")
    )
    assert report["labels"] == order and "spearman" not in report
    assert len(report["disagreements"]) == 4


def test_scales_get_spearman_and_continuous_ones_no_kappa() -> None:
    compared = [Compared("a", 0.2, 0.3, "r"), Compared("b", 0.9, 0.8, "r"),
                Compared("c", 0.5, 0.5, "r")]  # fmt: skip
    report = agreement_report(UNIT, compared)
    assert report["kappa"]["value"] is None
    assert report["kappa"]["reason"] == ("the scale is continuous: κ needs categories (see "
                                         "Spearman's ρ)")  # fmt: skip
    assert "weighted_kappa" not in report
    assert report["spearman"]["value"] == pytest.approx(1.0)
    assert report["mean_absolute_difference"] == pytest.approx(0.2 / 3)
    assert [d["example_id"] for d in report["disagreements"]] == ["a", "b"]
    assert report["disagreements"][0]["difference"] == pytest.approx(0.1)
    integer = agreement_report(SCALE, [Compared("a", 4.0, 3.6, "r"), Compared("b", 2.0, 2.0, "")])
    assert integer["agreement"]["value"] == 1.0  # the mean 3.6 rounds to the point 4
    assert integer["labels"] == ["1", "2", "3", "4", "5"]
    empty = agreement_report(VerdictSpec(), [])
    assert empty["notes"] == [
        "no row has both a human label and a readable verdict: nothing to compare"
    ]
    assert empty["agreement"]["value"] is None
    json.dumps(empty, allow_nan=False)


def test_capture_mappings_and_values() -> None:
    assert parse_mapping(["a=response", " b = row.x "]) == {"a": "response", "b": "row.x"}
    for bad, message in [(["a="], "--map 'a=' must be FIELD=SOURCE, e.g. actual_output=response"),
                         (["a=x", "a=y"], "--map names the field 'a' twice")]:  # fmt: skip
        with pytest.raises(UsageError) as caught:
            parse_mapping(bad)
        assert caught.value.message == message
    case = Captured("e1", {}, "run/x/task.json")
    assert field_value(None, "string", name="f", case=case) == ""
    assert field_value({"k": 1}, "string", name="f", case=case) == '{"k": 1}'
    with pytest.raises(StoreError) as caught_store:
        field_value("yes", "boolean", name="ok", case=case)
    assert caught_store.value.message == (
        "run/x/task.json: field 'ok' is a boolean, but its source gives 'yes'"
    )
    with pytest.raises(StoreError) as caught_store:
        field_value(None, "trace", name="trace", case=case)
    assert caught_store.value.message == (
        "run/x/task.json: field 'trace' holds a trace, but this case has none"
    )
    assert [value_kind(v) for v in (True, 1.5, "s", None, [1])] == [
        "boolean", "number", "string", "json", "json"
    ]  # fmt: skip
    assert Schema({"a": "string"}).fields["a"] == "string"


def test_first_line_of_a_pydantic_error() -> None:
    class Model(BaseModel):
        x: int

    with pytest.raises(ValidationError) as caught:
        Model.model_validate({"x": "no"})
    assert first_line(caught.value) == (
        "x: Input should be a valid integer, unable to parse string as an integer"
    )
    assert first_line(ValueError("")) == "ValueError"


def test_a_transcript_past_its_limit_keeps_its_start_and_end_and_counts_what_was_cut() -> None:
    """``max_transcript_chars``: the judge reads the first and last (limit − 60) / 2
    characters and how many were cut between them (hand-computed from the whole text)."""
    from assay.judges.prompt import transcript_text
    from assay.results.transcript import Transcript, TranscriptEvent

    events = [TranscriptEvent("final", n, text=f"line {n} " + "x" * 50) for n in range(40)]
    transcript = Transcript(agent="llm", events=events)
    whole = transcript_text(transcript, limit=10**9)
    assert whole is not None and len(whole) > 2_000
    cut = transcript_text(transcript, limit=300)
    keep = (300 - 60) // 2
    assert cut == (whole[:keep] + f"\n… [{len(whole) - 2 * keep} characters cut] …\n"
                   + whole[-keep:])  # fmt: skip
    assert transcript_text(transcript, limit=len(whole)) == whole  # at the limit: whole
