"""What the store returns, and the located row it takes: frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from assay.store.schema import Schema

Operation = Literal["add", "remove", "replace"]


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset.

    Attributes:
        name: the dataset's name (unique in the store).
        schema: its typed fields.
        id_field: the row field whose value becomes the example id (default ``id``).
        current_version: the latest version number; 0 until the first add.
        created_at: creation time (UTC).
        item_count: examples in the latest version (0 before the first add).
        content_hash: the latest version's content hash (64 hex digits; zeros when empty).
        updated_at: time of the latest version, or of creation / the last schema edit.
    """

    name: str
    schema: Schema
    id_field: str
    current_version: int
    created_at: datetime
    item_count: int = 0
    content_hash: str = "0" * 64
    updated_at: datetime | None = None

    @property
    def schema_locked(self) -> bool:
        """Whether the schema can no longer change (true from the first add on)."""
        return self.current_version > 0

    def to_json(self) -> dict[str, Any]:
        """As JSON data (``assay dataset list --json``): times in ISO 8601."""
        return {
            "name": self.name,
            "schema": self.schema.to_dict(),
            "id_field": self.id_field,
            "current_version": self.current_version,
            "item_count": self.item_count,
            "content_hash": self.content_hash,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
        }


@dataclass(frozen=True)
class VersionInfo:
    """One version: a membership snapshot that never changes.

    Attributes:
        number: 1, 2, ...
        created_at: when the batch that made it committed (UTC).
        item_count: examples in this version.
        content_hash: order-independent hash of its examples (:mod:`assay.store.values`).
        operation: ``add``, ``remove``, or ``replace`` (a :meth:`~assay.store.Store.put`
            that replaced members with new content).
        added: examples the batch added (0 for a remove; replacements included).
        removed: examples the batch removed (0 for an add; those a ``replace`` replaced).
        dataset: the dataset's name.
        origin: where an add's rows came from (file names), if known.
        created: on the version an ``add`` returns: ``False`` when every row was already
            present with the same content, so no version was made (this is the latest).
        unchanged: on the version an ``add`` returns: rows of the batch already present with
            the same content, skipped.
        renamed: on the version an ``add`` with ``on_conflict="new_id"`` returns: the ids
            taken by other content → the new ids their rows were added under.
    """

    number: int
    created_at: datetime
    item_count: int
    content_hash: str
    operation: Operation
    added: int
    removed: int
    dataset: str = ""
    origin: str | None = None
    created: bool = field(default=True, compare=False)
    unchanged: int = field(default=0, compare=False)
    renamed: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def ref(self) -> str:
        """``name@N``."""
        return f"{self.dataset}@{self.number}"

    def to_json(self) -> dict[str, Any]:
        """As JSON data (``assay dataset versions --json``): times in ISO 8601."""
        return {
            "dataset": self.dataset,
            "number": self.number,
            "created_at": self.created_at.isoformat(),
            "item_count": self.item_count,
            "content_hash": self.content_hash,
            "operation": self.operation,
            "added": self.added,
            "removed": self.removed,
            "origin": self.origin,
        }


@dataclass(frozen=True)
class Example:
    """One example of a version.

    Attributes:
        example_id: its id (the id field's value, or one made from the row's content:
            :func:`assay.store.rows.content_id`).
        data: every schema field, in the key order it was added with; a trace or session
            field holds its id, or the OTLP JSON object when traces are inlined.
        position: 0-based place in the version (insertion order).
    """

    example_id: str
    data: dict[str, Any]
    position: int


@dataclass(frozen=True)
class RemoveResult:
    """What ``remove`` did: the ids removed and the version it created."""

    removed_example_ids: list[str]
    version_created: int
    version: VersionInfo


@dataclass(frozen=True)
class SourceRow:
    """A row with where it came from, so errors name the file and line.

    Attributes:
        data: the row as read (for CSV, already converted by the schema).
        origin: the file it came from, as it should appear in messages.
        line: 1-based line (JSONL, CSV) or row number (Parquet).
        base_dir: the folder relative trace/session paths are resolved against.
    """

    data: dict[str, Any]
    origin: str | None = None
    line: int | None = None
    base_dir: Path | None = None

    @property
    def where(self) -> str:
        """``file:line``, ``file``, ``row N`` or ``""``."""
        if self.origin:
            return self.origin + (f":{self.line}" if self.line else "")
        return f"row {self.line}" if self.line else ""


@dataclass(frozen=True)
class DatasetDiff:
    """What changed from version ``a`` to version ``b`` (of one dataset or two), by id.

    Attributes:
        a, b: the two versions compared.
        added: ids in ``b`` only.
        removed: ids in ``a`` only.
        changed: ids in both whose data differs, each with the fields that differ.
        unchanged: how many ids are in both with equal data.
    """

    a: VersionInfo
    b: VersionInfo
    added: list[str]
    removed: list[str]
    changed: dict[str, list[str]]
    unchanged: int

    @property
    def same(self) -> bool:
        """Nothing was added, removed or changed."""
        return not (self.added or self.removed or self.changed)
