"""How every report prints a number: three decimals, more only where three would hide that a
value differs from the one it is compared with (a gate that fails by less than the rounding);
and a count of things (``2 rows``)."""

from __future__ import annotations


def fmt(value: float | None, digits: int = 3) -> str:
    """A number with ``digits`` decimals, or ``—`` when undefined."""
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_close(value: float | None, other: float | None) -> str:
    """Like :func:`fmt`, with more digits (4, 6, then 9) only when three would make ``value``
    look equal to ``other`` while it is not (0.7996 against a gate of 0.8 prints ``0.7996``,
    never ``0.800``); equal values show three."""
    if value is None:
        return "—"
    if other is None or value == other:
        return fmt(value)
    for digits in (3, 4, 6, 9):
        if fmt(value, digits) != fmt(other, digits):
            return fmt(value, digits)
    return fmt(value, 9)


def plural(count: int, noun: str) -> str:
    """``1 row``, ``2 rows``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
