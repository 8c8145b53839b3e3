"""McNemar's exact test on paired pass/fail outcomes.

With ``b`` rows that pass in arm A and fail in arm B, and ``c`` the other way round, the
exact (binomial) McNemar test's two-sided p-value is that of ``b`` successes in ``b + c``
trials with probability 1/2 (McNemar 1947; the exact form as in Fagerland et al. 2013),
computed with ``scipy.stats.binomtest``. With no discordant row the p-value is 1.
"""

from __future__ import annotations

from dataclasses import dataclass

P_FLOOR = 1e-300  # below this a double has lost its digits: shown as "< 1e-300", never "0"


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


def format_p(p_value: float) -> str:
    """A p-value as reports show it: four significant digits (``0.0123``), or ``< 1e-300``
    for one that underflowed (``0.0`` or a subnormal double), never ``0``."""
    return f"{p_value:.4g}" if p_value >= P_FLOOR else f"< {P_FLOOR:g}"


def p_clause(p_value: float) -> str:
    """``p = 0.0123``, or ``p < 1e-300`` (:func:`format_p`)."""
    shown = format_p(p_value)
    return f"p {shown}" if shown.startswith("<") else f"p = {shown}"
