"""Agreement metrics against independent oracles: κ and weighted κ against scikit-learn,
κ's interval against statsmodels, Spearman's ρ against scipy (all on generated cases), and
the Rogan–Gladen correction and its interval against hand-computed cases."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa

from assay.metrics.agreement import (
    JudgeErrorRates,
    average_ranks,
    cohen_kappa,
    pairwise_agreement,
    rogan_gladen,
    spearman,
)

CATEGORIES = ["a", "b", "c", "d"]
pairs_of = st.lists(
    st.tuples(st.sampled_from(CATEGORIES), st.sampled_from(CATEGORIES)), min_size=1, max_size=60
)


def _sklearn_kappa(pairs: list[tuple[str, str]], weights: str | None) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs],
                                       labels=CATEGORIES, weights=weights))  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(pairs_of, st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_equals_scikit_learn(pairs: list[tuple[str, str]], weights: str | None) -> None:
    estimate = cohen_kappa(pairs, categories=CATEGORIES, weights=weights)  # type: ignore[arg-type]
    oracle = _sklearn_kappa(pairs, weights)
    if math.isnan(oracle):  # sklearn: 0/0 when chance agreement is 1
        assert estimate.value is None and estimate.reason is not None
        assert "every row the same category" in estimate.reason
    else:
        assert estimate.value == pytest.approx(oracle, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(pairs_of.filter(lambda p: len(p) >= 10), st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_interval_equals_statsmodels(
    pairs: list[tuple[str, str]], weights: str | None
) -> None:
    table = np.zeros((4, 4))
    for a, b in pairs:
        table[CATEGORIES.index(a), CATEGORIES.index(b)] += 1
    estimate = cohen_kappa(pairs, categories=CATEGORIES, weights=weights)  # type: ignore[arg-type]
    if estimate.value is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle = cohens_kappa(table, wt=weights) if weights else cohens_kappa(table)
    if estimate.low is None:
        assert estimate.reason is not None and "variance is 0" in estimate.reason
        assert oracle.var_kappa == pytest.approx(0.0, abs=1e-12)
        return
    assert estimate.low == pytest.approx(max(-1.0, oracle.kappa_low), abs=1e-9)
    assert estimate.high == pytest.approx(min(1.0, oracle.kappa_upp), abs=1e-9)


def test_kappa_without_variation_is_undefined_and_says_why() -> None:
    estimate = cohen_kappa([("yes", "yes")] * 12)
    assert estimate.value is None and estimate.low is None
    assert estimate.reason is not None and "chance agreement is 1" in estimate.reason


def test_a_judge_that_always_says_the_same_has_kappa_zero_and_a_note() -> None:
    estimate = cohen_kappa([("yes", "yes")] * 6 + [("no", "yes")] * 6)
    assert estimate.value == 0.0
    assert estimate.note == "the second rater gave every row 'yes', so κ cannot exceed 0"


def test_too_few_rows_give_kappa_without_an_interval() -> None:
    estimate = cohen_kappa([("yes", "yes"), ("no", "no"), ("no", "yes")])
    assert estimate.value == pytest.approx(0.4)
    assert estimate.low is None and estimate.high is None
    assert estimate.reason == (
        "no interval: 3 rated pair(s), fewer than the 10 a large-sample interval needs"
    )


def test_empty_and_unknown_categories() -> None:
    assert cohen_kappa([]).reason == "no rated pairs"
    with pytest.raises(ValueError, match="not in"):
        cohen_kappa([("x", "a")], categories=["a", "b"])


values_of = st.lists(st.integers(min_value=1, max_value=5), min_size=2, max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_spearman_equals_scipy(data: st.DataObject) -> None:
    x = data.draw(values_of)
    y = data.draw(st.lists(st.floats(0, 10, allow_nan=False), min_size=len(x), max_size=len(x)))
    estimate = spearman([float(v) for v in x], y)
    if len(set(x)) == 1 or len(set(y)) == 1:
        assert estimate.value is None and estimate.reason is not None
        assert "without variation" in estimate.reason
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle = spearmanr(x, y).statistic
    assert estimate.value == pytest.approx(float(oracle), abs=1e-9)


def test_average_ranks_share_ties() -> None:
    assert average_ranks([3.0, 1.0, 3.0, 2.0]) == [3.5, 1.0, 3.5, 2.0]


def test_spearman_interval_by_hand() -> None:
    # 12 pairs with ρ = 0.5: Fisher z = atanh(0.5) = 0.549306; SE = sqrt((1 + 0.125)/9)
    x = [float(v) for v in range(12)]
    y = [0.0, 2, 1, 5, 3, 4, 8, 6, 11, 7, 10, 9]
    rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(x, y, strict=True)) / (12 * (144 - 1))
    estimate = spearman(x, y)
    assert estimate.value == pytest.approx(rho)
    half = 1.959963984540054 * math.sqrt((1 + rho * rho / 2) / 9)
    assert estimate.low == pytest.approx(math.tanh(math.atanh(rho) - half))
    assert estimate.high == pytest.approx(math.tanh(math.atanh(rho) + half))


def test_perfect_rank_agreement_has_no_interval() -> None:
    estimate = spearman([float(v) for v in range(12)], [float(v) * 2 for v in range(12)])
    assert estimate.value == pytest.approx(1.0)
    assert estimate.low is None
    assert (
        estimate.reason == "no interval: the ranks agree perfectly, which Fisher's z cannot bound"
    )


def _lee_interval(
    passed: int, n: int, tp: int, m1: int, tn: int, m0: int
) -> tuple[float, float, float]:
    """The hand computation of the module docstring, written out step by step."""
    z = 1.959963984540054
    p, q1, q0 = passed / n, tp / m1, tn / m0
    point = min(1.0, max(0.0, (p + q0 - 1) / (q0 + q1 - 1)))
    pa = (passed + z * z / 2) / (n + z * z)
    q0a, q1a = (tn + 1) / (m0 + 2), (tp + 1) / (m1 + 2)
    na, m0a, m1a = n + z * z, m0 + 2, m1 + 2
    th = (pa + q0a - 1) / (q0a + q1a - 1)
    shift = 2 * z * z * (th * q1a * (1 - q1a) / m1a - (1 - th) * q0a * (1 - q0a) / m0a)
    var = pa * (1 - pa) / na + (1 - th) ** 2 * q0a * (1 - q0a) / m0a + th**2 * q1a * (1 - q1a) / m1a
    se = math.sqrt(var) / (q0a + q1a - 1)
    return (point, min(1.0, max(0.0, th + shift - z * se)),
            min(1.0, max(0.0, th + shift + z * se)))  # fmt: skip


@pytest.mark.parametrize(
    ("passed", "n", "tp", "m1", "tn", "m0", "point"),
    [
        (60, 100, 45, 50, 40, 50, 0.6 / 0.7 - 0.2 / 0.7),  # (0.6 + 0.8 − 1)/(0.8 + 0.9 − 1)
        (30, 200, 18, 20, 95, 100, (0.15 + 0.95 - 1) / (0.95 + 0.9 - 1)),
        (1, 50, 10, 20, 28, 30, 0.0),  # clipped below 0
    ],
)
def test_rogan_gladen_by_hand(
    passed: int, n: int, tp: int, m1: int, tn: int, m0: int, point: float
) -> None:
    estimate = rogan_gladen(passed, n, JudgeErrorRates(tp, m1, tn, m0))
    expected = _lee_interval(passed, n, tp, m1, tn, m0)
    assert estimate.value == pytest.approx(point)
    assert estimate.value == pytest.approx(expected[0])
    assert (estimate.low, estimate.high) == pytest.approx(expected[1:])
    assert estimate.low is not None and estimate.high is not None
    assert 0.0 <= estimate.low <= estimate.high <= 1.0


def test_a_correction_outside_zero_one_is_clipped_and_says_so() -> None:
    # (0.99 + 0.9 − 1)/(0.9 + 0.8 − 1) = 1.271: above 1, and so is the whole interval
    estimate = rogan_gladen(99, 100, JudgeErrorRates(16, 20, 27, 30))
    assert estimate.value == 1.0
    assert estimate.note is not None and "raw correction 1.271 lies outside [0, 1]" in estimate.note
    hand = _lee_interval(99, 100, 16, 20, 27, 30)
    assert hand[1] == hand[2] == 1.0  # clipped to [1, 1]: withheld instead
    assert estimate.low is None and estimate.high is None
    assert estimate.reason == (
        "no interval: it lies wholly above 1, and clipped it would claim certainty"
    )


def test_rogan_gladen_first_case_numbers() -> None:
    # p = 0.6, sensitivity 0.9, specificity 0.8: θ = 0.4/0.7; interval from the formula
    estimate = rogan_gladen(60, 100, JudgeErrorRates(45, 50, 40, 50))
    assert estimate.value == pytest.approx(4 / 7)
    assert estimate.low == pytest.approx(0.396256956434629, abs=1e-9)
    assert estimate.high == pytest.approx(0.7431664377619001, abs=1e-9)


def test_a_more_uncertain_calibration_widens_the_interval() -> None:
    small = rogan_gladen(60, 100, JudgeErrorRates(9, 10, 8, 10))
    large = rogan_gladen(60, 100, JudgeErrorRates(900, 1000, 800, 1000))
    assert small.low is not None and small.high is not None
    assert large.low is not None and large.high is not None
    assert small.high - small.low > large.high - large.low


def test_a_judge_no_better_than_chance_has_no_correction() -> None:
    estimate = rogan_gladen(30, 60, JudgeErrorRates(10, 20, 10, 20))  # 0.5 + 0.5 = 1
    assert estimate.value is None and estimate.low is None
    assert estimate.reason == (
        "the judge is no better than chance (sensitivity 0.500 + specificity 0.500 ≤ 1): its "
        "verdicts carry no information about the true pass rate, so the correction is undefined"
    )
    worse = rogan_gladen(30, 60, JudgeErrorRates(5, 20, 5, 20))
    assert worse.value is None and "no better than chance" in (worse.reason or "")


def test_a_calibration_without_one_class_has_no_correction() -> None:
    estimate = rogan_gladen(3, 10, JudgeErrorRates(0, 0, 9, 10))
    assert estimate.value is None
    assert estimate.reason == (
        "the calibration has no truly passing row, so the judge's sensitivity is unknown"
    )
    assert rogan_gladen(0, 0, JudgeErrorRates(9, 10, 9, 10)).reason == "no row was judged"


def test_a_tiny_calibration_gives_a_correction_without_an_interval() -> None:
    # sensitivity 1/1 and specificity 1/10: better than chance as measured (1.1 > 1), but
    # after adding one success and one failure to each (2/3 + 2/12) it is not
    estimate = rogan_gladen(5, 10, JudgeErrorRates(1, 1, 1, 10))
    assert estimate.value == 0.0  # (0.5 + 0.1 − 1)/0.1 = −4, clipped
    assert estimate.low is None and estimate.reason == (
        "no interval: after the small-sample adjustment the judge is no better than chance"
    )
    assert estimate.note is not None and "raw correction -4.000" in estimate.note


def test_rogan_gladen_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError):
        rogan_gladen(11, 10, JudgeErrorRates(1, 2, 1, 2))
    with pytest.raises(ValueError):
        rogan_gladen(1, 10, JudgeErrorRates(1, 2, 3, 2))


def test_pairwise_agreement() -> None:
    assert pairwise_agreement([True]) is None
    assert pairwise_agreement([True, True, True]) == 1.0
    assert pairwise_agreement([True, True, False]) == pytest.approx(1 / 3)
    assert pairwise_agreement(["a", "b", "c"]) == 0.0
