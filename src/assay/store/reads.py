"""Queries: datasets, versions, the examples of one version (streamed), stored traces."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Row, and_, or_, select

from assay.errors import StoreError
from assay.spec.base import did_you_mean
from assay.store.models import DatasetInfo, Example, Operation, VersionInfo
from assay.store.schema import schema_from_json
from assay.store.tables import datasets, members, traces, versions
from assay.store.values import EMPTY_HASH

NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
STREAM_BATCH = 1000


@dataclass(frozen=True)
class DatasetRow:
    """A ``datasets`` row with its latest version's count and hash."""

    dataset_id: int
    info: DatasetInfo

    @property
    def name(self) -> str:
        """The dataset's name."""
        return self.info.name


def check_name(name: str, *, kind: str = "dataset") -> None:
    """Refuse a ``kind`` (dataset, judge) name that is not ``[A-Za-z0-9_][A-Za-z0-9_.-]*``
    (≤ 200 characters).

    Raises:
        StoreError: naming the rule.
    """
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or len(name) > 200:
        raise StoreError(
            f"invalid {kind} name {name!r}: use letters, digits, '_', '.' and '-', "
            "not starting with '.' or '-' (at most 200 characters)"
        )


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def version_info(row: Row[Any], dataset: str) -> VersionInfo:
    """A ``versions`` row as a :class:`VersionInfo`."""
    return VersionInfo(
        number=row.number,
        created_at=_time(row.created_at),
        item_count=row.item_count,
        content_hash=row.content_hash,
        operation=cast(Operation, row.operation),
        added=row.added,
        removed=row.removed,
        dataset=dataset,
        origin=row.origin,
    )


def _dataset_query() -> Any:
    return select(
        datasets,
        versions.c.item_count,
        versions.c.content_hash,
        versions.c.created_at.label("v_at"),
    ).outerjoin(
        versions,
        and_(
            versions.c.dataset_id == datasets.c.dataset_id,
            versions.c.number == datasets.c.current_version,
        ),
    )


def _dataset_row(row: Row[Any]) -> DatasetRow:
    info = DatasetInfo(
        name=row.name,
        schema=schema_from_json(row.schema_json),
        id_field=row.id_field,
        current_version=row.current_version,
        created_at=_time(row.created_at),
        item_count=row.item_count or 0,
        content_hash=row.content_hash or EMPTY_HASH,
        updated_at=_time(row.updated_at),
    )
    return DatasetRow(dataset_id=row.dataset_id, info=info)


def get_dataset(connection: Connection, name: str, *, for_update: bool = False) -> DatasetRow:
    """The dataset called ``name``; ``for_update`` locks its row (PostgreSQL) until commit.

    Raises:
        StoreError: no such dataset (with a "did you mean" hint).
    """
    if for_update:
        connection.execute(
            select(datasets.c.dataset_id).where(datasets.c.name == name).with_for_update()
        )
    row = connection.execute(_dataset_query().where(datasets.c.name == name)).first()
    if row is None:
        names = connection.execute(select(datasets.c.name)).scalars().all()
        hint = did_you_mean(name, names) or (
            None if names else "create one: assay dataset create NAME --schema FILE"
        )
        raise StoreError(f"no dataset named '{name}' in the store", hint=hint)
    return _dataset_row(row)


def list_datasets(connection: Connection) -> list[DatasetInfo]:
    """Every dataset, by name."""
    rows = connection.execute(_dataset_query().order_by(datasets.c.name))
    return [_dataset_row(row).info for row in rows]


def list_versions(connection: Connection, dataset: DatasetRow) -> list[VersionInfo]:
    """Every version of ``dataset``, oldest first."""
    rows = connection.execute(
        select(versions)
        .where(versions.c.dataset_id == dataset.dataset_id)
        .order_by(versions.c.number)
    )
    return [version_info(row, dataset.name) for row in rows]


def _versions_text(current: int) -> str:
    if current == 1:
        return "its only version is 1"
    return f"its versions are 1 to {current}"


def resolve_version(connection: Connection, dataset: DatasetRow, number: int | None) -> VersionInfo:
    """Version ``number`` of ``dataset`` (``None``: the latest).

    Raises:
        StoreError: the dataset has no versions yet, or none with that number (naming the
            versions that exist).
    """
    current = dataset.info.current_version
    if current == 0:
        raise StoreError(
            f"dataset '{dataset.name}' has no versions yet",
            hint=f"add examples first: assay dataset add {dataset.name} FILE",
        )
    wanted = current if number is None else number
    row = None
    if isinstance(wanted, int) and not isinstance(wanted, bool) and 1 <= wanted <= current:
        row = connection.execute(
            select(versions).where(
                versions.c.dataset_id == dataset.dataset_id, versions.c.number == wanted
            )
        ).first()
    if row is None:
        raise StoreError(
            f"dataset '{dataset.name}' has no version {number}; {_versions_text(current)}"
        )
    return version_info(row, dataset.name)


def stream_examples(
    connection: Connection, dataset: DatasetRow, number: int, *, inline_traces: bool
) -> Iterator[Example]:
    """The examples of version ``number`` in insertion order, fetched in batches."""
    query = (
        select(members.c.example_id, members.c.data)
        .where(
            members.c.dataset_id == dataset.dataset_id,
            members.c.added_in <= number,
            or_(members.c.removed_in.is_(None), members.c.removed_in > number),
        )
        .order_by(members.c.member_id)
        .execution_options(stream_results=True, yield_per=STREAM_BATCH)
    )
    pointer = dataset.info.schema.pointer_field if inline_traces else None
    result = connection.execute(query)
    for position, (example_id, text) in enumerate(result):
        data = json.loads(text)
        if pointer is not None:
            data[pointer] = get_trace(connection, data[pointer])
        yield Example(example_id=example_id, data=data, position=position)


def get_trace(connection: Connection, trace_id: str) -> dict[str, Any]:
    """The stored OTLP JSON object of a trace or session.

    Raises:
        StoreError: no trace or session with that id.
    """
    body = connection.execute(
        select(traces.c.body).where(traces.c.trace_id == trace_id)
    ).scalar_one_or_none()
    if body is None:
        raise StoreError(f"no trace or session with id '{trace_id}' in the store")
    trace: dict[str, Any] = json.loads(body)
    return trace


def stream_by_id(
    connection: Connection, dataset: DatasetRow, number: int
) -> Iterator[tuple[str, str]]:
    """``(example_id, data as stored JSON)`` of version ``number``, ordered by id byte by
    byte (``COLLATE "C"`` on PostgreSQL, SQLite's default), in batches."""
    example_id = members.c.example_id
    order = example_id.collate("C") if connection.dialect.name == "postgresql" else example_id
    query = (
        select(example_id, members.c.data)
        .where(
            members.c.dataset_id == dataset.dataset_id,
            members.c.added_in <= number,
            or_(members.c.removed_in.is_(None), members.c.removed_in > number),
        )
        .order_by(order)
        .execution_options(stream_results=True, yield_per=STREAM_BATCH)
    )
    for found_id, text in connection.execute(query):  # rows become plain tuples
        yield str(found_id), str(text)


def diff_versions(
    left: Iterator[tuple[str, str]], right: Iterator[tuple[str, str]]
) -> tuple[list[str], list[str], dict[str, list[str]], int]:
    """Merge two id-ordered streams: ``(added, removed, changed → fields, unchanged)``."""
    added: list[str] = []
    removed: list[str] = []
    changed: dict[str, list[str]] = {}
    unchanged = 0
    a, b = next(left, None), next(right, None)
    while a is not None or b is not None:
        if b is None or (a is not None and _key(a[0]) < _key(b[0])):
            assert a is not None
            removed.append(a[0])
            a = next(left, None)
        elif a is None or _key(b[0]) < _key(a[0]):
            added.append(b[0])
            b = next(right, None)
        else:
            data_a, data_b = json.loads(a[1]), json.loads(b[1])
            if data_a == data_b:
                unchanged += 1
            else:
                keys = list(dict.fromkeys([*data_a, *data_b]))
                changed[a[0]] = [k for k in keys if data_a.get(k, _GONE) != data_b.get(k, _GONE)]
            a, b = next(left, None), next(right, None)
    return added, removed, changed, unchanged


_GONE = object()


def _key(example_id: str) -> bytes:
    return example_id.encode("utf-8", "surrogatepass")


def open_member_ids(
    connection: Connection, dataset: DatasetRow, example_ids: Sequence[str]
) -> set[str]:
    """Which of ``example_ids`` are members of ``dataset``'s latest version."""
    found: set[str] = set()
    wanted = list(dict.fromkeys(example_ids))
    for start in range(0, len(wanted), STREAM_BATCH):
        rows = connection.execute(
            select(members.c.example_id).where(
                members.c.dataset_id == dataset.dataset_id,
                members.c.removed_in.is_(None),
                members.c.example_id.in_(wanted[start : start + STREAM_BATCH]),
            )
        )
        found.update(row.example_id for row in rows)
    return found
