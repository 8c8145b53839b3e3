"""pass@k / pass^k, McNemar's exact test and the cluster bootstrap, against independent values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from assay.metrics.bootstrap import bootstrap, difference, macro_f1, ratio
from assay.metrics.paired import mcnemar_exact
from assay.metrics.passk import pass_at_k, pass_hat_k, suite_pass_k


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 2 / 5),
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (5, 2, 4, 1.0),  # fewer than k failures: some draw of 4 always holds a pass
        (5, 0, 3, 0.0),
        (5, 5, 5, 1.0),
        (10, 3, 3, 1 - math.comb(7, 3) / math.comb(10, 3)),
    ],
)
def test_pass_at_k_hand_values(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [(5, 2, 1, 2 / 5), (5, 2, 2, 1 / 10), (5, 2, 3, 0.0), (4, 4, 4, 1.0), (6, 3, 2, 3 / 15)],
)
def test_pass_hat_k_hand_values(n: int, c: int, k: int, expected: float) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_1_is_the_pass_fraction_and_k_is_monotone(case: tuple[int, int]) -> None:
    n, c = case
    assert pass_at_k(n, c, 1) == pytest.approx(c / n)
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert values == sorted(values)
    hats = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    assert hats == sorted(hats, reverse=True)


def test_pass_k_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_hat_k(3, 1, 4)


def test_suite_pass_k_leaves_out_rows_with_too_few_replicates() -> None:
    result = suite_pass_k([(3, 1), (3, 3), (2, 0)])
    assert result["1"] == {"pass_at_k": pytest.approx((1 / 3 + 1 + 0) / 3),
                           "pass_hat_k": pytest.approx((1 / 3 + 1 + 0) / 3), "rows": 3}  # fmt: skip
    assert result["3"]["rows"] == 2
    assert result["3"]["pass_at_k"] == pytest.approx((1 + 1) / 2)
    assert suite_pass_k([]) == {}


@given(st.integers(0, 40), st.integers(0, 40))
def test_mcnemar_matches_scipy(b: int, c: int) -> None:
    result = mcnemar_exact(b, c)
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
    assert result.p_value == pytest.approx(min(1.0, expected))
    assert (result.a_only, result.b_only) == (b, c)


def test_mcnemar_hand_value() -> None:
    # 0 vs 6 discordant pairs: two-sided exact p = 2 * 0.5**6
    assert mcnemar_exact(0, 6).p_value == pytest.approx(2 * 0.5**6)


def test_bootstrap_one_row_gives_no_interval() -> None:
    found = bootstrap(np.array([[1.0, 1.0]]), ratio(0, 1))
    assert found.value == 1.0 and found.low is None and found.reason == "needs at least 2 rows"


def test_bootstrap_without_variation_gives_no_zero_width_interval() -> None:
    found = bootstrap(np.array([[1.0, 1.0]] * 20), ratio(0, 1))
    assert found.value == 1.0
    assert found.low is None and found.high is None
    assert "no uncertainty" in (found.reason or "")


def test_bootstrap_interval_covers_the_estimate_and_is_reproducible() -> None:
    rng = np.random.default_rng(1)
    rows = np.column_stack([rng.integers(0, 2, 200), np.ones(200)]).astype(float)
    first, again = bootstrap(rows, ratio(0, 1)), bootstrap(rows, ratio(0, 1))
    assert first == again
    assert first.low is not None and first.high is not None
    assert first.low < first.value < first.high  # type: ignore[operator]
    # a 95% interval for a proportion near 0.5 over 200 rows is about ±0.07
    assert 0.1 < first.high - first.low < 0.2


def test_clustered_replicates_widen_the_interval() -> None:
    rng = np.random.default_rng(2)
    outcome = rng.integers(0, 2, 50).astype(float)
    independent = np.column_stack([np.repeat(outcome, 4), np.ones(200)])
    clustered = np.column_stack([outcome * 4, np.full(50, 4.0)])  # 4 identical replicates
    wide = bootstrap(clustered, ratio(0, 1))
    narrow = bootstrap(independent, ratio(0, 1))
    assert wide.value == pytest.approx(narrow.value)
    assert (wide.high - wide.low) > 1.5 * (narrow.high - narrow.low)  # type: ignore[operator]


def test_macro_f1_statistic_matches_the_formula() -> None:
    # labels a, b: tp/fp/fn per label
    sums = np.array([[3.0, 1.0, 2.0, 4.0, 2.0, 1.0]])
    expected = (2 * 3 / (2 * 3 + 1 + 2) + 2 * 4 / (2 * 4 + 2 + 1)) / 2
    assert macro_f1(2)(sums)[0] == pytest.approx(expected)


def test_paired_difference_of_identical_arms_is_zero_without_interval() -> None:
    rows = np.column_stack([np.tile([1.0, 0.0], 10), np.ones(20)])
    paired = np.hstack([rows, rows])
    found = bootstrap(paired, difference(ratio(0, 1), ratio(0, 1), 2))
    assert found.value == 0.0 and found.low is None
