"""McNemar's exact test on paired pass/fail outcomes.

With ``b`` rows that pass in arm A and fail in arm B, and ``c`` the other way round, the
exact (binomial) McNemar test's two-sided p-value is that of ``b`` successes in ``b + c``
trials with probability 1/2 (McNemar 1947; the exact form as in Fagerland et al. 2013),
computed with ``scipy.stats.binomtest``. With no discordant row the p-value is 1.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class McNemar:
    """Discordant counts and the exact two-sided p-value."""

    a_only: int
    b_only: int
    p_value: float


def mcnemar_exact(a_only: int, b_only: int) -> McNemar:
    """The test for ``a_only`` rows passing only in A and ``b_only`` passing only in B.

    Raises:
        ValueError: a negative count.
    """
    if a_only < 0 or b_only < 0:
        raise ValueError("counts cannot be negative")
    from scipy.stats import binomtest  # imported on use: scipy takes a second to load

    total = a_only + b_only
    p_value = 1.0 if total == 0 else float(binomtest(a_only, total, 0.5).pvalue)
    return McNemar(a_only, b_only, min(1.0, p_value))
