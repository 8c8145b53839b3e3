"""The store's Python API on both backends: schema lock, typed rows, versions, hashes, values."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from assay.errors import StoreError
from assay.store import DEFAULT_STORE_URL, Schema, Store, open_store
from assay.store.engine import resolve_url, sqlite_path
from assay.store.values import EMPTY_HASH, combine, example_digest
from assay.store.writes import CHUNK

TYPED = Schema({"text": "string", "score": "number", "ok": "boolean", "meta": "json"})


def good(example_id: str, **changes: Any) -> dict[str, Any]:
    return {"id": example_id, "text": "a", "score": 1, "ok": True, "meta": None, **changes}


def members(store: Store, name: str, version: int) -> list[tuple[str, dict[str, Any]]]:
    examples = list(store.iter_examples(name, version))
    assert [e.position for e in examples] == list(range(len(examples)))
    return [(e.example_id, e.data) for e in examples]


def error_of(call: Any, *args: Any, **kwargs: Any) -> StoreError:
    with pytest.raises(StoreError) as caught:
        call(*args, **kwargs)
    return caught.value


def exact(value: Any) -> str:
    """JSON text that tells 1 from 1.0 and True from 1, and shows key order."""
    return json.dumps(value, ensure_ascii=False)


# --- datasets and the schema lock ------------------------------------------------------


def test_new_dataset_has_no_version_until_the_first_add(store: Store) -> None:
    info = store.create_dataset("d", TYPED)
    assert (info.name, info.current_version, info.item_count, info.id_field) == ("d", 0, 0, "id")
    assert info.content_hash == EMPTY_HASH and info.schema == TYPED and not info.schema_locked
    assert store.versions("d") == []
    assert error_of(store.resolve, "d").message == "dataset 'd' has no versions yet"
    version = store.add("d", [good("r1")])
    assert (version.number, version.item_count, version.added, version.removed) == (1, 1, 1, 0)
    assert version.operation == "add" and version.ref == "d@1"
    assert store.dataset("d").current_version == 1
    assert [d.name for d in store.datasets()] == ["d"]


def test_schema_is_editable_until_the_first_add_then_locked(store: Store) -> None:
    store.create_dataset("d", Schema({"a": "string"}))
    edited = store.set_schema("d", Schema({"a": "string", "b": "number"}))
    assert dict(edited.schema.fields) == {"a": "string", "b": "number"}
    store.add("d", [{"id": "x", "a": "", "b": 0}])
    error = error_of(store.set_schema, "d", Schema({"a": "string"}))
    assert error.message == (
        "the schema of dataset 'd' is locked: examples were added in version 1 (latest 1); "
        "a schema is editable only until the first example is added"
    )
    assert error.hint == "create a new dataset with the new schema and add the examples there"
    store.remove("d", ["x"])
    assert store.dataset("d").item_count == 0
    assert "is locked" in error_of(store.set_schema, "d", Schema({"z": "json"})).message
    assert dict(store.dataset("d").schema.fields) == {"a": "string", "b": "number"}


def test_create_refuses_taken_and_invalid_names_and_an_id_field_in_the_schema(
    store: Store,
) -> None:
    store.create_dataset("d", TYPED)
    assert (
        error_of(store.create_dataset, "d", TYPED).message == "a dataset named 'd' already exists"
    )
    for bad in ("a b", "@x", "-x", "x@1", ""):
        assert error_of(store.create_dataset, bad, TYPED).message.startswith("invalid dataset name")
    error = error_of(store.create_dataset, "e", Schema({"id": "string", "a": "string"}))
    assert error.message.startswith("'id' is the dataset's id field, so the schema cannot declare")
    store.create_dataset("e", Schema({"id": "string"}), id_field="key")
    assert store.dataset("e").id_field == "key"


def test_unknown_dataset_suggests_a_name(store: Store) -> None:
    store.create_dataset("sst2", TYPED)
    error = error_of(store.dataset, "sst")
    assert error.message == "no dataset named 'sst' in the store"
    assert error.hint == "did you mean 'sst2'?"
    assert (
        error_of(store.add, "nope", [good("a")]).message == "no dataset named 'nope' in the store"
    )


# --- typed rows ------------------------------------------------------------------------


R2 = "example 'r2', "
ID_RULE = (
    "field 'id': the id field 'id' must be a non-empty string without control characters, "
    "or an integer; got "
)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (good("r2", score="7"), R2 + "field 'score': expected a number, got a string (\"7\")"),
        (good("r2", score=True), R2 + "field 'score': expected a number, got a boolean (true)"),
        (good("r2", score=float("nan")), R2 + "field 'score': expected a finite number, got nan"),
        (good("r2", text=None), R2 + "field 'text': expected a string, got null"),
        (good("r2", ok="true"), R2 + "field 'ok': expected a boolean, got a string (\"true\")"),
        (
            good("r2", meta={"a": {1, 2}}),
            R2 + "field 'meta': expected a JSON value: .a is a Python set, not JSON",
        ),
        (
            {"id": "r2", "text": "a", "ok": True, "meta": 1},
            R2 + "field 'score': missing field(s) 'score'; every example carries every "
            "schema field (text, score, ok, meta) but a json one, which reads as null when "
            "absent",
        ),
        (
            good("r2", scor=1),
            R2 + "field 'scor': the schema declares no such field (fields: text, score, "
            "ok, meta; id field: id); did you mean 'score'?",
        ),
        (good("", text="x"), ID_RULE + 'a string ("")'),
        (good(True), ID_RULE + "a boolean (true)"),  # type: ignore[arg-type]
    ],
)
def test_type_errors_name_file_line_example_and_field(
    store: Store, row: dict[str, Any], message: str
) -> None:
    store.create_dataset("t", TYPED)
    error = error_of(store.add, "t", [good("r1"), row], origin="data.jsonl")
    assert error.message == "data.jsonl:2: " + message
    assert (error.file, error.line) == ("data.jsonl", 2)
    assert store.dataset("t").current_version == 0  # the good first row was not kept either


def test_an_absent_json_field_reads_as_null(store: Store) -> None:
    store.create_dataset("t", TYPED)
    without = {"id": "r2", "text": "a", "score": 1, "ok": True}  # HumanEval's stop_tokens
    store.add("t", [good("r1", meta=[1]), without])
    assert dict(members(store, "t", 1))["r2"]["meta"] is None


def test_ids_come_from_the_id_field_or_are_generated(store: Store) -> None:
    store.create_dataset("t", Schema({"text": "string"}), id_field="key")
    store.add("t", [{"key": 7, "text": "int id"}, {"text": "no id"}, {"key": "k", "text": "s"}])
    (first, _), (second, data), (third, _) = members(store, "t", 1)
    assert first == "7" and third == "k" and data == {"text": "no id"}
    canonical = json.dumps({"text": "no id"}, sort_keys=True, separators=(",", ":"))
    assert second == hashlib.sha256(canonical.encode()).hexdigest()[:32]  # from the content


def test_a_failing_row_after_several_chunks_leaves_nothing(store: Store) -> None:
    store.create_dataset("t", Schema({"n": "number"}))
    rows = [{"id": f"r{i}", "n": i} for i in range(CHUNK * 2 + 500)]
    rows[-1]["n"] = "oops"
    error = error_of(store.add, "t", iter(rows))
    assert error.message.startswith(f"row {len(rows)}: example 'r{len(rows) - 1}', field 'n'")
    assert store.dataset("t").current_version == 0
    store.add("t", [{"id": "r0", "n": 0}])
    assert members(store, "t", 1) == [("r0", {"n": 0})]


def test_duplicate_ids_in_a_batch_and_ids_already_present(store: Store) -> None:
    store.create_dataset("t", Schema({"n": "number"}))
    error = error_of(store.add, "t", [{"id": "a", "n": 1}, {"id": "a", "n": 2}], origin="f.jsonl")
    assert error.message == (
        "f.jsonl:2: example 'a': the example id appears twice in this batch (first at f.jsonl:1)"
    )
    far = [{"id": f"r{i}", "n": i} for i in range(CHUNK + 10)] + [{"id": "r3", "n": 0}]
    error = error_of(store.add, "t", far)
    assert (
        error.message
        == f"row {CHUNK + 11}: example 'r3': the example id appears twice in this batch"
    )
    store.add("t", [{"id": "a", "n": 1}])
    store.add("t", [{"id": "b", "n": 1}])
    error = error_of(store.add, "t", [{"id": "c", "n": 1}, {"id": "a", "n": 2}], origin="g.csv")
    assert error.message == (
        "g.csv:2: example 'a': already a member of dataset 't' with other content (latest "
        "version 2, added in version 1); ids are unique in a version: remove it first to "
        "replace it"
    )
    assert store.dataset("t").current_version == 2
    error = error_of(store.add, "t", [], origin="empty.jsonl")
    assert error.message == "nothing to add to dataset 't': no examples in empty.jsonl"


def test_remove_reports_ids_and_version_and_refuses_non_members(store: Store) -> None:
    store.create_dataset("t", Schema({"n": "number"}))
    error = error_of(store.remove, "t", ["a"])
    assert error.message == "dataset 't' has no examples yet; nothing was removed"
    store.add("t", [{"id": i, "n": 1} for i in "abcd"])
    result = store.remove("t", ["c", "a", "c"])
    assert result.removed_example_ids == ["c", "a"] and result.version_created == 2
    assert (result.version.item_count, result.version.removed, result.version.added) == (2, 2, 0)
    assert result.version.operation == "remove"
    error = error_of(store.remove, "t", ["b", "a", "zz"])
    assert error.message == (
        "dataset 't' has no example 'a', 'zz' in its latest version (2); nothing was removed"
    )
    assert store.dataset("t").current_version == 2
    assert [i for i, _ in members(store, "t", 2)] == ["b", "d"]
    assert (
        error_of(store.remove, "t", []).message == "no example ids given to remove from dataset 't'"
    )


# --- versions as membership snapshots -------------------------------------------------


def from_scratch(model: list[tuple[str, dict[str, Any]]]) -> str:
    return combine(EMPTY_HASH, add=sum(example_digest(i, d) for i, d in model))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_version_matches_a_model_after_adds_removes_and_readds(
    store: Store, seed: int
) -> None:
    rng = random.Random(seed)
    store.create_dataset("m", Schema({"v": "number", "tag": "string", "extra": "json"}))
    model: dict[str, dict[str, Any]] = {}
    snapshots: list[list[tuple[str, dict[str, Any]]]] = []
    pool = [f"e{i:02d}" for i in range(30)]
    readded = 0
    for step in range(14):
        present = list(model)
        absent = [i for i in pool if i not in model]
        if present and (rng.random() < 0.45 or not absent):
            gone = rng.sample(present, rng.randint(1, min(6, len(present))))
            assert store.remove("m", gone).version_created == step + 1
            for example_id in gone:
                del model[example_id]
        else:
            ids = rng.sample(absent, rng.randint(1, min(7, len(absent))))
            readded += sum(1 for i in ids if any(i in dict(s) for s in snapshots))
            rows = [{"tag": f"{i} at step {step}", "v": rng.choice([step, step + 0.5]),
                     "id": i, "extra": {"z": step, "a": [i]}} for i in ids]  # fmt: skip
            assert store.add("m", rows).number == step + 1
            for row in rows:
                model[row["id"]] = {k: v for k, v in row.items() if k != "id"}
        snapshots.append(list(model.items()))
        for number, expected in enumerate(snapshots, start=1):
            assert exact(members(store, "m", number)) == exact(expected), (step, number)
    assert readded > 0  # the sequence did re-add removed examples, with new data
    found = store.versions("m")
    assert [v.number for v in found] == list(range(1, 15))
    for version, expected in zip(found, snapshots, strict=True):
        assert version.item_count == len(expected)
        assert version.content_hash == from_scratch(expected)
        assert store.resolve("m", version.number) == version
    assert store.resolve("m") == found[-1]


def test_resolve_names_the_versions_that_exist(store: Store) -> None:
    store.create_dataset("d", Schema({"n": "number"}))
    store.add("d", [{"id": "a", "n": 1}])
    assert (
        error_of(store.resolve, "d", 2).message
        == "dataset 'd' has no version 2; its only version is 1"
    )
    store.add("d", [{"id": "b", "n": 1}])
    for bad in (0, 3, -1):
        assert error_of(store.resolve, "d", bad).message == (
            f"dataset 'd' has no version {bad}; its versions are 1 to 2"
        )
    assert error_of(store.iter_examples, "d", 5).message.startswith("dataset 'd' has no version 5")


def test_identical_versions_have_equal_hashes_whatever_their_history(store: Store) -> None:
    rows = {
        i: {"id": i, "label": f"L{i}", "n": n} for i, n in zip("abc", (1, 2.5, -3), strict=True)
    }
    schema = Schema({"label": "string", "n": "number"})
    store.create_dataset("one", schema)
    one = store.add("one", [rows["a"], rows["b"], rows["c"]])
    store.create_dataset("many", schema)
    store.add("many", [rows["c"]])
    store.add("many", [rows["b"], {"id": "x", "label": "tmp", "n": 0}])
    store.remove("many", ["x"])
    store.add("many", [{"label": "La", "n": 1, "id": "a"}])  # other key order, same data
    assert store.resolve("many").content_hash == one.content_hash
    store.remove("many", ["b"])
    back = store.add("many", [rows["b"]])
    assert back.content_hash == one.content_hash and back.item_count == 3
    store.create_dataset("other", schema)
    store.add("other", [rows["a"], rows["c"]])
    for changed in (
        {**rows["b"], "n": 2.6},
        {**rows["b"], "label": "Lb "},
        {**rows["b"], "id": "B"},
    ):
        assert store.add("other", [changed]).content_hash != one.content_hash
        store.remove("other", [changed["id"]])
    assert store.add("other", [rows["b"]]).content_hash == one.content_hash
    store.create_dataset("ints", schema)
    floats = store.add("ints", [{**rows["a"], "n": 1.0}, rows["b"], rows["c"]])
    assert floats.content_hash != one.content_hash  # 1.0 is not 1


# --- exact values ------------------------------------------------------------------------


VALUES: list[dict[str, Any]] = [
    {"id": "zeros", "s": "007", "n": 7, "b": False, "j": {"b": 1, "a": 2, "c": {"z": [], "y": {}}}},
    {"id": "empty", "s": "", "n": 0.0, "b": True, "j": None},
    {"id": "crlf", "s": "line1\r\nline2\rline3\n\ttab", "n": -0.0, "b": True, "j": ["", None]},
    {"id": "nfc", "s": "é ü ñ 中文 🙂", "n": 2**70, "b": False, "j": {"é": "e\u0301"}},
    {"id": "nfd", "s": "e\u0301 u\u0308", "n": 0.1, "b": False, "j": 1.7976931348623157e308},
    {"id": "ctrl", "s": "nul\u0000 bell\u0007 \u2028 \ud7ff", "n": 5e-324, "b": True, "j": "x"},
    {"id": "ü-id ✓", "s": " spaced ", "n": -12345678901234567890, "b": True, "j": [1, 1.0, True]},
]


def test_values_round_trip_exactly(store: Store) -> None:
    store.create_dataset("v", Schema({"s": "string", "n": "number", "b": "boolean", "j": "json"}))
    store.add("v", VALUES)
    expected = [(row["id"], {k: v for k, v in row.items() if k != "id"}) for row in VALUES]
    got = members(store, "v", 1)
    assert exact(got) == exact(expected)
    assert got == expected
    for (_, data), (_, want) in zip(got, expected, strict=True):
        assert [type(v) for v in data.values()] == [type(v) for v in want.values()]
    assert str(got[2][1]["n"]) == "-0.0"
    assert got[3][1]["s"] != got[4][1]["s"]  # no Unicode normalisation


# --- opening a store ---------------------------------------------------------------------


def test_default_url_and_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ASSAY_STORE", raising=False)
    assert DEFAULT_STORE_URL == "sqlite:///.assay/store.db"
    with open_store() as store:
        store.create_dataset("here", Schema({"a": "string"}))
    assert (tmp_path / ".assay" / "store.db").is_file()
    monkeypatch.setenv("ASSAY_STORE", f"sqlite:///{tmp_path / 'elsewhere' / 'other.db'}")
    with open_store() as store:
        assert store.datasets() == []
    with open_store(f"sqlite:///{tmp_path / '.assay' / 'store.db'}") as store:
        assert [d.name for d in store.datasets()] == ["here"]


def test_bad_store_urls(tmp_path: Path) -> None:
    assert error_of(open_store, "nosuchdb://x/y").message.startswith("unknown store backend")
    assert error_of(open_store, "not a url").message.startswith("invalid store URL")
    assert "sqlite:////absolute/path/store.db" in (error_of(open_store, "/tmp/x.db").hint or "")
    error = error_of(open_store, "postgresql://someone:s3cret@127.0.0.1:9/none")
    assert error.message.startswith(
        "cannot open the store at postgresql+psycopg://someone:***@127.0.0.1:9/none:"
    )
    assert "s3cret" not in error.render()


def test_a_relative_sqlite_url_is_made_absolute_keeping_driver_and_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_url("sqlite:///s.db?timeout=3") == f"sqlite:///{tmp_path}/s.db?timeout=3"
    assert resolve_url("sqlite+pysqlite:///s.db") == f"sqlite+pysqlite:///{tmp_path}/s.db"
    assert resolve_url("sqlite:////abs/s.db") == "sqlite:////abs/s.db"
    assert sqlite_path("sqlite:///:memory:") is None and sqlite_path("sqlite://") is None
    assert sqlite_path("postgresql+psycopg://u:p@h/db") is None
    assert sqlite_path("not a url") is None
