"""Real data through the store and back: JSONL → store → JSONL / CSV / Parquet → store.

MBPP's ``code`` holds ``\\r\\n`` line breaks, ints and arrays; the SST-2 rows have no id
field and raw non-ASCII letters. Each export, imported again, must give the same examples
(same ids, same typed values, same key order) and so the same content hash.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from assay.data.jsonl import iter_jsonl
from assay.install import install_hint
from assay.store import Schema, Store, StoreError, open_store, read_rows
from assay.store.export import write_csv, write_jsonl, write_parquet
from assay.store.infer import schema_of_file
from tests.store.conftest import FIXTURES

MBPP = FIXTURES / "mbpp_slice.jsonl"
SST2 = FIXTURES / "sst2_slice.jsonl"


def exact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def examples_of(store: Store, name: str) -> list[tuple[str, dict[str, Any]]]:
    return [(e.example_id, e.data) for e in store.iter_examples(name, 1)]


def export(store: Store, name: str, path: Path) -> None:
    info = store.dataset(name)
    if path.suffix == ".parquet":
        write_parquet(lambda: store.iter_examples(name, 1), str(path), schema=info.schema,
                      id_field=info.id_field)  # fmt: skip
        return
    with path.open("wb") as handle:
        if path.suffix == ".csv":
            write_csv(store.iter_examples(name, 1), handle, schema=info.schema,
                      id_field=info.id_field)  # fmt: skip
        else:
            write_jsonl(store.iter_examples(name, 1), handle, id_field=info.id_field)


def import_file(store: Store, name: str, path: Path, schema: Schema | None = None) -> str:
    chosen = schema or schema_of_file(path)
    rows = read_rows(path, schema=chosen, id_field="id")
    return store.import_dataset(name, chosen, rows).content_hash


@pytest.mark.parametrize("source", [MBPP, SST2], ids=["mbpp", "sst2"])
def test_jsonl_export_is_the_input_with_ids(store: Store, tmp_path: Path, source: Path) -> None:
    original = source.read_text(encoding="utf-8").splitlines()
    import_file(store, "a", source)
    out = tmp_path / "a.jsonl"
    export(store, "a", out)
    ids = [example_id for example_id, _ in examples_of(store, "a")]
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines == [f'{{"id": "{i}", {line[1:]}' for i, line in zip(ids, original, strict=True)]
    rows = [row for _, row in iter_jsonl(out)]
    assert exact([{k: v for k, v in r.items() if k != "id"} for r in rows]) == exact(
        [row for _, row in iter_jsonl(source)]
    )


@pytest.mark.parametrize("source", [MBPP, SST2], ids=["mbpp", "sst2"])
@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_every_export_imports_back_to_the_same_examples(
    store: Store, tmp_path: Path, source: Path, suffix: str
) -> None:
    first = import_file(store, "a", source)
    out = tmp_path / f"a{suffix}"
    export(store, "a", out)
    schema = store.dataset("a").schema if suffix == ".csv" else None  # CSV cells are text
    again = import_file(store, "b", out, schema)
    assert store.dataset("b").schema == store.dataset("a").schema
    assert exact(examples_of(store, "b")) == exact(examples_of(store, "a"))
    assert again == first


def test_csv_keeps_crlf_inside_quoted_values(store: Store, tmp_path: Path) -> None:
    import_file(store, "a", MBPP)
    out = tmp_path / "a.csv"
    export(store, "a", out)
    raw = out.read_bytes()
    assert b'"R = 3\r\nC = 3\r\ndef min_cost(cost, m, n): \r\n' in raw
    codes = [data["code"] for _, data in examples_of(store, "a")]
    assert all("\r\n" in code for code in codes)
    import_file(store, "b", out, store.dataset("a").schema)
    assert [data["code"] for _, data in examples_of(store, "b")] == codes
    assert [type(d["task_id"]) for _, d in examples_of(store, "b")] == [int] * len(codes)


def test_parquet_number_columns_keep_ints_floats_and_mixed(store: Store, tmp_path: Path) -> None:
    schema = Schema({"i": "number", "f": "number", "mixed": "number", "big": "number"})
    rows = [
        {"id": "a", "i": 1, "f": 0.1, "mixed": 1, "big": 2**64},
        {"id": "b", "i": -2, "f": 1e300, "mixed": 2.5, "big": 3},
    ]
    first = store.import_dataset("a", schema, rows).content_hash
    out = tmp_path / "n.parquet"
    export(store, "a", out)
    assert import_file(store, "b", out) == first
    assert exact(examples_of(store, "b")) == exact(examples_of(store, "a"))
    # other tools read numbers as numbers: a mixed column is float64 (pandas sums it), and
    # only a column where an int past 2**53 meets a float is text
    import pyarrow.parquet as pq

    types = {f.name: str(f.type) for f in pq.read_schema(out)}
    assert types == {"id": "string", "i": "int64", "f": "double", "mixed": "double",
                     "big": "string"}  # fmt: skip
    assert pq.read_table(out).column("mixed").to_pylist() == [1.0, 2.5]
    from assay.data.arrowrows import iter_arrow  # a task reads the numbers the store holds

    assert [row["mixed"] for _, row in iter_arrow(out)] == [1, 2.5]
    assert [type(row["mixed"]) for _, row in iter_arrow(out)] == [int, float]


def test_a_foreign_parquet_file_of_dates_and_decimals_is_stored_as_a_task_reads_it(
    store: Store, tmp_path: Path
) -> None:
    """pandas' datetime and decimal128 columns: ISO text and exact decimal text, by the rule
    the task reader follows (the store refused them: "cannot store a Python datetime")."""
    import datetime
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    from assay.data.arrowrows import iter_arrow

    path = tmp_path / "events.parquet"
    amounts = pa.array([Decimal("12345678901234567.89"), Decimal("0.10")], pa.decimal128(38, 2))
    when = [datetime.datetime(2024, 1, 1, 3, 4, 5), datetime.datetime(2024, 1, 2)]
    pq.write_table(pa.table({"id": ["a", "b"], "amount": amounts, "created": when}), path)
    rows = [data for _, data in iter_arrow(path)]
    assert rows[0] == {"id": "a", "amount": "12345678901234567.89",
                       "created": "2024-01-01T03:04:05"}  # fmt: skip
    import_file(store, "events", path)
    assert [data for _, data in examples_of(store, "events")] == [
        {k: v for k, v in row.items() if k != "id"} for row in rows]  # fmt: skip


def test_missing_optional_drivers_name_their_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreError) as caught:
        list(read_rows(tmp_path / "rows.parquet", schema=None, id_field="id"))
    assert caught.value.message == "Parquet needs pyarrow, which is not installed"
    assert caught.value.hint == install_hint("parquet")
    with pytest.raises(StoreError) as caught:
        open_store("postgresql://someone:pw@127.0.0.1/db")
    assert caught.value.message == (
        "the store URL postgresql+psycopg://someone:***@127.0.0.1/db needs the Python module "
        "'psycopg'"
    )
    assert caught.value.hint == install_hint("postgres") + " for PostgreSQL (psycopg 3)"
