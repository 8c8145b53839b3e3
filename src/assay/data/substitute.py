"""``${row.<field>}`` substitution, and the look-alikes that are probably mistakes.

Placeholders follow Coder Eval (``reference/originals.md`` §1.2): the pattern is
``\\$\\{row\\.([A-Za-z_][A-Za-z0-9_]*)\\}``; ``null`` becomes the empty string and other scalars
go through ``str()``; a list or object is an error. Substitution is one pass: a value that
itself contains ``${row.other}`` is inserted literally and never substituted again.

assay's extension: under a key a criterion names in ``value_keys`` (``json_check``'s
``expected``), a value that is one whole placeholder takes the row's JSON value itself (a
number stays a number, a list a list), so it compares with JSON as a literal would.
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
    value = row_value(key, row)
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


def substitute_tree(
    obj: Any, row: dict[str, Any], *, value_keys: frozenset[str] = frozenset()
) -> Any:
    """Substitute in every string leaf of nested dicts and lists; other values are kept.
    A value under a key in ``value_keys`` that is one whole placeholder becomes the row's
    value as it is (see the module docstring)."""
    if isinstance(obj, str):
        return substitute(obj, row)
    if isinstance(obj, list):
        return [substitute_tree(item, row, value_keys=value_keys) for item in obj]
    if isinstance(obj, dict):
        return {key: row_value(whole, row) if (whole := _whole(key, value, value_keys))
                else substitute_tree(value, row, value_keys=value_keys)
                for key, value in obj.items()}  # fmt: skip
    return obj


def row_value(key: str, row: dict[str, Any]) -> Any:
    """The row's value of ``key`` as it is (any JSON value).

    Raises:
        PlaceholderKeyError: the row has no such key.
    """
    if key not in row:
        raise PlaceholderKeyError(
            f"${{row.{key}}}: key not found (available: {sorted(row.keys())})"
        )
    return row[key]


def value_fields_in_tree(obj: Any, value_keys: frozenset[str]) -> set[str]:
    """The row fields ``obj`` takes as whole values (one placeholder under a key of
    ``value_keys``); :func:`fields_in_tree` finds these and the ones put into text."""
    if isinstance(obj, list):
        return {name for item in obj for name in value_fields_in_tree(item, value_keys)}
    if isinstance(obj, dict):
        found: set[str] = set()
        for key, value in obj.items():
            whole = _whole(key, value, value_keys)
            found |= {whole} if whole else value_fields_in_tree(value, value_keys)
        return found
    return set()


def text_fields_in_tree(obj: Any, value_keys: frozenset[str]) -> set[str]:
    """The row fields ``obj`` puts into text (every placeholder but the whole values of
    :func:`value_fields_in_tree`)."""
    if isinstance(obj, list):
        return {name for item in obj for name in text_fields_in_tree(item, value_keys)}
    if isinstance(obj, dict):
        return {name for key, value in obj.items() if not _whole(key, value, value_keys)
                for name in text_fields_in_tree(value, value_keys)}  # fmt: skip
    return fields_in(obj) if isinstance(obj, str) else set()


def _whole(key: str, value: Any, value_keys: frozenset[str]) -> str | None:
    """The field of ``value`` when it is one whole placeholder under a typed key."""
    if key not in value_keys or not isinstance(value, str):
        return None
    match = PLACEHOLDER.fullmatch(value)
    return match.group(1) if match else None
