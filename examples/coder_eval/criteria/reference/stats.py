"""Summary statistics."""

import math


def mean(values: list[float]) -> float:
    """The arithmetic mean of values."""
    if not values:
        raise ValueError("no values")
    return math.fsum(values) / len(values)
