"""An anytime-valid test and confidence sequence for the mean of a paired difference, and the
rule that stops an experiment once it is decided.

Betting (Waudby-Smith & Ramdas 2023, "Estimating means of bounded random variables by
betting", JRSS-B, §4–5): for paired differences ``d_i = b_i - a_i`` in [-1, 1] with a constant
conditional mean ``μ`` (rows in a random order), the wealth of a gambler who bets against
``μ = m``::

    K_t(m) = Π_{i≤t} (1 + λ_i(m) · (d_i - m))

is a nonnegative martingale when ``μ = m`` whatever the predictable bets ``λ_i(m)`` (chosen
from rows ``< i`` only), so by Ville's inequality ``P(∃t: K_t(m) ≥ 1/α) ≤ α``: the test that
rejects ``m`` the first time the wealth reaches ``1/α`` may be looked at after every row. The
bets are aGRAPA's ``λ_i = ĝ / (ŝ² + ĝ²)``, with ``ĝ`` and ``ŝ²`` the running mean and second
moment of ``d - m`` before row ``i`` (a prior of 0 and 1, one pseudo-row), truncated to
``[-c/(1-m), c/(1+m)]`` with ``c = 1/2`` so that every factor stays positive (at ``m = ±1``
one side is unbounded: ``d - m`` then has one sign, and a bet of that sign only adds). A
negative bet wins when ``μ < m``: one process tests both sides.

The confidence sequence is ``C_t = {m ∈ [-1, 1] : max_{s≤t} K_s(m) < 1/α}`` (the paper's
``m ∈ [0, 1]`` for values in [0, 1]) over a grid of ``m`` that includes both ends
(:func:`confidence_sequence`): when every difference is ``-1``, ``K_t(-1) = 1`` and the end of
the range is never rejected, so the sequence holds that mean (a grid stopping short of ±1
reported ``[-0.995, …]`` around a mean of ``-1``). The stopping rule
(:func:`decide`) stops when ``m = 0`` is rejected (``b`` better or worse), or, with a margin
``delta``, when every ``|m| ≥ delta`` of the grid is (no difference that matters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

TRUNCATION = 0.5
GRID_STEP = 0.005


def _grid(step: float) -> NDArray[np.float64]:
    """The values of ``m`` the confidence sequence tests: [-1, 1] in ``step``, both ends and
    0 exactly."""
    count = round(2.0 / step)
    grid: NDArray[np.float64] = np.linspace(-1.0, 1.0, count + 1)
    grid[int(np.argmin(np.abs(grid)))] = 0.0
    return grid


def _bounds(m: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The truncation ``[-c/(1-m), c/(1+m)]`` of the bets, unbounded on the side that cannot
    make a factor negative at ``m = ±1``."""
    with np.errstate(divide="ignore"):
        low = np.where(m < 1.0, -TRUNCATION / (1.0 - m), -np.inf)
        high = np.where(m > -1.0, TRUNCATION / (1.0 + m), np.inf)
    return low, high


Decision = Literal["b_better", "a_better", "equivalent", "undecided"]


def _check(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha}")


def log_wealth(d: NDArray[np.float64], m: float = 0.0) -> NDArray[np.float64]:
    """``log K_t(m)`` after each row (module docstring).

    Args:
        d: paired differences in [-1, 1], shape ``(t,)`` or ``(runs, t)`` (each row one
            sequence: a vectorised simulation).
        m: the mean tested, in [-1, 1].

    Raises:
        ValueError: a difference or ``m`` outside [-1, 1].
    """
    values = np.asarray(d, dtype=float)
    if values.size and (values.min() < -1.0 or values.max() > 1.0):
        raise ValueError("every paired difference must lie in [-1, 1]")
    if not -1.0 <= m <= 1.0:
        raise ValueError(f"the tested mean must lie in [-1, 1], got {m}")
    x = np.atleast_2d(values) - m
    t = np.arange(1, x.shape[1] + 1, dtype=float)
    first = np.cumsum(x, axis=1) / (t + 1)
    second = (1.0 + np.cumsum(x * x, axis=1)) / (t + 1)
    head = np.zeros((x.shape[0], 1))
    mean = np.concatenate([head, first[:, :-1]], axis=1)
    moment = np.concatenate([head + 1.0, second[:, :-1]], axis=1)
    low, high = _bounds(np.array(m, dtype=float))
    bet = np.clip(mean / np.maximum(moment, 1e-12), low, high)
    wealth = np.cumsum(np.log1p(bet * x), axis=1)
    result: NDArray[np.float64] = wealth[0] if values.ndim == 1 else wealth
    return result


def rejection_row(
    d: NDArray[np.float64], m: float = 0.0, *, alpha: float = 0.05
) -> NDArray[np.int64]:
    """Per sequence, the 1-based row after which ``m`` is rejected (wealth ≥ ``1/α``); 0
    where it never is. Shape ``(runs,)`` for a 2-D ``d``, ``()`` for a 1-D one."""
    _check(alpha)
    hit = np.atleast_2d(log_wealth(d, m)) >= math.log(1.0 / alpha)
    rows = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, 0).astype(np.int64)
    result: NDArray[np.int64] = rows[0] if np.ndim(d) == 1 else rows
    return result


def confidence_sequence(
    d: NDArray[np.float64], *, alpha: float = 0.05, step: float = GRID_STEP
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(low, high)`` after each row: the smallest and largest grid value of ``m`` not yet
    rejected (the running intersection: a value once rejected stays out).

    Raises:
        ValueError: an empty or non-1-D ``d``, a difference outside [-1, 1], a bad ``alpha``.
    """
    _check(alpha)
    values = np.asarray(d, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError("need a non-empty sequence of paired differences")
    grid = _grid(step)
    threshold = math.log(1.0 / alpha)
    alive = np.stack([np.maximum.accumulate(log_wealth(values, float(m))) < threshold
                      for m in grid])  # fmt: skip  # (grid, t)
    low = np.where(alive.any(axis=0), grid[alive.argmax(axis=0)], np.nan)
    high = np.where(alive.any(axis=0), grid[len(grid) - 1 - alive[::-1].argmax(axis=0)], np.nan)
    return low, high


def mean_confidence_sequence(
    x: NDArray[np.float64], *, alpha: float = 0.05, step: float = GRID_STEP
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The confidence sequence of the mean of values in [0, 1] (a pass rate, an accuracy, a
    mean score), after each value: the paper's setting (Waudby-Smith & Ramdas 2023, §4),
    computed as :func:`confidence_sequence` of ``2x - 1`` (in [-1, 1]) mapped back by
    ``(m + 1) / 2``; the grid's step is then ``step / 2`` on [0, 1].

    Returns:
        ``(low, high)``, each of shape ``(t,)``; a gate on the lower bound of a run that
        stopped when decided reads the last value (valid at whatever row the run stopped).

    Raises:
        ValueError: an empty or non-1-D ``x``, a value outside [0, 1], a bad ``alpha``.
    """
    values = np.asarray(x, dtype=float)
    if values.size and (values.min() < 0.0 or values.max() > 1.0):
        raise ValueError("every value must lie in [0, 1]")
    low, high = confidence_sequence(2.0 * values - 1.0, alpha=alpha, step=step)
    return (low + 1.0) / 2.0, (high + 1.0) / 2.0


@dataclass(frozen=True)
class StopDecision:
    """Where a sequence of paired differences stands.

    Attributes:
        decision: ``b_better``/``a_better`` (``m = 0`` rejected), ``equivalent`` (every
            ``|m| ≥ delta`` rejected), or ``undecided``.
        rows: the rows seen when it was decided (all of them when undecided).
        low, high: the confidence sequence then (``nan`` when every grid value is rejected).
        mean: the mean difference then.
        alpha, delta: the rule's level and margin.
    """

    decision: Decision
    rows: int
    low: float
    high: float
    mean: float
    alpha: float
    delta: float | None = None

    def reason(self, a: str = "a", b: str = "b", *, unit: str = "rows") -> str:
        """The decision in words, naming the variants: ``a`` the first (the differences are
        ``b - a``), ``b`` the second; ``unit``: what each difference is of (``rows``, or
        ``clusters`` when rows that share a cluster are one difference)."""
        a, b = f"`{a}`", f"`{b}`"
        if self.rows == 0:  # no row graded in both variants: no mean to state
            return (f"undecided after 0 {unit}: no row was graded in both {a} and {b}, so "
                    "there is no paired difference yet")  # fmt: skip
        where = (f"after {self.rows} {unit}: mean difference ({b} minus {a}) {self.mean:+.3f}, "
                 f"{1 - self.alpha:.0%} confidence sequence "
                 f"[{self.low:+.3f}, {self.high:+.3f}]")  # fmt: skip
        if self.decision == "equivalent":
            return f"no difference of {self.delta:g} or more between {a} and {b} " + where
        return {
            "b_better": f"{b} is better than {a} (the sequence excludes 0) ",
            "a_better": f"{a} is better than {b} (the sequence excludes 0) ",
            "undecided": "undecided ",
        }[self.decision] + where


def decide(
    d: NDArray[np.float64], *, alpha: float = 0.05, delta: float | None = None
) -> StopDecision:
    """The first row after which the sequence of ``d`` is decided (module docstring).

    Raises:
        ValueError: no difference, a difference outside [-1, 1], ``alpha`` outside (0, 1) or a
            ``delta`` outside (0, 1).
    """
    values = np.asarray(d, dtype=float)
    if values.ndim != 1 or values.size == 0:
        raise ValueError("need a non-empty sequence of paired differences")
    if delta is not None and not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    low, high = confidence_sequence(values, alpha=alpha)
    zero = int(rejection_row(values, 0.0, alpha=alpha))
    inside: NDArray[np.int64] = (np.flatnonzero((low > -delta) & (high < delta))
                                 if delta is not None else np.zeros(0, dtype=np.int64))  # fmt: skip
    candidates = [r for r in (zero, int(inside[0]) + 1 if inside.size else 0) if r > 0]
    at = min(candidates) if candidates else values.size
    mean = float(values[:at].mean())
    decision: Decision = "undecided"
    if candidates and at == zero:
        decision = "b_better" if mean > 0 else "a_better"
    elif candidates:
        decision = "equivalent"
    return StopDecision(decision, at, float(low[at - 1]), float(high[at - 1]), mean, alpha,
                        delta)  # fmt: skip


class SequentialTest:
    """The betting test and confidence sequence of the module docstring, fed one paired
    difference at a time (a run that stops when decided): the same numbers as
    :func:`log_wealth` and :func:`confidence_sequence` on the same sequence, in O(grid) per
    difference.

    Args:
        alpha: the level.
        delta: a margin: decided as ``equivalent`` once every ``|m| ≥ delta`` is rejected.
        step: the grid of ``m`` for the confidence sequence.
    """

    def __init__(self, *, alpha: float = 0.05, delta: float | None = None,
                 step: float = GRID_STEP) -> None:  # fmt: skip
        _check(alpha)
        if delta is not None and not 0.0 < delta < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {delta}")
        self.alpha, self.delta = alpha, delta
        self.grid = _grid(step)
        self.zero = int(np.argmin(np.abs(self.grid)))
        self.low_bets, self.high_bets = _bounds(self.grid)
        self.total = np.zeros_like(self.grid)
        self.squares = np.ones_like(self.grid)
        self.log_k = np.zeros_like(self.grid)
        self.alive = np.ones(self.grid.shape, dtype=bool)
        self.rows = 0
        self.sum = 0.0
        self.decision: StopDecision | None = None

    def add(self, d: float) -> StopDecision | None:
        """Take one paired difference; the decision once there is one (then it stays).

        Raises:
            ValueError: a difference outside [-1, 1].
        """
        if not -1.0 <= d <= 1.0:
            raise ValueError(f"a paired difference must lie in [-1, 1], got {d}")
        if self.decision is not None:
            return self.decision
        x = d - self.grid
        mean, moment = self.total / (self.rows + 1), self.squares / (self.rows + 1)
        bet = np.clip(mean / np.maximum(moment, 1e-12), self.low_bets, self.high_bets)
        self.log_k += np.log1p(bet * x)
        self.total += x
        self.squares += x * x
        self.alive &= self.log_k < math.log(1.0 / self.alpha)
        self.rows += 1
        self.sum += d
        self.decision = self._decided()
        return self.decision

    def bounds(self) -> tuple[float, float]:
        """The confidence sequence now (``nan`` when every grid value is rejected)."""
        if not self.alive.any():
            return math.nan, math.nan
        kept = self.grid[self.alive]
        return float(kept[0]), float(kept[-1])

    def _decided(self) -> StopDecision | None:
        low, high = self.bounds()
        mean = self.sum / self.rows
        if not self.alive[self.zero]:
            kind: Decision = "b_better" if mean > 0 else "a_better"
        elif self.delta is not None and low > -self.delta and high < self.delta:
            kind = "equivalent"
        else:
            return None
        return StopDecision(kind, self.rows, low, high, mean, self.alpha, self.delta)

    def state(self) -> StopDecision:
        """The decision, or ``undecided`` with the numbers so far."""
        if self.decision is not None:
            return self.decision
        low, high = self.bounds()
        mean = self.sum / self.rows if self.rows else math.nan
        return StopDecision("undecided", self.rows, low, high, mean, self.alpha, self.delta)
