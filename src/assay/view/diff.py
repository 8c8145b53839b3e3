"""Two runs (or two variants of one run) compared row by row, from their row indexes.

Rows are matched by ``(suite, row id)``. A row's outcome on a side is the one ``assay
compare`` and ``experiment.json`` use: it passes when more than half of its graded
replicates passed (no graded replicate: not comparable); its score is the mean weighted score
of its replicates. Each row pair gets a ``change``: ``became_pass``, ``became_fail``,
``score_up``, ``score_down``, ``same``, ``ungraded`` (not graded on a side) or
``data_changed`` (the row's content differs between the runs, by the row hashes each run
recorded: a gold label edited between them; such rows are left out of the flips and of
McNemar's test, as ``assay compare`` leaves them out).

The two sides must cover the same rows, suite by suite, as ``assay compare`` requires
(:func:`assay.reports.compare.check_same_rows`, with what the runs recorded of their
selections); otherwise the diff is refused with that check's reason. The pairs are computed
once per pair of index states and kept in the
viewer's scratch folder, so paging and filtering a 100,000-row diff stays fast.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import UsageError
from assay.metrics.paired import McNemar, mcnemar_exact
from assay.reports.compare import check_same_rows, recorded_selections
from assay.results.run import TaskSelection
from assay.view.index import RowIndex

CHANGES = ("became_pass", "became_fail", "score_up", "score_down", "same", "ungraded",
           "data_changed")  # fmt: skip
EPSILON = 1e-9
_SIDE = ("SELECT suite, row_id, MIN(row_index) AS row_index, SUM(category = 'passed') AS p, "
         "SUM(category IN ('passed', 'failed')) AS g, AVG(score) AS s, MIN(folder) AS f, "
         "GROUP_CONCAT(DISTINCT status) AS st FROM {db}.rows WHERE variant = ? AND row_id IS "
         "NOT NULL GROUP BY suite, row_id")  # fmt: skip
_PAIRS = f"""
CREATE TABLE pairs AS
SELECT a.suite AS suite, a.row_id AS row_id, a.row_index AS row_index,
  a.p AS a_passed, a.g AS a_graded, a.s AS a_score, a.f AS a_folder, a.st AS a_status,
  b.p AS b_passed, b.g AS b_graded, b.s AS b_score, b.f AS b_folder, b.st AS b_status,
  CASE WHEN EXISTS (SELECT 1 FROM changed c WHERE c.suite = a.suite AND c.row_id = a.row_id)
         THEN 'data_changed'
       WHEN a.g = 0 OR b.g = 0 THEN 'ungraded'
       WHEN a.p * 2 > a.g AND NOT b.p * 2 > b.g THEN 'became_fail'
       WHEN NOT a.p * 2 > a.g AND b.p * 2 > b.g THEN 'became_pass'
       WHEN b.s > a.s + {EPSILON} THEN 'score_up'
       WHEN b.s < a.s - {EPSILON} THEN 'score_down'
       ELSE 'same' END AS change
FROM ({_SIDE.format(db="src_a")}) AS a JOIN ({_SIDE.format(db="src_b")}) AS b
  ON a.suite = b.suite AND a.row_id = b.row_id
"""


@dataclass(frozen=True)
class Side:
    """One side of a diff: a run's index, the variant compared (``None``: its only one) and
    the selections the run recorded (``None``: read them from its folder)."""

    label: str
    index: RowIndex
    variant: str | None
    selections: dict[str, TaskSelection] | None = None

    def recorded(self) -> dict[str, TaskSelection]:
        """The selections the run recorded."""
        if self.selections is not None:
            return self.selections
        return recorded_selections(self.index.run_dir)


@dataclass
class DiffSummary:
    """What the diff found: the variants, rows compared per change, McNemar's exact test on
    the rows that flipped, and the suites compared."""

    variant_a: str
    variant_b: str
    counts: dict[str, int]
    mcnemar: McNemar
    suites: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        """Rows compared."""
        return sum(self.counts.values())


def variants_of(index: RowIndex) -> list[str]:
    """The variants the run's rows belong to."""
    with index.connect() as db:
        return [r[0] for r in db.execute("SELECT DISTINCT variant FROM rows ORDER BY variant")]


def choose_variant(side: Side) -> str:
    """The side's variant.

    Raises:
        UsageError: it names a variant the run does not have, or the run has several and
            none is named.
    """
    variants = variants_of(side.index)
    if side.variant:
        if side.variant not in variants:
            raise UsageError(f"run {side.label} has no variant '{side.variant}'; it has "
                             f"{variants}")  # fmt: skip
        return side.variant
    if len(variants) != 1:
        raise UsageError(f"run {side.label} has variants {variants}; choose one to compare")
    return variants[0]


def _row_sets(index: RowIndex, variant: str) -> dict[str, set[str]]:
    rows: dict[str, set[str]] = {}
    with index.connect() as db:
        sql = "SELECT DISTINCT suite, row_id FROM rows WHERE variant = ? AND row_id IS NOT NULL"
        for suite, row_id in db.execute(sql, [variant]):
            rows.setdefault(suite, set()).add(row_id)
    return rows


def build_diff(a: Side, b: Side, scratch: Path) -> tuple[Path, DiffSummary]:
    """Compare ``b`` with ``a``: the SQLite file holding the row pairs (table ``pairs``),
    and the summary.

    Raises:
        UsageError: a variant cannot be chosen, no suite in common, or the rows differ.
    """
    variant_a, variant_b = choose_variant(a), choose_variant(b)
    recorded = (a.recorded(), b.recorded())
    shared = check_same_rows(_row_sets(a.index, variant_a), _row_sets(b.index, variant_b),
                             recorded)  # fmt: skip
    key = hashlib.sha256(repr((str(a.index.db_path), variant_a, a.index.generation,
                               str(b.index.db_path), variant_b,
                               b.index.generation)).encode()).hexdigest()[:16]  # fmt: skip
    path = scratch / f"diff-{key}.sqlite"
    if not path.exists():
        _write_pairs(a, b, variant_a, variant_b, path, changed_rows(recorded, shared))
    with contextlib.closing(connect(path)) as db:
        counts = dict.fromkeys(CHANGES, 0)
        for change, count in db.execute("SELECT change, COUNT(*) FROM pairs GROUP BY change"):
            counts[change] = int(count)
    test = mcnemar_exact(counts["became_fail"], counts["became_pass"])
    return path, DiffSummary(variant_a, variant_b, counts, test, shared)


def changed_rows(
    recorded: tuple[dict[str, TaskSelection], dict[str, TaskSelection]], suites: list[str]
) -> list[tuple[str, str]]:
    """``(suite, row id)`` of the rows whose recorded content hash differs between the runs
    (rows without a recorded hash on either side are taken as unchanged)."""
    found = []
    for suite in suites:
        sides = [r.get(suite) for r in recorded]
        if sides[0] is None or sides[1] is None:
            continue
        a, b = sides[0].selection.row_hashes, sides[1].selection.row_hashes
        found += [(suite, row) for row in sorted(set(a) & set(b)) if a[row] != b[row]]
    return found


def _write_pairs(
    a: Side, b: Side, variant_a: str, variant_b: str, path: Path, changed: list[tuple[str, str]]
) -> None:
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    db = sqlite3.connect(partial)
    try:
        db.execute("CREATE TEMP TABLE changed (suite TEXT, row_id TEXT)")
        db.executemany("INSERT INTO changed VALUES (?, ?)", changed)
        db.execute("ATTACH DATABASE ? AS src_a", [str(a.index.db_path)])
        db.execute("ATTACH DATABASE ? AS src_b", [str(b.index.db_path)])
        db.execute(_PAIRS, [variant_a, variant_b])
        db.execute("CREATE INDEX pairs_order ON pairs (suite, row_index, row_id)")
        db.execute("CREATE INDEX pairs_change ON pairs (change)")
        db.commit()
    finally:
        db.close()
    partial.replace(path)


def connect(path: Path) -> sqlite3.Connection:
    """A read connection to a diff's file, rows as ``sqlite3.Row``."""
    db = sqlite3.connect(path, check_same_thread=False)
    db.row_factory = sqlite3.Row
    return db


def pair_page(
    path: Path, *, change: str, suite: str, page: int, size: int
) -> tuple[list[dict[str, Any]], int]:
    """One page of row pairs (``change``: one of :data:`CHANGES`, ``changed`` for every
    change but ``same``, or empty for all), and how many match."""
    clauses, params = [], []
    if change == "changed":
        clauses.append("change != 'same'")
    elif change in CHANGES:
        clauses.append("change = ?")
        params.append(change)
    if suite:
        clauses.append("suite = ?")
        params.append(suite)
    condition = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    with contextlib.closing(connect(path)) as db:
        total = int(db.execute(f"SELECT COUNT(*) FROM pairs{condition}", params).fetchone()[0])
        sql = f"SELECT * FROM pairs{condition} ORDER BY suite, row_index, row_id LIMIT ? OFFSET ?"
        found = db.execute(sql, [*params, size, (page - 1) * size]).fetchall()
    return [dict(r) for r in found], total


def outputs(a: RowIndex, b: RowIndex, pairs: list[dict[str, Any]]) -> None:
    """Add each pair's responses on both sides (``a_response``, ``b_response``: the
    index's copy, up to :data:`assay.view.records.TEXT_LIMIT` characters; ``None`` when the
    row has none)."""
    for side, index in (("a", a), ("b", b)):
        folders = [p[f"{side}_folder"] for p in pairs if p[f"{side}_folder"]]
        found: dict[str, str] = {}
        with index.connect() as db:
            for start in range(0, len(folders), 500):
                chunk = folders[start : start + 500]
                marks = ", ".join("?" * len(chunk))
                sql = (f"SELECT r.folder, t.response FROM rows r JOIN texts t ON t.pk = r.pk "
                       f"WHERE r.folder IN ({marks})")  # fmt: skip
                found.update({str(f): str(t) for f, t in db.execute(sql, chunk) if t})
        for pair in pairs:
            pair[f"{side}_response"] = found.get(pair[f"{side}_folder"])


TOKENS = re.compile(r"\s+|\w+|[^\w\s]")
DIFF_TOKENS = 4_000  # words, spaces and signs of both texts together: longer ones are not diffed


def text_diff(a: str, b: str) -> list[tuple[str, str]]:
    """B's text against A's, word by word (:class:`difflib.SequenceMatcher`): ``(kind,
    text)`` pieces in order, ``kind`` ``same``, ``removed`` (only in A) or ``added`` (only
    in B); empty when the texts hold more than :data:`DIFF_TOKENS` tokens together (the
    page shows them side by side only)."""
    left, right = TOKENS.findall(a), TOKENS.findall(b)
    if len(left) + len(right) > DIFF_TOKENS:
        return []
    pieces: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pieces.append(("same", "".join(left[i1:i2])))
            continue
        if i2 > i1:
            pieces.append(("removed", "".join(left[i1:i2])))
        if j2 > j1:
            pieces.append(("added", "".join(right[j1:j2])))
    return pieces
