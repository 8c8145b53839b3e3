"""The betting test and confidence sequence for paired differences: the published formulas
written out as a loop, the false-positive rate on simulated null experiments, and the rows it
saves with a true difference (a smaller, faster version of bench/sequential_stopping.py)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from assay.metrics.sequential import (
    TRUNCATION,
    confidence_sequence,
    decide,
    log_wealth,
    mean_confidence_sequence,
    rejection_row,
)


def bench() -> ModuleType:
    path = Path(__file__).parents[2] / "bench" / "sequential_stopping.py"
    spec = importlib.util.spec_from_file_location("sequential_stopping", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wealth_by_the_formula(d: list[float], m: float) -> list[float]:
    """K_t(m) = Π (1 + λ_i (d_i - m)), λ_i = ĝ/(ŝ² + ĝ²) from the rows before i (prior: one
    pseudo-row with mean 0 and second moment 1), truncated to [-c/(1-m), c/(1+m)]."""
    out, log_k, total, squares = [], 0.0, 0.0, 1.0
    for i, value in enumerate(d):
        mean, moment = total / (i + 1), squares / (i + 1)
        bet = mean / moment
        bet = min(max(bet, -TRUNCATION / (1 - m)), TRUNCATION / (1 + m))
        x = value - m
        log_k += math.log(1 + bet * x)
        total += x
        squares += x * x
        out.append(log_k)
    return out


@pytest.mark.parametrize("m", [0.0, 0.2, -0.35])
def test_log_wealth_equals_the_formula(m: float) -> None:
    rng = np.random.default_rng(5)
    d = list(rng.choice([-1.0, 0.0, 0.0, 1.0, 0.5], size=60))
    assert log_wealth(np.array(d), m) == pytest.approx(wealth_by_the_formula(d, m), abs=1e-12)
    both = log_wealth(np.array([d, d[::-1]]), m)
    assert both[1] == pytest.approx(wealth_by_the_formula(d[::-1], m), abs=1e-12)


def test_false_positive_rate_stays_below_alpha_on_null_experiments() -> None:
    found = bench().simulate(runs=600, max_rows=1000, p_a=0.6, p_b=0.6, seed=11)
    low, _ = found["rate_interval"]
    assert low <= 0.05  # the rate is at most alpha, within its binomial interval
    assert found["rate"] <= 0.05


def test_a_true_difference_stops_with_at_least_40_percent_fewer_rows() -> None:
    found = bench().simulate(runs=300, max_rows=1500, p_a=0.5, p_b=0.6, shared=0.8, seed=12)
    assert found["rate"] >= 0.95  # it stops, with the right sign
    assert found["fixed_rows_equal_power"] is not None
    assert found["saving"] >= 0.40


def test_decisions() -> None:
    rng = np.random.default_rng(8)
    better = (rng.uniform(size=600) < 0.75).astype(float) - (rng.uniform(size=600) < 0.5)
    found = decide(better)
    assert found.decision == "b_better" and found.rows < 600 and found.low > 0
    assert found.rows == int(rejection_row(better))
    assert found.reason("old", "new").startswith("`new` is better than `old` (the sequence")
    worse = decide(-better)
    assert worse.decision == "a_better" and worse.rows == found.rows and worse.high < 0
    assert worse.reason("old", "new").startswith("`old` is better than `new` (the sequence")
    assert "mean difference (`new` minus `old`) -" in worse.reason("old", "new")
    same = (rng.uniform(size=3000) < 0.5).astype(float) - (rng.uniform(size=3000) < 0.5)
    equivalent = decide(same, delta=0.1)
    assert equivalent.decision == "equivalent" and -0.1 < equivalent.low < equivalent.high < 0.1
    assert "no difference of 0.1 or more between `a` and `b`" in equivalent.reason()
    undecided = decide(same[:50])
    assert undecided.decision == "undecided" and undecided.rows == 50


def test_the_confidence_sequence_shrinks_and_covers_the_mean() -> None:
    rng = np.random.default_rng(9)
    d = (rng.uniform(size=2000) < 0.7).astype(float) - (rng.uniform(size=2000) < 0.6)
    low, high = confidence_sequence(d)
    assert np.all(np.diff(low) >= 0) and np.all(np.diff(high) <= 0)
    assert low[-1] < 0.1 < high[-1] and high[-1] - low[-1] < high[99] - low[99]


@pytest.mark.parametrize("sign", [-1.0, 1.0])
def test_the_sequence_reaches_the_ends_and_holds_a_mean_of_one(sign: float) -> None:
    """Every difference ``-1`` (or ``+1``): the mean is the end of the range, never rejected
    (the wealth against it stays 1), so the sequence holds it: ``[-1, …]``, not ``[-0.995, …]``
    beside a mean of ``-1``; batch and incremental alike, at the decision and long after."""
    from assay.metrics.sequential import SequentialTest

    d = np.full(400, sign)
    assert log_wealth(d, sign) == pytest.approx(np.zeros(400))
    low, high = confidence_sequence(d)
    assert np.all(low <= sign) and np.all(sign <= high)
    assert (low[-1] if sign < 0 else high[-1]) == sign and high[-1] - low[-1] < 0.05
    found = decide(d)
    assert found.decision == ("b_better" if sign > 0 else "a_better")
    assert found.low <= found.mean == sign <= found.high
    assert (found.low if sign < 0 else found.high) == sign
    test = SequentialTest()
    for value in d[:3]:
        test.add(float(value))
    state = test.state()
    assert (state.low, state.high) == (-1.0, 1.0)  # nothing rejected after three rows
    while test.add(sign) is None:
        pass
    assert test.state() == found


@pytest.mark.parametrize(
    ("values", "kwargs", "message"),
    [([2.0], {}, "must lie in"), ([], {}, "non-empty"), ([0.1], {"alpha": 1.0}, "alpha"),
     ([0.1], {"delta": 0.0}, "delta")],
)  # fmt: skip
def test_bad_input_is_refused(values: list[float], kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decide(np.array(values), **kwargs)


@pytest.mark.parametrize("delta", [None, 0.1])
def test_the_incremental_test_equals_the_batch_one(delta: float | None) -> None:
    from assay.metrics.sequential import SequentialTest

    rng = np.random.default_rng(21)
    for p_b in (0.5, 0.7):
        d = (rng.uniform(size=1500) < p_b).astype(float) - (rng.uniform(size=1500) < 0.5)
        expected = decide(d, delta=delta)
        test = SequentialTest(delta=delta)
        found = None
        for value in d:
            found = test.add(float(value))
            if found is not None:
                break
        state = test.state()
        assert (state.decision, state.rows) == (expected.decision, expected.rows)
        assert (state.low, state.high) == pytest.approx((expected.low, expected.high))
        assert found is None or found == state


def kept_by_the_formula(x: list[float], mu: float, alpha: float = 0.05) -> bool:
    """The paper's [0, 1] setting written directly: K_t(μ) = Π (1 + λ_i (x_i - μ)), λ_i =
    ĝ/(ŝ² + ĝ²) of x - μ before row i (prior: mean 0, second moment 1/4), truncated to
    [-c/(1-μ), c/μ]; μ is kept while every K_t < 1/α."""
    log_k, total, squares = 0.0, 0.0, 0.25
    for i, value in enumerate(x):
        mean, moment = total / (i + 1), squares / (i + 1)
        bet = mean / moment
        low = -TRUNCATION / (1 - mu) if mu < 1 else -math.inf
        high = TRUNCATION / mu if mu > 0 else math.inf
        bet = min(max(bet, low), high)
        log_k += math.log1p(bet * (value - mu))
        total += value - mu
        squares += (value - mu) ** 2
        if log_k >= math.log(1 / alpha):
            return False
    return True


def test_the_mean_sequence_equals_the_papers_setting_on_values_in_0_1() -> None:
    rng = np.random.default_rng(21)
    x = list(rng.choice([0.0, 1.0, 1.0, 0.5, 1.0], size=80))
    low, high = mean_confidence_sequence(np.array(x))
    grid = np.linspace(0, 1, 401)
    kept = [mu for mu in grid if kept_by_the_formula(x, float(mu))]
    assert low[-1] == pytest.approx(kept[0]) and high[-1] == pytest.approx(kept[-1])
    assert kept == pytest.approx(list(grid[(grid >= kept[0]) & (grid <= kept[-1])]))


def test_the_mean_sequence_covers_the_true_rate_at_every_row() -> None:
    """Ville: over 1,000 runs of 400 Bernoulli(0.3) rows the sequence excludes 0.3 at some row
    in at most α of them (upper end of a 99% binomial interval of the rate)."""
    rng = np.random.default_rng(4)
    x = (rng.uniform(size=(1000, 400)) < 0.3).astype(float)
    ever = rejection_row(2 * x - 1, 2 * 0.3 - 1) > 0
    rate = float(ever.mean())
    assert rate - 2.58 * math.sqrt(0.05 * 0.95 / 1000) <= 0.05, rate


def test_the_mean_sequence_refuses_values_outside_0_1() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mean_confidence_sequence(np.array([0.5, 1.5]))


def test_a_test_that_heard_no_row_says_so_without_a_nan() -> None:
    """A variant that errored on every row: no paired difference (it said "+nan")."""
    from assay.metrics.sequential import SequentialTest

    reason = SequentialTest(alpha=0.05).state().reason("A", "B")
    assert reason == ("undecided after 0 rows: no row was graded in both `A` and `B`, so there "
                      "is no paired difference yet")  # fmt: skip
    assert "nan" not in reason
