"""Percentile bootstrap over rows, with a row's replicates resampled together (a cluster).

Every statistic assay bootstraps is a function of sums of per-row contribution vectors
(``[passes, graded]`` for a pass rate, ``[score_sum, count]`` for a mean, per-label
``[tp, fp, fn]`` for F1), so one resample is a multinomial draw of row counts ``W`` and the
resampled sums are ``W @ C``, computed in chunks with numpy. A paired difference resamples
both arms' contributions of the same rows with the same ``W``.

There is no interval (``None`` with a reason) with fewer than two rows, or when every resample
gives the same value (a zero-width interval would pretend to certainty).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Statistic = Callable[[NDArray[np.float64]], NDArray[np.float64]]
RESAMPLES = 2000
SEED = 20261130
CHUNK = 200


@dataclass(frozen=True)
class Interval:
    """A point estimate and its interval; ``low``/``high`` are ``None`` with ``reason`` when no
    interval can be given."""

    value: float | None
    low: float | None
    high: float | None
    method: str
    reason: str | None = None


def bootstrap(
    contributions: NDArray[np.float64],
    statistic: Statistic,
    *,
    resamples: int = RESAMPLES,
    confidence: float = 0.95,
    seed: int = SEED,
) -> Interval:
    """Percentile interval of ``statistic`` over row resamples.

    Args:
        contributions: one row per dataset row (shape ``rows × d``).
        statistic: maps summed contributions (``B × d``) to ``B`` values (NaN where undefined).
        resamples: ``B``.
        confidence: two-sided level.
        seed: the generator's seed (fixed: the same data give the same interval).
    """
    rows = contributions.shape[0]
    point = float(statistic(contributions.sum(axis=0, keepdims=True))[0])
    value = None if np.isnan(point) else point
    if rows < 2:
        return Interval(value, None, None, "bootstrap", "needs at least 2 rows")
    rng = np.random.default_rng(seed)
    draws: list[NDArray[np.float64]] = []
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        weights = rng.multinomial(rows, np.full(rows, 1.0 / rows), size=size)
        draws.append(statistic(weights @ contributions))
    return _percentile(np.concatenate(draws), value, confidence)


def bootstrap_grouped(
    distinct: NDArray[np.float64],
    counts: NDArray[np.int64],
    statistic: Statistic,
    *,
    resamples: int = RESAMPLES,
    confidence: float = 0.95,
    seed: int = SEED,
) -> Interval:
    """:func:`bootstrap` for rows given as their distinct contribution vectors (``distinct``,
    ``k × d``) and how many rows share each (``counts``). Drawing ``n`` rows with replacement
    is a multinomial draw over the distinct vectors with probabilities ``counts / n``, so the
    resampled sums have the same distribution at a cost that does not grow with ``n`` (a
    100,000-row suite of 0/1 scores has two distinct vectors)."""
    rows = int(counts.sum())
    point = float(statistic((counts @ distinct)[np.newaxis, :])[0]) if rows else float("nan")
    value = None if np.isnan(point) else point
    if rows < 2:
        return Interval(value, None, None, "bootstrap", "needs at least 2 rows")
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(rows, counts / rows, size=resamples)
    return _percentile(statistic(weights @ distinct), value, confidence)


def _percentile(values: NDArray[np.float64], value: float | None, confidence: float) -> Interval:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return Interval(value, None, None, "bootstrap", "undefined in every resample")
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    if low == high:
        reason = "every resample gives the same value; no uncertainty can be estimated"
        return Interval(value, None, None, "bootstrap", reason)
    return Interval(value, float(low), float(high), "bootstrap")


def ratio(numerator: int, denominator: int) -> Statistic:
    """``sums[:, numerator] / sums[:, denominator]`` (NaN where the denominator is 0)."""

    def stat(sums: NDArray[np.float64]) -> NDArray[np.float64]:
        top, bottom = sums[:, numerator], sums[:, denominator]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)

    return stat


def macro_f1(labels: int, offset: int = 0) -> Statistic:
    """Mean over labels of ``2tp / (2tp + fp + fn)``, from columns ``[tp, fp, fn] × labels``
    starting at ``offset``; a label absent from a resample (denominator 0) is left out."""

    def stat(sums: NDArray[np.float64]) -> NDArray[np.float64]:
        block = sums[:, offset : offset + 3 * labels].reshape(sums.shape[0], labels, 3)
        tp, fp, fn = block[..., 0], block[..., 1], block[..., 2]
        bottom = 2 * tp + fp + fn
        present = bottom > 0
        f1 = np.where(present, 2 * tp / np.where(present, bottom, 1), 0.0)
        count = present.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean: NDArray[np.float64] = np.where(count > 0, f1.sum(axis=1) / count, np.nan)
        return mean

    return stat


def difference(first: Statistic, second: Statistic, split: int) -> Statistic:
    """``second(sums[:, split:]) - first(sums[:, :split])`` for paired arms."""

    def stat(sums: NDArray[np.float64]) -> NDArray[np.float64]:
        return second(sums[:, split:]) - first(sums[:, :split])

    return stat
