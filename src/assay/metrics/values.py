"""A metric table that keeps undefined values honest: ``None`` plus the reason, never NaN."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction


@dataclass
class MetricTable:
    """Named metric values; an undefined one is ``None`` with a reason in ``undefined``.

    Attributes:
        values: metric name → value (``None`` when undefined).
        undefined: metric name → why it is undefined (e.g. ``"0/0: label 'x' was never
            predicted"``).
    """

    values: dict[str, float | None] = field(default_factory=dict)
    undefined: dict[str, str] = field(default_factory=dict)

    def put(self, name: str, numerator: float | Fraction, denominator: float, reason: str) -> None:
        """Store ``numerator / denominator``, or ``None`` with ``reason`` when it is 0.

        An exact :class:`~fractions.Fraction` numerator is divided exactly and rounded once.
        """
        if denominator == 0:
            self.set(name, None, reason)
        else:
            self.set(name, float(numerator / denominator))

    def set(self, name: str, value: float | None, reason: str = "") -> None:
        """Store a computed value, or ``None`` with ``reason``."""
        self.values[name] = value
        if value is None:
            self.undefined[name] = reason
        else:
            self.undefined.pop(name, None)

    def merge(self, other: MetricTable) -> None:
        """Add ``other``'s values and reasons (``other`` wins on equal names)."""
        self.values.update(other.values)
        self.undefined.update(other.undefined)
        for name, value in other.values.items():
            if value is not None:
                self.undefined.pop(name, None)
