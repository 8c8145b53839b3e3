"""Cluster-robust standard errors and intervals for a mean, a proportion and a paired
difference, when rows are not independent (questions that share a passage, a row's
replicates).

Rows are grouped into clusters ``g = 1..G`` (a row's replicates are always one cluster; a
task's ``dataset.cluster_field`` puts rows with the same value in one). Each cluster gives its
totals ``y_g`` (the sum of the values) and ``n_g`` (how many values). The estimate is the
pooled mean ``m = Σy_g / N`` with ``N = Σn_g``, and its variance is the CR1 (Liang–Zeger)
sandwich that statsmodels computes for an intercept-only OLS with ``cov_type='cluster'``::

    V = G/(G-1) · Σ_g (y_g - m·n_g)² / N²          SE = √V

(the ``(N-1)/(N-K)`` factor is 1 for the intercept alone). A paired difference ``m_b - m_a``
of two arms on the same clusters has the influence ``u_g = (y_bg - m_b n_bg)/N_b -
(y_ag - m_a n_ag)/N_a`` per cluster and ``V = G/(G-1) · Σ_g u_g²``; with one value per row in
each arm it equals the clustered OLS of the per-row differences.

Intervals (two-sided, ``confidence`` 0.95 by default):

- ``cluster t``: ``m ± t_{G-1} · SE``, Student's t with ``G - 1`` degrees of freedom (what
  statsmodels reports with ``use_t=True``; the t quantile widens the interval when there are
  few clusters). Used for means and differences.
- ``cluster exact`` (Korn & Graubard 1998), for a proportion with fewer than
  :data:`MIN_CLUSTERS` clusters, or whose clustered variance is 0 (every value the same):
  the Clopper–Pearson interval at the effective sample size ``n* = m(1-m)/V`` (capped at
  ``N``; ``G`` when ``m`` is 0 or 1), scaled by ``(t_{N-1}/t_{G-1})²`` for the degrees of
  freedom, with ``m·n*`` successes. Normal-theory intervals on few clusters are too narrow
  (Bowyer et al. 2025); this one keeps its coverage there and never leaves [0, 1].
- With at least :data:`MIN_CLUSTERS` clusters a proportion uses ``cluster t`` as well.

No interval (``low``/``high`` ``None`` with a reason) with no graded value, one cluster, or a
mean whose clustered variance is 0 (every value the same: a zero-width interval would pretend
to certainty).
"""

from __future__ import annotations

import importlib
import math
import sys
import threading
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field

MIN_CLUSTERS = 30
"""Below this many clusters a proportion's interval is the exact (Korn–Graubard) one."""

CLUSTER_T = "cluster t"
CLUSTER_EXACT = "cluster exact"


@dataclass(frozen=True)
class ClusteredEstimate:
    """A mean (or difference) with its cluster-robust SE and interval.

    Attributes:
        value: the pooled mean ``Σy/N``; ``None`` with no graded value.
        se: the CR1 standard error; ``None`` with fewer than 2 clusters.
        low, high: the interval's bounds; ``None`` with ``reason`` when there is none.
        method: ``"cluster t"`` or ``"cluster exact"`` (see the module docstring).
        observations: ``N``, the values averaged (replicates count one each).
        clusters: ``G``, the clusters with at least one value.
        reason: why there is no interval.
    """

    value: float | None
    se: float | None
    low: float | None
    high: float | None
    method: str
    observations: int
    clusters: int
    reason: str | None = None


@dataclass
class ClusterSums:
    """Per-cluster totals ``[y_g, n_g]``, added one value (or one row's sums) at a time.

    Memory grows with the number of clusters, not with the replicates.
    """

    totals: dict[Hashable, list[float]] = field(default_factory=dict)

    def add(self, cluster: Hashable, total: float, count: float = 1.0) -> None:
        """Add ``total`` over ``count`` values to ``cluster`` (``count`` 0 adds nothing: an
        excluded row is outside every denominator)."""
        if count <= 0:
            return
        slot = self.totals.setdefault(cluster, [0.0, 0.0])
        slot[0] += total
        slot[1] += count

    def estimate(
        self, *, proportion: bool = False, unit: bool = False, confidence: float = 0.95
    ) -> ClusteredEstimate:
        """:func:`clustered_mean` of the sums added."""
        return clustered_mean(self.totals, proportion=proportion, unit=unit,
                              confidence=confidence)  # fmt: skip


def _check(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")


def clustered_mean(
    totals: Mapping[Hashable, list[float] | tuple[float, float]],
    *,
    proportion: bool = False,
    unit: bool = False,
    confidence: float = 0.95,
) -> ClusteredEstimate:
    """The pooled mean of clusters given as ``cluster → (y_g, n_g)``, with its CR1 SE and
    interval (module docstring).

    Args:
        totals: per cluster, the sum of its values and how many there are (clusters with
            ``n_g = 0`` are ignored).
        proportion: the values are 0/1 (or fractions of a pass); enables the exact interval
            below :data:`MIN_CLUSTERS` clusters, and bounds in [0, 1].
        unit: the values lie in [0, 1] (a criterion's score): the bounds are clipped to it.
        confidence: two-sided level, strictly between 0 and 1.

    Raises:
        ValueError: a confidence outside (0, 1), or a negative count.
    """
    _check(confidence)
    pairs = [(float(y), float(n)) for y, n in totals.values() if n != 0]
    if any(n < 0 for _, n in pairs):
        raise ValueError("a cluster cannot have a negative count")
    big_n = sum(n for _, n in pairs)
    clusters = len(pairs)
    method = CLUSTER_EXACT if proportion and clusters < MIN_CLUSTERS else CLUSTER_T
    if not clusters:
        return ClusteredEstimate(None, None, None, None, method, 0, 0, "no graded rows")
    mean = math.fsum(y for y, _ in pairs) / big_n
    if clusters < 2:
        reason = "needs at least 2 clusters for a cluster-robust interval (found 1)"
        return ClusteredEstimate(mean, None, None, None, method, int(big_n), 1, reason)
    scale = clusters / (clusters - 1)
    variance = scale * math.fsum((y - mean * n) ** 2 for y, n in pairs) / big_n**2
    se = math.sqrt(variance)
    if proportion and (clusters < MIN_CLUSTERS or variance == 0.0):
        low, high = _korn_graubard(mean, variance, big_n, clusters, confidence)
        return ClusteredEstimate(mean, se, low, high, CLUSTER_EXACT, int(big_n), clusters)
    if variance == 0.0:
        reason = "every value is the same; no uncertainty can be estimated"
        return ClusteredEstimate(mean, se, None, None, CLUSTER_T, int(big_n), clusters, reason)
    half = _t_quantile(confidence, clusters - 1) * se
    low, high = mean - half, mean + half
    if proportion or unit:
        low, high = max(0.0, low), min(1.0, high)
    return ClusteredEstimate(mean, se, low, high, CLUSTER_T, int(big_n), clusters)


def clustered_difference(
    a: Mapping[Hashable, list[float] | tuple[float, float]],
    b: Mapping[Hashable, list[float] | tuple[float, float]],
    *,
    confidence: float = 0.95,
) -> ClusteredEstimate:
    """``mean(b) - mean(a)`` for two arms measured on the same clusters, with the paired CR1
    SE (module docstring) and a ``cluster t`` interval on ``G - 1`` degrees of freedom.

    A cluster with values in only one arm still counts (its influence on that arm's mean);
    ``observations`` is the larger arm's ``N``.
    """
    _check(confidence)
    sums_a = {k: (float(v[0]), float(v[1])) for k, v in a.items() if v[1]}
    sums_b = {k: (float(v[0]), float(v[1])) for k, v in b.items() if v[1]}
    n_a = sum(n for _, n in sums_a.values())
    n_b = sum(n for _, n in sums_b.values())
    keys = set(sums_a) | set(sums_b)
    observations = int(max(n_a, n_b))
    if not n_a or not n_b:
        return ClusteredEstimate(None, None, None, None, CLUSTER_T, observations, len(keys),
                                 "an arm has no graded rows")  # fmt: skip
    mean_a = math.fsum(y for y, _ in sums_a.values()) / n_a
    mean_b = math.fsum(y for y, _ in sums_b.values()) / n_b
    diff = mean_b - mean_a
    if len(keys) < 2:
        reason = "needs at least 2 clusters for a cluster-robust interval (found 1)"
        return ClusteredEstimate(diff, None, None, None, CLUSTER_T, observations, 1, reason)
    zero = (0.0, 0.0)
    influence = [
        (sums_b.get(k, zero)[0] - mean_b * sums_b.get(k, zero)[1]) / n_b
        - (sums_a.get(k, zero)[0] - mean_a * sums_a.get(k, zero)[1]) / n_a
        for k in keys
    ]
    clusters = len(keys)
    variance = clusters / (clusters - 1) * math.fsum(u * u for u in influence)
    se = math.sqrt(variance)
    if variance == 0.0:
        reason = "every paired difference is the same; no uncertainty can be estimated"
        return ClusteredEstimate(diff, se, None, None, CLUSTER_T, observations, clusters, reason)
    half = _t_quantile(confidence, clusters - 1) * se
    return ClusteredEstimate(diff, se, diff - half, diff + half, CLUSTER_T, observations,
                             clusters)  # fmt: skip


def cluster_totals(
    values: Iterable[tuple[Hashable, float]],
) -> dict[Hashable, list[float]]:
    """``cluster → [Σ values, count]`` from ``(cluster, value)`` pairs."""
    sums = ClusterSums()
    for cluster, value in values:
        sums.add(cluster, value)
    return sums.totals


def preload() -> None:
    """Start importing ``scipy.special`` (the t and beta inverses below; about 0.2 s of CPU)
    on a daemon thread and return at once, so that the first interval a caller needs later
    does not wait for it: a run calls this as its rows start, and its reports find the
    module loaded (or wait on the import lock for the rest of it). A no-op once loaded."""
    if "scipy.special" not in sys.modules:
        threading.Thread(target=importlib.import_module, args=("scipy.special",),
                         name="assay-preload", daemon=True).start()  # fmt: skip


def _t_quantile(confidence: float, df: float) -> float:
    # scipy.special's Student t inverse is scipy.stats.t.ppf's own, without the 0.6 s of
    # loading scipy.stats; imported on use
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + confidence / 2.0))


def _korn_graubard(
    mean: float, variance: float, big_n: float, clusters: int, confidence: float
) -> tuple[float, float]:
    """Clopper–Pearson at the effective sample size, with the degrees-of-freedom scaling."""
    from scipy.special import betaincinv  # scipy.stats.beta.ppf's own inverse

    if variance > 0.0 and 0.0 < mean < 1.0:
        effective = min(big_n, mean * (1.0 - mean) / variance)
    else:
        effective = float(clusters)
    if big_n > 1:
        ratio = _t_quantile(confidence, big_n - 1) / _t_quantile(confidence, clusters - 1)
        effective *= ratio**2
    successes = mean * effective
    tail = (1.0 - confidence) / 2.0
    low = (0.0 if successes <= 0
           else float(betaincinv(successes, effective - successes + 1, tail)))  # fmt: skip
    high = (1.0 if successes >= effective
            else float(betaincinv(successes + 1, effective - successes, 1 - tail)))  # fmt: skip
    return low, high


QA_CLUSTER_FIELD = "story"
"""The QA schema's passage: a ``qa:`` task's default cluster field."""


def field_value(row: Mapping[str, object] | None, path: str) -> object:
    """The value at dotted ``path`` in ``row`` (``None`` when any step is missing)."""
    value: object = row
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def cluster_of(
    row: Mapping[str, object] | None, cluster_field: str | None, row_id: str
) -> Hashable:
    """The cluster of a row: its ``cluster_field`` value, or the row itself (a row's
    replicates are one cluster) without a field or when the value is missing, null or
    blank."""
    if cluster_field is not None:
        value = field_value(row, cluster_field)
        if value is not None and not isinstance(value, Mapping | list) and str(value).strip():
            return ("value", str(value))
    return ("row", row_id)


def t_test_p(found: ClusteredEstimate, null: float = 0.0) -> float | None:
    """The two-sided p-value of ``value = null`` with the cluster-robust SE on ``G - 1``
    degrees of freedom (what statsmodels' ``t_test`` reports with ``use_t=True``); ``None``
    without an SE (fewer than 2 clusters) or with a zero one."""
    if found.value is None or not found.se or found.clusters < 2:
        return None
    from scipy.special import stdtr  # the Student t CDF (scipy.stats.t.sf's own)

    statistic = (found.value - null) / found.se
    return float(min(1.0, 2.0 * stdtr(found.clusters - 1, -abs(statistic))))


def detectable_difference(
    found: ClusteredEstimate, *, alpha: float = 0.05, power: float = 0.8
) -> float | None:
    """The smallest true difference this many clusters detect with ``power`` at two-sided
    ``alpha``, from the difference's clustered SE: ``(t_{1-α/2} + t_{power}) · SE`` on
    ``G - 1`` degrees of freedom; ``None`` without an SE."""
    if not found.se or found.clusters < 2:
        return None
    from scipy.special import stdtrit

    df = found.clusters - 1
    return float((stdtrit(df, 1 - alpha / 2) + stdtrit(df, power)) * found.se)
