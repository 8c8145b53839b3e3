"""A value read from YAML or Arrow as the JSON value a row holds, by one rule: dates and times
as ISO 8601 text (``datetime.isoformat``), decimals as their exact text (``0.10`` stays
``"0.10"``; a float would round ``12345678901234567.89``), durations as seconds, tuples as
lists, nested objects and lists converted through; NaN, an infinity, bytes or anything else
JSON cannot hold refused. A row is then substituted into prompts, recorded in ``task.json``
and hashed as the same text (a YAML timestamp went into a prompt as ``2024-01-02
03:04:05+00:00`` and was recorded as ``2024-01-02T03:04:05Z``)."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any


def to_json_value(value: Any) -> Any:
    """``value`` as a JSON value (see the module docstring).

    Raises:
        ValueError: what JSON cannot hold, naming it (``"holds nan, which is not a JSON
            value"``, ``"holds bytes data, which a row cannot hold"``).
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"holds {value}, which is not a JSON value")
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_value(v) for v in value]
    raise ValueError(f"holds {type(value).__name__} data, which a row cannot hold")
