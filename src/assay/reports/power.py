"""How many rows an experiment needs: the paired design measured on an earlier run, or stated
assumptions, turned into rows per variant, the minimum detectable effect and the power of the
run as planned (:mod:`assay.metrics.power`).

From a run (:func:`measured_design`), for one suite and its pass rate (a row's value is its
fraction of passed replicates; what did not grade is left out): each variant's standard
deviation of the row values, their pairing correlation (with two variants; with one, the
stated ``correlation`` and the same standard deviation for both arms), and the design effect
of its clusters: the CR1 clustered variance of the mean difference over the unclustered one
(at least 1). Replicates: the within-row variance ``w`` (pooled over rows with two or more
graded replicates) is taken out of each arm's variance at the run's replicate count and put
back at the planned one (``sd² - w/R_run + w/R_plan``); the covariance of the arms' row means
does not change with R (one arm's replicates are independent of the other's), so the pairing
correlation at the planned R is the measured covariance over the replanned deviations.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from assay.errors import UsageError
from assay.metrics.clustered import cluster_of
from assay.metrics.power import PairedDesign, minimum_detectable, paired_power, rows_needed
from assay.results.task_result import EvaluationResult


@dataclass(frozen=True)
class PowerPlan:
    """The answer of ``assay plan --power DELTA``.

    Attributes:
        delta: the paired difference to detect (the metric's unit: a pass rate's fraction).
        alpha, power: the two-sided level and the target power.
        design: the paired design used.
        source: where the design came from (a run and its variants, or the assumptions).
        rows_needed: rows per variant for ``power`` at ``delta`` (``None``: beyond reach).
        rows_planned: rows per variant in the run as planned (``None`` when unknown).
        minimum_detectable: the smallest difference the planned rows detect with ``power``.
        achieved_power: the planned rows' power at ``delta``.
        replicates: the replicates per row planned.
    """

    delta: float
    alpha: float
    power: float
    design: PairedDesign
    source: str
    rows_needed: int | None
    rows_planned: int | None
    minimum_detectable: float | None
    achieved_power: float | None
    replicates: int = 1

    def lines(self) -> list[str]:
        """The plan in words, one fact a line."""
        d = self.design
        out = [
            f"power: detect a paired difference of {self.delta:g} at alpha {self.alpha:g} "
            f"(two-sided) with power {self.power:g}",
            f"  design ({self.source}): sd {d.sd_a:.3f} / {d.sd_b:.3f}, pairing correlation "
            f"{d.correlation:.3f}, design effect {d.design_effect:.3f}, "
            f"{self.replicates} replicate(s) per row → sd of a row's difference "
            f"{d.sd_difference:.3f}",
            "  rows needed per variant: "
            + (str(self.rows_needed) if self.rows_needed is not None else "beyond reach"),
        ]
        if self.rows_planned is not None:
            out.append(
                f"  as planned ({self.rows_planned} rows per variant): power "
                f"{_number(self.achieved_power)} at {self.delta:g}; minimum detectable effect "
                f"{_number(self.minimum_detectable)}"
            )
        return out


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def power_plan(
    delta: float,
    design: PairedDesign,
    *,
    source: str,
    rows_planned: int | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    replicates: int = 1,
) -> PowerPlan:
    """The rows needed for ``delta``, and the planned rows' power and minimum detectable effect.

    Raises:
        ValueError: see :func:`assay.metrics.power.rows_needed`.
    """
    needed = rows_needed(delta, design, alpha=alpha, power=power)
    achieved = mde = None
    if rows_planned is not None and rows_planned >= 2:
        sd = design.sd_difference
        achieved = 1.0 if sd == 0 else paired_power(delta / sd, rows_planned, alpha=alpha)
        mde = minimum_detectable(rows_planned, design, alpha=alpha, power=power)
    return PowerPlan(delta=delta, alpha=alpha, power=power, design=design, source=source,
                     rows_needed=needed, rows_planned=rows_planned, minimum_detectable=mde,
                     achieved_power=achieved, replicates=replicates)  # fmt: skip


def assumed_design(
    *, rate: float, correlation: float, cluster_size: float = 1.0, icc: float = 0.0
) -> tuple[PairedDesign, str]:
    """A design from stated assumptions: both arms pass at ``rate`` (sd ``√(p(1-p))``)."""
    from assay.metrics.power import design_effect

    if not 0.0 < rate < 1.0:
        raise UsageError(f"--baseline-rate must be between 0 and 1, got {rate:g}",
                         hint="at 0 or 1 every row fails (or passes) in both arms: there is "
                         "no difference to detect")  # fmt: skip
    # two pass/fail outcomes at the same rate p correlate at least -min(p/q, q/p), q = 1 - p
    least = -min(rate / (1 - rate), (1 - rate) / rate)
    if not least <= correlation < 1.0:
        raise UsageError(
            f"--correlation must be at least {least:.3f} and below 1 at a pass rate of "
            f"{rate:g}, got {correlation:g}",
            hint="1 means the variants always agree (no difference could be seen); two pass/"
            "fail outcomes at one rate cannot correlate below that bound",
        )  # fmt: skip
    sd = math.sqrt(rate * (1 - rate))
    deff = design_effect(cluster_size, icc)
    text = (f"assumed: pass rate {rate:g} in both arms, correlation {correlation:g}, "
            f"clusters of {cluster_size:g} rows with icc {icc:g}")  # fmt: skip
    return PairedDesign(sd, sd, correlation, deff), text


def measured_design(
    results: Sequence[EvaluationResult],
    *,
    suite_id: str | None = None,
    cluster_field: str | None = None,
    correlation: float | None = None,
    replicates: int = 1,
    run_name: str = "the run",
) -> tuple[PairedDesign, str]:
    """The paired design of a suite's pass rate measured on an earlier run (module docstring).

    Raises:
        UsageError: no suite (or several and none chosen), fewer than 2 graded rows, or one
            variant and no ``correlation``.
    """
    suites = sorted({r.suite_id for r in results if r.suite_id is not None})
    if suite_id is None and len(suites) == 1:
        suite_id = suites[0]
    if suite_id not in suites:
        raise UsageError(f"{run_name} has no suite {suite_id!r} (its suites: "
                         f"{', '.join(suites) or 'none'})")  # fmt: skip
    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    clusters: dict[str, Hashable] = {}
    for result in results:
        if result.suite_id != suite_id or result.row_id is None or not result.final_status.graded:
            continue
        rows[result.variant_id][result.row_id].append(
            float(result.final_status.category == "passed"))  # fmt: skip
        clusters.setdefault(result.row_id, cluster_of(result.row, cluster_field, result.row_id))
    variants = sorted(rows)
    if len(variants) == 1 and correlation is None:
        raise UsageError(
            f"{run_name} has one variant, so the pairing correlation cannot be measured",
            hint="give --correlation (0 for unpaired arms; 0.5 is a common guess), or measure "
            "it with a run of the experiment",
        )  # fmt: skip
    a, b = variants[0], variants[1] if len(variants) > 1 else variants[0]
    shared = sorted(set(rows[a]) & set(rows[b]))
    if len(shared) < 2:
        raise UsageError(f"{run_name} has {len(shared)} graded row(s) in suite {suite_id!r}; "
                         "a design needs at least 2")  # fmt: skip
    xa = [_mean(rows[a][i]) for i in shared]
    xb = [_mean(rows[b][i]) for i in shared]
    within = _within_variance([rows[v][i] for v in {a, b} for i in shared])
    run_replicates = max(len(rows[v][i]) for v in (a, b) for i in shared)
    sd_a = _replanned(_sd(xa), within, run_replicates, replicates)
    sd_b = _replanned(_sd(xb), within, run_replicates, replicates)
    if a == b and correlation is not None:
        rho = correlation
    else:  # the arms' replicates are independent: their covariance keeps, whatever R is
        rho = _covariance(xa, xb) / (sd_a * sd_b) if sd_a and sd_b else 0.0
    differences = [y - x for x, y in zip(xa, xb, strict=True)] if a != b else xa
    deff = _design_effect(differences, [clusters[i] for i in shared])
    pair = f"{b} vs {a}" if a != b else f"{a} (one variant; correlation {rho:g} stated)"
    return (PairedDesign(sd_a, sd_b, max(-1.0, min(1.0, rho)), deff),
            f"measured on {run_name}, suite {suite_id}, {pair}, {len(shared)} rows")  # fmt: skip


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _sd(values: list[float]) -> float:
    mean = _mean(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _covariance(xa: list[float], xb: list[float]) -> float:
    """The sample covariance of the arms' row means (``n - 1`` in the denominator)."""
    ma, mb = _mean(xa), _mean(xb)
    return sum((x - ma) * (y - mb) for x, y in zip(xa, xb, strict=True)) / (len(xa) - 1)


def _within_variance(groups: list[list[float]]) -> float:
    """The pooled variance of a row's replicates around the row's mean (0 without replicates)."""
    top = sum(sum((v - _mean(g)) ** 2 for v in g) for g in groups if len(g) > 1)
    bottom = sum(len(g) - 1 for g in groups if len(g) > 1)
    return top / bottom if bottom else 0.0


def _replanned(sd: float, within: float, run: int, planned: int) -> float:
    return math.sqrt(max(0.0, sd**2 - within / run + within / planned))


def _design_effect(values: list[float], clusters: list[Hashable]) -> float:
    """CR1 clustered variance of the mean over the iid one (at least 1)."""
    n = len(values)
    mean = _mean(values)
    iid = sum((v - mean) ** 2 for v in values) / (n - 1) / n
    totals: dict[Hashable, float] = defaultdict(float)
    for value, cluster in zip(values, clusters, strict=True):
        totals[cluster] += value - mean
    g = len(totals)
    if iid == 0 or g < 2:
        return 1.0
    clustered = g / (g - 1) * sum(t * t for t in totals.values()) / n**2
    return max(1.0, clustered / iid)
