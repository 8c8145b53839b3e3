"""Power, rows needed and minimum detectable effect against statsmodels.stats.power."""

from __future__ import annotations

import math

import pytest
from statsmodels.stats.power import TTestPower

from assay.metrics.power import (
    PairedDesign,
    design_effect,
    minimum_detectable,
    paired_power,
    rows_needed,
)


@pytest.mark.parametrize("effect", [0.1, 0.25, 0.5, 1.2])
@pytest.mark.parametrize("rows", [2, 5, 30, 400])
@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_power_equals_statsmodels(effect: float, rows: int, alpha: float) -> None:
    expected = TTestPower().power(effect_size=effect, nobs=rows, alpha=alpha,
                                  alternative="two-sided")  # fmt: skip
    found = paired_power(effect, rows, alpha=alpha)
    if math.isnan(expected):  # statsmodels' far tail is NaN with a large shift; the near one
        from scipy.stats import nct, t

        expected = nct.sf(t.ppf(1 - alpha / 2, rows - 1), rows - 1, effect * math.sqrt(rows))
    assert found == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    ("sd_a", "sd_b", "rho", "deff", "delta"),
    [(0.5, 0.5, 0.0, 1.0, 0.1), (0.5, 0.45, 0.6, 1.0, 0.05), (0.4, 0.5, 0.3, 1.8, 0.1),
     (0.3, 0.3, 0.9, 1.0, 0.02)],
)  # fmt: skip
@pytest.mark.parametrize("power", [0.8, 0.9])
def test_rows_needed_is_statsmodels_solve_power_rounded_up(
    sd_a: float, sd_b: float, rho: float, deff: float, delta: float, power: float
) -> None:
    design = PairedDesign(sd_a, sd_b, rho, deff)
    sd = math.sqrt((sd_a**2 + sd_b**2 - 2 * rho * sd_a * sd_b) * deff)
    assert design.sd_difference == pytest.approx(sd)
    solved = TTestPower().solve_power(effect_size=delta / sd, alpha=0.05, power=power,
                                      alternative="two-sided")  # fmt: skip
    found = rows_needed(delta, design, power=power)
    assert found == math.ceil(solved - 1e-9)
    assert found is not None and paired_power(delta / sd, found) >= power
    assert paired_power(delta / sd, found - 1) < power


def test_a_higher_pairing_correlation_needs_fewer_rows() -> None:
    needs = [rows_needed(0.05, PairedDesign(0.5, 0.5, rho)) for rho in (0.0, 0.5, 0.8)]
    assert needs[0] > needs[1] > needs[2]  # type: ignore[operator]


@pytest.mark.parametrize("rows", [10, 100, 1000])
def test_minimum_detectable_effect_equals_statsmodels(rows: int) -> None:
    design = PairedDesign(0.5, 0.5, 0.4)
    effect = TTestPower().solve_power(nobs=rows, alpha=0.05, power=0.8, alternative="two-sided")
    found = minimum_detectable(rows, design)
    assert found == pytest.approx(effect * design.sd_difference, rel=1e-4)  # its solver tol
    assert paired_power(found / design.sd_difference, rows) == pytest.approx(0.8, abs=1e-9)


def test_design_effect_and_edges() -> None:
    assert design_effect(4, 0.2) == pytest.approx(1.6)
    assert rows_needed(0.1, PairedDesign(0.0, 0.0, 0.0)) == 2
    assert rows_needed(1e-9, PairedDesign(0.5, 0.5, 0.0)) is None
    with pytest.raises(ValueError, match="correlation"):
        PairedDesign(0.5, 0.5, 1.5)
    with pytest.raises(ValueError, match="positive"):
        rows_needed(0.0, PairedDesign(0.5, 0.5, 0.0))
    with pytest.raises(ValueError, match="power"):
        rows_needed(0.1, PairedDesign(0.5, 0.5, 0.0), power=1.0)
    with pytest.raises(ValueError, match="at least 2 rows"):
        paired_power(0.5, 1)


def test_detectable_difference_of_a_clustered_difference() -> None:
    from scipy.stats import t

    from assay.metrics.clustered import clustered_difference, detectable_difference

    a = {f"c{i}": [float(i % 2), 1.0] for i in range(40)}
    b = {f"c{i}": [float(i % 3 != 0), 1.0] for i in range(40)}
    found = clustered_difference(a, b)
    assert found.se is not None
    expected = (t.ppf(0.975, 39) + t.ppf(0.8, 39)) * found.se
    assert detectable_difference(found) == pytest.approx(expected)
    # a true difference of that size is detected with about 80% power (normal approximation)
    assert paired_power(expected / (found.se * math.sqrt(40)), 40) == pytest.approx(0.8, abs=0.01)
