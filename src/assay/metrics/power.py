"""Power of a paired comparison of two variants, the rows it needs, and the smallest
difference a run can detect.

The test is the two-sided paired t test of the per-row differences ``d = b - a`` (a row's
value is its mean over replicates): with ``n`` rows, effect size ``e = delta / sd_d``, and
``T ~ noncentral t(n - 1, e·√n)``, the power is ``P(T > t_{1-α/2}) + P(T < -t_{1-α/2})``
(statsmodels' ``TTestPower().power``). The standard deviation of the differences comes from

``sd_d² = (sd_a² + sd_b² - 2·ρ·sd_a·sd_b) · deff``,

where ``ρ`` is the pairing correlation of the two variants' row values and ``deff`` the design
effect of clustering (``1 + (m - 1)·icc`` for clusters of ``m`` rows with intra-cluster
correlation ``icc``; measured directly from an earlier run as the ratio of the clustered to
the unclustered variance). Replicates enter through the row values: ``R`` replicates of a row
with within-row variance ``w`` add ``w / R`` to each arm's ``sd²`` instead of ``w``.

``rows_needed`` is the smallest ``n ≥ 2`` whose power reaches the target; the minimum
detectable effect of ``n`` rows is the ``delta`` at which the power equals the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_ROWS = 10_000_000


@dataclass(frozen=True)
class PairedDesign:
    """What the power depends on besides the number of rows.

    Attributes:
        sd_a, sd_b: each variant's standard deviation of a row's value (a row's mean over its
            replicates).
        correlation: the pairing correlation ``ρ`` of the two variants' row values, in [-1, 1].
        design_effect: ``deff ≥ 1`` for clustered rows (1: independent rows).
    """

    sd_a: float
    sd_b: float
    correlation: float
    design_effect: float = 1.0

    def __post_init__(self) -> None:
        if self.sd_a < 0 or self.sd_b < 0:
            raise ValueError("a standard deviation cannot be negative")
        if not -1.0 <= self.correlation <= 1.0:
            raise ValueError(f"the pairing correlation must be in [-1, 1], got {self.correlation}")
        if self.design_effect < 1.0:
            raise ValueError(f"the design effect must be at least 1, got {self.design_effect}")

    @property
    def sd_difference(self) -> float:
        """``sd_d`` of the module docstring."""
        variance = self.sd_a**2 + self.sd_b**2 - 2 * self.correlation * self.sd_a * self.sd_b
        return math.sqrt(max(0.0, variance) * self.design_effect)


def design_effect(cluster_size: float, icc: float) -> float:
    """``1 + (m - 1)·icc`` (Kish), for clusters of ``cluster_size`` rows on average.

    Raises:
        ValueError: a cluster size below 1 or an icc outside [0, 1].
    """
    if cluster_size < 1 or not 0.0 <= icc <= 1.0:
        raise ValueError(f"need cluster_size >= 1 and 0 <= icc <= 1, got {cluster_size}, {icc}")
    return 1.0 + (cluster_size - 1.0) * icc


def paired_power(effect: float, rows: float, *, alpha: float = 0.05) -> float:
    """The power of the two-sided paired t test at effect size ``effect`` (``delta / sd_d``)
    with ``rows`` rows (at least 2).

    Raises:
        ValueError: fewer than 2 rows, or ``alpha`` outside (0, 1).
    """
    _check_alpha(alpha)
    if rows < 2:
        raise ValueError(f"the paired t test needs at least 2 rows, got {rows}")
    from scipy.stats import nct, t

    df = rows - 1
    critical = t.ppf(1 - alpha / 2, df)
    shift = effect * math.sqrt(rows)
    upper, lower = float(nct.sf(critical, df, shift)), float(nct.cdf(-critical, df, shift))
    # scipy's far tail of a large shift is NaN where it is below 1e-15: count it as 0
    return (0.0 if math.isnan(upper) else upper) + (0.0 if math.isnan(lower) else lower)


def rows_needed(
    delta: float, design: PairedDesign, *, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """The fewest rows per variant whose paired test detects ``delta`` with ``power``;
    ``None`` when no number up to :data:`MAX_ROWS` does (``sd_d`` is 0 counts as 2 rows).

    Raises:
        ValueError: ``delta`` not positive, ``power`` or ``alpha`` outside (0, 1).
    """
    if delta <= 0:
        raise ValueError(f"the difference to detect must be positive, got {delta}")
    _check_alpha(power, "power")
    sd = design.sd_difference
    if sd == 0:
        return 2
    effect = delta / sd
    if paired_power(effect, MAX_ROWS, alpha=alpha) < power:
        return None
    low, high = 2, 2
    while paired_power(effect, high, alpha=alpha) < power:
        low, high = high, high * 2
    while low < high:  # the power grows with the rows: the first n that reaches the target
        middle = (low + high) // 2
        if paired_power(effect, middle, alpha=alpha) >= power:
            high = middle
        else:
            low = middle + 1
    return high


def minimum_detectable(
    rows: int, design: PairedDesign, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest ``delta`` that ``rows`` rows detect with ``power`` (in the metric's unit).

    Raises:
        ValueError: fewer than 2 rows, ``power`` or ``alpha`` outside (0, 1).
    """
    _check_alpha(power, "power")
    from scipy.optimize import brentq

    sd = design.sd_difference
    if sd == 0:
        return 0.0
    effect = brentq(lambda e: paired_power(e, rows, alpha=alpha) - power, 1e-9, 100.0)
    return float(effect * sd)


def _check_alpha(value: float, name: str = "alpha") -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value}")
