"""Classification metrics against scikit-learn (the independent oracle) and by hand."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    accuracy_score,
    confusion_matrix,
    f1_score,
    precision_recall_fscore_support,
)

from assay.metrics import ClassificationReport, classification_report

Pairs = list[tuple[str, str]]

# Expected labels include one that is never predicted; observed labels include the
# classifier's own special labels, which a dataset never expects.
EXPECTED = ["negative", "neutral", "positive", "only-expected", "(none)"]
OBSERVED = ["negative", "neutral", "positive", "(other)", "(none)", "Positive"]

pair_lists = st.lists(
    st.tuples(st.sampled_from(EXPECTED), st.sampled_from(OBSERVED)), min_size=1, max_size=40
)
# Tiny alphabets make single-label data, all-correct and all-wrong data frequent.
tiny_pair_lists = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["a", "c"])), min_size=1, max_size=6
)

SENTIMENT: Pairs = [("positive", "positive"), ("negative", "negative"), ("negative", "positive")]


def _split(pairs: Pairs) -> tuple[list[str], list[str], list[str]]:
    expected = [e for e, _ in pairs]
    observed = [o for _, o in pairs]
    return expected, observed, sorted(set(expected) | set(observed))


def _sklearn_per_label(pairs: Pairs) -> dict[str, float]:
    expected, observed, labels = _split(pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        precision, recall, f1, _ = precision_recall_fscore_support(
            expected, observed, labels=labels, zero_division=np.nan
        )
    oracle: dict[str, float] = {}
    for i, label in enumerate(labels):
        oracle[f"precision.{label}"] = float(precision[i])
        oracle[f"recall.{label}"] = float(recall[i])
        oracle[f"f1.{label}"] = float(f1[i])
    return oracle


def _sklearn_overall(pairs: Pairs) -> dict[str, float]:
    expected, observed, labels = _split(pairs)
    oracle = {"accuracy": float(accuracy_score(expected, observed))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for average in ("macro", "weighted", "micro"):
            oracle[f"{average}_f1"] = float(
                f1_score(expected, observed, labels=labels, average=average, zero_division=np.nan)
            )
    return oracle


def _assert_matches(report: ClassificationReport, oracle: dict[str, float]) -> None:
    for name, expected in oracle.items():
        actual = report.table.values[name]
        if math.isnan(expected):
            assert actual is None, name
            assert report.table.undefined[name], name
        else:
            assert actual is not None, name
            assert actual == pytest.approx(expected, abs=1e-12, rel=0), name


@settings(max_examples=300, deadline=None)
@given(pair_lists)
def test_per_label_precision_recall_f1_match_sklearn(pairs: Pairs) -> None:
    _assert_matches(classification_report(pairs), _sklearn_per_label(pairs))


@settings(max_examples=300, deadline=None)
@given(pair_lists)
def test_accuracy_and_averaged_f1_match_sklearn(pairs: Pairs) -> None:
    _assert_matches(classification_report(pairs), _sklearn_overall(pairs))


@settings(max_examples=200, deadline=None)
@given(tiny_pair_lists)
def test_small_alphabets_match_sklearn(pairs: Pairs) -> None:
    report = classification_report(pairs)
    _assert_matches(report, {**_sklearn_per_label(pairs), **_sklearn_overall(pairs)})


@settings(max_examples=200, deadline=None)
@given(pair_lists)
def test_metric_names_are_exactly_the_documented_ones(pairs: Pairs) -> None:
    labels = _split(pairs)[2]
    names = {f"{kind}.{label}" for kind in ("precision", "recall", "f1") for label in labels}
    names |= {"accuracy", "macro_f1", "weighted_f1", "micro_f1"}
    assert set(classification_report(pairs).table.values) == names


@settings(max_examples=200, deadline=None)
@given(pair_lists)
def test_undefined_reasons_exactly_cover_the_none_values(pairs: Pairs) -> None:
    table = classification_report(pairs).table
    nones = {name for name, value in table.values.items() if value is None}
    assert set(table.undefined) == nones
    assert all(table.undefined[name] for name in nones)
    assert not any(isinstance(v, float) and math.isnan(v) for v in table.values.values())


@settings(max_examples=200, deadline=None)
@given(pair_lists)
def test_confusion_cells_match_sklearn(pairs: Pairs) -> None:
    expected, observed, labels = _split(pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "A single label was found": labels= is given
        matrix = confusion_matrix(expected, observed, labels=labels)
    report = classification_report(pairs)
    for i, row_label in enumerate(labels):
        for j, column_label in enumerate(labels):
            assert report.confusion.get((row_label, column_label), 0) == matrix[i, j]
    assert all(count > 0 for count in report.confusion.values())
    assert sum(report.confusion.values()) == len(pairs)


@settings(max_examples=200, deadline=None)
@given(pair_lists)
def test_support_and_labels_match_sklearn(pairs: Pairs) -> None:
    expected, observed, labels = _split(pairs)
    _, _, _, support = precision_recall_fscore_support(
        expected, observed, labels=labels, zero_division=np.nan
    )
    report = classification_report(pairs)
    assert report.labels == labels
    assert [s.label for s in report.per_label] == labels
    assert [s.support for s in report.per_label] == [int(n) for n in support]
    assert report.total == len(pairs)


@settings(max_examples=200, deadline=None)
@given(pair_lists)
def test_micro_f1_equals_accuracy(pairs: Pairs) -> None:
    values = classification_report(pairs).table.values
    assert values["micro_f1"] == pytest.approx(values["accuracy"], abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(pair_lists)
def test_averaged_f1_is_the_correctly_rounded_exact_value(pairs: Pairs) -> None:
    # A gate at the exact value must pass: no float drift from summing per-label F1.
    report = classification_report(pairs)
    f1 = [Fraction(2 * s.tp, 2 * s.tp + s.fp + s.fn) for s in report.per_label]
    macro = sum(f1, Fraction(0)) / len(f1)
    weighted = sum((f * s.support for f, s in zip(f1, report.per_label, strict=True)), Fraction(0))
    assert report.table.values["macro_f1"] == float(macro)
    assert report.table.values["weighted_f1"] == float(weighted / len(pairs))


def test_weighted_f1_of_three_quarters_is_exactly_0_75() -> None:
    pairs = [("a", "a"), ("a", "c"), ("b", "b"), ("c", "c")]
    assert classification_report(pairs).table.values["weighted_f1"] == 0.75


def test_macro_f1_of_one_fifth_is_exactly_0_2() -> None:
    pairs = [("a", "a")] * 3 + [("a", "b")] * 3 + [("c", "a")]
    assert classification_report(pairs).table.values["macro_f1"] == 0.2


def test_label_never_predicted_has_undefined_precision() -> None:
    report = classification_report([("a", "a"), ("b", "a")])
    assert report.table.values["precision.b"] is None
    assert report.table.undefined["precision.b"] == "0/0: label 'b' was never predicted"
    assert report.table.values["recall.b"] == 0.0
    assert report.table.values["f1.b"] == 0.0


def test_label_never_expected_has_undefined_recall() -> None:
    report = classification_report([("a", "a"), ("a", "(other)")])
    assert report.table.values["recall.(other)"] is None
    assert report.table.undefined["recall.(other)"] == "0/0: label '(other)' was never expected"
    assert report.table.values["precision.(other)"] == 0.0
    assert report.table.values["f1.(other)"] == 0.0


def test_single_label_all_correct_is_perfect() -> None:
    values = classification_report([("yes", "yes")] * 4).table.values
    assert values == {
        "precision.yes": 1.0,
        "recall.yes": 1.0,
        "f1.yes": 1.0,
        "accuracy": 1.0,
        "macro_f1": 1.0,
        "weighted_f1": 1.0,
        "micro_f1": 1.0,
    }


def test_single_expected_label_all_wrong() -> None:
    report = classification_report([("yes", "(none)")] * 3)
    values = report.table.values
    assert values["accuracy"] == 0.0
    assert values["precision.yes"] is None
    assert values["recall.(none)"] is None
    assert values["recall.yes"] == 0.0
    assert values["precision.(none)"] == 0.0
    assert (values["macro_f1"], values["weighted_f1"], values["micro_f1"]) == (0.0, 0.0, 0.0)


def test_empty_pairs_leave_every_metric_undefined() -> None:
    report = classification_report([])
    assert report.labels == []
    assert report.total == 0
    assert report.table.values == dict.fromkeys(
        ("accuracy", "macro_f1", "weighted_f1", "micro_f1"), None
    )
    assert set(report.table.undefined) == set(report.table.values)
    assert report.details() == {"labels": [], "per_label": [], "confusion": [], "total_pairs": 0}


def test_sentiment_example_by_hand() -> None:
    values = classification_report(SENTIMENT).table.values
    assert values["accuracy"] == pytest.approx(2 / 3, abs=1e-12)
    assert values["macro_f1"] == pytest.approx(2 / 3, abs=1e-12)
    assert values["weighted_f1"] == pytest.approx(2 / 3, abs=1e-12)
    assert values["micro_f1"] == pytest.approx(2 / 3, abs=1e-12)
    assert values["recall.positive"] == 1.0
    assert values["recall.negative"] == 0.5
    assert values["precision.positive"] == 0.5
    assert values["precision.negative"] == 1.0
    assert values["f1.positive"] == pytest.approx(2 / 3, abs=1e-12)
    assert values["f1.negative"] == pytest.approx(2 / 3, abs=1e-12)


def test_sentiment_details_match_coder_eval_sample() -> None:
    # From the seed_sentiment suite.json that Coder Eval wrote.
    assert classification_report(SENTIMENT).details() == {
        "labels": ["negative", "positive"],
        "per_label": [
            {
                "label": "negative",
                "precision": 1.0,
                "recall": 0.5,
                "f1": 0.6666666666666666,
                "support": 2,
            },
            {
                "label": "positive",
                "precision": 0.5,
                "recall": 1.0,
                "f1": 0.6666666666666666,
                "support": 1,
            },
        ],
        "confusion": [
            {"expected": "negative", "observed": "negative", "count": 1},
            {"expected": "negative", "observed": "positive", "count": 1},
            {"expected": "positive", "observed": "positive", "count": 1},
        ],
        "total_pairs": 3,
    }


def test_details_confusion_is_sorted_whatever_the_input_order() -> None:
    pairs = [("b", "a"), ("a", "b"), ("b", "b"), ("a", "a"), ("(none)", "a")]
    cells = [
        (c["expected"], c["observed"]) for c in classification_report(pairs).details()["confusion"]
    ]
    assert cells == [("(none)", "a"), ("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")]


def test_details_keep_none_for_undefined_precision() -> None:
    per_label = classification_report([("a", "b")]).details()["per_label"]
    assert per_label == [
        {"label": "a", "precision": None, "recall": 0.0, "f1": 0.0, "support": 1},
        {"label": "b", "precision": 0.0, "recall": None, "f1": 0.0, "support": 0},
    ]


def test_labels_are_case_sensitive_and_sorted() -> None:
    report = classification_report([("positive", "Positive"), ("(none)", "(other)")])
    assert report.labels == ["(none)", "(other)", "Positive", "positive"]
