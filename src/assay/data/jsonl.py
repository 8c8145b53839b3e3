"""A strict, streaming JSONL reader: one JSON object per line, errors with file and line.

Rules (each one tested):

- records are split on ``\\n`` only, so a raw U+2028 inside a string is not a line break;
- a ``\\r`` before the ``\\n`` is removed (CRLF files); escaped ``\\r\\n`` inside strings survives;
- a leading UTF-8 byte-order mark is stripped; the last line needs no final newline;
- blank and whitespace-only lines are skipped, but line numbers stay physical and 1-based;
- a key repeated in one object, and the literals ``NaN``/``Infinity``/``-Infinity``, are errors;
  so is a number too large for a float (``1e400``), which Python would read as infinity.

Message shapes follow Coder Eval's loader (``reference/originals.md`` §1.1):
``Dataset {path}: invalid JSON on line {n}: {reason}`` and
``Dataset {path}: row on line {n} is not a JSON object: {row!r}``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.data.dataset_file import open_dataset
from assay.errors import DatasetError
from assay.results.secrets import clip_head

_BOM = b"\xef\xbb\xbf"
_JSON_SPACE = b" \t\r"


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; write null or a string instead")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text} is too large for a float; write it as a string")
    return value


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object_without_duplicates,
    parse_constant=_reject_constant,
    parse_float=_finite_float,
)


_FAST = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def count_keys(value: Any) -> int:
    """The keys of every object in ``value``, nested ones included."""
    if isinstance(value, dict):
        return len(value) + sum(count_keys(v) for v in value.values() if isinstance(v, dict | list))
    if isinstance(value, list):
        return sum(count_keys(v) for v in value if isinstance(v, dict | list))
    return 0


def _decode(text: str) -> Any:
    """Decode with the C parser; take the duplicate-checking path only when it could matter.

    Every key in JSON ends with ``":``; when the keys of the decoded objects number exactly the
    ``":`` in the text, no key was repeated (a repeat would leave fewer keys than
    separators, and text inside strings can only add separators). Otherwise the text is
    decoded again with the hook that names the repeated key.
    """
    value = _FAST.decode(text)
    if count_keys(value) != text.count('":'):
        value = _DECODER.decode(text)
    return value


def _check_surrogates(value: Any) -> None:
    """Refuse a lone UTF-16 surrogate (``\\ud800`` alone): it cannot be written as UTF-8.

    Raises:
        ValueError: naming the escape.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = value[exc.start]
            raise ValueError(
                f"a lone surrogate \\u{ord(bad):04x} is not text; it cannot be written as UTF-8"
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_surrogates(key)
            _check_surrogates(item)
    elif isinstance(value, list):
        for item in value:
            _check_surrogates(item)


def parse_json_strict(text: str) -> Any:
    """Parse one JSON text, refusing duplicate keys, NaN/Infinity and numbers that overflow.

    Raises:
        ValueError: invalid JSON (``json.JSONDecodeError``), a duplicate key, NaN/Infinity, or
            a number too large for a float.
    """
    value = _decode(text)
    if "\\ud" in text or "\\uD" in text:
        _check_surrogates(value)
    return value


def iter_jsonl(path: Path, *, display: str | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line of a JSONL file.

    Args:
        path: the file to read; streamed, so memory stays constant.
        display: how to name the file in messages (default: ``str(path)``).

    Raises:
        DatasetError: the file is missing, a line is not UTF-8, not JSON, not an object,
            repeats a key, or uses NaN/Infinity (or a number that overflows to it).
    """
    name = display or str(path)
    with open_dataset(path, name, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            body = raw[:-1] if raw.endswith(b"\n") else raw
            if not body.strip(_JSON_SPACE):
                continue
            yield number, _decode_line(body, name, number)


def _decode_line(body: bytes, name: str, number: int) -> dict[str, Any]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"Dataset {name}: invalid JSON on line {number}: not UTF-8 text "
            f"(byte {exc.start + 1} of the line)",
            file=name,
            located=True,
            line=number,
        ) from None
    if text.endswith("\r"):
        text = text[:-1]
    try:
        row = _decode(text)
        if "\\ud" in text or "\\uD" in text:
            _check_surrogates(row)
    except _DuplicateKey as exc:
        raise DatasetError(
            f"Dataset {name}: key '{exc.key}' appears twice in the object on line {number}",
            file=name,
            located=True,
            line=number,
            hint="a JSON object may name each key once",
        ) from None
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"Dataset {name}: invalid JSON on line {number}: {exc.msg} (column {exc.colno})",
            file=name,
            located=True,
            line=number,
        ) from None
    except ValueError as exc:
        raise DatasetError(
            f"Dataset {name}: invalid JSON on line {number}: {exc}",
            file=name,
            line=number,
            located=True,
        ) from None
    if not isinstance(row, dict):
        shown = repr(row)
        shown = clip_head(shown, 120, "...")
        raise DatasetError(
            f"Dataset {name}: row on line {number} is not a JSON object: {shown}",
            file=name,
            located=True,
            line=number,
        )
    return row
