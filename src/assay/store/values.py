"""What each field type accepts, how text becomes a typed value, and the content hash.

=========  ==========================================================================
type       accepted value (``None`` only where said)
=========  ==========================================================================
string     any ``str``, ``""`` included; kept verbatim (no Unicode normalisation)
number     an ``int`` or a finite ``float``; never a ``bool``; ints stay ints
boolean    ``True`` or ``False``
json       any JSON value: ``None``, bool, int, finite float, str, list, dict with
           ``str`` keys (key order is kept)
trace      on add: an OTLP JSON object, a path to an OTLP JSON file, or the id of a
           trace already in the store; stored as the trace id (``str``)
session    the same, for several traces; stored as the session id (``str``)
=========  ==========================================================================

Text sources (CSV cells, string cells of Parquet files) are converted by the schema:
``string`` is kept verbatim; ``number`` is a JSON number (``7`` is an int, ``7.0`` a float);
``boolean`` is ``true`` or ``false`` (any case); ``json`` is JSON text (an empty cell is
null); ``trace`` and
``session`` are an id, a path, or JSON text starting with ``{``.

The content hash of a version (:func:`example_digest`, :func:`combine`): each example
contributes ``sha256(canonical)`` read as a 256-bit integer, where ``canonical`` is the UTF-8
of ``json.dumps([example_id, data], sort_keys=True, separators=(",", ":"),
ensure_ascii=True)``; the version's hash is the sum of those integers modulo 2**256, written
as 64 hex digits. The sum does not depend on order, so two versions with the same examples
(same ids, same data) have the same hash whatever their history, and a version's hash is
computed from its parent's by adding what the batch adds and subtracting what it removes.
The hash detects accidental change; it is not meant to resist a deliberately built collision
(a sum of hashes is easier to collide than one hash over sorted content).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from typing import Any

from assay.data.jsonl import parse_json_strict
from assay.results.secrets import clip_head

HASH_MODULUS = 2**256
EMPTY_HASH = "0" * 64

_INT_TEXT = re.compile(r"-?(0|[1-9][0-9]*)")
_FLOAT_TEXT = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def describe(value: Any) -> str:
    """A short phrase naming ``value``'s JSON type and (shortened) value, for messages."""
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "an array", dict: "an object", type(None): "null"}  # fmt: skip
    kind = kinds.get(type(value), f"a Python {type(value).__name__}")
    if value is None:
        return kind
    shown = json.dumps(value, ensure_ascii=False, default=repr)
    shown = clip_head(shown, 60, "...")
    return f"{kind} ({shown})"


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def json_problem(value: Any, path: str = "") -> str | None:
    """Why ``value`` is not a JSON value (naming where inside it), or ``None`` if it is."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path or 'the value'} is {value!r}"
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = json_problem(item, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path or 'the object'} has a non-string key {key!r}"
            problem = json_problem(item, f"{path}.{key}")
            if problem:
                return problem
        return None
    return f"{path or 'the value'} is a Python {type(value).__name__}, not JSON"


def type_problem(kind: str, value: Any) -> str | None:
    """Why ``value`` does not fit a ``string``/``number``/``boolean``/``json`` field.

    Returns ``None`` when it fits; ``trace``/``session`` values are checked on add.
    """
    if kind == "string":
        ok = isinstance(value, str)
    elif kind == "number":
        if isinstance(value, float) and not math.isfinite(value):
            return f"expected a finite number, got {value!r}"
        ok = _is_number(value)
    elif kind == "boolean":
        ok = isinstance(value, bool)
    elif kind == "json":
        problem = json_problem(value)
        return f"expected a JSON value: {problem}" if problem else None
    else:
        return None
    return None if ok else f"expected {_ARTICLE[kind]}, got {describe(value)}"


_ARTICLE = {"string": "a string", "number": "a number", "boolean": "a boolean"}


def _number(text: str) -> int | float:
    stripped = text.strip()
    if _INT_TEXT.fullmatch(stripped):
        return int(stripped)
    if _FLOAT_TEXT.fullmatch(stripped):
        value = float(stripped)
        if math.isfinite(value):
            return value
    raise ValueError(f"expected a number, got the text {json.dumps(text, ensure_ascii=False)}")


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(
        f"expected a boolean (true or false), got the text {json.dumps(text, ensure_ascii=False)}"
    )


def _json(text: str) -> Any:
    if not text.strip():  # an empty CSV cell of a json field: null, what a JSON export writes
        return None
    try:
        return parse_json_strict(text)
    except ValueError as exc:
        key = getattr(exc, "key", None)  # assay.data.jsonl's duplicate-key error
        reason = f"key '{key}' appears twice in one object" if key is not None else str(exc)
        raise ValueError(f"expected JSON text: {reason}") from None


def _pointer(text: str) -> Any:
    return _json(text) if text.lstrip().startswith("{") else text


_FROM_TEXT: dict[str, Callable[[str], Any]] = {
    "string": str,
    "number": _number,
    "boolean": _boolean,
    "json": _json,
    "trace": _pointer,
    "session": _pointer,
}


def from_text(kind: str, text: str) -> Any:
    """Convert a text cell to a value of field type ``kind`` (rules in the module docstring).

    Raises:
        ValueError: the text is not a value of that type; the message says what was expected.
    """
    return _FROM_TEXT[kind](text)


def to_text(kind: str, value: Any) -> str:
    """The text cell for ``value`` (the inverse of :func:`from_text`; used by CSV export)."""
    if kind == "string" or (kind in ("trace", "session") and isinstance(value, str)):
        return str(value)
    if kind == "boolean":
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


_STORED = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False)


def stored_json(data: dict[str, Any]) -> str:
    """The text an example's data is stored as: JSON, key order kept, ASCII-only."""
    return _STORED.encode(data)


def example_digest(example_id: str, data: dict[str, Any]) -> int:
    """One example's contribution to its version's hash (see the module docstring)."""
    canonical = _CANONICAL.encode([example_id, data])
    return int.from_bytes(hashlib.sha256(canonical.encode("ascii")).digest(), "big")


def combine(hash_hex: str, *, add: int = 0, remove: int = 0) -> str:
    """``hash_hex`` plus the digests ``add`` minus the digests ``remove``, modulo 2**256."""
    total = (int(hash_hex, 16) + add - remove) % HASH_MODULUS
    return f"{total:064x}"
