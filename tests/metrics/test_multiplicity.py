"""Holm and Bonferroni against statsmodels' multipletests."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from assay.metrics.multiplicity import adjust_p_values


@settings(max_examples=20, deadline=None)  # statsmodels takes ~0.1 s a call
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=40))
@example([0.0, 1.0, 0.5, 0.5])
@example([0.01] * 40)
def test_holm_and_bonferroni_equal_statsmodels(p_values: list[float]) -> None:
    for method in ("holm", "bonferroni"):
        _, expected, _, _ = multipletests(p_values, alpha=0.05, method=method)
        assert adjust_p_values(p_values, method) == pytest.approx(list(expected), abs=1e-12)


def test_hand_case_with_ties() -> None:
    # m = 4: sorted 0.01, 0.02, 0.02, 0.04 → 0.04, 0.06, 0.06 (monotone), 0.06 (max with 0.04)
    assert adjust_p_values([0.02, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert adjust_p_values([0.3], "holm") == [0.3]
    assert adjust_p_values([], "holm") == []
    assert adjust_p_values([0.01, 0.5], "none") == [0.01, 0.5]


def test_holm_rejects_at_least_what_bonferroni_rejects() -> None:
    rng = np.random.default_rng(3)
    p = list(rng.uniform(0, 0.05, size=10))
    holm, bonferroni = adjust_p_values(p), adjust_p_values(p, "bonferroni")
    assert all(h <= b + 1e-15 for h, b in zip(holm, bonferroni, strict=True))


@pytest.mark.parametrize(("values", "method"), [([1.2], "holm"), ([float("nan")], "holm"),
                                                ([0.1], "fdr")])  # fmt: skip
def test_bad_input_is_refused(values: list[float], method: str) -> None:
    with pytest.raises(ValueError):
        adjust_p_values(values, method)  # type: ignore[arg-type]
