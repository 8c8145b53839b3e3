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

import difflib
import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import yaml

from assay.errors import UsageError
from assay.providers.base import Usage
from assay.spec.source import load_yaml


@dataclass(frozen=True)
class Price:
    """US dollars per million input and output tokens; input tokens read from or written to
    the provider's prompt cache at their own prices when given (else at the input price)."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` in US dollars:
        ``(uncached·input + cache_read·read + cache_write·write + output·output) / 10⁶``."""
        read = self.input_per_mtok if self.cache_read_per_mtok is None else self.cache_read_per_mtok
        write = (
            self.input_per_mtok if self.cache_write_per_mtok is None else self.cache_write_per_mtok
        )
        uncached = usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens
        return (
            uncached * self.input_per_mtok
            + usage.cache_read_tokens * read
            + usage.cache_write_tokens * write
            + usage.output_tokens * self.output_per_mtok
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
        "anthropic/claude-3-5-haiku*": Price(0.80, 4.00, 0.08, 1.00),
        "anthropic/claude-sonnet-4*": Price(3.00, 15.00, 0.30, 3.75),
        "anthropic/claude-opus-4*": Price(15.00, 75.00, 1.50, 18.75),
    }
)


class PriceTable:
    """Model name (or ``*`` pattern) → :class:`Price`.

    Args:
        entries: the table (defaults to :data:`BUILTIN`).
    """

    def __init__(self, entries: Mapping[str, Price] = BUILTIN) -> None:
        self.entries = dict(entries)
        self.given: dict[str, str] = {}  # name → the price file that gave it

    def unused(self, models: Iterable[str]) -> list[str]:
        """The price file's entries that price none of ``models``, each with its file and
        the closest model (a misspelt name leaves every row unpriced)."""
        if not self.given:  # the built-in table is never warned of: no model is read
            return []
        seen = list(dict.fromkeys(models))
        found = []
        for name, file in self.given.items():
            if not any(fnmatch.fnmatchcase(model, name) for model in seen):
                close = difflib.get_close_matches(name, seen, n=1)
                found.append(f"{file}: {name} prices no model of this run"
                             + (f"; did you mean {close[0]}?" if close else
                                f" (its models: {', '.join(seen) or 'none'})"))  # fmt: skip
        return found

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
            data = load_yaml(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise UsageError(f"cannot read the price file: {exc}", file=path) from None
        if not isinstance(data, dict):
            raise UsageError("a price file maps model names to prices", file=path)
        table = PriceTable(self.entries)
        table.given = dict(self.given)
        for name, value in data.items():
            if "/" not in str(name):
                raise UsageError(f"{name}: name the model as a task does, "
                                 f"provider/name (openai/{name})", file=path)  # fmt: skip
            table.entries[str(name)] = parse_price(value, where=f"{path}: {name}")
            table.given[str(name)] = str(path)
        return table


def parse_price(value: object, *, where: str) -> Price:
    """``{input_per_mtok, output_per_mtok}`` → :class:`Price`.

    Raises:
        UsageError: a missing, negative or non-numeric price.
    """
    if not isinstance(value, dict):
        raise UsageError(f"{where}: give input_per_mtok and output_per_mtok")
    unknown = sorted(set(value) - set(_PRICE_FIELDS))
    if unknown:
        raise UsageError(f"{where}: unknown field(s) {unknown}; known: {list(_PRICE_FIELDS)}")
    try:
        price = Price(
            float(value["input_per_mtok"]),
            float(value["output_per_mtok"]),
            *(_optional(value.get(name)) for name in _PRICE_FIELDS[2:]),
        )
    except (KeyError, TypeError, ValueError):
        raise UsageError(f"{where}: give input_per_mtok and output_per_mtok as numbers") from None
    if any(p is not None and p < 0 for p in (price.input_per_mtok, price.output_per_mtok,
                                              price.cache_read_per_mtok,
                                              price.cache_write_per_mtok)):  # fmt: skip
        raise UsageError(f"{where}: prices cannot be negative")
    return price


_PRICE_FIELDS = ("input_per_mtok", "output_per_mtok", "cache_read_per_mtok",
                 "cache_write_per_mtok")  # fmt: skip


def _optional(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]
