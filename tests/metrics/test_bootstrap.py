"""The percentile bootstrap against independent oracles.

1. ``scipy.stats.bootstrap(method="percentile")`` on the very resamples assay draws: scipy
   asks its generator for row indices (``integers(0, n, size=(B, n))``); :class:`SameDraws`
   answers with the rows of assay's own multinomial draws from the same seed, so both compute
   the same ``B`` statistics and the intervals must agree to rounding. scipy computes each
   statistic from the resampled rows themselves (code written here, not assay's sums).
2. scipy with its own, independent draws: the endpoints must agree within Monte Carlo error
   (stated below).
3. Clustered resampling (a row's replicates stay together) against the exact bootstrap
   distribution, enumerated by hand over every one of the ``n**n`` equally likely resamples.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy.stats import binom, norm
from scipy.stats import bootstrap as scipy_bootstrap
from sklearn.metrics import f1_score

from assay.metrics.bootstrap import bootstrap, difference, macro_f1, ratio

CONFIDENCES = [0.5, 0.8, 0.9, 0.95, 0.99]
Array = NDArray[Any]


class SameDraws(np.random.Generator):
    """A generator that hands scipy assay's resamples: each request for ``B × n`` row indices
    is answered with ``B`` multinomial row-count draws of ``default_rng(seed)`` (what
    :func:`assay.metrics.bootstrap.bootstrap` draws), written out as row indices."""

    def __init__(self, seed: int) -> None:
        super().__init__(np.random.PCG64(seed))
        self._draws = np.random.default_rng(seed)
        self.calls = 0

    def integers(self, low: Any, high: Any = None, size: Any = None, **_: Any) -> Any:
        resamples, rows = size
        assert (low, high) == (0, rows)
        self.calls += 1
        counts = self._draws.multinomial(rows, np.full(rows, 1.0 / rows), size=resamples)
        return np.stack([np.repeat(np.arange(rows), c) for c in counts])


def scipy_interval(
    rows: int,
    resampled_value: Callable[[Array], float],
    *,
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """scipy's percentile interval of a statistic of the resampled rows (given by index)."""

    def statistic(indexes: Array, axis: int = -1) -> Array:
        batch = np.atleast_2d(indexes)
        return np.array([resampled_value(chosen) for chosen in batch])

    found = scipy_bootstrap((np.arange(rows),), statistic, n_resamples=resamples,
                            confidence_level=confidence, method="percentile", vectorized=True,
                            rng=rng)  # fmt: skip
    return float(found.confidence_interval.low), float(found.confidence_interval.high)


# --- the cases: per-row data, assay's contribution vectors, and the statistic by hand -------


def pass_rate_case(seed: int, rows: int = 25) -> tuple[Array, Callable[[Array], float]]:
    """Rows with 1–3 graded replicates each, some passing; one row never graded."""
    rng = np.random.default_rng(seed)
    outcomes = [list(rng.integers(0, 2, rng.integers(1, 4))) for _ in range(rows - 1)] + [[]]
    contributions = np.array([[sum(o), len(o)] for o in outcomes], dtype=float)

    def value(chosen: Array) -> float:
        picked = [x for i in chosen for x in outcomes[i]]
        return sum(picked) / len(picked)

    return contributions, value


def mean_case(seed: int, rows: int = 30) -> tuple[Array, Callable[[Array], float]]:
    """Scores in [0, 1] (1–3 replicates a row): the mean over every graded replicate."""
    rng = np.random.default_rng(seed)
    scores = [list(rng.beta(2, 3, rng.integers(1, 4))) for _ in range(rows)]
    contributions = np.array([[sum(s), len(s)] for s in scores])

    def value(chosen: Array) -> float:
        picked = [x for i in chosen for x in scores[i]]
        return float(np.mean(picked))

    return contributions, value


LABELS = ["a", "b", "c"]


def hand_macro_f1(pairs: list[tuple[str, str]]) -> float:
    """Mean over the labels seen (expected or observed) of 2tp / (2tp + fp + fn)."""
    seen = sorted({label for pair in pairs for label in pair})
    scores = []
    for label in seen:
        tp = sum(1 for e, o in pairs if e == o == label)
        fp = sum(1 for e, o in pairs if o == label != e)
        fn = sum(1 for e, o in pairs if e == label != o)
        scores.append(2 * tp / (2 * tp + fp + fn))
    return sum(scores) / len(scores)


def f1_pairs(seed: int, rows: int = 30) -> tuple[Array, Array]:
    """One (expected, observed) pair per row over three labels; label ``c`` is rare."""
    rng = np.random.default_rng(seed)
    expected = rng.choice(LABELS, rows, p=[0.5, 0.4, 0.1])
    observed = np.where(rng.random(rows) < 0.7, expected, rng.choice(LABELS, rows))
    return expected, observed


def f1_case(seed: int, rows: int = 30) -> tuple[Array, Callable[[Array], float]]:
    """Macro F1 over the rows of :func:`f1_pairs`; contributions ``[tp, fp, fn] × label``."""
    expected, observed = f1_pairs(seed, rows)
    pairs = [(str(e), str(o)) for e, o in zip(expected, observed, strict=True)]
    contributions = np.zeros((rows, 3 * len(LABELS)))
    for row, (e, o) in enumerate(pairs):
        if e == o:
            contributions[row, 3 * LABELS.index(e)] += 1
        else:
            contributions[row, 3 * LABELS.index(o) + 1] += 1
            contributions[row, 3 * LABELS.index(e) + 2] += 1

    def value(chosen: Array) -> float:
        return hand_macro_f1([pairs[i] for i in chosen])

    return contributions, value


def test_the_hand_macro_f1_is_sklearns() -> None:
    expected, observed = f1_pairs(3)
    _, value = f1_case(3)
    rng = np.random.default_rng(0)
    for _ in range(50):
        chosen = rng.integers(0, 30, 30)
        theirs = f1_score(expected[chosen], observed[chosen], average="macro")
        assert value(chosen) == pytest.approx(theirs, abs=1e-12)


def paired_case(seed: int, rows: int = 25) -> tuple[Array, Callable[[Array], float]]:
    """Two variants on the same rows (2 replicates each): pass rate of b minus pass rate of a."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, (rows, 2))
    b = np.where(rng.random((rows, 2)) < 0.3, 1, a)  # b fixes some of a's failures
    contributions = np.column_stack([a.sum(1), np.full(rows, 2), b.sum(1), np.full(rows, 2)])

    def value(chosen: Array) -> float:
        return float(b[chosen].mean() - a[chosen].mean())

    return contributions.astype(float), value


CASES = {
    "pass rate with replicates": (pass_rate_case, ratio(0, 1)),
    "mean score with replicates": (mean_case, ratio(0, 1)),
    "macro F1": (f1_case, macro_f1(len(LABELS))),
    "paired difference": (paired_case, difference(ratio(0, 1), ratio(0, 1), 2)),
}


@pytest.mark.parametrize("confidence", CONFIDENCES)
@pytest.mark.parametrize("name", list(CASES))
def test_same_resamples_give_scipys_percentile_interval(name: str, confidence: float) -> None:
    make, statistic = CASES[name]
    contributions, value = make(7)
    rows = contributions.shape[0]
    ours = bootstrap(contributions, statistic, resamples=1000, confidence=confidence, seed=11)
    rng = SameDraws(11)
    theirs = scipy_interval(rows, value, confidence=confidence, resamples=1000, rng=rng)
    assert rng.calls == 1  # scipy drew its resamples from assay's draws
    assert ours.value == pytest.approx(value(np.arange(rows)), abs=1e-12)
    assert (ours.low, ours.high) == pytest.approx(theirs, abs=1e-12)
    assert ours.method == "bootstrap" and ours.reason is None


@settings(max_examples=40, deadline=None)
@given(
    outcomes=st.lists(st.lists(st.integers(0, 1), min_size=1, max_size=4), min_size=2, max_size=15),
    confidence=st.sampled_from(CONFIDENCES),
    seed=st.integers(0, 2**32 - 1),
)
def test_same_resamples_on_generated_rows(
    outcomes: list[list[int]], confidence: float, seed: int
) -> None:
    contributions = np.array([[sum(o), len(o)] for o in outcomes], dtype=float)
    ours = bootstrap(contributions, ratio(0, 1), resamples=300, confidence=confidence, seed=seed)

    def value(chosen: Array) -> float:
        picked = [x for i in chosen for x in outcomes[i]]
        return sum(picked) / len(picked)

    low, high = scipy_interval(len(outcomes), value, confidence=confidence, resamples=300,
                               rng=SameDraws(seed))  # fmt: skip
    if low == high:  # every resample gives one value: assay gives no interval, with its reason
        assert ours.low is None and ours.high is None
        assert ours.reason == "every resample gives the same value; no uncertainty can be estimated"
    else:
        assert (ours.low, ours.high) == pytest.approx((low, high), abs=1e-12)


def quantile_error(values: Array, tail: float, resamples: int) -> float:
    """Standard error of a sample quantile: sqrt(q(1 - q) / B) / f(x_q), with the density of
    the bootstrap distribution taken as normal with the spread of ``values``."""
    sd = float(np.std(values))
    density = norm.pdf(norm.ppf(tail)) / sd
    return math.sqrt(tail * (1 - tail) / resamples) / density


@pytest.mark.parametrize("confidence", [0.8, 0.95])
def test_independent_draws_agree_within_monte_carlo_error(confidence: float) -> None:
    """scipy with its own generator: each endpoint of each interval is a sample quantile of
    B = 20,000 statistics, so the two endpoints differ by Monte Carlo error alone. Allowed:
    5 standard errors of the difference (sqrt(2) × one quantile's standard error); the chance
    of a correct implementation failing is below 1e-6 per endpoint."""
    contributions, value = mean_case(21, rows=60)
    resamples = 20_000
    ours = bootstrap(contributions, ratio(0, 1), resamples=resamples, confidence=confidence)
    theirs = scipy_interval(60, value, confidence=confidence, resamples=resamples,
                            rng=np.random.default_rng(12345))  # fmt: skip
    spread = np.array([value(np.random.default_rng(s).integers(0, 60, 60)) for s in range(400)])
    tolerance = 5 * math.sqrt(2) * quantile_error(spread, (1 - confidence) / 2, resamples)
    assert 0 < tolerance < 0.01  # the check is sharp: well under the interval's width
    assert ours.low == pytest.approx(theirs[0], abs=tolerance)
    assert ours.high == pytest.approx(theirs[1], abs=tolerance)
    assert (ours.high - ours.low) > 10 * tolerance  # type: ignore[operator]


# --- clustered resampling against the exact bootstrap distribution --------------------------

# Four rows with their replicates' pass/fail (row r3 errored on one replicate: 2 graded).
REPLICATES = [[1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 1]]


def exact_distribution(rows: list[list[int]]) -> dict[float, float]:
    """Every ordered resample of the rows (n**n, equally likely), replicates kept with their
    row: the pass rate over the replicates of the rows drawn, and its probability."""
    n = len(rows)
    found: dict[float, float] = {}
    for chosen in itertools.product(range(n), repeat=n):
        picked = [x for i in chosen for x in rows[i]]
        rate = round(sum(picked) / len(picked), 12)
        found[rate] = found.get(rate, 0.0) + 1 / n**n
    return dict(sorted(found.items()))


def exact_quantile(distribution: dict[float, float], q: float) -> float:
    cumulative = 0.0
    for rate, probability in distribution.items():
        cumulative += probability
        if cumulative >= q:
            return rate
    raise AssertionError("q above 1")


@pytest.mark.parametrize("confidence", [0.6, 0.7, 0.9])
def test_clustered_interval_is_the_exact_bootstrap_quantiles(confidence: float) -> None:
    """With B large the percentile interval is the exact quantiles of the bootstrap
    distribution, without interpolation error: each tail probability q is at least 0.006 away
    from every jump of the distribution's CDF, and with B = 200,000 draws the empirical CDF at
    q has a standard error of at most sqrt(0.25 / B) = 0.0011, so the empirical quantile lands
    on another atom only past 5.3 standard errors (probability below 1e-7)."""
    distribution = exact_distribution(REPLICATES)
    tail = (1 - confidence) / 2
    steps = list(itertools.accumulate(distribution.values()))
    assert min(abs(step - q) for step in steps for q in (tail, 1 - tail)) > 0.006
    contributions = np.array([[sum(r), len(r)] for r in REPLICATES], dtype=float)
    found = bootstrap(contributions, ratio(0, 1), resamples=200_000, confidence=confidence)
    assert found.value == pytest.approx(6 / 11)
    assert found.low == pytest.approx(exact_quantile(distribution, tail), abs=1e-9)
    assert found.high == pytest.approx(exact_quantile(distribution, 1 - tail), abs=1e-9)


def test_the_exact_distribution_by_hand() -> None:
    """The reference itself, on two rows: [1, 1] and [0]. Resamples (r0, r0), (r0, r1),
    (r1, r0), (r1, r1) give 4/4, 2/3, 2/3, 0/2."""
    assert exact_distribution([[1, 1], [0]]) == pytest.approx({0.0: 0.25, round(2 / 3, 12): 0.5,
                                                               1.0: 0.25})  # fmt: skip


def test_replicates_resampled_apart_would_give_another_interval() -> None:
    """The check above tells clustered from independent resampling: the eleven replicates
    resampled one by one have Binomial(11, 6/11) passes, an exact interval narrower than the
    clustered one, and assay gives that narrower interval only when handed the replicates as
    rows of their own (the tail probabilities 0.15 and 0.85 are at least 0.01 away from a jump
    of either CDF; with B = 200,000 that is over 10 standard errors)."""
    distribution = exact_distribution(REPLICATES)
    passes = binom(11, 6 / 11)
    clustered = (exact_quantile(distribution, 0.15), exact_quantile(distribution, 0.85))
    independent = (passes.ppf(0.15) / 11, passes.ppf(0.85) / 11)
    assert independent[1] - independent[0] < clustered[1] - clustered[0]
    jumps = [*itertools.accumulate(distribution.values()), *passes.cdf(range(12))]
    assert min(abs(step - q) for step in jumps for q in (0.15, 0.85)) > 0.01
    contributions = np.array([[sum(r), len(r)] for r in REPLICATES], dtype=float)
    flat = np.array([[x, 1] for row in REPLICATES for x in row], dtype=float)
    wide = bootstrap(contributions, ratio(0, 1), resamples=200_000, confidence=0.7)
    narrow = bootstrap(flat, ratio(0, 1), resamples=200_000, confidence=0.7)
    assert (wide.low, wide.high) == pytest.approx(clustered, abs=1e-9)
    assert (narrow.low, narrow.high) == pytest.approx(independent, abs=1e-9)


def test_resamples_where_the_statistic_is_undefined_are_left_out() -> None:
    """Only row r1 is graded: a resample without it has no pass rate (0/0) and is dropped;
    the others all give 1/2. The exact distribution conditioned on being defined is a single
    value, so there is no interval."""
    contributions = np.array([[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]])
    found = bootstrap(contributions, ratio(0, 1))
    assert found.value == 0.5
    assert (found.low, found.high) == (None, None)
    assert found.reason == "every resample gives the same value; no uncertainty can be estimated"


def test_no_graded_row_is_undefined_in_every_resample() -> None:
    """Every row errored (nothing graded): no value, and no interval, with the reason."""
    found = bootstrap(np.zeros((5, 2)), ratio(0, 1))
    assert found.value is None
    assert (found.low, found.high) == (None, None)
    assert found.reason == "undefined in every resample"
