"""The dataset re-check a row at a time (report, evaluate) against the run's own expansion of
the dataset (the oracle: how a resumed run reads it), on generated edits of each kind of
source: rows changed, removed, added, reordered; unselected rows changed."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from assay.data.hashing import row_hash
from assay.errors import DatasetError
from assay.orchestration.loading.datastream import stream_drift, streamable
from assay.orchestration.loading.task_loader import load_task
from assay.orchestration.planning.datacheck import _expanded_drift
from assay.results.plan_record import PlannedTaskRecord
from assay.results.recorded_rows import recorded_rows
from assay.results.suite import SelectionRecord
from tests.cli.test_data_changes import TASK
from tests.helpers import write


def render(source: str, rows: list[dict[str, Any]]) -> tuple[str, str | None, str]:
    """(dataset block, file name, file text) of ``rows`` in ``source``."""
    if source == "inline":
        return "  rows:\n" + "".join(f"    - {json.dumps(r)}\n" for r in rows), None, ""
    if source == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=["id", "text", "label"])
        writer.writeheader()
        writer.writerows(rows)
        return "  paths: [rows.csv]", "rows.csv", out.getvalue()
    return "  paths: [rows.jsonl]", "rows.jsonl", "".join(json.dumps(r) + "\n" for r in rows)


def task_file(folder: Path, source: str, rows: list[dict[str, Any]]) -> Path:
    block, name, text = render(source, rows)
    if name is not None:
        write(folder / name, text)
    return write(folder / "task.yaml", TASK.format(dataset=block))


def make_rows(count: int) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "text": f"text {i}", "label": "yes" if i % 2 else "no"}
            for i in range(count)]  # fmt: skip


def edit(rows: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """Change, remove, add and reorder rows at random."""
    rng = random.Random(seed)
    out = []
    for row in rows:
        roll = rng.random()
        if roll < 0.1:
            continue  # removed
        if roll < 0.2:
            row = {**row, "text": row["text"] + " (edited)"}
        out.append(row)
    out += [{"id": f"new{i}", "text": "added", "label": "no"} for i in range(rng.randrange(4))]
    rng.shuffle(out)
    return out


@pytest.mark.parametrize("source", ["jsonl", "csv", "inline"])
@pytest.mark.parametrize("seed", range(4))
def test_the_row_at_a_time_check_agrees_with_the_expansion(
    tmp_path: Path, source: str, seed: int
) -> None:
    rows = make_rows(60)
    loaded = load_task(task_file(tmp_path, source, rows))
    selected = random.Random(seed).sample(range(len(rows)), 40)  # some rows not selected
    recorded = [(f"r{i}", row_hash(load_rows_now(loaded)[i])) for i in sorted(selected)]
    (tmp_path / "selection.jsonl").write_text(
        "".join(
            json.dumps({"task_id": "drift", "row_id": r, "row_hash": h}) + "\n" for r, h in recorded
        )
    )
    selection = SelectionRecord(rows_in_dataset=60, rows_selected=40, rows_file="selection.jsonl")
    index = recorded_rows(tmp_path, {"drift": selection})["drift"]
    now = load_task(task_file(tmp_path, source, edit(rows, seed)))
    assert streamable(now)
    changed, removed = stream_drift(now, index)
    planned = PlannedTaskRecord(task_id="drift", file=str(tmp_path / "task.yaml"))
    assert (sorted(changed), removed) == (sorted(_expanded_drift(now, planned, index)[0]),
                                          _expanded_drift(now, planned, index)[1])  # fmt: skip
    assert changed or removed  # the edit touched selected rows (the seeds are chosen so)
    unchanged = load_task(task_file(tmp_path, source, rows))
    assert stream_drift(unchanged, index) == ([], [])


def load_rows_now(loaded: Any) -> list[dict[str, Any]]:
    from assay.orchestration.planning.expand import read_dataset

    return list(read_dataset(loaded).items)


def test_a_recorded_row_whose_id_is_now_used_twice_cannot_be_checked(tmp_path: Path) -> None:
    rows = make_rows(3)
    loaded = load_task(task_file(tmp_path, "jsonl", rows))
    (tmp_path / "selection.jsonl").write_text(
        "".join(
            json.dumps({"task_id": "drift", "row_id": r["id"], "row_hash": row_hash(r)}) + "\n"
            for r in load_rows_now(loaded)
        )
    )
    index = recorded_rows(
        tmp_path,
        {"drift": SelectionRecord(rows_in_dataset=3, rows_selected=3, rows_file="selection.jsonl")},
    )["drift"]
    now = load_task(task_file(tmp_path, "jsonl", [*rows, rows[1]]))
    with pytest.raises(DatasetError, match="Duplicate dataset row id for task 'drift': 'r1'"):
        stream_drift(now, index)
