"""Agreement between two raters (a judge and people): Cohen's κ, weighted κ, Spearman's ρ,
and the Rogan–Gladen correction of a pass rate for a judge's measured error rates.

Every function returns an :class:`Estimate`: a value and an interval, each ``None`` with the
reason when it cannot be given (never NaN, never a zero-width "certainty").

- **Cohen's κ** (Cohen 1960), optionally weighted (Cohen 1968) with agreement weights
  ``w_ij = 1 − |i−j|/(k−1)`` (linear) or ``1 − ((i−j)/(k−1))²`` (quadratic) over the
  categories in their given order: ``κ = (p_o − p_e)/(1 − p_e)`` with ``p_o = Σ w_ij p_ij``
  and ``p_e = Σ w_ij p_i· p_·j``. Its interval is ``κ ± z·SE`` with the large-sample
  variance of Fleiss, Cohen & Everitt (1969)::

      var = [Σ p_ij (w_ij − (w̄_i· + w̄_·j)(1 − κ))² − (κ − p_e(1 − κ))²] / (n (1 − p_e)²)

  where ``w̄_i· = Σ_j p_·j w_ij`` and ``w̄_·j = Σ_i p_i· w_ij``; clipped to [−1, 1].
  κ is undefined when ``p_e = 1`` (both raters gave every row the same category).
- **Spearman's ρ**: Pearson's correlation of average ranks; interval by Fisher's z with the
  variance ``(1 + ρ²/2)/(n − 3)`` of Bonett & Wright (2000), back-transformed.
- **Rogan–Gladen** (Rogan & Gladen 1978): a pass rate ``p`` read by a judge with
  sensitivity ``q1`` (true-positive rate) and specificity ``q0`` (true-negative rate)
  estimates the true rate ``θ = (p + q0 − 1)/(q0 + q1 − 1)``, clipped to [0, 1]; undefined
  when ``q0 + q1 ≤ 1`` (a judge no better than chance carries no information). The interval
  carries the uncertainty of ``p`` (``n`` judged rows) and of ``q0``, ``q1`` (``m0``
  negative and ``m1`` positive calibration rows): the adjusted plug-in interval of Lee et al.
  (2025, "How to Correctly Report LLM-as-a-Judge Evaluations", arXiv:2511.21140), after Lang &
  Reiczigel (2014): ``p̃ = (np + z²/2)/(n + z²)``, ``q̃0 = (m0 q0 + 1)/(m0 + 2)``,
  ``q̃1 = (m1 q1 + 1)/(m1 + 2)``, ``ñ = n + z²``, ``m̃0 = m0 + 2``, ``m̃1 = m1 + 2``,
  ``θ̃ = (p̃ + q̃0 − 1)/(q̃0 + q̃1 − 1)``,
  ``shift = 2z²(θ̃ q̃1(1 − q̃1)/m̃1 − (1 − θ̃) q̃0(1 − q̃0)/m̃0)``,
  ``SE = sqrt(p̃(1 − p̃)/ñ + (1 − θ̃)² q̃0(1 − q̃0)/m̃0 + θ̃² q̃1(1 − q̃1)/m̃1)/(q̃0 + q̃1 − 1)``,
  interval ``θ̃ + shift ± z·SE``, clipped to [0, 1] (an interval wholly outside [0, 1]
  is withheld: clipped, it would have zero width).

Intervals that rest on a large-sample approximation (κ, ρ) are given only from
:data:`MIN_ROWS_FOR_INTERVAL` rows on; below that the estimate says so instead of printing one.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

MIN_ROWS_FOR_INTERVAL = 10
"""Rows a large-sample interval (κ, ρ) needs; below it the interval is withheld."""

Weights = Literal["linear", "quadratic"] | None


@dataclass(frozen=True)
class Estimate:
    """A value with its interval.

    Attributes:
        value: the estimate, or ``None`` when it is undefined (``reason`` says why).
        low, high: the interval's ends, or ``None`` when none can be given.
        reason: why the value or the interval is missing, else ``None``.
        method: how the interval was computed.
        note: a remark about a defined value (e.g. one rater used a single category).
    """

    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = None
    method: str = ""
    note: str | None = None

    def to_json(self) -> dict[str, float | str | None]:
        """As JSON data: ``value``, ``low``, ``high``, ``reason``, ``method``, ``note``."""
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "reason": self.reason,
            "method": self.method,
            "note": self.note,
        }


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def agreement_weights(k: int, weights: Weights) -> list[list[float]]:
    """The ``k × k`` agreement weights: identity, linear or quadratic (see the module)."""
    if weights is None or k == 1:
        return [[1.0 if i == j else 0.0 for j in range(k)] for i in range(k)]
    power = 1 if weights == "linear" else 2
    return [[1.0 - (abs(i - j) / (k - 1)) ** power for j in range(k)] for i in range(k)]


def cohen_kappa(
    pairs: Sequence[tuple[Hashable, Hashable]],
    *,
    categories: Sequence[Hashable] | None = None,
    weights: Weights = None,
    confidence: float = 0.95,
    min_rows: int = MIN_ROWS_FOR_INTERVAL,
) -> Estimate:
    """Cohen's κ (weighted with ``weights``) of ``(rater_a, rater_b)`` pairs, with its
    large-sample interval.

    Args:
        pairs: one ``(a, b)`` per rated item.
        categories: every category, in order (the order matters for weighted κ); default:
            the sorted union of the categories seen. A category outside it is an error.
        weights: ``None`` (Cohen's κ), ``"linear"`` or ``"quadratic"``.
        confidence: of the interval.
        min_rows: the fewest pairs for which an interval is given.

    Raises:
        ValueError: a pair's category is not in ``categories``.
    """
    seen = {a for a, _ in pairs} | {b for _, b in pairs}
    order = list(categories) if categories is not None else sorted(seen, key=str)
    index = {c: i for i, c in enumerate(order)}
    unknown = seen - set(index)
    if unknown:
        raise ValueError(f"categories {sorted(map(str, unknown))} are not in {order}")
    method = f"Fleiss-Cohen-Everitt large-sample SE, {confidence:.0%}"
    n = len(pairs)
    if n == 0:
        return Estimate(None, reason="no rated pairs", method=method)
    k = len(order)
    w = agreement_weights(k, weights)
    cells = Counter((index[a], index[b]) for a, b in pairs)
    rows = [sum(c for (i, _), c in cells.items() if i == r) / n for r in range(k)]
    cols = [sum(c for (_, j), c in cells.items() if j == s) / n for s in range(k)]
    p_o = sum(w[i][j] * c / n for (i, j), c in cells.items())
    p_e = sum(w[i][j] * rows[i] * cols[j] for i in range(k) for j in range(k))
    if p_e >= 1.0 - 1e-12:
        used = sorted({str(a) for a, _ in pairs} | {str(b) for _, b in pairs})
        return Estimate(
            None,
            method=method,
            reason=(
                f"both raters gave every row the same category ({', '.join(used)}): chance "
                "agreement is 1, so κ is undefined (there is no variation to agree on)"
            ),
        )
    kappa = (p_o - p_e) / (1.0 - p_e)
    note = _one_sided(pairs)
    if n < min_rows:
        return Estimate(
            kappa,
            method=method,
            note=note,
            reason=(
                f"no interval: {n} rated pair(s), fewer than the {min_rows} a large-sample "
                "interval needs"
            ),
        )
    row_w = [sum(cols[j] * w[i][j] for j in range(k)) for i in range(k)]
    col_w = [sum(rows[i] * w[i][j] for i in range(k)) for j in range(k)]
    spread = sum(
        c / n * (w[i][j] - (row_w[i] + col_w[j]) * (1.0 - kappa)) ** 2
        for (i, j), c in cells.items()
    )
    variance = (spread - (kappa - p_e * (1.0 - kappa)) ** 2) / (n * (1.0 - p_e) ** 2)
    if variance <= 1e-15:
        return Estimate(
            kappa,
            method=method,
            note=note,
            reason=(
                f"no interval: the large-sample variance is 0 ({_why_no_variance(pairs)}), "
                "which would claim certainty"
            ),
        )
    half = _z(confidence) * math.sqrt(variance)
    return Estimate(
        kappa, max(-1.0, kappa - half), min(1.0, kappa + half), method=method, note=note
    )


def _why_no_variance(pairs: Sequence[tuple[Hashable, Hashable]]) -> str:
    """What was measured that leaves κ's large-sample variance at 0: every row agreeing,
    or one rater giving every row one category (then the rows need not agree at all)."""
    agreed = sum(1 for a, b in pairs if a == b)
    if agreed == len(pairs):
        return f"all {len(pairs)} rows agree"
    one_sided = _one_sided(pairs)
    shown = f"{one_sided.split(', so')[0]}; " if one_sided else ""
    return f"{shown}{agreed} of {len(pairs)} rows agree"


def _one_sided(pairs: Sequence[tuple[Hashable, Hashable]]) -> str | None:
    """A note when one rater gave every row the same category (κ is then 0 or below)."""
    for position, who in ((0, "the first rater"), (1, "the second rater")):
        used = {pair[position] for pair in pairs}
        if len(used) == 1:
            return f"{who} gave every row {next(iter(used))!r}, so κ cannot exceed 0"
    return None


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank (``scipy.stats.rankdata`` default)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2.0 + 1.0
        start = end + 1
    return ranks


def spearman(
    x: Sequence[float],
    y: Sequence[float],
    *,
    confidence: float = 0.95,
    min_rows: int = MIN_ROWS_FOR_INTERVAL,
) -> Estimate:
    """Spearman's rank correlation of paired values, with a Fisher-z interval.

    Raises:
        ValueError: ``x`` and ``y`` differ in length.
    """
    if len(x) != len(y):
        raise ValueError(f"x has {len(x)} values and y {len(y)}")
    method = f"Fisher z with Bonett-Wright variance, {confidence:.0%}"
    n = len(x)
    if n < 2:
        return Estimate(None, method=method, reason=f"{n} pair(s): a correlation needs two")
    for name, values in (("the first rater", x), ("the second rater", y)):
        if len(set(values)) == 1:
            return Estimate(
                None,
                method=method,
                reason=(
                    f"{name} gave every row the same value ({values[0]!r}): a rank correlation "
                    "is undefined without variation"
                ),
            )
    rx, ry = average_ranks(x), average_ranks(y)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    rho = cov / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    rho = max(-1.0, min(1.0, rho))
    if n < max(min_rows, 4):
        return Estimate(
            rho,
            method=method,
            reason=(
                f"no interval: {n} pair(s), fewer than the {max(min_rows, 4)} a large-sample "
                "interval needs"
            ),
        )
    if abs(rho) >= 1.0 - 1e-12:
        return Estimate(
            rho,
            method=method,
            reason=("no interval: the ranks agree perfectly, which Fisher's z cannot bound"),
        )
    half = _z(confidence) * math.sqrt((1.0 + rho * rho / 2.0) / (n - 3))
    centre = math.atanh(rho)
    return Estimate(rho, math.tanh(centre - half), math.tanh(centre + half), method=method)


@dataclass(frozen=True)
class JudgeErrorRates:
    """A binary judge's measured error rates: ``tp`` of ``positives`` truly passing rows
    judged pass (sensitivity ``tp/positives``), ``tn`` of ``negatives`` truly failing rows
    judged fail (specificity ``tn/negatives``)."""

    tp: int
    positives: int
    tn: int
    negatives: int

    @property
    def sensitivity(self) -> float | None:
        """True-positive rate, ``None`` without positive rows."""
        return self.tp / self.positives if self.positives else None

    @property
    def specificity(self) -> float | None:
        """True-negative rate, ``None`` without negative rows."""
        return self.tn / self.negatives if self.negatives else None


def rogan_gladen(
    passed: int, judged: int, rates: JudgeErrorRates, *, confidence: float = 0.95
) -> Estimate:
    """The pass rate ``passed/judged`` corrected for the judge's error ``rates``, with an
    interval carrying the uncertainty of the suite and of the calibration (see the module).

    Raises:
        ValueError: counts out of range.
    """
    if not 0 <= passed <= judged or not 0 <= rates.tp <= rates.positives:
        raise ValueError("need 0 <= passed <= judged and 0 <= tp <= positives")
    if not 0 <= rates.tn <= rates.negatives:
        raise ValueError("need 0 <= tn <= negatives")
    method = f"Lee et al. 2025 adjusted plug-in interval, {confidence:.0%}"
    q1, q0 = rates.sensitivity, rates.specificity
    if judged == 0:
        return Estimate(None, method=method, reason="no row was judged")
    if q1 is None or q0 is None:
        missing = "truly passing" if q1 is None else "truly failing"
        return Estimate(
            None,
            method=method,
            reason=(
                f"the calibration has no {missing} row, so the judge's "
                f"{'sensitivity' if q1 is None else 'specificity'} is unknown"
            ),
        )
    youden = q0 + q1 - 1.0
    if youden <= 0:
        return Estimate(
            None,
            method=method,
            reason=(
                f"the judge is no better than chance (sensitivity {q1:.3f} + specificity "
                f"{q0:.3f} ≤ 1): its verdicts carry no information about the true pass rate, so "
                "the correction is undefined"
            ),
        )
    p = passed / judged
    raw = (p + q0 - 1.0) / youden
    theta = min(1.0, max(0.0, raw))
    note = None
    if raw != theta:
        note = (
            f"the raw correction {raw:.3f} lies outside [0, 1]: this pass rate is outside "
            "what the judge's measured error rates allow (a calibration that does not fit "
            "these rows?), so it is clipped"
        )
    z = _z(confidence)
    z2 = z * z
    n_t, m0, m1 = judged + z2, rates.negatives + 2, rates.positives + 2
    p_t = (passed + z2 / 2.0) / n_t
    q0_t = (rates.tn + 1) / m0
    q1_t = (rates.tp + 1) / m1
    youden_t = q0_t + q1_t - 1.0
    if youden_t <= 0:
        return Estimate(
            theta,
            method=method,
            reason=(
                "no interval: after the small-sample adjustment the judge is no better than chance"
            ),
            note=note,
        )
    th = (p_t + q0_t - 1.0) / youden_t
    shift = 2 * z2 * (th * q1_t * (1 - q1_t) / m1 - (1 - th) * q0_t * (1 - q0_t) / m0)
    se = (
        math.sqrt(
            p_t * (1 - p_t) / n_t
            + (1 - th) ** 2 * q0_t * (1 - q0_t) / m0
            + th**2 * q1_t * (1 - q1_t) / m1
        )
        / youden_t
    )
    low = min(1.0, max(0.0, th + shift - z * se))
    high = min(1.0, max(0.0, th + shift + z * se))
    if high - low < 1e-12:
        return Estimate(
            theta,
            method=method,
            note=note,
            reason=(
                f"no interval: it lies wholly {'above 1' if low >= 1.0 else 'below 0'}, and "
                "clipped it would claim certainty"
            ),
        )
    return Estimate(theta, low, high, method=method, note=note)


def pairwise_agreement(votes: Sequence[Hashable]) -> float | None:
    """The share of pairs of ``votes`` that agree (a judge's agreement with itself over
    repeated samples): ``Σ c(c−1) / (n(n−1))`` over the counts ``c`` of each vote; ``None``
    with fewer than two votes."""
    n = len(votes)
    if n < 2:
        return None
    return sum(c * (c - 1) for c in Counter(votes).values()) / (n * (n - 1))
