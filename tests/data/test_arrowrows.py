"""Parquet and Arrow files in ``dataset.paths`` are read as rows (they failed as "invalid JSON
on line 1"), with the same rows a JSONL file gives, and values JSON cannot hold refused."""

from __future__ import annotations

import datetime
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from assay.data.rows import load_rows
from assay.errors import DatasetError
from tests.cli.test_run import assay, latest
from tests.helpers import write

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
feather = pytest.importorskip("pyarrow.feather")


def generated(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{"id": f"r{i}", "text": f"t{rng.random():.5f} é", "n": rng.randint(-5, 5),
             "x": rng.random(), "ok": rng.random() < 0.5, "tags": ["a", f"b{i}"],
             "meta": {"k": i}} for i in range(rng.randint(1, 40))]  # fmt: skip


def write_all(folder: Path, rows: list[dict[str, Any]]) -> dict[str, Path]:
    table = pa.Table.from_pylist(rows)
    paths = {"parquet": folder / "rows.parquet", "arrow": folder / "rows.arrow",
             "feather": folder / "rows.feather", "jsonl": folder / "rows.jsonl"}  # fmt: skip
    pq.write_table(table, paths["parquet"])
    feather.write_feather(table, paths["feather"])
    with pa.ipc.new_file(paths["arrow"], table.schema) as sink:
        sink.write_table(table)
    write(paths["jsonl"], "".join(json.dumps(r) + "\n" for r in rows))
    return paths


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parquet_and_arrow_give_the_rows_jsonl_gives(tmp_path: Path, seed: int) -> None:
    rows = generated(seed)
    paths = write_all(tmp_path, rows)
    expected = load_rows(inline=None, paths=["rows.jsonl"], base_dir=tmp_path, task_file="t")
    for kind in ("parquet", "arrow", "feather"):
        found = load_rows(inline=None, paths=[paths[kind].name], base_dir=tmp_path,
                          task_file="t")  # fmt: skip
        assert found.items == expected.items, kind
        assert found.origin(len(rows) - 1)[1] == len(rows)  # the row number is its line
        assert found.sources[0].sha256  # hashed like any file


def test_dates_become_text_and_nan_is_refused(tmp_path: Path) -> None:
    table = pa.table({"id": ["a", "b"], "day": [datetime.date(2024, 1, 2), None],
                      "score": [1.0, math.nan]})  # fmt: skip
    pq.write_table(table, tmp_path / "d.parquet")
    with pytest.raises(DatasetError) as caught:
        load_rows(inline=None, paths=["d.parquet"], base_dir=tmp_path, task_file="t")
    assert "row 2, column 'score' holds nan, which is not a JSON value" in caught.value.message
    pq.write_table(table.slice(0, 1), tmp_path / "ok.parquet")
    rows = load_rows(inline=None, paths=["ok.parquet"], base_dir=tmp_path, task_file="t")
    assert rows.items == [{"id": "a", "day": "2024-01-02", "score": 1.0}]


def test_bytes_and_broken_files_are_refused(tmp_path: Path) -> None:
    pq.write_table(pa.table({"id": ["a"], "blob": [b"\x00\x01"]}), tmp_path / "b.parquet")
    with pytest.raises(DatasetError, match="column 'blob' holds bytes data"):
        load_rows(inline=None, paths=["b.parquet"], base_dir=tmp_path, task_file="t")
    write(tmp_path / "bad.parquet", "not parquet")
    with pytest.raises(DatasetError, match=r"bad\.parquet: not a readable Parquet file"):
        load_rows(inline=None, paths=["bad.parquet"], base_dir=tmp_path, task_file="t")


def test_a_task_over_a_parquet_file_runs(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "text": "yes" if i % 2 else "no"} for i in range(4)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "rows.parquet")
    write(
        tmp_path / "t.yaml",
        """\
task_id: pq
description: rows from Parquet
initial_prompt: "${row.text}"
agent: {type: command, command: cat}
dataset: {paths: [rows.parquet]}
success_criteria: [{type: response_match, expected: "${row.text}"}]
""",
    )
    done = assay("run", "t.yaml", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    suite = json.loads((latest(tmp_path) / "default/pq/suite.json").read_text())
    assert suite["rows_passed"] == 4 and suite["dataset"]["files"][0]["path"] == "rows.parquet"
