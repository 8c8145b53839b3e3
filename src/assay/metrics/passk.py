"""pass@k and pass^k from replicates, with the unbiased estimators.

For one row with ``n`` graded replicates of which ``c`` passed:

- pass@k, the chance that at least one of ``k`` attempts passes, estimated without bias as
  ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, "Evaluating Large Language Models Trained on
  Code", eq. 1);
- pass^k, the chance that all ``k`` attempts pass, estimated as ``C(c, k) / C(n, k)`` (Yao et
  al. 2024, τ-bench).

A suite's value at ``k`` is the mean over its rows with ``n >= k``; rows with fewer graded
replicates are left out of that ``k`` (and counted).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one row.

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (all of ``k`` attempts pass) for one row.

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def suite_pass_k(rows: Sequence[tuple[int, int]]) -> dict[str, dict[str, float | int]]:
    """For each ``k`` from 1 to the largest ``n``: mean pass@k, mean pass^k and rows used.

    Args:
        rows: ``(n, c)`` per row: graded replicates and passes.

    Returns:
        ``{"1": {"pass_at_k": …, "pass_hat_k": …, "rows": …}, "2": …}``; empty when no row was
        graded.
    """
    largest = max((n for n, _ in rows), default=0)
    out: dict[str, dict[str, float | int]] = {}
    for k in range(1, largest + 1):
        used = [(n, c) for n, c in rows if n >= k]
        out[str(k)] = {
            "pass_at_k": sum(pass_at_k(n, c, k) for n, c in used) / len(used),
            "pass_hat_k": sum(pass_hat_k(n, c, k) for n, c in used) / len(used),
            "rows": len(used),
        }
    return out
