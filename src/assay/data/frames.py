"""Rows given in Python: a list of dicts, a pandas or Polars ``DataFrame``, or a Hugging Face
``datasets.Dataset``, made into the JSON rows a task's ``dataset.rows`` holds.

None of those libraries is imported here: a frame is recognised by the module its type
comes from and converted with its own method. Missing values (pandas' ``NaN``/``NaT``/
``None``, Polars' and Arrow's nulls) become ``None`` (``null``), numpy scalars Python
numbers, timestamps ISO 8601 text, so every row is plain JSON data that ``task.json``
can record.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from assay.errors import DatasetError


def rows_of(source: Any, *, name: str = "rows") -> list[dict[str, Any]]:
    """The rows of ``source`` as a list of JSON objects, in order.

    Args:
        source: a list (or other iterable) of mappings, a ``pandas.DataFrame``, a
            ``polars.DataFrame`` or a ``datasets.Dataset``.
        name: what to call it in messages.

    Raises:
        DatasetError: ``source`` is none of those, a row is not a mapping, a column name
            is not text, or a value is not JSON data (naming the row and field).
    """
    module = type(source).__module__.partition(".")[0]
    if module == "pandas" and hasattr(source, "to_json"):
        # pandas' own JSON writer turns NaN/NaT into null and numpy values into numbers
        records = json.loads(source.to_json(orient="records", date_format="iso"))
        return [_checked(index, row, name) for index, row in enumerate(records)]
    if module == "polars" and hasattr(source, "to_dicts"):
        return [_checked(index, row, name) for index, row in enumerate(source.to_dicts())]
    if module == "datasets" and hasattr(source, "to_list"):
        return [_checked(index, row, name) for index, row in enumerate(source.to_list())]
    if isinstance(source, (str, bytes, Mapping)) or not isinstance(source, Iterable):
        raise DatasetError(
            f"{name} must be a list of dicts, a pandas or Polars DataFrame or a "
            f"datasets.Dataset, not {type(source).__name__}"
        )
    return [_checked(index, row, name) for index, row in enumerate(source)]


def _checked(index: int, row: Any, name: str) -> dict[str, Any]:
    if not isinstance(row, Mapping):
        raise DatasetError(f"{name}[{index}] is not an object: {row!r}")
    out: dict[str, Any] = {}
    for key, value in row.items():
        if not isinstance(key, str):
            raise DatasetError(f"{name}[{index}] has a field name that is not text: {key!r}")
        out[key] = _json_value(value, f"{name}[{index}].{key}")
    return out


def _json_value(value: Any, where: str) -> Any:
    """``value`` as JSON data: NaN → ``None``, numpy scalars and arrays → Python values,
    dates → ISO 8601 text; containers converted throughout."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else _finite(value, where)
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _json_value(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if hasattr(value, "tolist"):  # numpy scalars and arrays, Polars/Arrow series
        return _json_value(value.tolist(), where)
    raise DatasetError(f"{where} holds a value of type {type(value).__name__}, which is not JSON",
                       hint="convert it to text or a number first")  # fmt: skip


def _finite(value: float, where: str) -> float:
    if math.isinf(value):
        raise DatasetError(f"{where} is {value}, which JSON cannot hold")
    return value
