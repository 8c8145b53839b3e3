"""A paired difference graded by a calibrated binary judge, corrected for the judge's error.

Both arms are graded by the same judge, whose calibration measured its sensitivity ``q1``
(``tp / positives``) and specificity ``q0`` (``tn / negatives``) against human labels. The
Rogan–Gladen correction of a judged pass rate ``p`` is ``(p + q0 − 1) / J`` with Youden's
``J = q0 + q1 − 1`` (Rogan & Gladen 1978), so the corrected difference of two arms is the
judged difference over ``J``: ``Δc = Δ / J``. Its standard error by the delta method adds the
calibration's uncertainty to the rows' (the calibration is independent of the rows)::

    se(Δc)² = se(Δ)² / J² + Δ² · Var(J) / J⁴,   Var(J) = q0(1 − q0)/m0 + q1(1 − q1)/m1

where ``se(Δ)`` is the paired, cluster-robust SE of the judged difference and ``m0``, ``m1``
the calibration's truly failing and truly passing rows. The interval is ``Δc ± t · se`` on
the judged difference's ``G − 1`` degrees of freedom (clipped to [−1, 1], where a difference
of two rates lies), and the p-value tests ``Δc = 0``. A
difference the judge cannot resolve (an interval holding 0) is not reported as real.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from assay.metrics.agreement import JudgeErrorRates


@dataclass(frozen=True)
class JudgedDifference:
    """``value`` (Δ / J), its interval and SE, the p-value, or ``reason`` for none."""

    value: float | None
    low: float | None = None
    high: float | None = None
    se: float | None = None
    p_value: float | None = None
    reason: str | None = None


def corrected_difference(
    difference: float,
    se: float | None,
    clusters: int,
    rates: JudgeErrorRates,
    *,
    confidence: float = 0.95,
) -> JudgedDifference:
    """The judged paired ``difference`` (B − A, with its cluster-robust ``se`` over
    ``clusters``) corrected for the judge's error ``rates`` (see the module docstring).

    Raises:
        ValueError: ``confidence`` outside (0, 1).
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    q1, q0 = rates.sensitivity, rates.specificity
    if q1 is None or q0 is None:
        missing = "truly passing" if q1 is None else "truly failing"
        return JudgedDifference(None, reason=f"the calibration has no {missing} row")
    youden = q0 + q1 - 1.0
    if youden <= 0:
        return JudgedDifference(
            None, reason=f"the judge is no better than chance (sensitivity {q1:.3f} + "
            f"specificity {q0:.3f} ≤ 1): it cannot tell the arms apart"
        )  # fmt: skip
    value = difference / youden
    if se is None or clusters < 2:
        return JudgedDifference(value, reason="no interval: fewer than 2 clusters")
    var_j = q0 * (1 - q0) / rates.negatives + q1 * (1 - q1) / rates.positives
    total = math.sqrt(se**2 / youden**2 + difference**2 * var_j / youden**4)
    if total == 0:
        return JudgedDifference(value, se=0.0, reason="no interval: no variation")
    from scipy.special import stdtr, stdtrit  # scipy.stats.t's own, without loading it

    quantile = float(stdtrit(clusters - 1, 0.5 + confidence / 2))
    p_value = float(min(1.0, 2.0 * stdtr(clusters - 1, -abs(value) / total)))
    low, high = max(-1.0, value - quantile * total), min(1.0, value + quantile * total)
    return JudgedDifference(value, low, high, total, p_value)
