"""Rows given in Python: a list, a pandas or Polars frame, a Hugging Face Dataset, all made
into the same JSON rows (missing values null, numpy values Python numbers)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import datasets
import numpy as np
import pandas as pd
import polars as pl
import pytest

from assay.data.frames import rows_of
from assay.errors import DatasetError

ROWS: list[dict[str, Any]] = [
    {"id": "a", "text": "fine", "score": 1.5, "count": 1},
    {"id": "b", "text": None, "score": None, "count": 2},
]


@pytest.mark.parametrize(
    "source",
    [
        ROWS,
        pd.DataFrame({"id": ["a", "b"], "text": ["fine", None], "score": [1.5, np.nan],
                      "count": np.array([1, 2], dtype=np.int64)}),
        pl.DataFrame({"id": ["a", "b"], "text": ["fine", None], "score": [1.5, None],
                      "count": [1, 2]}),
        datasets.Dataset.from_list(ROWS),
        (dict(row) for row in ROWS),
    ],
    ids=["list", "pandas", "polars", "datasets", "generator"],
)  # fmt: skip
def test_every_kind_of_rows_gives_the_same_json_rows(source: Any) -> None:
    rows = rows_of(source)
    assert rows == ROWS
    assert [type(row["count"]) for row in rows] == [int, int]


def test_numpy_values_dates_and_nested_values_become_json() -> None:
    row = {"id": "a", "n": np.int32(3), "f": np.float64("nan"), "when": dt.date(2024, 5, 1),
           "tags": np.array(["x", "y"]), "meta": {"k": np.bool_(True)}}  # fmt: skip
    assert rows_of([row]) == [
        {"id": "a", "n": 3, "f": None, "when": "2024-05-01", "tags": ["x", "y"],
         "meta": {"k": True}}
    ]  # fmt: skip
    frame = pd.DataFrame({"id": ["a"], "at": pd.to_datetime(["2024-05-01 12:00"])})
    assert rows_of(frame) == [{"id": "a", "at": "2024-05-01T12:00:00.000"}]


def test_what_is_not_rows_is_refused_naming_the_row_and_field() -> None:
    with pytest.raises(DatasetError, match=r"^rows must be a list of dicts, a pandas or Polars "
                       r"DataFrame or a datasets.Dataset, not dict$"):  # fmt: skip
        rows_of({"id": "a"})
    with pytest.raises(DatasetError, match=r"^rows\[1\] is not an object: 'b'$"):
        rows_of([{"id": "a"}, "b"])
    with pytest.raises(DatasetError, match=r"^rows\[0\] has a field name that is not text: 1$"):
        rows_of([{1: "a"}])
    with pytest.raises(DatasetError, match=r"^rows\[0\].x is inf, which JSON cannot hold$"):
        rows_of([{"x": float("inf")}])
    with pytest.raises(
        DatasetError, match=r"rows\[0\].x.y holds a value of type object, which is not JSON"
    ):
        rows_of([{"x": {"y": object()}}])
