"""describe() against statistics and numpy; MetricTable's None-plus-reason bookkeeping."""

from __future__ import annotations

import math
import statistics
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.metrics import MetricTable, describe

NAMES = ["count", "mean", "median", "std", "min", "max"]

score_lists = st.lists(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=50,
)
unit_scores = st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=50)


def _close(actual: float | None, expected: float, scores: list[float]) -> bool:
    scale = max([1.0, *(abs(s) for s in scores)])
    return actual is not None and math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-9 * scale)


@settings(max_examples=300, deadline=None)
@given(score_lists)
def test_describe_matches_statistics(scores: list[float]) -> None:
    values = describe(scores).values
    assert values["count"] == float(len(scores))
    assert values["mean"] == pytest.approx(statistics.fmean(scores), rel=1e-12, abs=1e-12)
    assert values["median"] == statistics.median(scores)
    assert values["std"] == pytest.approx(statistics.pstdev(scores), rel=1e-12, abs=1e-12)
    assert values["min"] == min(scores)
    assert values["max"] == max(scores)


@settings(max_examples=300, deadline=None)
@given(score_lists)
def test_describe_matches_numpy_population_std(scores: list[float]) -> None:
    values = describe(scores).values
    array = np.asarray(scores, dtype=float)
    assert _close(values["mean"], float(np.mean(array)), scores)
    assert _close(values["median"], float(np.median(array)), scores)
    assert _close(values["std"], float(np.std(array, ddof=0)), scores)
    assert values["min"] == float(np.min(array))
    assert values["max"] == float(np.max(array))


@settings(max_examples=200, deadline=None)
@given(unit_scores)
def test_unit_scores_stay_in_range_and_defined(scores: list[float]) -> None:
    table = describe(scores)
    assert list(table.values) == NAMES
    assert table.undefined == {}
    for name in ("mean", "median", "min", "max"):
        value = table.values[name]
        assert value is not None and 0.0 <= value <= 1.0


def test_std_is_population_not_sample() -> None:
    values = describe([1.0, 1.0, 0.0]).values
    assert values["std"] == pytest.approx(math.sqrt(2) / 3, abs=1e-15)
    assert values["std"] != pytest.approx(statistics.stdev([1.0, 1.0, 0.0]))


def test_sentiment_scores_match_coder_eval_sample() -> None:
    # classification_match scores of r1, r2, r3 in the seed sentiment suite.json.
    assert describe([1.0, 1.0, 0.0]).values == {
        "count": 3.0,
        "mean": 0.6666666666666666,
        "median": 1.0,
        "std": 0.4714045207910317,
        "min": 0.0,
        "max": 1.0,
    }


def test_constant_scores_have_zero_std() -> None:
    values = describe([1.0, 1.0, 1.0]).values
    assert values == {"count": 3.0, "mean": 1.0, "median": 1.0, "std": 0.0, "min": 1.0, "max": 1.0}


def test_one_row_has_std_zero() -> None:
    table = describe([0.25])
    assert table.values == {
        "count": 1.0,
        "mean": 0.25,
        "median": 0.25,
        "std": 0.0,
        "min": 0.25,
        "max": 0.25,
    }
    assert table.undefined == {}


def test_even_count_median_is_mean_of_middle_two() -> None:
    assert describe([0.0, 1.0, 0.5, 0.0]).values["median"] == 0.25


def test_integer_scores_give_floats() -> None:
    values = describe([1, 0, 1, 0]).values
    assert values == {"count": 4.0, "mean": 0.5, "median": 0.5, "std": 0.5, "min": 0.0, "max": 1.0}
    assert all(type(v) is float for v in values.values())


def test_empty_has_count_zero_and_undefined_rest() -> None:
    table = describe([])
    assert table.values == {"count": 0.0, **dict.fromkeys(NAMES[1:], None)}
    assert set(table.undefined) == set(NAMES[1:])
    assert all(table.undefined[name] == "no graded rows" for name in NAMES[1:])


def test_metric_table_put_zero_denominator_is_none_with_reason() -> None:
    table = MetricTable()
    table.put("rate", 0, 0, "no rows")
    assert table.values == {"rate": None}
    assert table.undefined == {"rate": "no rows"}


def test_metric_table_put_divides_fractions_exactly() -> None:
    table = MetricTable()
    table.put("third", Fraction(1, 3) + Fraction(1, 3) + Fraction(1, 3), 1, "")
    table.put("ratio", 3, 4, "")
    assert table.values == {"third": 1.0, "ratio": 0.75}
    assert all(type(v) is float for v in table.values.values())


def test_metric_table_defined_value_clears_an_old_reason() -> None:
    table = MetricTable()
    table.set("x", None, "undefined at first")
    table.put("x", 1, 2, "unused")
    table.set("y", None, "undefined at first")
    table.set("y", 0.0)
    assert table.values == {"x": 0.5, "y": 0.0}
    assert table.undefined == {}


def test_metric_table_merge_other_wins() -> None:
    base = MetricTable()
    base.set("a", None, "why a")
    base.set("b", 1.0)
    other = MetricTable()
    other.set("a", 0.5)
    other.set("b", None, "why b")
    base.merge(other)
    assert base.values == {"a": 0.5, "b": None}
    assert base.undefined == {"b": "why b"}
