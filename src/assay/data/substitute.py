"""``${row.<field>}`` substitution, and the look-alikes that are probably mistakes.

Placeholders follow Coder Eval (``reference/originals.md`` §1.2): the pattern is
``\\$\\{row\\.([A-Za-z_][A-Za-z0-9_]*)\\}``; ``null`` becomes the empty string and other scalars
go through ``str()``; a list or object is an error. Substitution is one pass: a value that
itself contains ``${row.other}`` is inserted literally and never substituted again.
"""

from __future__ import annotations

import re
from typing import Any

PLACEHOLDER = re.compile(r"\$\{row\.([A-Za-z_][A-Za-z0-9_]*)\}")

_LOOKALIKES = [
    re.compile(r"\{\{\s*row\.[A-Za-z_][A-Za-z0-9_]*\s*\}\}"),  # {{row.x}} (Jinja, Mustache)
    re.compile(r"(?<![\$\{])\{\s*row\.[A-Za-z_][A-Za-z0-9_]*\s*\}(?!\})"),  # {row.x} (format)
    re.compile(r"\$row\.[A-Za-z_][A-Za-z0-9_]*"),  # $row.x (shell)
    re.compile(r"\$\{\s+row\.[A-Za-z_][A-Za-z0-9_]*\s*\}|\$\{row\.[A-Za-z_][A-Za-z0-9_]*\s+\}"),
    re.compile(r"\$\{rows?\[[^\]]*\]\}|\$\{rows\.[A-Za-z_][A-Za-z0-9_]*\}"),  # ${row[x]} ${rows.x}
    re.compile(r"\$\(row\.[A-Za-z_][A-Za-z0-9_]*\)"),  # $(row.x)
    re.compile(r"\$\{row\.[^}\s]*\}"),  # ${row.a.b}, ${row.my-field}, ${row.1x}: not names
]


class PlaceholderKeyError(KeyError):
    """A placeholder names a field the row does not have."""

    def __str__(self) -> str:
        return str(self.args[0])


class PlaceholderTypeError(TypeError):
    """A placeholder resolves to a list or an object."""


def fields_in(text: str) -> set[str]:
    """Return the row fields that ``text`` refers to with ``${row.<field>}``."""
    return set(PLACEHOLDER.findall(text))


def fields_in_tree(obj: Any) -> set[str]:
    """Return the row fields referred to anywhere in the string leaves of ``obj``."""
    found: set[str] = set()
    for text in string_leaves(obj):
        found |= fields_in(text)
    return found


def string_leaves(obj: Any) -> list[str]:
    """Every string leaf of nested dicts and lists (dict keys are not leaves)."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, list):
        return [leaf for item in obj for leaf in string_leaves(item)]
    if isinstance(obj, dict):
        return [leaf for value in obj.values() for leaf in string_leaves(value)]
    return []


def lookalikes(text: str) -> list[str]:
    """Return spans of ``text`` that look like a placeholder but are not one."""
    found: list[str] = []
    for pattern in _LOOKALIKES:
        for match in pattern.finditer(text):
            if not PLACEHOLDER.fullmatch(match.group(0)) and match.group(0) not in found:
                found.append(match.group(0))
    return found


def scalar_text(key: str, row: dict[str, Any]) -> str:
    """The text that ``${row.<key>}`` becomes for ``row``.

    Raises:
        PlaceholderKeyError: ``${row.KEY}: key not found (available: [sorted keys])``.
        PlaceholderTypeError: ``${row.KEY}: value must be a scalar (str/int/float/bool/None),
            got list``.
    """
    if key not in row:
        raise PlaceholderKeyError(
            f"${{row.{key}}}: key not found (available: {sorted(row.keys())})"
        )
    value = row[key]
    if isinstance(value, dict | list):
        raise PlaceholderTypeError(
            f"${{row.{key}}}: value must be a scalar (str/int/float/bool/None), "
            f"got {type(value).__name__}"
        )
    return "" if value is None else str(value)


def substitute(text: str, row: dict[str, Any]) -> str:
    """Replace every ``${row.<field>}`` in ``text`` with the row's value, in one pass."""
    if "${row." not in text:
        return text
    return PLACEHOLDER.sub(lambda m: scalar_text(m.group(1), row), text)


def substitute_tree(obj: Any, row: dict[str, Any]) -> Any:
    """Substitute in every string leaf of nested dicts and lists; other values are kept."""
    if isinstance(obj, str):
        return substitute(obj, row)
    if isinstance(obj, list):
        return [substitute_tree(item, row) for item in obj]
    if isinstance(obj, dict):
        return {key: substitute_tree(value, row) for key, value in obj.items()}
    return obj
