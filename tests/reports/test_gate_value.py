"""A gated metric's value is printed as every report prints numbers (three decimals), except
where three decimals would make it look equal to its threshold."""

from __future__ import annotations

import pytest

from assay.reports.numbers import fmt_close


@pytest.mark.parametrize(
    ("value", "threshold", "text"),
    [
        (1 / 3, 0.9, "0.333"),
        (2 / 3, 0.9, "0.667"),
        (0.5, 0.5, "0.500"),
        (0.0, 0.1, "0.000"),
        (1.0, 0.9, "1.000"),
        (0.7996, 0.8, "0.7996"),  # 0.800 would read as meeting 0.8
        (0.89999, 0.9, "0.899990"),  # suite.md's rule: 4, 6, then 9 decimals
        (0.8999999, 0.9, "0.899999900"),  # six significant digits would print 0.9
        (0.8004, 0.8, "0.8004"),  # a pass by less than the rounding shows it too
        (0.95, 0.9, "0.950"),
    ],
)
def test_three_decimals_unless_rounding_meets_the_threshold(
    value: float, threshold: float, text: str
) -> None:
    assert fmt_close(value, threshold) == text
