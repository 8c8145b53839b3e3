"""Statistics of a stream of numbers, kept in memory that does not grow with the stream, and
equal to the numbers the standard library computes from the whole list.

- :class:`ExactSum`: the sum of floats, exact (an integer of 2**-1074 units) and rounded once
  when read, so it equals ``math.fsum`` (and a mean equals ``statistics.fmean``) whatever
  order the values came in.
- :class:`ScoreStats`: count, mean, median, population standard deviation, min and max, as
  :func:`assay.metrics.descriptive.describe` defines them: the mean is ``fmean``'s, the
  standard deviation is ``statistics.pstdev``'s (its exact sums of values and squares, per
  denominator, as ``statistics._ss`` keeps them, then the correctly rounded square root), the
  median is ``statistics.median``'s over the values' multiset. The multiset is kept as
  ``value → count`` (scores in [0, 1] take few distinct values: 0 and 1 for most criteria);
  past :data:`DISTINCT_LIMIT` distinct values it becomes an array of 8 bytes a value.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict
from fractions import Fraction

SCALE = 1074  # the exponent of the smallest positive float, 2**-1074
DISTINCT_LIMIT = 4096


class ExactSum:
    """An exact sum of floats (order does not matter), and their count."""

    __slots__ = ("count", "units")

    def __init__(self) -> None:
        self.units = 0  # the sum in units of 2**-1074
        self.count = 0

    def add(self, value: float) -> None:
        """Add one finite float."""
        numerator, denominator = float(value).as_integer_ratio()
        self.units += numerator << (SCALE - denominator.bit_length() + 1)
        self.count += 1

    def merge(self, other: ExactSum) -> None:
        """Add every value ``other`` holds."""
        self.units += other.units
        self.count += other.count

    @property
    def total(self) -> float:
        """The sum, correctly rounded (``math.fsum`` of the values)."""
        return float(Fraction(self.units, 1 << SCALE))

    def mean(self) -> float | None:
        """``statistics.fmean`` of the values; ``None`` without any."""
        return self.total / self.count if self.count else None


class ScoreStats:
    """The descriptive statistics of a stream of floats (see the module docstring)."""

    def __init__(self) -> None:
        self.total = ExactSum()
        self._sx: defaultdict[int, int] = defaultdict(int)  # denominator → Σ numerators
        self._sxx: defaultdict[int, int] = defaultdict(int)  # denominator → Σ numerators²
        self._counts: Counter[float] | None = Counter()
        self._values: array[float] | None = None
        self.low = math.inf
        self.high = -math.inf

    @property
    def count(self) -> int:
        """Values seen."""
        return self.total.count

    def add(self, value: float) -> None:
        """Add one finite float."""
        value = float(value)
        self.total.add(value)
        numerator, denominator = value.as_integer_ratio()
        self._sx[denominator] += numerator
        self._sxx[denominator] += numerator * numerator
        self.low = min(self.low, value)
        self.high = max(self.high, value)
        if self._counts is not None:
            self._counts[value] += 1
            if len(self._counts) > DISTINCT_LIMIT:
                self._values = array("d", self._counts.elements())
                self._counts = None
        else:
            assert self._values is not None
            self._values.append(value)

    def mean(self) -> float | None:
        """``statistics.fmean``; ``None`` without values."""
        return self.total.mean()

    def pstdev(self) -> float | None:
        """``statistics.pstdev`` (0.0 for one value); ``None`` without values."""
        n = self.count
        if n == 0:
            return None
        if n == 1:
            return 0.0
        sx = sum((Fraction(v, d) for d, v in self._sx.items()), Fraction(0))
        sxx = sum((Fraction(v, d * d) for d, v in self._sxx.items()), Fraction(0))
        mss = (n * sxx - sx * sx) / n / n
        return _float_sqrt_of_frac(mss.numerator, mss.denominator)

    def median(self) -> float | None:
        """``statistics.median``: the middle value, or the mean of the two middle ones."""
        n = self.count
        if n == 0:
            return None
        middle = n // 2
        if n % 2:
            return self._nth(middle)
        return (self._nth(middle - 1) + self._nth(middle)) / 2

    def _nth(self, index: int) -> float:
        """The value at ``index`` (0-based) of the sorted values."""
        if self._counts is None:
            assert self._values is not None
            return sorted(self._values)[index]
        seen = 0
        for value in sorted(self._counts):
            seen += self._counts[value]
            if index < seen:
                return value
        raise IndexError(index)


def _float_sqrt_of_frac(n: int, m: int) -> float:
    """The square root of ``n / m`` as a float, correctly rounded: the method of Python's
    ``statistics`` module (Mark Dickinson's, https://bugs.python.org/msg407078), so a
    standard deviation equals ``statistics.pstdev``'s."""
    q = (n.bit_length() - m.bit_length() - 109) // 2  # 109: _sqrt_bit_width, 2 × 53 + 3
    if q >= 0:
        numerator = _integer_sqrt_of_frac_rto(n, m << 2 * q) << q
        denominator = 1
    else:
        numerator = _integer_sqrt_of_frac_rto(n << -2 * q, m)
        denominator = 1 << -q
    return numerator / denominator


def _integer_sqrt_of_frac_rto(n: int, m: int) -> int:
    """The square root of ``n / m``, rounded to the nearest integer with round-to-odd."""
    a = math.isqrt(n // m)
    return a | (a * a * m != n)
