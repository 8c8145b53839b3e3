"""QA metrics: accuracy with judge errors excluded, extraction failures counted wrong, Wilson
intervals, grouping by meta keys, the metrics.json average, and the per-dataset hook."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score

from assay.errors import TaskFileError
from assay.metrics.intervals import wilson_interval
from assay.qa import (
    PredictionRecord,
    SampleResult,
    average_metrics,
    build_item,
    load_metrics_hook,
    metrics_document,
    normalize_sample,
    replicate_metrics,
)

REASONS: dict[str, tuple[bool | None, str | None]] = {
    "ok": (True, None),
    "wrong": (False, "wrong_answer"),
    "fail": (False, "extraction_failed"),
    "none": (False, "content_none"),
    "judge": (None, "judge_error"),
    "unanswered": (None, "answer_error"),
}


def record(i: int, meta: dict[str, Any], replicate: int = 0) -> PredictionRecord:
    row = {
        "sample_id": f"s{i}",
        "story": "",
        "question": "q",
        "answer": {"correct_answers": ["a"], "wrong_answers": ["b"]},
        "meta": meta,
    }
    item = build_item(normalize_sample(row, index=i), dataset="d", replicate=replicate)
    return PredictionRecord.from_item(item, content="A")


def result(i: int, kind: str, replicate: int = 0) -> SampleResult:
    correct, reason = REASONS[kind]
    return SampleResult(
        sample_id=f"s{i}",
        sample_index=i,
        replicate=replicate,
        prompt_type="mcq_single",
        unanswerable=False,
        is_correct=correct,
        error_reason=reason,  # type: ignore[arg-type]
    )


def build(kinds: list[str], metas: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    metas = metas or [{} for _ in kinds]
    records = [record(i, m) for i, m in enumerate(metas)]
    results = [result(i, k) for i, k in enumerate(kinds)]
    return replicate_metrics(records, results, **kw)


def test_counts_and_accuracy() -> None:
    m = build(["ok", "ok", "ok", "wrong", "fail", "none", "judge", "judge"])
    assert (m["correct"], m["total"], m["graded"]) == (3, 8, 6)
    assert (m["excluded"], m["judge_errors"]) == (2, 2)
    assert m["accuracy"] == pytest.approx(3 / 6)  # judge errors are out of the denominator
    # of what graded, by the one rule of every report (suite.json's qa rate too): not / total
    assert m["extraction_failed"] == 1 and m["extraction_failed_rate"] == pytest.approx(1 / 6)
    assert m["content_none"] == 1
    low, high = wilson_interval(3, 6)  # type: ignore[misc]
    assert m["accuracy_ci"] == {"low": low, "high": high, "confidence": 0.95}
    assert [r["sample_id"] for r in m["per_sample_results"]] == [f"s{i}" for i in range(8)]
    assert m["undefined_metrics"] == {}


def test_extraction_failures_count_as_wrong() -> None:
    assert build(["ok", "fail"])["accuracy"] == 0.5


def test_only_judge_errors_leave_accuracy_undefined_not_nan() -> None:
    m = build(["judge", "judge"])
    assert m["accuracy"] is None and m["accuracy_ci"] is None
    assert m["undefined_metrics"]["accuracy"].startswith("0/0: no graded samples")
    json.dumps(metrics_document([m]), allow_nan=False)


def test_empty_replicate() -> None:
    m = build([])
    assert m["total"] == 0 and m["accuracy"] is None and m["extraction_failed_rate"] is None


@given(st.lists(st.sampled_from(sorted(REASONS)), max_size=60))
def test_accuracy_matches_sklearn_on_the_graded_rows(kinds: list[str]) -> None:
    m = build(kinds)
    graded = [k for k in kinds if k not in ("judge", "unanswered")]
    if not graded:
        assert m["accuracy"] is None
        return
    truth = [1] * len(graded)
    predicted = [1 if k == "ok" else 0 for k in graded]
    assert m["accuracy"] == pytest.approx(accuracy_score(truth, predicted))
    low, high = m["accuracy_ci"]["low"], m["accuracy_ci"]["high"]
    assert 0.0 <= low <= m["accuracy"] <= high <= 1.0 and low < high


def test_group_by_meta_keys() -> None:
    metas = [
        {"ability": ["belief", "x"], "level": {"n": 1}},
        {"ability": ["belief"], "level": {"n": 2}},
        {"ability": "desire", "level": {"n": 1}},
        {"ability": [], "flag": True},
        {"ability": None, "flag": False},
    ]
    m = build(
        ["ok", "wrong", "ok", "judge", "ok"],
        metas,
        group_by=["meta.ability", "meta.level.n", "meta.flag"],
    )
    assert m["by_ability"] == {"belief": 0.5, "desire": 1.0, "unknown": 1.0}
    assert m["by_ability.belief"] == 0.5
    # samples graded per key: the accuracy's denominator (the judge error of "unknown" is out)
    assert m["by_ability_counts"] == {"belief": 2, "desire": 1, "unknown": 1}
    low, high = wilson_interval(1, 2)  # type: ignore[misc]
    assert m["by_ability_ci"]["belief"] == {"low": low, "high": high, "confidence": 0.95}
    assert m["by_level.n"] == {"1": 1.0, "2": 0.0, "unknown": 1.0}
    assert m["by_level.n_counts"] == {"1": 2, "2": 1, "unknown": 1}
    # a group whose only member is a judge error has no accuracy, and says so with null
    assert m["by_flag"] == {"false": 1.0, "true": None, "unknown": 2 / 3}
    assert m["by_flag_ci"]["true"] is None and m["by_flag_counts"]["true"] == 0
    assert m["undefined_metrics"]["by_flag.true"].startswith("0/0: no graded samples")
    assert "by_flag.false" not in m["undefined_metrics"]


def test_always_grouped_by_prompt_type() -> None:
    m = build(["ok", "wrong"])
    assert m["by_prompt_type"] == {"mcq_single": 0.5}
    assert m["by_prompt_type_counts"] == {"mcq_single": 2}


def test_records_and_results_must_line_up() -> None:
    with pytest.raises(ValueError, match="2 records but 1 results"):
        replicate_metrics([record(0, {}), record(1, {})], [result(0, "ok")])
    with pytest.raises(ValueError, match="paired with the result of 's1'"):
        replicate_metrics([record(0, {})], [result(1, "ok")])


def test_average_metrics() -> None:
    all_metrics = [
        {
            "accuracy": 0.5,
            "correct": 5,
            "total": 10,
            "name": "x",
            "flag": True,
            "per_sample_results": [{"a": 1}],
            "by_k": {"a": 1.0, "b": None},
            "accuracy_ci": {"low": 0.2, "high": 0.8, "confidence": 0.95},
            "only_here": 3,
            "undefined_metrics": {},
        },
        {
            "accuracy": 0.7,
            "correct": 7,
            "total": 10,
            "name": "x",
            "flag": True,
            "per_sample_results": [{"a": 2}],
            "by_k": {"a": 0.0, "b": None},
            "accuracy_ci": {"low": 0.4, "high": 0.9, "confidence": 0.95},
            "undefined_metrics": {"by_k.b": "0/0"},
        },
    ]
    avg = average_metrics(all_metrics)
    assert avg["accuracy"] == pytest.approx(0.6)
    assert avg["correct"] == 6.0 and avg["total"] == 10.0
    assert avg["by_k"] == {"a": 0.5, "b": None}
    assert "accuracy_ci" not in avg  # bounds are never averaged (pooled_intervals gives one)
    assert avg["only_here"] == 3.0
    assert "per_sample_results" not in avg and "name" not in avg and "flag" not in avg
    assert avg["undefined_metrics"] == {}


def test_average_keeps_reasons_of_metrics_undefined_everywhere() -> None:
    a, b = build(["judge"]), build(["judge"])
    avg = average_metrics([a, b])
    assert avg["accuracy"] is None
    assert avg["undefined_metrics"]["accuracy"].startswith("0/0")


def test_metrics_document_shape() -> None:
    r0 = build(["ok", "wrong"])
    r1 = build(["ok", "ok"])
    doc = metrics_document([r0, r1])
    assert list(doc) == ["schema_version", "avg_metrics", "all_metrics"]
    assert doc["all_metrics"] == [r0, r1]
    assert doc["avg_metrics"]["accuracy"] == pytest.approx(0.75)
    json.dumps(doc, allow_nan=False)


HOOK = """
from typing import Any


def compute_metrics(records: list[dict[str, Any]], per_sample_results: list[dict[str, Any]]):
    # ToMEval's base_metric_payload plus a custom metric
    total = len(per_sample_results)
    correct = sum(1 for item in per_sample_results if item["is_correct"])
    lengths = [len(r["pred"]["content"] or "") for r in records]
    return {
        "accuracy": correct / total if total else 0.0,
        "correct": correct,
        "total": total,
        "graded": total,
        "per_sample_results": per_sample_results,
        "mean_response_chars": sum(lengths) / len(lengths),
    }
"""


def write(tmp_path: Path, text: str, name: str = "metrics.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_hook_adds_metrics_and_its_counts_drive_the_interval(tmp_path: Path) -> None:
    hook = load_metrics_hook(write(tmp_path, HOOK))
    m = build(["ok", "wrong", "judge"], hook=hook, hook_file="metrics.py")
    assert m["mean_response_chars"] == 1.0
    assert m["accuracy"] == pytest.approx(1 / 3)  # the hook's own definition wins
    low, high = wilson_interval(1, 3)  # type: ignore[misc]
    assert m["accuracy_ci"]["low"] == low and m["accuracy_ci"]["high"] == high
    assert "by_prompt_type" in m  # built-in entries stay


def test_hook_with_a_dataclass_loads_and_leaves_no_module_behind(tmp_path: Path) -> None:
    import sys

    path = write(
        tmp_path, "from dataclasses import dataclass\n\n@dataclass\nclass A:\n    x: int\n" + HOOK
    )
    before = set(sys.modules)
    load_metrics_hook(path)
    assert set(sys.modules) - before <= {"dataclasses"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "def other():\n    pass\n",
            "must define compute_metrics(records, per_sample_results).",
        ),
        (
            "compute_metrics = 3\n",
            "must define compute_metrics(records, per_sample_results).",
        ),
        (
            "raise RuntimeError('boom')\n",
            "metrics hook {path} failed to import: RuntimeError: boom",
        ),
        ("def compute_metrics(:\n", "metrics hook {path} failed to import: SyntaxError: "),
    ],
)
def test_hook_load_errors_name_the_file(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(TaskFileError) as info:
        load_metrics_hook(path)
    assert info.value.message.startswith(message.format(path=path))
    assert info.value.file == str(path)


def test_missing_hook_file(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError) as info:
        load_metrics_hook(tmp_path / "nope.py")
    assert info.value.message == f"metrics hook not found: {tmp_path / 'nope.py'}"


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ("{'accuracy': 1.0, 'correct': 1}",
         "compute_metrics returned a dict without total, per_sample_results"),
        ("{}",
         "compute_metrics returned a dict without accuracy, correct, total, per_sample_results"),
        ("[1, 2]", "compute_metrics must return a dict, not list"),
        ("{'accuracy': 'high', 'correct': 1, 'total': 2, 'per_sample_results': []}",
         "compute_metrics returned accuracy='high' (expected a number from 0 to 1, or null)"),
        ("{'accuracy': 2.0, 'correct': 1, 'total': 2, 'per_sample_results': []}",
         "compute_metrics returned accuracy=2.0 (expected a number from 0 to 1, or null)"),
        ("{'accuracy': float('nan'), 'correct': 1, 'total': 2, 'per_sample_results': []}",
         "compute_metrics returned accuracy=nan (expected a number from 0 to 1, or null); "
         "accuracy that cannot be written as JSON (Out of range float values are not JSON "
         "compliant)"),
        ("{'accuracy': 0.5, 'correct': 1.5, 'total': 2, 'per_sample_results': []}",
         "compute_metrics returned correct=1.5 (expected a non-negative integer)"),
        ("{'accuracy': 0.5, 'correct': 3, 'total': 2, 'per_sample_results': []}",
         "compute_metrics returned correct=3 greater than total=2"),
        ("{'accuracy': 0.5, 'correct': 1, 'total': 2, 'per_sample_results': [], 'x': object()}",
         "compute_metrics returned x that cannot be written as JSON (Object of type object is "
         "not JSON serializable)"),
        ("{'accuracy': 0.5, 'correct': 1, 'total': 2, 'per_sample_results': [], 'x': [1e999]}",
         "compute_metrics returned x that cannot be written as JSON (Out of range float values "
         "are not JSON compliant)"),
        ("{'accuracy': 1.0, 'correct': 2, 'total': 2, 'per_sample_results': []}",
         "compute_metrics returned correct=2, more than the 1 graded samples"),
        ("1 / 0", "compute_metrics raised ZeroDivisionError: division by zero"),
        ("__import__('sys').exit(3)", "compute_metrics raised SystemExit: 3"),
    ],
)  # fmt: skip
def test_hook_result_errors_name_the_file(tmp_path: Path, returned: str, message: str) -> None:
    hook = load_metrics_hook(
        write(
            tmp_path, f"def compute_metrics(records, per_sample_results):\n    return {returned}\n"
        )
    )
    with pytest.raises(TaskFileError) as info:
        build(["ok"], hook=hook, hook_file="metrics.py")
    assert info.value.message == message
    assert str(info.value).count("metrics.py") == 1


def test_a_hook_accuracy_of_its_own_has_no_interval(tmp_path: Path) -> None:
    body = "{'accuracy': 0.9, 'correct': 1, 'total': 2, 'per_sample_results': []}"
    hook = load_metrics_hook(
        write(tmp_path, f"def compute_metrics(records, per_sample_results):\n    return {body}\n")
    )
    metrics = build(["ok", "wrong"], hook=hook, hook_file="metrics.py")
    assert metrics["accuracy"] == 0.9 and metrics["accuracy_ci"] is None


def test_answer_errors_are_excluded_like_judge_errors() -> None:
    m = build(["ok", "wrong", "unanswered", "judge"])
    assert (m["correct"], m["total"], m["graded"], m["excluded"]) == (1, 4, 2, 2)
    assert (m["answer_errors"], m["judge_errors"]) == (1, 1)
    assert m["accuracy"] == 0.5
    nothing = build(["unanswered"])
    assert (
        nothing["accuracy"] is None
        and "a judge error, an answer error or a refusal"
        in nothing["undefined_metrics"]["accuracy"]
    )


def test_sample_results_round_trip_and_refuse_bad_entries() -> None:
    entry = result(3, "wrong")
    assert SampleResult.from_dict(entry.to_dict()) == entry
    with pytest.raises(ValueError):
        SampleResult.from_dict({**entry.to_dict(), "surprise": 1})
    with pytest.raises(ValueError):
        SampleResult.from_dict({**entry.to_dict(), "is_correct": "maybe"})


def test_a_hook_that_raises_is_located_by_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "def compute_metrics(records, per_sample_results):\n"
                 "    x = 1\n    return records[99]\n")  # fmt: skip
    with pytest.raises(TaskFileError) as info:
        build(["ok"], hook=load_metrics_hook(path), hook_file=str(path))
    assert info.value.message == (
        "compute_metrics raised IndexError: list index out of range (at line 3)"
    )


def test_the_helpers_a_hook_is_told_to_use_work_on_the_plain_dicts_it_receives(
    tmp_path: Path,
) -> None:
    """A ToMEval hook calls base_metric_payload and the grouped helpers on plain dicts (it
    raised AttributeError); their numbers equal the built-in ones, judge errors excluded."""
    hook_text = """
from assay.qa import base_metric_payload, base_metrics, first_value, generic_group_metrics


def compute_metrics(records, per_sample_results):
    out = base_metric_payload(per_sample_results)
    out.update(generic_group_metrics(
        records, per_sample_results, [("by_kind", lambda r: first_value(r["meta"].get("k")))]))
    out["again"] = base_metrics(per_sample_results)["accuracy"]
    return out
"""
    hook = load_metrics_hook(write(tmp_path, hook_text))
    plain = build(["ok", "wrong", "judge", "ok"])
    hooked = build(["ok", "wrong", "judge", "ok"], hook=hook, hook_file="metrics.py")
    assert hooked["accuracy"] == plain["accuracy"] == pytest.approx(2 / 3)
    assert hooked["again"] == plain["accuracy"]
    assert hooked["graded"] == plain["graded"] == 3
    # the graded samples per key, as assay's own by_<key>_counts (the judge error is not)
    assert "by_kind" in hooked and sum(hooked["by_kind_counts"].values()) == 3


def test_a_hook_reads_each_grades_replicate_as_repeat_too(tmp_path: Path) -> None:
    """ToMEval's hooks group per-sample results by ``repeat``; assay's name is ``replicate``."""
    hook = load_metrics_hook(write(tmp_path, """
        def compute_metrics(records, per_sample_results):
            repeats = sorted({r["repeat"] for r in per_sample_results})
            same = all(r["repeat"] == r["replicate"] for r in per_sample_results)
            return {"accuracy": 0.5, "correct": 1, "total": 2, "graded": 2,
                    "per_sample_results": per_sample_results, "repeats": repeats, "same": same}
        """))  # fmt: skip
    m = build(["ok", "wrong"], hook=hook, hook_file="metrics.py")
    assert m["repeats"] == [0] and m["same"] is True
