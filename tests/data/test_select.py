"""Row selection: --split, --sample (Coder Eval's fixed-seed draw), stratified sampling."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.data.select import (
    SAMPLE_SEED,
    Selection,
    SelectionRequest,
    select_rows,
    split_label,
    stratified,
)
from assay.errors import SelectionError, UserError

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]
CLINC_COUNTS = {
    "travel_notification": 12,
    "plug_type": 12,
    "oos": 12,
    "confirm_reservation": 8,
    "weather": 5,
    "routing": 3,
    "freeze_account": 2,
}


def clinc() -> list[dict[str, Any]]:
    """54 real CLINC150 rows, grouped by ``label``, with ``split`` train or oos_train."""
    path = FIXTURES / "clinc150_subset.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def select(rows: Sequence[dict[str, Any]], task_id: str = "clinc", **request: Any) -> Selection:
    return select_rows(rows, SelectionRequest(**request), task_id=task_id)


def by_label(**request: Any) -> Selection:
    return select(clinc(), stratify_field="label", **request)


def label_counts(rows: list[dict[str, Any]], indexes: list[int]) -> Counter[str]:
    return Counter(rows[i]["label"] for i in indexes)


def test_the_fixture_is_as_described() -> None:
    rows = clinc()
    assert len(rows) == 54
    assert Counter(row["label"] for row in rows) == CLINC_COUNTS
    assert {row["split"] for row in rows} == {"train", "oos_train"}
    assert all(row["split"] == "oos_train" for row in rows if row["label"] == "oos")


# --- no selector ----------------------------------------------------------------------------


def test_no_selector_keeps_every_row() -> None:
    rows = clinc()
    selection = select(rows)
    assert selection == Selection(list(range(54)), [], 54, None, False, [])


def test_empty_dataset_selects_nothing() -> None:
    assert select([], sample=3, split=None).indexes == []
    assert select([], sample_per_stratum=2, sample_seed=1).indexes == []


# --- --sample -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 10, 27, 53])
def test_sample_picks_the_rows_of_random_0_sample(n: int) -> None:
    rows = clinc()
    position = {id(row): index for index, row in enumerate(rows)}
    expected = [position[id(row)] for row in random.Random(0).sample(rows, n)]
    selection = select(rows, sample=n)
    assert SAMPLE_SEED == 0
    assert selection.indexes == sorted(expected)  # the same rows, in dataset order
    assert selection.applied == [f"--sample {n}"]
    assert selection.rows_in_dataset == 54
    assert selection.stratified_seed is None
    assert selection.seed_was_drawn is False


@pytest.mark.parametrize(("n", "warned"), [(54, False), (55, True), (5000, True)])
def test_a_sample_larger_than_the_dataset_runs_every_row_and_says_so(n: int, warned: bool) -> None:
    """Found by a break-test: `--sample 5000` on 872 rows ran them all without a word."""
    selection = select(clinc(), sample=n)
    assert len(selection.indexes) == 54 and selection.applied == []
    said = [w for w in selection.warnings if "--sample" in w]
    assert said == ([f"clinc: --sample {n} is more than the 54 row(s) there are to draw from, "
                     "so every one runs"] if warned else [])  # fmt: skip


def test_sample_golden_rows() -> None:
    # The rows Coder Eval's expand_dataset(max_rows=10) keeps for this file (checked with it).
    assert select(clinc(), sample=10).indexes == [2, 16, 19, 24, 25, 26, 30, 31, 32, 48]


# Recorded draws: --sample 7 is sorted(random.Random(0).sample(range(54), 7)) (Coder Eval's);
# the stratified one is what reference_stratified (below) keeps with seed 42.
SAMPLE_7 = [2, 16, 24, 26, 31, 32, 48]
PER_STRATUM_3_SEED_42 = [0, 1, 10, 12, 13, 14, 15, 16, 20, 21, 28, 30, 32, 34, 37, 39, 41, 42,
                         48, 52]  # fmt: skip
DRAW_IN_A_NEW_PROCESS = (
    "import json; from tests.data.test_select import by_label, clinc, select; "
    "print(json.dumps([select(clinc(), sample=7).indexes, "
    "by_label(sample_per_stratum=3, sample_seed=42).indexes]))"
)


def test_the_recorded_draws_are_the_specified_ones() -> None:
    assert sorted(random.Random(0).sample(range(54), 7)) == SAMPLE_7
    kept = reference_stratified(clinc(), "label", 3, 42)
    assert sorted(clinc().index(row) for row in kept) == PER_STRATUM_3_SEED_42


@pytest.mark.parametrize("hash_seed", ["0", "1", "random"])
def test_sample_is_the_same_every_run(hash_seed: str) -> None:
    """Each run is a new process: the draws may not depend on anything that differs between
    processes (string hashing, the global random state, the time)."""
    done = subprocess.run(
        [sys.executable, "-c", DRAW_IN_A_NEW_PROCESS], cwd=REPO, capture_output=True, text=True,
        env={**os.environ, "PYTHONHASHSEED": hash_seed}, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [SAMPLE_7, PER_STRATUM_3_SEED_42]


@pytest.mark.parametrize("n", [54, 55, 1000])
def test_sample_at_least_the_size_keeps_all_and_records_nothing(n: int) -> None:
    selection = select(clinc(), sample=n)
    assert selection.indexes == list(range(54))
    assert selection.applied == []


def test_sample_wins_over_both_stratified_sources() -> None:
    alone = by_label(sample=6)
    both = by_label(sample=6, sample_per_stratum=1, yaml_sample_per_stratum=2, sample_seed=5)
    assert both.indexes == alone.indexes
    assert both.applied == ["--sample 6"]
    assert both.stratified_seed is None
    assert both.seed_was_drawn is False
    assert both.warnings == [
        "task 'clinc': --sample 6 draws with the fixed seed 0, so the stratified sample "
        "(sample_per_stratum) and dataset.sample_seed 5 does not apply"
    ]
    assert alone.warnings == []


def test_sample_at_least_the_size_still_disables_stratified_sampling() -> None:
    # Coder Eval: `elif max_rows is None and n_per_stratum is not None` — a --sample that
    # keeps everything does not hand over to the stratified sampler.
    selection = by_label(sample=100, sample_per_stratum=1, yaml_sample_per_stratum=1)
    assert selection.indexes == list(range(54))
    assert selection.applied == []
    assert selection.stratified_seed is None


def test_sample_draws_from_the_rows_the_split_kept() -> None:
    rows = clinc()
    train = [i for i, row in enumerate(rows) if row["split"] == "train"]
    expected = sorted(random.Random(0).sample(train, 5))
    selection = select(rows, split="train", sample=5)
    assert selection.indexes == expected
    assert selection.applied == ["--split train", "--sample 5"]


# --- stratified -------------------------------------------------------------------------------


def test_stratified_keeps_up_to_n_per_stratum_and_small_strata_whole() -> None:
    rows = clinc()
    selection = by_label(sample_per_stratum=4, sample_seed=0)
    assert label_counts(rows, selection.indexes) == {
        label: min(4, size) for label, size in CLINC_COUNTS.items()
    }
    routing = [i for i, row in enumerate(rows) if row["label"] in ("routing", "freeze_account")]
    assert set(routing) <= set(selection.indexes)  # strata of 3 and 2 rows are taken whole
    assert selection.indexes == sorted(selection.indexes)
    assert selection.applied == ["--sample-per-stratum 4"]


@pytest.mark.parametrize(
    ("seed", "expected"),
    [
        # What Coder Eval's _stratified_sample(rows, "label", 4, seed) keeps (checked with it).
        (0, [0, 4, 6, 11, 12, 13, 14, 15, 16, 21, 23, 24, 25, 30, 31, 33, 36, 37, 38, 40, 41,
             43, 46, 50, 51]),
        (1, [1, 2, 4, 9, 12, 13, 14, 15, 16, 18, 24, 26, 27, 29, 30, 35, 36, 37, 38, 39, 40,
             42, 46, 49, 51]),
        (7, [0, 2, 5, 6, 12, 13, 14, 15, 16, 18, 22, 25, 28, 29, 30, 33, 36, 37, 38, 40, 41,
             43, 45, 48, 50]),
    ],
)  # fmt: skip
def test_seeded_stratified_draw_matches_coder_eval(seed: int, expected: list[int]) -> None:
    assert by_label(sample_per_stratum=4, sample_seed=seed).indexes == expected
    assert by_label(yaml_sample_per_stratum=4, sample_seed=seed).indexes == expected


def test_seeded_draws_are_reproducible_and_depend_on_the_seed() -> None:
    first = by_label(sample_per_stratum=3, sample_seed=42)
    again = by_label(sample_per_stratum=3, sample_seed=42)
    other = by_label(sample_per_stratum=3, sample_seed=43)
    assert first.indexes == again.indexes
    assert first.indexes != other.indexes
    assert (first.stratified_seed, first.seed_was_drawn) == (42, False)


def test_seed_zero_is_a_real_seed() -> None:
    draws = [by_label(sample_per_stratum=4, sample_seed=0) for _ in range(3)]
    for selection in draws:
        assert selection.stratified_seed == 0
        assert selection.seed_was_drawn is False
        assert selection.indexes == draws[0].indexes
    assert draws[0].indexes == stratified(clinc(), list(range(54)), "label", 4, 0)


def test_unseeded_draw_records_a_drawn_seed_that_reproduces_it() -> None:
    rows = clinc()
    drawn = [by_label(sample_per_stratum=2) for _ in range(6)]
    for selection in drawn:
        assert selection.seed_was_drawn is True
        assert isinstance(selection.stratified_seed, int)
        assert 0 <= selection.stratified_seed < 2**32
        replay = by_label(sample_per_stratum=2, sample_seed=selection.stratified_seed)
        assert replay.indexes == selection.indexes
        assert replay.seed_was_drawn is False
        assert label_counts(rows, selection.indexes) == {label: 2 for label in CLINC_COUNTS}
    # A fresh draw on every run: six 32-bit seeds are not all equal.
    assert len({selection.stratified_seed for selection in drawn}) > 1


def test_cli_per_stratum_overrides_the_yaml_value() -> None:
    rows = clinc()
    cli = by_label(sample_per_stratum=2, yaml_sample_per_stratum=5, sample_seed=3)
    assert label_counts(rows, cli.indexes) == {label: 2 for label in CLINC_COUNTS}
    assert cli.applied == ["--sample-per-stratum 2"]
    assert cli.indexes == by_label(sample_per_stratum=2, sample_seed=3).indexes
    larger = by_label(sample_per_stratum=6, yaml_sample_per_stratum=1, sample_seed=3)
    assert label_counts(rows, larger.indexes)["oos"] == 6
    assert larger.applied == ["--sample-per-stratum 6"]


def test_yaml_per_stratum_alone() -> None:
    rows = clinc()
    selection = by_label(yaml_sample_per_stratum=5, sample_seed=9)
    assert label_counts(rows, selection.indexes) == {
        label: min(5, size) for label, size in CLINC_COUNTS.items()
    }
    assert selection.applied == ["dataset.sample_per_stratum: 5"]


@pytest.mark.parametrize("n", [12, 13, 100])
def test_stratified_that_removes_nothing_records_nothing(n: int) -> None:
    cli = by_label(sample_per_stratum=n, sample_seed=1)
    yaml = by_label(yaml_sample_per_stratum=n, sample_seed=1)
    for selection in (cli, yaml):
        assert selection.indexes == list(range(54))
        assert selection.applied == []


def test_default_stratify_field_is_expected_skill() -> None:
    rows = [{"expected_skill": s} for s in "aaab"] + [{"other": 1}]
    selection = select(rows, sample_per_stratum=1, sample_seed=0)
    assert Counter(str(rows[i].get("expected_skill", "")) for i in selection.indexes) == {
        "a": 1,
        "b": 1,
        "": 1,
    }


def test_missing_field_falls_into_the_empty_stratum() -> None:
    rows = [{"id": i} for i in range(3)] + [{"id": 3, "k": ""}, {"id": 4, "k": ""}]
    rows += [{"id": 5, "k": "x"}]
    selection = select(rows, stratify_field="k", sample_per_stratum=2, sample_seed=0)
    kept = selection.indexes
    assert len([i for i in kept if i < 5]) == 2  # absent and "" are one stratum of five
    assert 5 in kept
    assert len(kept) == 3


def test_null_falls_into_the_empty_stratum_as_documented() -> None:
    # assay's documented rule (select.py): absent or null → "". NB Coder Eval uses
    # str(row.get(field, "")), which puts an explicit null into a separate "None" stratum.
    rows: list[dict[str, Any]] = [{"k": None}, {"k": None}, {}, {"k": ""}]
    selection = select(rows, stratify_field="k", sample_per_stratum=1, sample_seed=0)
    assert len(selection.indexes) == 1


def test_strata_are_compared_as_text() -> None:
    rows: list[dict[str, Any]] = [{"k": 1}, {"k": "1"}, {"k": True}, {"k": "True"}, {"k": 1.0}]
    selection = select(rows, stratify_field="k", sample_per_stratum=1, sample_seed=0)
    assert len(selection.indexes) == 3  # "1", "True", "1.0"


def reference_stratified(
    rows: list[dict[str, Any]], field: str, n: int, seed: int
) -> list[dict[str, Any]]:
    """reference/originals.md §1.3, step 3, as written (rows, not positions)."""
    rng = random.Random(seed)
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        value = row.get(field)
        groups.setdefault("" if value is None else str(value), []).append(row)
    out: list[dict[str, Any]] = []
    for group in groups.values():
        out.extend(group if len(group) <= n else rng.sample(group, n))
    return out


@settings(max_examples=200, deadline=None)
@given(
    labels=st.lists(st.sampled_from(["a", "b", "c", "", None, 7]), max_size=40),
    n=st.integers(min_value=1, max_value=6),
    seed=st.integers(min_value=0, max_value=2**40),
)
def test_stratified_matches_the_specified_algorithm(
    labels: list[str | int | None], n: int, seed: int
) -> None:
    rows = [{"i": i} if label is None else {"i": i, "k": label} for i, label in enumerate(labels)]
    expected = sorted(row["i"] for row in reference_stratified(rows, "k", n, seed))
    selection = select(rows, stratify_field="k", sample_per_stratum=n, sample_seed=seed)
    assert selection.indexes == expected


# --- --split --------------------------------------------------------------------------------


def test_split_keeps_the_matching_rows() -> None:
    rows = clinc()
    selection = select(rows, split="oos_train")
    assert selection.indexes == [i for i, row in enumerate(rows) if row["split"] == "oos_train"]
    assert len(selection.indexes) == 12
    assert selection.applied == ["--split oos_train"]
    assert selection.warnings == []


def test_split_that_keeps_everything_records_nothing() -> None:
    rows = [{"split": "test"}, {"split": "test"}]
    selection = select(rows, split="test")
    assert selection.indexes == [0, 1]
    assert selection.applied == []
    assert selection.warnings == []


def test_unlabelled_rows_are_dropped_with_a_warning() -> None:
    rows: list[dict[str, Any]] = [
        {"id": "a", "split": "test"},
        {"id": "b"},
        {"id": "c", "split": None},
        {"id": "d", "split": ""},
        {"id": "e", "split": "train"},
        {"id": "f", "split": "test"},
    ]
    selection = select(rows, task_id="qa", split="test")
    assert selection.indexes == [0, 5]
    assert selection.warnings == [
        "Task 'qa': --split 'test' kept 2 of 6 rows; 3 row(s) carry no 'split' label and were "
        "DROPPED. Every metric below is computed over the smaller set."
    ]
    assert selection.applied == ["--split test"]


def test_unlabelled_warning_names_the_split_field() -> None:
    rows = [{"part": "dev"}, {"part": "dev"}, {}]
    selection = select(rows, task_id="t", split="dev", split_field="part")
    assert selection.indexes == [0, 1]
    assert selection.warnings == [
        "Task 't': --split 'dev' kept 2 of 3 rows; 1 row(s) carry no 'part' label and were "
        "DROPPED. Every metric below is computed over the smaller set."
    ]


def test_split_does_not_apply_when_no_row_is_labelled() -> None:
    rows: list[dict[str, Any]] = [{"id": "a"}, {"id": "b", "split": None}, {"id": "c", "split": ""}]
    selection = select(rows, task_id="t", split="test")
    assert selection.indexes == [0, 1, 2]
    assert selection.applied == []
    assert selection.warnings == [
        "Task 't': --split 'test' does not apply: no row carries a 'split' label, "
        "so all 3 rows are kept."
    ]


def test_split_that_does_not_apply_still_lets_the_samplers_run() -> None:
    rows = [{"id": i} for i in range(10)]
    selection = select(rows, split="test", sample=3)
    assert selection.indexes == sorted(random.Random(0).sample(range(10), 3))
    assert selection.applied == ["--sample 3"]


def test_labelled_but_no_match_is_an_error() -> None:
    with pytest.raises(SelectionError) as caught:
        select(clinc(), task_id="clinc-intents", split="test")
    assert caught.value.message == (
        "Dataset for task 'clinc-intents' has no rows in split 'test' (split_field='split'); "
        "labelled splits present: ['oos_train', 'train']"
    )
    assert isinstance(caught.value, UserError)


def test_no_match_error_ignores_unlabelled_rows_and_names_the_field() -> None:
    rows: list[dict[str, Any]] = [{"part": "b"}, {}, {"part": "a"}, {"part": None}, {"part": 2024}]
    with pytest.raises(SelectionError) as caught:
        select(rows, task_id="t", split="c", split_field="part")
    assert caught.value.message == (
        "Dataset for task 't' has no rows in split 'c' (split_field='part'); "
        "labelled splits present: ['2024', 'a', 'b']"
    )


def test_split_compares_labels_as_text_exactly() -> None:
    rows: list[dict[str, Any]] = [
        {"split": 2024},
        {"split": "2024"},
        {"split": "Train"},
        {"split": "train "},
    ]
    assert select(rows, split="2024").indexes == [0, 1]
    with pytest.raises(SelectionError):
        select(rows, split="train")


def test_split_label() -> None:
    assert split_label({"split": "test"}, "split") == "test"
    assert split_label({"split": 0}, "split") == "0"
    assert split_label({"split": False}, "split") == "False"
    assert split_label({"split": " "}, "split") == " "
    for row in ({}, {"split": None}, {"split": ""}, {"other": "x"}):
        assert split_label(row, "split") is None


def test_split_then_stratified() -> None:
    rows = clinc()
    selection = by_label(split="train", sample_per_stratum=2, sample_seed=4)
    assert all(rows[i]["split"] == "train" for i in selection.indexes)
    counts = label_counts(rows, selection.indexes)
    assert "oos" not in counts
    assert counts == {label: 2 for label in CLINC_COUNTS if label != "oos"}
    assert selection.applied == ["--split train", "--sample-per-stratum 2"]
    train = [i for i, row in enumerate(rows) if row["split"] == "train"]
    assert selection.indexes == stratified(rows, train, "label", 2, 4)


# --- properties -------------------------------------------------------------------------------

ROWS = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "split": st.sampled_from(["train", "test", "", None]),
            "k": st.sampled_from(["x", "y", "z", "", None, 1]),
        },
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(
    rows=ROWS,
    sample=st.none() | st.integers(min_value=1, max_value=45),
    per_stratum=st.none() | st.integers(min_value=1, max_value=8),
    yaml_per_stratum=st.none() | st.integers(min_value=1, max_value=8),
    split=st.none() | st.sampled_from(["train", "test"]),
    seed=st.none() | st.integers(min_value=0, max_value=2**32),
)
def test_selection_properties(
    rows: list[dict[str, Any]],
    sample: int | None,
    per_stratum: int | None,
    yaml_per_stratum: int | None,
    split: str | None,
    seed: int | None,
) -> None:
    request = SelectionRequest(
        sample=sample,
        sample_per_stratum=per_stratum,
        yaml_sample_per_stratum=yaml_per_stratum,
        split=split,
        stratify_field="k",
        sample_seed=seed,
    )
    try:
        selection = select_rows(rows, request, task_id="t")
    except SelectionError:
        labels = {split_label(row, "split") for row in rows} - {None}
        assert split is not None and labels and split not in labels
        return
    indexes = selection.indexes
    assert selection.rows_in_dataset == len(rows)
    assert set(indexes) <= set(range(len(rows)))  # selected ⊆ all
    assert indexes == sorted(set(indexes))  # ascending, no repeats: dataset order
    pool = list(range(len(rows)))
    if split is not None and any(split_label(row, "split") for row in rows):
        pool = [i for i in pool if split_label(rows[i], "split") == split]
        assert all(split_label(rows[i], "split") == split for i in indexes)
    assert set(indexes) <= set(pool)
    per = per_stratum if per_stratum is not None else yaml_per_stratum
    if sample is not None:
        assert len(indexes) == min(sample, len(pool))
        assert selection.stratified_seed is None
    elif per is not None:
        strata = Counter("" if rows[i].get("k") is None else str(rows[i].get("k")) for i in pool)
        assert len(indexes) == sum(min(per, size) for size in strata.values())
        assert selection.seed_was_drawn is (seed is None)
        if seed is not None:
            assert selection.stratified_seed == seed
    else:
        assert indexes == pool
    # A cause is recorded exactly when rows were removed.
    assert bool(selection.applied) == (len(indexes) < len(rows))
    if split is not None and len(pool) < len(rows):
        assert selection.applied[0] == f"--split {split}"


def test_a_stratify_field_no_row_has_is_warned() -> None:
    rows = clinc()
    request = SelectionRequest(sample_per_stratum=4, sample_seed=0)  # expected_skill
    selection = select_rows(rows, request, task_id="t")
    assert selection.warnings == [
        "task 't': no row has the stratify_field 'expected_skill', so all rows are one "
        "stratum; set dataset.stratify_field to the field to stratify by"
    ]
    assert len(selection.indexes) == 4
    assert by_label(sample_per_stratum=4, sample_seed=0).warnings == []
