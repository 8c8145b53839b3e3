"""The rows a run recorded, compact: each selected row's id and content hash, by task, read
from ``selection.jsonl`` in one pass and kept in 17 bytes a row.

``assay report`` and ``assay evaluate`` look every finished row up in what the run recorded,
and compare the dataset with it, on runs of a million rows and more. A dictionary of
strings costs about 200 bytes a row; here a row is a 64-bit key of its id (BLAKE2b,
RFC 7693, 8-byte digest), its 64-bit content hash (:func:`assay.data.hashing.row_hash` is
16 hex digits) and a flag, in numpy arrays sorted by key and searched by bisection.

Two ids of one task that share a key (about one chance in 2**25 at a million rows), a row
listed twice, or a hash that is not 16 hex digits (a run written by another version) make
that task's rows an exact dictionary instead (:meth:`RecordedRows.exact`), so a lookup is
never wrong.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from assay.results.selection_file import damaged_list, iter_selection_rows, listed_in_file
from assay.results.suite import SelectionRecord

HASH_DIGITS = 16
NO_HASH = -1


def id_key(row_id: str) -> int:
    """A row id's 64-bit key: the first 8 bytes of its BLAKE2b digest, little-endian."""
    digest = hashlib.blake2b(row_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class RecordedRows:
    """One task's recorded rows: ``position(row_id)`` (``None``: not recorded) and
    ``get(row_id)`` (its recorded hash, ``None`` when not recorded or recorded without one).

    Positions run from 0 to ``len(self) - 1``; :meth:`ids_at` names the rows at given
    positions (one more pass over the file, for a report of the rows that differ).
    """

    def __init__(self, task_id: str, *, keys: NDArray[np.uint64] | None = None,
                 hashes: NDArray[np.uint64] | None = None, known: NDArray[np.bool_] | None = None,
                 exact: dict[str, tuple[int, str]] | None = None,
                 run_dir: Path | None = None) -> None:  # fmt: skip
        self.task_id, self.run_dir = task_id, run_dir
        self.keys, self.hashes, self.known, self._exact = keys, hashes, known, exact

    @classmethod
    def exact(
        cls, task_id: str, rows: Iterable[tuple[str, str]], *, run_dir: Path | None = None
    ) -> RecordedRows:
        """The rows ``(row id, hash)`` in a dictionary (``hash`` ``""``: recorded without).

        Raises:
            UsageError: a row is listed twice (``run_dir`` names the damaged folder).
        """
        found: dict[str, tuple[int, str]] = {}
        for row_id, row_hash in rows:
            if row_id in found:
                raise damaged_list(run_dir or Path("."), task_id, f"lists row {row_id!r} twice")
            found[row_id] = (len(found), row_hash)
        return cls(task_id, exact=found, run_dir=run_dir)

    def __len__(self) -> int:
        if self._exact is not None:
            return len(self._exact)
        return len(self.keys) if self.keys is not None else 0

    @property
    def hashed(self) -> bool:
        """Whether any row was recorded with its content hash (runs before hashes: none)."""
        if self._exact is not None:
            return any(h for _, h in self._exact.values())
        return bool(self.known is not None and self.known.any())

    def position(self, row_id: str) -> int | None:
        """The row's position, or ``None`` when the run did not record it."""
        if self._exact is not None:
            found = self._exact.get(row_id)
            return found[0] if found is not None else None
        assert self.keys is not None
        key = np.uint64(id_key(row_id))
        at = int(np.searchsorted(self.keys, key))
        return at if at < len(self.keys) and self.keys[at] == key else None

    def get(self, row_id: str) -> str | None:
        """The row's recorded content hash (16 hex digits), or ``None``."""
        if self._exact is not None:
            found = self._exact.get(row_id)
            return (found[1] or None) if found is not None else None
        at = self.position(row_id)
        if at is None or self.known is None or self.hashes is None or not self.known[at]:
            return None
        return f"{int(self.hashes[at]):0{HASH_DIGITS}x}"

    def ids_at(self, positions: Iterable[int]) -> list[str]:
        """The ids of the rows at ``positions``, in the order the run recorded them."""
        wanted = set(positions)
        if self._exact is not None:
            return [row_id for row_id, (at, _) in self._exact.items() if at in wanted]
        assert self.run_dir is not None
        return [row_id for row_id, _ in _task_rows(self.run_dir, self.task_id)
                if self.position(row_id) in wanted]  # fmt: skip


def _task_rows(run_dir: Path, task_id: str) -> Iterator[tuple[str, str]]:
    return ((row_id, row_hash) for task, row_id, row_hash in iter_selection_rows(run_dir)
            if task == task_id)  # fmt: skip


class _Builder:
    """One task's rows as they are read: keys and hashes in file order (16 bytes a row)."""

    def __init__(self) -> None:
        self.keys, self.hashes, self.known = array("Q"), array("Q"), bytearray()
        self.exact = False  # a hash that is not 16 hex digits

    def add(self, row_id: str, row_hash: str) -> None:
        self.keys.append(id_key(row_id))
        value = _hash_value(row_hash)
        self.exact = self.exact or value is None
        self.hashes.append(value if value is not None and value != NO_HASH else 0)
        self.known.append(value is not None and value != NO_HASH)

    def build(self, task_id: str, run_dir: Path) -> RecordedRows:
        """The rows sorted by key; each array in file order is dropped as soon as its sorted
        copy exists, so the build holds at most one array more than the result."""
        order = np.argsort(np.frombuffer(self.keys, dtype=np.uint64), kind="stable")
        keys, self.keys = np.frombuffer(self.keys, dtype=np.uint64)[order], array("Q")
        if self.exact or (len(keys) > 1 and bool((keys[1:] == keys[:-1]).any())):
            return RecordedRows.exact(task_id, _task_rows(run_dir, task_id), run_dir=run_dir)
        hashes, self.hashes = np.frombuffer(self.hashes, dtype=np.uint64)[order], array("Q")
        known, self.known = np.frombuffer(self.known, dtype=np.bool_)[order], bytearray()
        return RecordedRows(task_id, keys=keys, hashes=hashes, known=known, run_dir=run_dir)


def _hash_value(row_hash: str) -> int | None:
    """A recorded hash as a number; :data:`NO_HASH` for none, ``None`` for another form."""
    if not row_hash:
        return NO_HASH
    if len(row_hash) != HASH_DIGITS:
        return None
    try:
        return int(row_hash, 16)
    except ValueError:
        return None


def recorded_rows(
    run_dir: Path, selections: Mapping[str, SelectionRecord]
) -> dict[str, RecordedRows]:
    """Task id → its recorded rows, for each of ``selections``: from ``selection.jsonl``
    (read once for all of them) when the run listed them there, else from the selection
    itself (a run written before the file).

    Raises:
        UsageError: the file cannot be read, a line is damaged, a row is listed twice, or
            the file does not list exactly ``rows_selected`` rows of a task
            (:func:`assay.results.selection_file.iter_selection_rows`).
    """
    inline = {task_id: s for task_id, s in selections.items() if not listed_in_file(run_dir, s)}
    found = {task_id: RecordedRows.exact(task_id, ((r, s.row_hashes.get(r, "")) for r in s.row_ids),
                                         run_dir=run_dir)
             for task_id, s in inline.items()}  # fmt: skip
    builders = {task_id: _Builder() for task_id in selections if task_id not in inline}
    for task_id, row_id, row_hash in iter_selection_rows(run_dir) if builders else ():
        builder = builders.get(task_id)
        if builder is not None:
            builder.add(row_id, row_hash)
    for task_id in list(builders):
        builder, selected = builders.pop(task_id), selections[task_id].rows_selected
        if len(builder.keys) != selected:
            raise damaged_list(run_dir, task_id, f"lists {len(builder.keys)} row(s) of task "
                               f"'{task_id}', but the run selected {selected}")  # fmt: skip
        found[task_id] = builder.build(task_id, run_dir)
    return found


__all__ = ["RecordedRows", "id_key", "recorded_rows"]
