"""Token prices, for the cost of each row and ``run_limits.max_usd``.

Prices are US dollars per million tokens, input and output. The built-in table covers the
local and mock providers (free) and a few hosted models at the providers' list prices as of
2025-06 (check your provider; prices change). Extend or override it with a YAML/JSON file
(``--prices FILE``)::

    openai/gpt-4o-mini: {input_per_mtok: 0.15, output_per_mtok: 0.60}
    "openai/my-finetune-*": {input_per_mtok: 0.30, output_per_mtok: 1.20}

or per agent block (``agent.price``). Names may use ``*`` wildcards; the most specific entry
(the longest pattern) wins.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import yaml

from assay.errors import UsageError
from assay.providers.base import Usage


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` in US dollars."""
        return (
            usage.input_tokens * self.input_per_mtok + usage.output_tokens * self.output_per_mtok
        ) / 1_000_000


FREE = Price(0.0, 0.0)
BUILTIN: Mapping[str, Price] = MappingProxyType(
    {
        "local/*": FREE,
        "mock/*": FREE,
        "openai/gpt-4o": Price(2.50, 10.00),
        "openai/gpt-4o-mini": Price(0.15, 0.60),
        "openai/gpt-4.1": Price(2.00, 8.00),
        "openai/gpt-4.1-mini": Price(0.40, 1.60),
        "openai/gpt-4.1-nano": Price(0.10, 0.40),
        "anthropic/claude-3-5-haiku*": Price(0.80, 4.00),
        "anthropic/claude-sonnet-4*": Price(3.00, 15.00),
        "anthropic/claude-opus-4*": Price(15.00, 75.00),
    }
)


class PriceTable:
    """Model name (or ``*`` pattern) → :class:`Price`.

    Args:
        entries: the table (defaults to :data:`BUILTIN`).
    """

    def __init__(self, entries: Mapping[str, Price] = BUILTIN) -> None:
        self.entries = dict(entries)

    def lookup(self, model: str) -> Price | None:
        """The price of ``model``: an exact entry, else the longest matching pattern."""
        if model in self.entries:
            return self.entries[model]
        matches = [p for p in self.entries if fnmatch.fnmatchcase(model, p)]
        return self.entries[max(matches, key=len)] if matches else None

    def extended(self, path: Path) -> PriceTable:
        """A copy with the entries of the YAML/JSON file at ``path`` added (they win).

        Raises:
            UsageError: unreadable file or an entry without both prices (non-negative numbers).
        """
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise UsageError(f"cannot read the price file: {exc}", file=path) from None
        if not isinstance(data, dict):
            raise UsageError("a price file maps model names to prices", file=path)
        table = PriceTable(self.entries)
        for name, value in data.items():
            table.entries[str(name)] = parse_price(value, where=f"{path}: {name}")
        return table


def parse_price(value: object, *, where: str) -> Price:
    """``{input_per_mtok, output_per_mtok}`` → :class:`Price`.

    Raises:
        UsageError: a missing, negative or non-numeric price.
    """
    if not isinstance(value, dict):
        raise UsageError(f"{where}: give input_per_mtok and output_per_mtok")
    try:
        price = Price(float(value["input_per_mtok"]), float(value["output_per_mtok"]))
    except (KeyError, TypeError, ValueError):
        raise UsageError(f"{where}: give input_per_mtok and output_per_mtok as numbers") from None
    if price.input_per_mtok < 0 or price.output_per_mtok < 0:
        raise UsageError(f"{where}: prices cannot be negative")
    return price
