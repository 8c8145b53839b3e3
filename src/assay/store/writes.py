"""Write operations, each run inside the caller's one write transaction.

A batch (add or remove) reads the dataset's current version with its row locked, writes its
member rows in chunks of ``CHUNK`` (one ``executemany`` each, no per-row round trip), then
one version row and the dataset row. An error anywhere rolls the whole batch back, so a
version is either complete or absent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Connection, select, update
from sqlalchemy.exc import IntegrityError

from assay.errors import StoreError
from assay.store.models import Operation, RemoveResult, SourceRow, VersionInfo
from assay.store.reads import DatasetRow, check_name, get_dataset, resolve_version
from assay.store.rows import RowChecker, TraceSink, row_error
from assay.store.schema import Schema
from assay.store.tables import datasets, members, versions
from assay.store.values import combine, example_digest

CHUNK = 2000
MAX_ORIGIN = 500

OnConflict = Literal["refuse", "new_id"]
"""What an add does with a row whose id is a member with other content: ``refuse`` it (the
batch fails), or add it under a ``new_id`` (:func:`evidence_id`)."""

Prepared = tuple[str, str, int]
"""``(example_id, data as stored JSON, digest)``: a row as :class:`RowChecker` prepares it."""


def evidence_id(example_id: str, stored: str) -> str:
    """The id a row gets when its own id is taken by other content: ``ID~`` and the first 8
    hex digits of the sha256 of its stored JSON, so the same evidence always gets the same id
    (adding it twice adds it once) and other evidence another one."""
    return f"{example_id}~{hashlib.sha256(stored.encode('utf-8')).hexdigest()[:8]}"


def now_text() -> str:
    """The current UTC time as ISO 8601 text (what the tables store)."""
    return datetime.now(UTC).isoformat()


def check_id_field(id_field: str, schema: Schema) -> None:
    """Refuse an empty id field, or one the schema declares as a data field.

    Raises:
        StoreError: naming the field.
    """
    if not isinstance(id_field, str) or not id_field:
        raise StoreError("the id field must be a non-empty name")
    if id_field in schema.fields:
        raise StoreError(
            f"'{id_field}' is the dataset's id field, so the schema cannot declare it: "
            "its value becomes the example id",
            field=id_field,
            hint="drop it from the schema, or choose another --id-field",
        )


def create(connection: Connection, name: str, schema: Schema, id_field: str) -> None:
    """Insert an empty dataset (current version 0).

    Raises:
        StoreError: invalid name or id field, or the name is taken.
    """
    check_name(name)
    check_id_field(id_field, schema)
    taken = connection.execute(select(datasets.c.dataset_id).where(datasets.c.name == name))
    if taken.first() is not None:
        raise StoreError(f"a dataset named '{name}' already exists")
    stamp = now_text()
    connection.execute(
        datasets.insert().values(
            name=name, schema_json=json.dumps(schema.to_dict()), id_field=id_field,
            current_version=0, created_at=stamp, updated_at=stamp,
        )
    )  # fmt: skip


def set_schema(connection: Connection, name: str, schema: Schema) -> None:
    """Replace the schema of a dataset that has never had an example.

    Raises:
        StoreError: the dataset has versions (its schema is locked), or the new schema
            declares the id field.
    """
    dataset = get_dataset(connection, name, for_update=True)
    if dataset.info.current_version > 0:
        raise StoreError(
            f"the schema of dataset '{name}' is locked: examples were added in version 1 "
            f"(latest {dataset.info.current_version}); a schema is editable only until the "
            "first example is added",
            hint="create a new dataset with the new schema and add the examples there",
        )
    check_id_field(dataset.info.id_field, schema)
    connection.execute(
        update(datasets)
        .where(datasets.c.dataset_id == dataset.dataset_id)
        .values(schema_json=json.dumps(schema.to_dict()), updated_at=now_text())
    )


def insert_members(connection: Connection, rows: list[tuple[int, str, str, int]]) -> None:
    """Insert ``(dataset_id, example_id, data, added_in)`` rows in one round trip.

    PostgreSQL: ``COPY … FROM STDIN`` on the transaction's own connection; SQLite: one
    ``executemany``; any other backend: SQLAlchemy's ``executemany``.
    """
    backend = connection.dialect.name
    if backend == "postgresql":
        cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
        with cursor, cursor.copy(_COPY) as copy:
            for row in rows:
                copy.write_row(row)
    elif backend == "sqlite":
        connection.exec_driver_sql(_INSERT_QMARK, rows)
    else:
        names = ("dataset_id", "example_id", "data", "added_in")
        connection.execute(members.insert(), [dict(zip(names, r, strict=True)) for r in rows])


_COLUMNS = "members (dataset_id, example_id, data, added_in)"
_COPY = f"COPY {_COLUMNS} FROM STDIN"
_INSERT_QMARK = f"INSERT INTO {_COLUMNS} VALUES (?, ?, ?, ?)"


class _Batch:
    """The running state of one add: pending rows, ids of this chunk, totals.

    Ids are checked by the partial unique index on open members: each chunk is inserted
    inside a savepoint, and only when the index refuses it are the chunk's ids that are
    already members looked up. A member with the same content is left as it is (the row is
    counted ``unchanged``); an id twice in the batch is an error, and so is one with other
    content unless ``renamer`` is given: then the row is prepared again under its
    :func:`evidence_id` (``renamed`` maps the old id to the new). So a chunk costs one
    insert, whatever the dataset's size.
    """

    def __init__(
        self,
        connection: Connection,
        dataset: DatasetRow,
        number: int,
        renamer: Callable[[SourceRow, str], Prepared] | None = None,
    ) -> None:
        self.connection = connection
        self.dataset = dataset
        self.number = number
        self.renamer = renamer
        self.renamed: dict[str, str] = {}
        self.pending: list[tuple[int, str, str, int]] = []
        self.digests: list[int] = []
        self.where: dict[str, SourceRow] = {}
        self.added = 0
        self.unchanged = 0
        self.digest = 0
        self.origins: dict[str, None] = {}

    def push(self, row: SourceRow, example_id: str, stored: str, digest: int) -> None:
        if example_id in self.where:
            first = self.where[example_id].where or "an earlier row"
            raise row_error(
                row,
                f"the example id appears twice in this batch (first at {first})",
                example_id=example_id,
            )
        self.where[example_id] = row
        self.pending.append((self.dataset.dataset_id, example_id, stored, self.number))
        self.digests.append(digest)
        self.added += 1
        self.digest += digest
        if row.origin and len(self.origins) < MAX_ORIGIN:
            self.origins[row.origin] = None
        if len(self.pending) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        refused: tuple[type[Exception], ...] = (
            IntegrityError,
            self.connection.dialect.loaded_dbapi.IntegrityError,
        )
        rounds = 0
        while self.pending:
            try:
                with self.connection.begin_nested():
                    insert_members(self.connection, self.pending)
                break
            except refused:
                rounds += 1  # a new id may itself be present: at most one more round
                if rounds > 2:
                    raise
                self._skip_present()
        self.pending = []
        self.digests = []
        self.where = {}

    def _skip_present(self) -> None:
        """Drop the pending rows already present with the same content; refuse the others."""
        found = self.connection.execute(
            select(members.c.example_id, members.c.data, members.c.added_in).where(
                members.c.dataset_id == self.dataset.dataset_id,
                members.c.removed_in.is_(None),
                members.c.example_id.in_(list(self.where)),
            )
        ).all()
        present: set[str] = set()
        other: list[str] = []
        stored = {p[1]: p[2] for p in self.pending}
        for example_id, data, added_in in found:
            row = self.where[example_id]
            if added_in == self.number:
                raise row_error(row, "the example id appears twice in this batch",
                                example_id=example_id)  # fmt: skip
            if json.loads(data) != json.loads(stored[example_id]):
                if self.renamer is not None and example_id not in self.renamed.values():
                    other.append(example_id)
                    continue
                latest = self.dataset.info.current_version
                raise row_error(
                    row,
                    f"already a member of dataset '{self.dataset.name}' with other content "
                    f"(latest version {latest}, added in version {added_in}); ids are unique "
                    "in a version: remove it first to replace it",
                    example_id=example_id,
                )
            present.add(example_id)
        self._drop(present, counted=True)
        self._drop(set(other), counted=False)
        for example_id in other:
            self._push_renamed(example_id, stored[example_id])

    def _drop(self, ids: set[str], *, counted: bool) -> None:
        """Take ``ids`` out of the pending rows; ``counted``: as ``unchanged`` (present with
        the same content), else to be pushed again under a new id."""
        if counted:
            for old, new in list(self.renamed.items()):
                if new in ids:  # that evidence was added before: nothing new
                    del self.renamed[old]
            for example_id in ids:
                del self.where[example_id]
        kept = [(p, d) for p, d in zip(self.pending, self.digests, strict=True)
                if p[1] not in ids]  # fmt: skip
        skipped = len(self.pending) - len(kept)
        self.digest -= sum(self.digests) - sum(d for _, d in kept)
        self.added -= skipped
        self.unchanged += skipped if counted else 0
        self.pending = [p for p, _ in kept]
        self.digests = [d for _, d in kept]

    def _push_renamed(self, example_id: str, stored: str) -> None:
        assert self.renamer is not None
        row = self.where.pop(example_id)
        new_id, new_stored, digest = self.renamer(row, evidence_id(example_id, stored))
        self.renamed[example_id] = new_id
        self.where[new_id] = row
        self.pending.append((self.dataset.dataset_id, new_id, new_stored, self.number))
        self.digests.append(digest)
        self.added += 1
        self.digest += digest


def add(
    connection: Connection,
    name: str,
    rows: Iterable[Mapping[str, Any] | SourceRow],
    *,
    origin: str | None,
    base_dir: Path | None,
    on_conflict: OnConflict = "refuse",
) -> VersionInfo:
    """Add ``rows`` as one new version (see :meth:`assay.store.Store.add`)."""
    dataset = get_dataset(connection, name, for_update=True)
    info = dataset.info
    sink = TraceSink(connection) if info.schema.pointer_field else None
    checker = RowChecker(info.schema, info.id_field, sink)

    def renamer(row: SourceRow, new_id: str) -> Prepared:
        moved = SourceRow({**row.data, info.id_field: new_id}, row.origin, row.line, row.base_dir)
        return checker.prepare(moved)

    chosen = renamer if on_conflict == "new_id" else None
    batch = _Batch(connection, dataset, info.current_version + 1, chosen)
    for index, item in enumerate(rows, start=1):
        if not isinstance(item, SourceRow):
            data = item if isinstance(item, dict) else dict(item)
            item = SourceRow(data, origin, index, base_dir)
        row = item
        batch.push(row, *checker.prepare(row))
    batch.flush()
    label = origin or (", ".join(batch.origins) or None)
    if batch.added == 0 and batch.unchanged == 0:
        raise StoreError(
            f"nothing to add to dataset '{name}': no examples in {label or 'the rows'}"
        )
    if batch.added == 0:  # every row is already there: no new version, and say so
        latest = resolve_version(connection, dataset, None)
        return replace(latest, created=False, unchanged=batch.unchanged)
    version = _new_version(
        connection, dataset, "add", added=batch.added, removed=0,
        hash_hex=combine(info.content_hash, add=batch.digest),
        item_count=info.item_count + batch.added, origin=label,
    )  # fmt: skip
    return replace(version, unchanged=batch.unchanged, renamed=batch.renamed)


def put(
    connection: Connection,
    name: str,
    rows: Sequence[Mapping[str, Any]],
    *,
    origin: str | None,
) -> VersionInfo:
    """Add ``rows`` as one new version, each row replacing the member with its id when that
    member has other content (see :meth:`assay.store.Store.put`)."""
    dataset = get_dataset(connection, name, for_update=True)
    info = dataset.info
    sink = TraceSink(connection) if info.schema.pointer_field else None
    checker = RowChecker(info.schema, info.id_field, sink)
    prepared: dict[str, Prepared] = {}
    for line, data in enumerate(rows, start=1):
        row = SourceRow(dict(data), origin, line, None)
        example_id, stored, digest = checker.prepare(row)
        if example_id in prepared:
            raise row_error(row, "the example id appears twice in this batch",
                            example_id=example_id)  # fmt: skip
        prepared[example_id] = (example_id, stored, digest)
    if not prepared:
        raise StoreError(f"nothing to put into dataset '{name}': no examples")
    number = info.current_version + 1
    replaced: list[int] = []
    digest = 0
    ids = list(prepared)
    for member_id, example_id, text in _current_members(connection, dataset, ids):
        old = json.loads(text)
        if old == json.loads(prepared[example_id][1]):
            del prepared[example_id]  # present with the same content: nothing to do
            continue
        replaced.append(member_id)
        digest -= example_digest(example_id, old)
    unchanged = len(ids) - len(prepared)
    if not prepared:
        latest = resolve_version(connection, dataset, None)
        return replace(latest, created=False, unchanged=unchanged)
    _mark_removed(connection, replaced, number)
    fresh = list(prepared.values())
    for start in range(0, len(fresh), CHUNK):
        insert_members(connection, [(dataset.dataset_id, i, stored, number)
                                    for i, stored, _ in fresh[start : start + CHUNK]])  # fmt: skip
    digest += sum(d for _, _, d in fresh)
    operation: Operation = "replace" if replaced else "add"
    version = _new_version(
        connection, dataset, operation, added=len(fresh), removed=len(replaced),
        hash_hex=combine(info.content_hash, add=digest),
        item_count=info.item_count + len(fresh) - len(replaced), origin=origin,
    )  # fmt: skip
    return replace(version, unchanged=unchanged)


def _current_members(
    connection: Connection, dataset: DatasetRow, example_ids: list[str]
) -> Iterator[tuple[int, str, str]]:
    """``(member_id, example_id, data)`` of each of ``example_ids`` that the latest version
    holds, asked :data:`CHUNK` ids at a time (a database's limit on bound parameters)."""
    for start in range(0, len(example_ids), CHUNK):
        found = connection.execute(
            select(members.c.member_id, members.c.example_id, members.c.data).where(
                members.c.dataset_id == dataset.dataset_id,
                members.c.removed_in.is_(None),
                members.c.example_id.in_(example_ids[start : start + CHUNK]),
            )
        )
        yield from ((member_id, example_id, text) for member_id, example_id, text in found)


def _mark_removed(connection: Connection, member_ids: list[int], number: int) -> None:
    """Mark ``member_ids`` removed in version ``number``, :data:`CHUNK` at a time."""
    for start in range(0, len(member_ids), CHUNK):
        connection.execute(
            update(members)
            .where(members.c.member_id.in_(member_ids[start : start + CHUNK]))
            .values(removed_in=number)
        )


def remove(connection: Connection, name: str, example_ids: Sequence[str]) -> RemoveResult:
    """Remove ``example_ids`` from the latest version as one new version.

    Raises:
        StoreError: no ids given, or some are not members of the latest version (nothing
            changes; the message names them).
    """
    dataset = get_dataset(connection, name, for_update=True)
    wanted = list(dict.fromkeys(str(i) for i in example_ids))
    if not wanted:
        raise StoreError(f"no example ids given to remove from dataset '{name}'")
    found: dict[str, int] = {}
    digest = 0
    for member_id, example_id, text in _current_members(connection, dataset, wanted):
        found[example_id] = member_id
        digest += example_digest(example_id, json.loads(text))
    _refuse_missing(dataset, [i for i in wanted if i not in found])
    number = dataset.info.current_version + 1
    _mark_removed(connection, list(found.values()), number)
    version = _new_version(
        connection, dataset, "remove", added=0, removed=len(wanted),
        hash_hex=combine(dataset.info.content_hash, remove=digest),
        item_count=dataset.info.item_count - len(wanted), origin=None,
    )  # fmt: skip
    return RemoveResult(removed_example_ids=wanted, version_created=number, version=version)


def _refuse_missing(dataset: DatasetRow, missing: list[str]) -> None:
    if not missing:
        return
    if dataset.info.current_version == 0:
        raise StoreError(f"dataset '{dataset.name}' has no examples yet; nothing was removed")
    shown = ", ".join(repr(i) for i in missing[:10])
    more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
    version = dataset.info.current_version
    raise StoreError(
        f"dataset '{dataset.name}' has no example {shown}{more} in its latest version "
        f"({version}); nothing was removed",
        hint="see the ids with: assay dataset show " + dataset.name,
    )


def _new_version(
    connection: Connection,
    dataset: DatasetRow,
    operation: Operation,
    *,
    added: int,
    removed: int,
    hash_hex: str,
    item_count: int,
    origin: str | None,
) -> VersionInfo:
    number = dataset.info.current_version + 1
    stamp = now_text()
    connection.execute(
        versions.insert().values(
            dataset_id=dataset.dataset_id, number=number, created_at=stamp,
            item_count=item_count, content_hash=hash_hex, operation=operation,
            added=added, removed=removed, origin=origin,
        )
    )  # fmt: skip
    connection.execute(
        update(datasets)
        .where(datasets.c.dataset_id == dataset.dataset_id)
        .values(current_version=number, updated_at=stamp)
    )
    return VersionInfo(
        number=number, created_at=datetime.fromisoformat(stamp), item_count=item_count,
        content_hash=hash_hex, operation=operation, added=added, removed=removed,
        dataset=dataset.name, origin=origin,
    )  # fmt: skip
