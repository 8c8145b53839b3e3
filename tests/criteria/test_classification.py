"""``classification_match``: the observed label per row and the suite's classification metrics."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from assay.criteria import default_criteria
from assay.criteria.base import CriterionError, GradingContext
from assay.criteria.classification import (
    NONE_LABEL,
    OTHER_LABEL,
    ClassificationMatchCriterion,
    canonical_label,
)
from assay.results.task_result import (
    BasicCriterionResult,
    ClassificationCriterionResult,
    CriterionResult,
)
from assay.sandbox.tempdir import Sandbox
from assay.spec.criteria import ClassificationMatch
from assay.spec.task import SandboxConfig
from tests.helpers import aggregate_with, check_with, write

LABELS = ["positive", "negative"]


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    yield box
    box.remove()


def spec_of(**fields: Any) -> ClassificationMatch:
    data = {"type": "classification_match", "allowed_labels": LABELS, **fields}
    return ClassificationMatch.model_validate(data)


def classify(
    response: str | None, sandbox: Sandbox | None = None, **fields: Any
) -> ClassificationCriterionResult:
    context = GradingContext(sandbox=sandbox, response=response)
    result = asyncio.run(check_with(spec_of(**fields), context))
    assert isinstance(result, ClassificationCriterionResult)
    return result


def test_sentinels() -> None:
    assert (NONE_LABEL, OTHER_LABEL) == ("(none)", "(other)")


# --- the observed label ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "allowed", "case_sensitive", "label"),
    [
        ("positive", LABELS, False, "positive"),
        ("  POSITIVE \n", LABELS, False, "positive"),
        ("Negative", LABELS, False, "negative"),
        ("positive", ["Positive", "Negative"], False, "Positive"),  # the allowed casing
        ("POSITIVE", ["Positive", "Negative"], False, "Positive"),
        ("positive", ["Positive", "Negative"], True, "(other)"),
        ("Positive", ["Positive", "Negative"], True, "Positive"),
        (" Positive\n", ["Positive", "Negative"], True, "Positive"),  # stripped either way
        ("", LABELS, False, "(none)"),
        ("  \n\t ", LABELS, False, "(none)"),
        (None, LABELS, False, "(none)"),
        ("", LABELS, True, "(none)"),
        ("maybe", LABELS, False, "(other)"),
        ("positive.", LABELS, False, "(other)"),
        ("positive negative", LABELS, False, "(other)"),
        ("STRASSE", ["straße"], False, "straße"),  # Unicode case folding
    ],
)
def test_canonical_label(
    text: str | None, allowed: list[str], case_sensitive: bool, label: str
) -> None:
    assert canonical_label(text, allowed, case_sensitive=case_sensitive) == label


def test_response_is_canonicalized_to_the_allowed_casing() -> None:
    result = classify(" POSITIVE\n", expected_label="positive")
    assert (result.observed_label, result.expected_label, result.score) == (
        "positive",
        "positive",
        1.0,
    )
    assert result.details == "observed='positive', expected='positive'"
    assert result.criterion_type == "classification_match"
    assert result.error is None
    assert result.passed


def test_case_sensitive_requires_the_exact_casing() -> None:
    strict = {"allowed_labels": ["Positive", "Negative"], "case_sensitive": True}
    wrong_case = classify("positive", expected_label="Positive", **strict)
    assert (wrong_case.observed_label, wrong_case.score) == ("(other)", 0.0)
    assert wrong_case.details == "observed='(other)', expected='Positive'"
    exact = classify("Positive", expected_label="Positive", **strict)
    assert (exact.observed_label, exact.score) == ("Positive", 1.0)


@pytest.mark.parametrize("response", [None, "", "   ", "\n\n"])
def test_no_answer_is_none(response: str | None) -> None:
    result = classify(response, expected_label="negative")
    assert (result.observed_label, result.score) == ("(none)", 0.0)
    assert result.details == "observed='(none)', expected='negative'"


def test_text_outside_the_set_is_other() -> None:
    result = classify("neutral", expected_label="negative")
    assert (result.observed_label, result.score) == ("(other)", 0.0)
    assert result.details == "observed='(other)', expected='negative'"


def test_wrong_allowed_label_scores_zero() -> None:
    result = classify("positive", expected_label="negative")
    assert (result.observed_label, result.expected_label, result.score) == (
        "positive",
        "negative",
        0.0,
    )
    assert not result.passed


# --- the expected label ---------------------------------------------------------------


@pytest.mark.parametrize("expected", ["", "   "])
def test_empty_expected_label_expects_none(expected: str) -> None:
    silent = classify("", expected_label=expected)
    assert (silent.expected_label, silent.observed_label, silent.score) == (
        "(none)",
        "(none)",
        1.0,
    )
    assert silent.details == "observed='(none)', expected='(none)'"
    spoke = classify("positive", expected_label=expected)
    assert (spoke.expected_label, spoke.score) == ("(none)", 0.0)


def test_expected_label_in_another_case_is_canonicalized() -> None:
    result = classify("negative", expected_label=" NEGATIVE ")
    assert (result.expected_label, result.score) == ("negative", 1.0)
    result = classify("POSITIVE", expected_label="Positive", allowed_labels=["POSITIVE", "x"])
    assert (result.expected_label, result.observed_label, result.score) == (
        "POSITIVE",
        "POSITIVE",
        1.0,
    )


def test_expected_label_outside_the_set_can_never_be_matched() -> None:
    result = classify("neutral", expected_label="neutral")
    assert (result.expected_label, result.observed_label, result.score) == (
        "neutral",
        "(other)",
        0.0,
    )
    strict = classify("POSITIVE", expected_label="POSITIVE", case_sensitive=True)
    assert (strict.expected_label, strict.observed_label, strict.score) == (
        "POSITIVE",
        "(other)",
        0.0,
    )


# --- reading a file -------------------------------------------------------------------


def test_label_read_from_a_file(sandbox: Sandbox) -> None:
    write(sandbox.root / "out" / "label.txt", "Negative\n")
    result = classify("positive", sandbox, path="out/label.txt", expected_label="negative")
    assert (result.observed_label, result.score) == ("negative", 1.0)


@pytest.mark.parametrize("content", [None, "", " \n"])
def test_missing_or_empty_file_is_none(sandbox: Sandbox, content: str | None) -> None:
    if content is not None:
        write(sandbox.root / "label.txt", content)
    result = classify("positive", sandbox, path="label.txt", expected_label="positive")
    assert (result.observed_label, result.score) == ("(none)", 0.0)
    assert result.details == "observed='(none)', expected='positive'"


def test_file_symlinked_out_of_the_sandbox_is_an_error(sandbox: Sandbox, tmp_path: Path) -> None:
    (sandbox.root / "label.txt").symlink_to(write(tmp_path / "answer", "positive"))
    with pytest.raises(CriterionError, match=r"resolves outside the sandbox \(a symlink\)"):
        classify(None, sandbox, path="label.txt", expected_label="positive")


def test_file_without_a_kept_sandbox_is_an_error() -> None:
    with pytest.raises(CriterionError, match="sandbox was not kept"):
        classify("positive", None, path="label.txt", expected_label="positive")


# --- the spec -------------------------------------------------------------------------


def test_spec_fields() -> None:
    spec = spec_of(expected_label="positive")
    assert (spec.path, spec.case_sensitive, spec.weight, spec.pass_threshold) == (
        None,
        False,
        1.0,
        0.9,
    )
    with pytest.raises(ValidationError, match="at least 1 item"):
        spec_of(expected_label="x", allowed_labels=[])
    with pytest.raises(ValidationError, match="Field required"):
        ClassificationMatch.model_validate(
            {"type": "classification_match", "allowed_labels": LABELS}
        )
    with pytest.raises(ValidationError, match="leaves the sandbox"):
        spec_of(expected_label="x", path="../label.txt")


def test_result_carries_weight_and_threshold() -> None:
    result = classify("positive", expected_label="positive", weight=2, pass_threshold=1)
    assert (result.weight, result.pass_threshold, result.gating) == (2.0, 1.0, True)


# --- the suite aggregate --------------------------------------------------------------


def graded(pairs: list[tuple[str, str]]) -> list[CriterionResult]:
    results: list[CriterionResult] = []
    for expected, response in pairs:
        results.append(classify(response, expected_label=expected))
    return results


# (expected, response) → observed: pos/pos, pos/neg, neg/neg, neg/(none), pos/pos.
ROWS = [
    ("positive", "positive"),
    ("positive", "negative"),
    ("negative", "NEGATIVE"),
    ("negative", ""),
    ("positive", " Positive "),
]


def test_aggregate_adds_classification_metrics_to_the_score_statistics() -> None:
    table, details = aggregate_with(spec_of(expected_label="x"), graded(ROWS))
    v = table.values
    # Scores 1, 0, 1, 0, 1.
    assert v["count"] == 5.0
    assert v["mean"] == pytest.approx(3 / 5)
    assert v["median"] == 1.0
    assert v["std"] == pytest.approx(math.sqrt(0.24))  # population: mean of (x-0.6)^2
    assert (v["min"], v["max"]) == (0.0, 1.0)
    # positive: TP 2, FP 0, FN 1.  negative: TP 1, FP 1, FN 1.  (none): TP 0, FP 1, FN 0.
    assert v["precision.positive"] == 1.0
    assert v["recall.positive"] == pytest.approx(2 / 3)
    assert v["f1.positive"] == pytest.approx(4 / 5)
    assert v["precision.negative"] == pytest.approx(1 / 2)
    assert v["recall.negative"] == pytest.approx(1 / 2)
    assert v["f1.negative"] == pytest.approx(1 / 2)
    assert v["precision.(none)"] == 0.0
    assert v["recall.(none)"] is None  # never expected: 0/0
    assert table.undefined["recall.(none)"] == "0/0: label '(none)' was never expected"
    assert v["f1.(none)"] == 0.0
    assert v["accuracy"] == pytest.approx(3 / 5)
    assert v["macro_f1"] == pytest.approx((4 / 5 + 1 / 2 + 0) / 3)
    assert v["weighted_f1"] == pytest.approx((4 / 5 * 3 + 1 / 2 * 2 + 0 * 0) / 5)
    assert v["micro_f1"] == pytest.approx(2 * 3 / (2 * 3 + 2 + 2))
    assert details["labels"] == ["(none)", "negative", "positive"]
    assert details["total_pairs"] == 5
    assert details["confusion"] == [
        {"expected": "negative", "observed": "(none)", "count": 1},
        {"expected": "negative", "observed": "negative", "count": 1},
        {"expected": "positive", "observed": "negative", "count": 1},
        {"expected": "positive", "observed": "positive", "count": 2},
    ]
    assert details["per_label"][2] == {
        "label": "positive",
        "precision": 1.0,
        "recall": pytest.approx(2 / 3),
        "f1": pytest.approx(4 / 5),
        "support": 3,
    }


def test_aggregate_pairs_only_classification_results() -> None:
    errored = BasicCriterionResult(
        criterion_type="classification_match",
        score=0.0,
        error="path 'x' resolves outside the sandbox (a symlink)",
        evaluation_status="error",
    )
    table, details = aggregate_with(spec_of(expected_label="x"), [*graded(ROWS), errored])
    assert table.values["count"] == 6.0
    assert table.values["mean"] == pytest.approx(3 / 6)
    assert table.values["accuracy"] == pytest.approx(3 / 5)
    assert details["total_pairs"] == 5


def test_aggregate_of_no_rows_is_undefined_not_zero() -> None:
    table, details = aggregate_with(spec_of(expected_label="x"), [])
    assert table.values["count"] == 0.0
    for name in ("mean", "accuracy", "macro_f1", "weighted_f1", "micro_f1"):
        assert table.values[name] is None
        assert table.undefined[name] == "no graded rows"
    assert details == {"labels": [], "per_label": [], "confusion": [], "total_pairs": 0}


def test_registry_returns_this_checker() -> None:
    assert default_criteria().get("classification_match") is ClassificationMatchCriterion
