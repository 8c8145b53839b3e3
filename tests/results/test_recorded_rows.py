"""The compact index of a run's recorded rows against a dictionary of the same lines (the
oracle): every lookup agrees, including the cases that fall back to the exact dictionary
(ids that share a key, a hash of another form, runs written before the file) and the ones
that are a damaged run folder."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.results import recorded_rows as module
from assay.results.recorded_rows import RecordedRows, id_key, recorded_rows
from assay.results.suite import SelectionRecord


def listed(folder: Path, lines: list[tuple[str, str, str]]) -> Path:
    """A run folder whose selection.jsonl lists ``(task, row, hash)``."""
    text = "".join(json.dumps({"task_id": t, "row_id": r, "row_hash": h}) + "\n"
                   for t, r, h in lines)  # fmt: skip
    (folder / "selection.jsonl").write_text(text, encoding="utf-8")
    return folder


def in_file(count: int) -> SelectionRecord:
    return SelectionRecord(rows_in_dataset=count, rows_selected=count, rows_file="selection.jsonl")


def sample(seed: int, count: int) -> dict[str, str]:
    """``count`` row ids (of varied forms, unicode among them) → 16-hex-digit hashes."""
    rng = random.Random(seed)
    ids = {f"{rng.choice(['r', 'row-', 'é', 'x.'])}{rng.randrange(10**9)}" for _ in range(count)}
    return {row_id: f"{rng.getrandbits(64):016x}" for row_id in ids}


def check_against(rows: RecordedRows, oracle: dict[str, str], absent: list[str]) -> None:
    assert len(rows) == len(oracle)
    positions = [rows.position(row_id) for row_id in oracle]
    assert sorted(p for p in positions if p is not None) == list(range(len(oracle)))
    for row_id, row_hash in oracle.items():
        assert rows.get(row_id) == (row_hash or None)
    for row_id in absent:
        assert rows.position(row_id) is None and rows.get(row_id) is None
    wanted = positions[::3]
    assert rows.ids_at(p for p in wanted if p is not None) == list(oracle)[::3]


@pytest.mark.parametrize("seed", range(3))
def test_lookups_agree_with_a_dictionary_of_the_same_lines(tmp_path: Path, seed: int) -> None:
    a, b = sample(seed, 2000), sample(seed + 100, 500)
    lines = [("a", r, h) for r, h in a.items()] + [("b", r, h) for r, h in b.items()]
    random.Random(seed).shuffle(lines)  # two tasks' lines interleaved
    found = recorded_rows(listed(tmp_path, lines), {"a": in_file(len(a)), "b": in_file(len(b))})
    assert found["a"].keys is not None  # compact, not the dictionary
    a_order = {r: h for t, r, h in lines if t == "a"}
    check_against(found["a"], a_order, absent=[*list(b)[:50], "", "r0"])
    check_against(found["b"], {r: h for t, r, h in lines if t == "b"}, absent=list(a)[:50])
    assert found["a"].hashed and found["b"].hashed


def test_ids_that_share_a_key_fall_back_to_the_exact_dictionary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "id_key", lambda row_id: len(row_id))  # keys collide a lot
    oracle = sample(7, 300)
    run_dir = listed(tmp_path, [("t", r, h) for r, h in oracle.items()])
    rows = recorded_rows(run_dir, {"t": in_file(len(oracle))})["t"]
    assert rows.keys is None
    check_against(rows, oracle, absent=["zz", "r"])


def test_a_hash_of_another_form_or_none_is_kept_exactly(tmp_path: Path) -> None:
    oracle = {"a": "0123456789abcdef", "b": "sha256:00ff", "c": ""}
    run_dir = listed(tmp_path, [("t", r, h) for r, h in oracle.items()])
    rows = recorded_rows(run_dir, {"t": in_file(3)})["t"]
    assert rows.keys is None
    check_against(rows, oracle, absent=["d"])
    unhashed = {"a": "", "b": ""}  # a run recorded before row hashes
    rows = recorded_rows(listed(tmp_path, [("t", r, h) for r, h in unhashed.items()]),
                         {"t": in_file(2)})["t"]  # fmt: skip
    assert rows.keys is not None and not rows.hashed
    check_against(rows, unhashed, absent=[])


def test_a_run_that_lists_its_rows_inline_is_read_from_its_selection(tmp_path: Path) -> None:
    oracle = sample(3, 40)
    inline = SelectionRecord(rows_in_dataset=40, rows_selected=40, row_ids=list(oracle),
                             row_hashes=oracle)  # fmt: skip
    rows = recorded_rows(tmp_path, {"t": inline})["t"]  # no selection.jsonl at all
    check_against(rows, oracle, absent=["nope"])


def test_a_damaged_list_is_a_clear_error(tmp_path: Path) -> None:
    oracle = sample(5, 20)
    lines = [("t", r, h) for r, h in oracle.items()]
    with pytest.raises(UsageError, match=r"lists 20 row\(s\) of task 't', but the run "
                       r"selected 21: the run folder is damaged"):  # fmt: skip
        recorded_rows(listed(tmp_path, lines), {"t": in_file(21)})
    twice = [*lines[:-1], lines[0]]
    with pytest.raises(UsageError, match=f"lists row '{lines[0][1]}' twice") as caught:
        recorded_rows(listed(tmp_path, twice), {"t": in_file(20)})
    assert caught.value.file is not None and str(caught.value.file).endswith("selection.jsonl")


def test_the_key_is_a_stable_64_bit_digest() -> None:
    import hashlib

    assert id_key("r1") == int.from_bytes(hashlib.blake2b(b"r1", digest_size=8).digest(), "little")
    assert 0 <= id_key("é" * 200) < 2**64
