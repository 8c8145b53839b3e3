"""Judges as versioned assets in the store (both backends): versions by content hash, a
changed rubric is a new version, lookups and their messages, calibrations found by hash, and
a store written before judges existed gaining their tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from assay.errors import StoreError, TaskFileError
from assay.judges.assets import JudgeResolver, load_judge_file
from assay.spec.judge import JudgeDefinition
from assay.store import Store, open_store
from assay.store.tables import STORE_SCHEMA_VERSION
from tests.helpers import write

JUDGE = """\
name: helpful
description: is it helpful?
model: mock/judge.yaml
rubric: |
  Question: ${row.question}
  Is the answer helpful?
verdict: {kind: binary}
"""


def _definition(path: Path) -> tuple[dict[str, object], str]:
    loaded = load_judge_file(path)
    return loaded.model_dump(mode="json", exclude_defaults=True), loaded.content_hash()


def test_a_changed_rubric_is_a_new_version_and_the_same_content_is_not(
    store: Store, tmp_path: Path
) -> None:
    first = write(tmp_path / "helpful.yaml", JUDGE)
    v1, created = store.add_judge("helpful", *_definition(first), origin=str(first))
    assert (v1.ref, created) == ("helpful@1", True)
    again, created = store.add_judge("helpful", *_definition(first))
    assert (again.ref, created) == ("helpful@1", False)
    described = write(tmp_path / "d.yaml", JUDGE.replace("is it helpful?", "other words"))
    same, created = store.add_judge("helpful", *_definition(described))
    assert (same.ref, created) == ("helpful@1", False)  # a description cannot change a verdict
    changed = write(tmp_path / "c.yaml", JUDGE.replace("helpful?\n", "helpful and kind?\n"))
    v2, created = store.add_judge("helpful", *_definition(changed))
    assert (v2.ref, created) == ("helpful@2", True)
    assert v2.content_hash != v1.content_hash
    assert [r.version for r in store.judge_versions("helpful")] == [1, 2]
    assert store.judge("helpful").version == 2
    assert store.judge("helpful", 1).content_hash == v1.content_hash
    assert [r.ref for r in store.judges()] == ["helpful@2"]
    assert store.judge("helpful", 1).origin == str(first)


def test_unknown_judges_and_versions_are_named(store: Store, tmp_path: Path) -> None:
    store.add_judge("helpful", *_definition(write(tmp_path / "h.yaml", JUDGE)))
    with pytest.raises(StoreError) as caught:
        store.judge("helpfull")
    assert caught.value.message == "no judge named 'helpfull' in the store"
    assert caught.value.hint == "did you mean 'helpful'?"
    with pytest.raises(StoreError) as caught:
        store.judge("helpful", 3)
    assert caught.value.message == "judge 'helpful' has no version 3 (versions 1 to 1)"
    with pytest.raises(StoreError, match="invalid judge name"):
        store.add_judge("-bad", {}, "0" * 64)


def test_calibrations_are_found_by_content_hash(store: Store) -> None:
    record = {"judge_name": "helpful", "judge_version": 1, "judge_hash": "a" * 64,
              "dataset": "labels", "dataset_version": 2, "dataset_hash": "b" * 64,
              "label_field": "human"}  # fmt: skip
    first = store.add_calibration(record, {"rows_compared": 10})
    second = store.add_calibration(record, {"rows_compared": 12})
    other = store.add_calibration({**record, "judge_hash": "c" * 64}, {"rows_compared": 1})
    found = store.calibrations(judge_hash="a" * 64)
    assert [c.calibration_id for c in found] == [second.calibration_id, first.calibration_id]
    assert found[0].report == {"rows_compared": 12} and found[0].dataset_version == 2
    assert [c.calibration_id for c in store.calibrations(judge_hash="c" * 64)] == [
        other.calibration_id
    ]


def test_a_resolver_pins_store_versions_and_reads_calibrations(
    store_url: str, tmp_path: Path
) -> None:
    with open_store(store_url) as store:
        path = write(tmp_path / "h.yaml", JUDGE)
        v1, _ = store.add_judge("helpful", *_definition(path), origin=str(path.resolve()))
        store.add_judge("helpful", *_definition(write(tmp_path / "h2.yaml",
                                                      JUDGE + "samples: 3\n")))  # fmt: skip
        store.add_calibration({"judge_name": "helpful", "judge_version": 1,
                               "judge_hash": v1.content_hash, "dataset": "labels",
                               "dataset_version": 1, "dataset_hash": "0" * 64,
                               "label_field": "human"},
                              {"rows_compared": 40, "agreement": {"value": 0.8},
                               "binary_counts": {"tp": 18, "positives": 20, "tn": 14,
                                                 "negatives": 20}})  # fmt: skip
    resolver = JudgeResolver(store_url, {"helpful": 1})
    try:
        asset = resolver.store_asset("helpful", None, base_dir=tmp_path)
    finally:
        resolver.close()
    assert (asset.name, asset.version, asset.source) == ("helpful", 1, "store:helpful@1")
    assert asset.content_hash == v1.content_hash
    assert asset.base_dir == str(tmp_path.resolve())  # next to the file it was added from
    assert asset.calibration is not None
    assert (asset.calibration.tp, asset.calibration.negatives) == (18, 20)
    assert asset.calibration.agreement == 0.8


def test_judge_files_are_checked_with_file_line_and_field(tmp_path: Path) -> None:
    cases = {
        "missing": (None, "judge file not found"),
        "field": (JUDGE + "rubrik: x\n", "unknown field 'rubrik'"),
        "kind": (JUDGE.replace("kind: binary", "kind: scale"),
                 "kind: scale needs min and max (e.g. min: 1, max: 5)"),
        "labels": (JUDGE.replace("{kind: binary}", "{kind: labels, labels: [a]}"),
                   "kind: labels needs at least two labels"),
        "example": (JUDGE + "few_shot: [{response: r, verdict: maybe}]\n",
                    "few_shot[0].verdict: 'maybe' is not true or false"),
        "row": (JUDGE + "few_shot:\n  - {response: r, verdict: true, row: {q: 1}}\n",
                "the rubric uses ${row.question}, which this example's row lacks"),
        "model": (JUDGE.replace("mock/judge.yaml", "smollm2"),
                  "model 'smollm2' must be named provider/name, e.g. local/smollm2, "
                  "openai/gpt-4o-mini, mock/judge.yaml"),
    }  # fmt: skip
    for name, (content, message) in cases.items():
        path = tmp_path / f"{name}.yaml"
        if content is not None:
            write(path, content)
        with pytest.raises(TaskFileError) as caught:
            load_judge_file(path)
        assert caught.value.message == message, name
        assert caught.value.file == str(path)
    with pytest.raises(TaskFileError) as caught:
        load_judge_file(write(tmp_path / "f.yaml", JUDGE + "rubrik: x\n"))
    assert (caught.value.line, caught.value.field) == (8, "rubrik")
    assert caught.value.hint == "did you mean 'rubric'?"


def test_the_content_hash_covers_what_changes_a_verdict() -> None:
    base = JudgeDefinition(model="mock/j", rubric="r")
    assert base.content_hash() == JudgeDefinition(model="mock/j", rubric="r",
                                                  description="d", retries=5,
                                                  request_timeout=3).content_hash()  # fmt: skip
    for change in ({"rubric": "r2"}, {"model": "mock/k"}, {"temperature": 0.5},
                   {"samples": 3}, {"max_tokens": 100}, {"system_prompt": "s"},
                   {"verdict": {"kind": "labels", "labels": ["a", "b"], "pass_labels": ["a"]}},
                   {"few_shot": [{"response": "x", "verdict": True}]}):  # fmt: skip
        changed = JudgeDefinition.model_validate({"model": "mock/j", "rubric": "r", **change})
        assert changed.content_hash() != base.content_hash(), change
    assert len(base.content_hash()) == 64


def test_a_store_from_before_judges_gains_their_tables(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    open_store(url).close()
    engine = create_engine(url)
    with engine.begin() as connection:  # make it look like a version-1 store
        connection.execute(text("DROP TABLE judges"))
        connection.execute(text("DROP TABLE calibrations"))
        connection.execute(text("UPDATE store_meta SET value = '1' WHERE key = 'schema_version'"))
    with open_store(url) as store:
        assert store.judges() == []
    with engine.connect() as connection:
        version = connection.execute(
            text("SELECT value FROM store_meta WHERE key = 'schema_version'")
        ).scalar_one()
    engine.dispose()
    assert int(version) == STORE_SCHEMA_VERSION == 2
