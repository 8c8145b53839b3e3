"""The Wilson score interval against scipy and hand-computed values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from assay.metrics.intervals import wilson_interval


def scipy_wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        # the roots of (p̂ - p)² = z²·p(1-p)/n, z = 1.959963984540054, solved by hand
        (0, 1, 0.0, 0.7934506856),  # n=1, 0%: [0, z²/(1+z²)]
        (1, 1, 0.2065493144, 1.0),  # n=1, 100%: [1/(1+z²), 1]
        (0, 10, 0.0, 0.277532799863),  # 0%: still a non-zero width
        (10, 10, 0.722467200137, 1.0),  # 100%
        (5, 10, 0.2365930905, 0.7634069095),  # symmetric around 0.5
        (62, 100, 0.522097552955, 0.709024007475),
    ],
)
def test_hand_values(k: int, n: int, low: float, high: float) -> None:
    bounds = wilson_interval(k, n)
    assert bounds is not None
    assert bounds[0] == pytest.approx(low, abs=1e-9)
    assert bounds[1] == pytest.approx(high, abs=1e-9)


def test_extremes_are_exact_and_never_zero_width() -> None:
    assert wilson_interval(0, 7) is not None
    low, high = wilson_interval(0, 7)  # type: ignore[misc]
    assert low == 0.0 and high > 0.0
    low, high = wilson_interval(7, 7)  # type: ignore[misc]
    assert high == 1.0 and low < 1.0


def test_zero_trials_has_no_interval() -> None:
    assert wilson_interval(0, 0) is None


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 3), (1, 3), (17, 40), (999, 1000)])
def test_matches_scipy(k: int, n: int, confidence: float) -> None:
    ours = wilson_interval(k, n, confidence)
    assert ours is not None
    theirs = scipy_wilson(k, n, confidence)
    assert ours[0] == pytest.approx(theirs[0], abs=1e-12)
    assert ours[1] == pytest.approx(theirs[1], abs=1e-12)


@given(
    st.integers(min_value=1, max_value=5000).flatmap(
        lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
    )
)
def test_matches_scipy_on_generated_counts(case: tuple[int, int]) -> None:
    k, n = case
    ours = wilson_interval(k, n)
    assert ours is not None
    low, high = ours
    assert not math.isnan(low) and not math.isnan(high)
    assert 0.0 <= low < high <= 1.0
    assert low <= k / n <= high
    theirs = scipy_wilson(k, n)
    assert low == pytest.approx(theirs[0], abs=1e-10)
    assert high == pytest.approx(theirs[1], abs=1e-10)


@pytest.mark.parametrize(
    ("k", "n", "confidence"),
    [(-1, 5, 0.95), (6, 5, 0.95), (0, -1, 0.95), (1, 2, 0.0), (1, 2, 1.0), (1, 2, 1.5)],
)
def test_invalid_arguments(k: int, n: int, confidence: float) -> None:
    with pytest.raises(ValueError):
        wilson_interval(k, n, confidence)
