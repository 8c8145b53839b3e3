"""Confidence intervals for a proportion (an accuracy): the Wilson score interval.

Wilson (1927), as scipy computes it (``scipy.stats.binomtest(k, n).proportion_ci(
method="wilson")``): with ``p = k/n`` and ``z`` the two-sided normal quantile of
``confidence``::

    centre    = (p + z²/(2n)) / (1 + z²/n)
    halfwidth = z / (1 + z²/n) · sqrt(p(1-p)/n + z²/(4n²))

Unlike the normal ("Wald") interval it never has zero width (at 0% and 100% it still spans
``[0, z²/(n+z²)]`` and ``[n/(n+z²), 1]``), never leaves [0, 1] and is never NaN. With
``n = 0`` there is no interval: the function returns ``None`` (and callers write ``null``).
"""

from __future__ import annotations

import math
from statistics import NormalDist


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Return the Wilson score interval ``(low, high)`` for ``successes`` out of ``n``.

    Args:
        successes: the number of successes ``k``, ``0 <= k <= n``.
        n: the number of trials; 0 gives ``None``.
        confidence: the two-sided confidence level, strictly between 0 and 1.

    Returns:
        ``(low, high)`` with ``0 <= low < high <= 1``; exactly 0.0 when ``k = 0`` and exactly
        1.0 when ``k = n``. ``None`` when ``n = 0``.

    Raises:
        ValueError: a negative count, ``k > n``, or a confidence outside (0, 1).
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    if n == 0:
        return None
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high
