"""Row selection: ``--split``, then one sampler (``--sample`` or stratified).

The one declaration of the selection and its precedence (``reference/originals.md`` §1.3):

1. ``--split NAME`` keeps rows whose ``split_field`` equals ``NAME`` (compared as text).
   Rows without a label (field absent, null or ``""``) are dropped with a warning; when no
   row carries a label the split does not apply to the task (also a warning); when rows are
   labelled but none match, it is an error.
2. ``--sample N``: a uniform draw of N rows over the whole dataset with the fixed seed 0
   (Coder Eval's ``random.Random(0).sample``, so the same rows come back every run). N at
   least the size keeps every row. It wins over both stratified sources.
3. Otherwise stratified: up to N rows per stratum (``--sample-per-stratum`` over
   ``dataset.sample_per_stratum``), the stratum being ``str(row[stratify_field])`` (absent or
   null: ``""``; ``stratify_field`` defaults to Coder Eval's ``expected_skill``, and a
   field no selected row has is warned). Seeded only by ``sample_seed``; unseeded draws a
   fresh seed each run, which is recorded so the draw can be reproduced.

Selected rows keep the dataset's order.

**Draws by id** (``ids`` given: a store dataset, whose versions have order-independent content
hashes): both samplers rank the candidate rows by ``sha256("<seed>:<row id>")`` and keep the
lowest, instead of drawing by position. The selection then depends only on which rows the
version holds, never on their order, so two versions with the same content hash select the
same rows (a version rebuilt by remove and add holds its rows in another order).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.errors import SelectionError

SAMPLE_SEED = 0


@dataclass(frozen=True)
class Selection:
    """Which rows of a dataset a run evaluates, and why.

    Attributes:
        indexes: positions in the full dataset, ascending (dataset order).
        applied: the selectors that removed rows, e.g. ``["--split test", "--sample 200"]``.
        rows_in_dataset: the size of the full dataset.
        stratified_seed: the seed of a stratified draw (given, or drawn when unseeded).
        seed_was_drawn: True when ``stratified_seed`` was drawn because none was given.
        warnings: messages about dropped rows or a split that does not apply.
        missing_ids: ids a fixed selection asked for that the dataset no longer has.
    """

    indexes: list[int]
    applied: list[str]
    rows_in_dataset: int
    stratified_seed: int | None = None
    seed_was_drawn: bool = False
    warnings: list[str] = field(default_factory=list)
    missing_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SelectionRequest:
    """The selectors in force for one task: CLI flags and the dataset block's fields."""

    sample: int | None = None
    sample_per_stratum: int | None = None
    split: str | None = None
    yaml_sample_per_stratum: int | None = None
    stratify_field: str = "expected_skill"
    split_field: str = "split"
    sample_seed: int | None = None


def split_label(row: dict[str, Any], split_field: str) -> str | None:
    """The row's split as text, or ``None`` when it has none (absent, null or ``""``)."""
    value = row.get(split_field)
    if value is None or value == "":
        return None
    return str(value)


def select_rows(
    rows: Sequence[dict[str, Any]],
    request: SelectionRequest,
    *,
    task_id: str,
    ids: Sequence[str] | None = None,
) -> Selection:
    """Apply ``request`` to ``rows`` (the whole dataset, in order).

    Args:
        ids: each row's id: draw by id (see the module docstring) instead of by position.

    Raises:
        SelectionError: ``--split`` names a split no labelled row has.
    """
    indexes = list(range(len(rows)))
    applied: list[str] = []
    warnings: list[str] = []
    if request.split is not None:
        indexes = _apply_split(rows, indexes, request, task_id, applied, warnings)
    seed: int | None = None
    drawn = False
    if request.sample is not None:
        warnings += _unused_by_sample(request, task_id)
        if request.sample < len(indexes):
            if ids is not None:
                picked = lowest_ranked(indexes, ids, SAMPLE_SEED, request.sample)
            else:
                picked = random.Random(SAMPLE_SEED).sample(indexes, request.sample)
            indexes = sorted(picked)
            applied.append(f"--sample {request.sample}")
        elif request.sample > len(indexes):  # (a mistyped size would run everything unsaid)
            warnings.append(f"{task_id}: --sample {request.sample} is more than the "
                            f"{len(indexes)} row(s) there are to draw from, so every one "
                            "runs")  # fmt: skip
    else:
        per_stratum = (
            request.sample_per_stratum
            if request.sample_per_stratum is not None
            else request.yaml_sample_per_stratum
        )
        if per_stratum is not None:
            field_name = request.stratify_field
            if indexes and all(rows[i].get(field_name) is None for i in indexes):
                warnings.append(
                    f"task '{task_id}': no row has the stratify_field '{field_name}', so all "
                    f"rows are one stratum; set dataset.stratify_field to the field to "
                    "stratify by"
                )
            seed, drawn = _seed(request.sample_seed)
            kept = stratified(rows, indexes, request.stratify_field, per_stratum, seed, ids=ids)
            if len(kept) < len(indexes):
                source = (
                    f"--sample-per-stratum {per_stratum}"
                    if request.sample_per_stratum is not None
                    else f"dataset.sample_per_stratum: {per_stratum}"
                )
                applied.append(source)
            indexes = kept
    return Selection(indexes, applied, len(rows), seed, drawn, warnings)


def _unused_by_sample(request: SelectionRequest, task_id: str) -> list[str]:
    """The dataset block's stratified settings that ``--sample`` overrides, said aloud."""
    unused = []
    if request.sample_per_stratum is not None or request.yaml_sample_per_stratum is not None:
        unused.append("the stratified sample (sample_per_stratum)")
    if request.sample_seed is not None:
        unused.append(f"dataset.sample_seed {request.sample_seed}")
    if not unused:
        return []
    return [f"task '{task_id}': --sample {request.sample} draws with the fixed seed "
            f"{SAMPLE_SEED}, so {' and '.join(unused)} does not apply"]  # fmt: skip


def _seed(given: int | None) -> tuple[int, bool]:
    if given is not None:
        return given, False
    return random.SystemRandom().randrange(2**32), True


def stratified(
    rows: Sequence[dict[str, Any]],
    indexes: list[int],
    field_name: str,
    n: int,
    seed: int,
    *,
    ids: Sequence[str] | None = None,
) -> list[int]:
    """Keep up to ``n`` of ``indexes`` per stratum; strata of at most ``n`` rows stay whole.

    Strata are drawn in first-seen order from one ``random.Random(seed)`` (Coder Eval's), or,
    with ``ids``, each stratum keeps its ``n`` lowest-ranked rows (:func:`lowest_ranked`);
    the result is in dataset order.
    """
    rng = random.Random(seed)
    groups: dict[str, list[int]] = {}
    for index in indexes:
        value = rows[index].get(field_name)
        groups.setdefault("" if value is None else str(value), []).append(index)
    kept: list[int] = []
    for members in groups.values():
        if len(members) <= n:
            kept.extend(members)
        elif ids is not None:
            kept.extend(lowest_ranked(members, ids, seed, n))
        else:
            kept.extend(rng.sample(members, n))
    return sorted(kept)


def lowest_ranked(indexes: Sequence[int], ids: Sequence[str], seed: int, n: int) -> list[int]:
    """The ``n`` of ``indexes`` whose ids rank lowest by ``sha256("<seed>:<id>")``: a uniform
    draw that depends on the ids alone, not on their order."""

    def rank(index: int) -> bytes:
        return hashlib.sha256(f"{seed}:{ids[index]}".encode("utf-8", "surrogatepass")).digest()

    return sorted(indexes, key=rank)[:n]


def _apply_split(
    rows: Sequence[dict[str, Any]],
    indexes: list[int],
    request: SelectionRequest,
    task_id: str,
    applied: list[str],
    warnings: list[str],
) -> list[int]:
    split, field_name = request.split, request.split_field
    labels = [split_label(rows[i], field_name) for i in indexes]
    present = sorted({label for label in labels if label is not None})
    if not present:
        warnings.append(
            f"Task '{task_id}': --split {split!r} does not apply: no row carries a "
            f"{field_name!r} label, so all {len(indexes)} rows are kept."
        )
        return indexes
    kept = [i for i, label in zip(indexes, labels, strict=True) if label == split]
    if not kept:
        raise SelectionError(
            f"Dataset for task '{task_id}' has no rows in split {split!r} "
            f"(split_field={field_name!r}); labelled splits present: {present}",
            hint="pass one of the labelled splits to --split",
        )
    unlabelled = labels.count(None)
    if unlabelled:
        warnings.append(
            f"Task '{task_id}': --split {split!r} kept {len(kept)} of {len(indexes)} rows; "
            f"{unlabelled} row(s) carry no {field_name!r} label and were DROPPED. "
            "Every metric below is computed over the smaller set."
        )
    if len(kept) < len(indexes):
        applied.append(f"--split {split}")
    return kept
