"""The store's tables (SQLAlchemy Core), created on first use.

```
store_meta  key → value; ``schema_version`` = STORE_SCHEMA_VERSION, for later migrations
datasets    dataset_id, name (unique), schema_json, id_field, current_version, created_at,
            updated_at
versions    (dataset_id, number) → created_at, item_count, content_hash, operation, added,
            removed, origin.  Written once, never updated.
members     member_id (insertion order), dataset_id, example_id, data (JSON text),
            added_in, removed_in.  One row per membership interval: an example belongs to
            version v when added_in <= v and (removed_in is null or removed_in > v).
            Removing sets removed_in; re-adding the id opens a new row. At most one open
            row (removed_in null) per (dataset_id, example_id): a partial unique index.
traces      trace_id → kind (trace | session), body (OTLP JSON text), body_hash, created_at
judges      (name, version) → definition (JSON text), content_hash, created_at, origin.
            Written once, never updated: a changed judge is a new version.
calibrations  calibration_id → judge name, version (null for a judge file) and content hash;
            dataset, dataset version and its content hash; label field; created_at; the
            report (JSON text).  Looked up by the judge's content hash.
```

Schema version 2 added ``judges`` and ``calibrations``; a version-1 store gets them (and its
``schema_version`` raised) the first time a newer assay opens it.

Times are ISO 8601 text in UTC. A batch touches only its own rows, the dataset row and one
new version row, so a version costs what its batch changes, not the dataset's size.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)

STORE_SCHEMA_VERSION = 2

metadata = MetaData()

_Id = BigInteger().with_variant(Integer, "sqlite")  # INTEGER PRIMARY KEY is SQLite's rowid

store_meta = Table(
    "store_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

datasets = Table(
    "datasets",
    metadata,
    Column("dataset_id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("schema_json", Text, nullable=False),
    Column("id_field", Text, nullable=False),
    Column("current_version", Integer, nullable=False, default=0),
    Column("created_at", String(40), nullable=False),
    Column("updated_at", String(40), nullable=False),
)

versions = Table(
    "versions",
    metadata,
    Column("dataset_id", Integer, ForeignKey("datasets.dataset_id"), nullable=False),
    Column("number", Integer, nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("item_count", BigInteger, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("operation", String(16), nullable=False),
    Column("added", BigInteger, nullable=False),
    Column("removed", BigInteger, nullable=False),
    Column("origin", Text, nullable=True),
    PrimaryKeyConstraint("dataset_id", "number"),
)

members = Table(
    "members",
    metadata,
    Column("member_id", _Id, primary_key=True, autoincrement=True),
    Column("dataset_id", Integer, ForeignKey("datasets.dataset_id"), nullable=False),
    Column("example_id", Text, nullable=False),
    Column("data", Text, nullable=False),
    Column("added_in", Integer, nullable=False),
    Column("removed_in", Integer, nullable=True),
    Index("ix_members_order", "dataset_id", "member_id"),
)

Index(
    "ux_members_open",
    members.c.dataset_id,
    members.c.example_id,
    unique=True,
    sqlite_where=members.c.removed_in.is_(None),
    postgresql_where=members.c.removed_in.is_(None),
)

traces = Table(
    "traces",
    metadata,
    Column("trace_id", String(128), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("body", Text, nullable=False),
    Column("body_hash", String(64), nullable=False),
    Column("created_at", String(40), nullable=False),
)

judges = Table(
    "judges",
    metadata,
    Column("name", String(200), nullable=False),
    Column("version", Integer, nullable=False),
    Column("definition", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("origin", Text, nullable=True),
    PrimaryKeyConstraint("name", "version"),
)

calibrations = Table(
    "calibrations",
    metadata,
    Column("calibration_id", String(64), primary_key=True),
    Column("judge_name", String(200), nullable=False),
    Column("judge_version", Integer, nullable=True),
    Column("judge_hash", String(64), nullable=False),
    Column("dataset", String(200), nullable=False),
    Column("dataset_version", Integer, nullable=False),
    Column("dataset_hash", String(64), nullable=False),
    Column("label_field", Text, nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("report", Text, nullable=False),
    Index("ix_calibrations_judge", "judge_hash", "created_at"),
)
