"""A gated metric's value is printed as every report prints numbers (three decimals), except
where three decimals would round a failing value up to its threshold."""

from __future__ import annotations

import pytest

from assay.reports.suite_rules import gate_value


@pytest.mark.parametrize(
    ("value", "threshold", "text"),
    [
        (1 / 3, 0.9, "0.333"),
        (2 / 3, 0.9, "0.667"),
        (0.5, 0.5, "0.500"),
        (0.0, 0.1, "0.000"),
        (1.0, 0.9, "1.000"),
        (0.7996, 0.8, "0.7996"),  # 0.800 would read as meeting 0.8
        (0.89999, 0.9, "0.89999"),
        (0.95, 0.9, "0.950"),
    ],
)
def test_three_decimals_unless_rounding_meets_the_threshold(
    value: float, threshold: float, text: str
) -> None:
    assert gate_value(value, threshold) == text
