"""Adjusting p-values for multiple comparisons (several variants, many metrics).

Holm (1979), the default: sort the ``m`` p-values ascending, ``p_(1) ≤ … ≤ p_(m)``; the
adjusted value of the ``i``-th is ``max_{j ≤ i} min(1, (m - j + 1) · p_(j))`` (a step-down
Bonferroni that controls the family-wise error rate under any dependence, and rejects at
least what Bonferroni does). Bonferroni: ``min(1, m · p)``. ``none`` leaves them as they are.
These are the values of ``statsmodels.stats.multitest.multipletests(p, method="holm" |
"bonferroni")``. A hypothesis *survives* when its adjusted p-value is at most ``alpha``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Adjustment = Literal["holm", "bonferroni", "none"]
ADJUSTMENTS: tuple[Adjustment, ...] = ("holm", "bonferroni", "none")


def adjust_p_values(p_values: Sequence[float], method: Adjustment = "holm") -> list[float]:
    """The adjusted p-values, in the order given.

    Args:
        p_values: each in [0, 1].
        method: ``holm`` (default), ``bonferroni`` or ``none``.

    Raises:
        ValueError: a p-value outside [0, 1] (or NaN), or an unknown method.
    """
    if method not in ADJUSTMENTS:
        raise ValueError(f"unknown adjustment {method!r}; use one of {', '.join(ADJUSTMENTS)}")
    for p in p_values:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"a p-value must be in [0, 1], got {p}")
    m = len(p_values)
    if method == "none":
        return list(p_values)
    if method == "bonferroni":
        return [min(1.0, m * p) for p in p_values]
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
