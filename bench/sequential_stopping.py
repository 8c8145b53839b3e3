"""Simulated A/B experiments with known truth for ``--stop-when-decided`` (issue #33).

Each run pairs two arms' pass/fail on the same rows (arm A passes with ``p_a``, arm B with
``p_b``; the arms share a latent draw on a fraction ``shared`` of the rows, which correlates
them as real variants on the same rows are), in a random order, up to ``max_rows`` rows.
The stopping rule (:mod:`assay.metrics.sequential`) is applied after every row. Reported:

- with no difference (``p_a = p_b``): the false-positive rate over ``runs`` runs, with its
  Clopper–Pearson 95% interval (target: at most ``alpha``);
- with a true difference: the rule's power (runs that stopped with the right answer by
  ``max_rows``), the mean rows it used (a run that never stops counts ``max_rows``), and the
  rows of the fixed design with the same power (``assay.metrics.power.rows_needed`` at the
  simulated standard deviation of the differences); target: at least 40% fewer rows.

Everything is vectorised numpy, seeded: ``python bench/sequential_stopping.py [RUNS]`` writes
``bench/results/sequential_stopping.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import beta

from assay.metrics.power import PairedDesign, rows_needed
from assay.metrics.sequential import rejection_row

SEED = 20261204
CHUNK = 250


def paired_differences(
    rng: np.random.Generator, runs: int, rows: int, p_a: float, p_b: float, shared: float
) -> np.ndarray:
    """``b - a`` per row, shape ``(runs, rows)``."""
    u = rng.uniform(size=(runs, rows))
    same = rng.uniform(size=(runs, rows)) < shared
    v = np.where(same, u, rng.uniform(size=(runs, rows)))
    return (v < p_b).astype(float) - (u < p_a).astype(float)


def simulate(
    *, runs: int, max_rows: int, p_a: float, p_b: float, shared: float = 0.5,
    alpha: float = 0.05, seed: int = SEED,
) -> dict[str, Any]:  # fmt: skip
    """One scenario's figures (module docstring)."""
    rng = np.random.default_rng(seed)
    stops: list[np.ndarray] = []
    means: list[np.ndarray] = []
    sd_parts: list[float] = []
    for start in range(0, runs, CHUNK):
        size = min(CHUNK, runs - start)
        d = paired_differences(rng, size, max_rows, p_a, p_b, shared)
        row = rejection_row(d, 0.0, alpha=alpha)
        stops.append(row)
        at = np.where(row > 0, row, max_rows)
        means.append(np.cumsum(d, axis=1)[np.arange(size), at - 1] / at)
        sd_parts.append(float(d.std()))
    stop, mean = np.concatenate(stops), np.concatenate(means)
    rejected = stop > 0
    right = rejected & (np.sign(mean) == np.sign(p_b - p_a)) if p_b != p_a else rejected
    used = np.where(rejected, stop, max_rows)
    count = int(right.sum())
    low = float(beta.ppf(0.025, count, runs - count + 1)) if count else 0.0
    high = float(beta.ppf(0.975, count + 1, runs - count)) if count < runs else 1.0
    out: dict[str, Any] = {
        "p_a": p_a, "p_b": p_b, "shared": shared, "alpha": alpha, "runs": runs,
        "max_rows": max_rows, "rejections": count, "rate": count / runs,
        "rate_interval": [low, high], "mean_rows": float(used.mean()),
        "median_rows": float(np.median(used)),
    }  # fmt: skip
    if p_b != p_a:
        sd = float(np.mean(sd_parts))
        half = sd / np.sqrt(2)  # sd_d = sd of the differences: a design with rho 0, equal arms
        power = min(count / runs, 0.99)
        fixed = rows_needed(abs(p_b - p_a), PairedDesign(half, half, 0.0), alpha=alpha,
                            power=power)  # fmt: skip
        out |= {"sd_difference": sd, "fixed_rows_equal_power": fixed,
                "saving": None if fixed is None else 1.0 - out["mean_rows"] / fixed}  # fmt: skip
    return out


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    scenarios = [
        simulate(runs=runs, max_rows=3000, p_a=0.6, p_b=0.6),
        simulate(runs=runs, max_rows=3000, p_a=0.3, p_b=0.3, shared=0.8),
        simulate(runs=runs, max_rows=3000, p_a=0.6, p_b=0.65),
        simulate(runs=runs, max_rows=3000, p_a=0.6, p_b=0.7),
        simulate(runs=runs, max_rows=3000, p_a=0.5, p_b=0.6, shared=0.8),
    ]
    path = Path(__file__).parent / "results" / "sequential_stopping.json"
    path.write_text(json.dumps({"seed": SEED, "scenarios": scenarios}, indent=2) + "\n")
    for s in scenarios:
        extra = (f", fixed design of equal power {s['fixed_rows_equal_power']} rows, saving "
                 f"{s['saving']:.0%}" if "saving" in s else "")  # fmt: skip
        print(
            f"p_a={s['p_a']} p_b={s['p_b']}: rate {s['rate']:.4f} {s['rate_interval']}, "
            f"mean rows {s['mean_rows']:.0f}{extra}"
        )


if __name__ == "__main__":
    main()
