"""Store versions are what they say: content already present is never added twice, the same
content hash selects the same rows, and `assay dataset diff` shows what changed by id."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from assay.errors import StoreError
from assay.orchestration.loading.task_loader import load_task
from assay.orchestration.planning.expand import Selectors, expand_dataset
from assay.store import Schema, Store, read_rows
from tests.helpers import write
from tests.store.test_cli import Cli

SCHEMA = Schema({"text": "string", "label": "string"})


def rows(count: int, *, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{"text": f"text {i} {rng.random():.6f}", "label": rng.choice("abc")}
            for i in range(count)]  # fmt: skip


def ids(store: Store, name: str, version: int) -> list[str]:
    return [e.example_id for e in store.iter_examples(name, version)]


@pytest.mark.parametrize("with_ids", [False, True])
def test_adding_the_same_batch_again_is_a_no_op_that_says_so(store: Store, with_ids: bool) -> None:
    """The issue's example: an id-less file added twice made a version with every row twice."""
    batch = rows(30)
    if with_ids:
        batch = [{"id": f"r{i}", **row} for i, row in enumerate(batch)]
    store.create_dataset("d", SCHEMA)
    first = store.add("d", batch)
    again = store.add("d", batch)
    assert (again.created, again.unchanged, again.number) == (False, 30, first.number)
    assert again.content_hash == first.content_hash
    assert store.dataset("d").current_version == 1 and store.dataset("d").item_count == 30
    more = store.add("d", batch + rows(5, seed=9))  # a superset: only the new rows are added
    assert (more.created, more.added, more.unchanged, more.item_count) == (True, 5, 30, 35)
    assert len(set(ids(store, "d", more.number))) == 35


def test_identical_id_less_rows_in_one_file_are_kept_and_re_adding_finds_them(
    store: Store,
) -> None:
    store.create_dataset("d", SCHEMA)
    twice = [{"text": "same", "label": "a"}, {"text": "same", "label": "a"}]
    store.add("d", twice)
    made = ids(store, "d", 1)
    assert len(made) == 2 and made[1] == f"{made[0]}-2"
    assert store.add("d", twice).created is False


def test_same_id_other_content_is_refused(store: Store) -> None:
    store.create_dataset("d", SCHEMA)
    store.add("d", [{"id": "a", "text": "x", "label": "a"}])
    with pytest.raises(StoreError, match="already a member of dataset 'd' with other content"):
        store.add("d", [{"id": "a", "text": "y", "label": "a"}])


def test_re_adding_a_file_of_every_format(store: Store, tmp_path: Path) -> None:
    """The same file (JSONL, CSV, Parquet) twice: no second version."""
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    batch = rows(12)
    files = {
        "rows.jsonl": "".join(json.dumps(r) + "\n" for r in batch),
        "rows.csv": "text,label\n" + "".join(f"{r['text']},{r['label']}\n" for r in batch),
    }
    for name, text in files.items():
        write(tmp_path / name, text)
    pq.write_table(pa.Table.from_pylist(batch), tmp_path / "rows.parquet")
    for name in (*files, "rows.parquet"):
        dataset = name.replace(".", "_")
        store.create_dataset(dataset, SCHEMA)
        path = tmp_path / name
        first = store.add(dataset, read_rows(path, schema=SCHEMA, id_field="id", display=name))
        again = store.add(dataset, read_rows(path, schema=SCHEMA, id_field="id", display=name))
        assert (first.added, again.created, again.unchanged) == (12, False, 12), name


TASK = """\
task_id: t
description: d
initial_prompt: "${{row.text}}"
agent: {{type: command, command: cat}}
dataset: {{store: d, version: {version}, stratify_field: label{extra}}}
success_criteria: [{{type: response_match, expected: x}}]
"""


def selected(tmp_path: Path, url: str, version: int, **kw: Any) -> list[str]:
    extra = "".join(f", {k}: {v}" for k, v in kw.items() if k != "sample")
    path = write(tmp_path / "t.yaml", TASK.format(version=version, extra=extra))
    expansion = expand_dataset(load_task(path), Selectors(sample=kw.get("sample")), store_url=url)
    return sorted(t.row_id or "" for t in expansion.row_tasks)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_same_content_hash_selects_the_same_rows(
    store: Store, store_url: str, tmp_path: Path, seed: int
) -> None:
    """Two versions with one content hash but their rows in another order (removed and added
    again) select the same rows, by --sample and by a seeded stratified draw."""
    rng = random.Random(seed)
    batch = [{"id": f"r{i:02d}", **row} for i, row in enumerate(rows(40, seed=seed))]
    store.create_dataset("d", SCHEMA)
    v1 = store.add("d", batch)
    moved = rng.sample([r["id"] for r in batch], 15)
    store.remove("d", moved)
    v3 = store.add("d", [r for r in batch if r["id"] in moved][::-1])
    assert v3.content_hash == v1.content_hash
    assert ids(store, "d", 1) != ids(store, "d", 3)  # the order differs
    for options in ({"sample": 7}, {"sample_per_stratum": 3, "sample_seed": seed}):
        first = selected(tmp_path, store_url, 1, **options)
        third = selected(tmp_path, store_url, 3, **options)
        assert first == third, options
        assert len(first) in (7, 9)


def test_diff_names_added_removed_and_changed_ids(store: Store) -> None:
    store.create_dataset("d", SCHEMA)
    store.add("d", [{"id": i, "text": i, "label": "a"} for i in ("a", "b", "c", "d")])
    store.remove("d", ["b", "c"])
    store.add("d", [{"id": "c", "text": "c", "label": "b"}, {"id": "e", "text": "e", "label": "a"}])
    found = store.diff("d", 1, "d", None)
    assert (found.a.number, found.b.number) == (1, 3)
    assert found.added == ["e"] and found.removed == ["b"]
    assert found.changed == {"c": ["label"]} and found.unchanged == 2
    assert store.diff("d", 2, "d", 2).same


def test_diff_matches_a_model_over_random_histories(store: Store) -> None:
    rng = random.Random(5)
    store.create_dataset("d", SCHEMA)
    model: dict[str, dict[str, str]] = {}
    snapshots = []
    for step in range(8):
        if model and rng.random() < 0.4:
            gone = rng.sample(sorted(model), rng.randint(1, len(model)))
            store.remove("d", gone)
            for key in gone:
                del model[key]
        else:
            new = {f"{rng.choice('xyzé')}{rng.randint(0, 30)}": {"text": str(step), "label": "a"}
                   for _ in range(5)}  # fmt: skip
            new = {k: v for k, v in new.items() if k not in model}
            if not new:
                continue
            store.add("d", [{"id": k, **v} for k, v in new.items()])
            model.update(new)
        snapshots.append(dict(model))
    versions = store.versions("d")
    for i, a in enumerate(versions):
        for b in versions[i:]:
            found = store.diff("d", a.number, "d", b.number)
            left, right = snapshots[a.number - 1], snapshots[b.number - 1]
            assert set(found.added) == set(right) - set(left)
            assert set(found.removed) == set(left) - set(right)
            both = set(left) & set(right)
            assert set(found.changed) == {k for k in both if left[k] != right[k]}
            assert found.unchanged == sum(1 for k in both if left[k] == right[k])


def test_dataset_add_and_diff_on_the_command_line(tmp_path: Path, store_url: str) -> None:
    cli = Cli(tmp_path, store_url)
    batch = [{"id": f"r{i}", "text": f"t{i}", "label": "a"} for i in range(3)]
    write(tmp_path / "schema.yaml", "fields: {text: string, label: string}\n")
    write(tmp_path / "a.jsonl", "".join(json.dumps(r) + "\n" for r in batch))
    cli.ok("create", "d", "--schema", "schema.yaml")
    cli.ok("add", "d", "a.jsonl")
    again = cli.ok("add", "d", "a.jsonl")
    assert again.startswith("nothing added: all 3 example(s) are already in d@1")
    assert "no new version" in again
    changed = [{**batch[0], "label": "b"}, *batch[1:], {"id": "r9", "text": "t9", "label": "a"}]
    write(tmp_path / "b.jsonl", json.dumps(changed[-1]) + "\n")
    added = cli.ok("add", "d", "a.jsonl", "b.jsonl")
    assert added.startswith("added 1 example(s) (3 already present with the same content")
    cli.ok("remove", "d", "r0")
    write(tmp_path / "c.jsonl", json.dumps(changed[0]) + "\n")
    cli.ok("add", "d", "c.jsonl")
    shown = cli.ok("diff", "d@1", "d")
    assert "d@1 (hash" in shown and "→ d@4 (hash" in shown
    assert "1 added, 0 removed, 1 changed, 2 unchanged" in shown
    assert "  added    r9" in shown and "  changed  r0 (label)" in shown
    data = cli.json("diff", "d@1", "d@4")
    assert data["changed"] == {"r0": ["label"]} and data["added"] == ["r9"]
    assert "no version 7" in cli.refused("diff", "d@1", "d@7")
