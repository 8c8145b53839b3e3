"""Opening a store: the URL, the SQLAlchemy engine, write transactions, first-use tables.

The URL is, in order: the one given (``--store``), ``$ASSAY_STORE``, or
``sqlite:///.assay/store.db`` under the working directory. ``postgresql://`` and
``postgres://`` mean ``postgresql+psycopg://`` (psycopg 3, extra ``postgres``).

Writers never lose each other's batches:

- SQLite: WAL journal; a write transaction starts with ``BEGIN IMMEDIATE`` (taking the write
  lock at once, so two writers queue instead of failing on upgrade) and waits up to
  ``SQLITE_BUSY_TIMEOUT_S`` for it; readers use plain ``BEGIN`` and never block writers.
- PostgreSQL: a write transaction locks its dataset's row (``SELECT … FOR UPDATE``) before
  reading the current version; table creation takes a transaction-level advisory lock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, select, text, update
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.pool import StaticPool

from assay.errors import StoreError
from assay.install import install_hint
from assay.store.tables import STORE_SCHEMA_VERSION, metadata, store_meta

DEFAULT_STORE_URL = "sqlite:///.assay/store.db"
STORE_ENV = "ASSAY_STORE"
SQLITE_BUSY_TIMEOUT_S = 600
_WRITE = "assay_write"
_PG_CREATE_LOCK = 0x61737361  # "assa": serialises first-use table creation


def resolve_url(url: str | None = None) -> str:
    """The store URL to use: ``url``, else ``$ASSAY_STORE``, else the default SQLite file.

    A relative SQLite path is made absolute (against the working directory), so the URL a
    run records names the same file from any folder it is resumed or reported from.
    """
    chosen = url or os.environ.get(STORE_ENV) or DEFAULT_STORE_URL
    for prefix in ("postgresql://", "postgres://"):
        if chosen.startswith(prefix):
            return "postgresql+psycopg://" + chosen[len(prefix) :]
    path = sqlite_path(chosen)
    if path is not None and not path.is_absolute():
        absolute = make_url(chosen).set(database=str(path.absolute()))
        return absolute.render_as_string(hide_password=False)
    return chosen


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite store URL (as SQLAlchemy parses it, any ``sqlite+driver``), or
    ``None``: another backend, an in-memory database, or text that is not a URL."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    return Path(database)


def display_url(url: str) -> str:
    """``url`` with any password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def parsed_url(url: str) -> URL:
    """``url`` parsed, without opening anything (a command checks its ``--store`` with it
    before it starts).

    Raises:
        StoreError: it is not a SQLAlchemy URL (a bare path), with the forms that are.
    """
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise StoreError(
            f"invalid store URL {url!r}: {exc}",
            hint="a store is a SQLAlchemy URL: sqlite:////absolute/path/store.db (four "
            "slashes), sqlite:///relative/store.db, or postgresql+psycopg://user@host/db",
        ) from None


def make_engine(url: str) -> Engine:
    """An engine for ``url`` (see :func:`resolve_url`), with the locking described above.

    Raises:
        StoreError: the URL cannot be parsed, names an unknown backend, or needs a driver
            that is not installed (PostgreSQL: ``pip install 'assay[postgres]'``).
    """
    parsed = parsed_url(url)
    try:
        if parsed.get_backend_name() == "sqlite":
            return _sqlite_engine(parsed.database)
        return create_engine(parsed)
    except ModuleNotFoundError as exc:
        raise StoreError(
            f"the store URL {display_url(url)} needs the Python module '{exc.name}'",
            hint=install_hint("postgres") + " for PostgreSQL (psycopg 3)",
        ) from None
    except NoSuchModuleError:
        raise StoreError(
            f"unknown store backend in {display_url(url)}",
            hint="use sqlite:///path/store.db or postgresql+psycopg://user:pass@host/db",
        ) from None


def _sqlite_engine(database: str | None) -> Engine:
    memory = not database or database == ":memory:"
    if not memory:
        Path(str(database)).parent.mkdir(parents=True, exist_ok=True)
    connect_args = {"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False}
    if memory:
        engine = create_engine("sqlite://", connect_args=connect_args, poolclass=StaticPool)
    else:
        engine = create_engine(f"sqlite:///{database}", connect_args=connect_args)
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # we emit BEGIN ourselves (see _sqlite_begin)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000}")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    mode = "IMMEDIATE" if connection.get_execution_options().get(_WRITE) else "DEFERRED"
    connection.exec_driver_sql(f"BEGIN {mode}")


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection inside one write transaction: committed on exit, rolled back on error."""
    with engine.connect() as connection:
        connection.execution_options(**{_WRITE: True})
        with connection.begin():
            yield connection


@contextmanager
def read_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection inside one read transaction (a consistent snapshot)."""
    with engine.connect() as connection, connection.begin():
        yield connection


def is_postgres(connection: Connection) -> bool:
    """Whether ``connection`` talks to PostgreSQL."""
    return connection.dialect.name == "postgresql"


def ensure_tables(engine: Engine) -> None:
    """Create the tables on first use (and those an older store lacks); refuse a store
    written by a newer assay.

    Raises:
        StoreError: the database cannot be reached, or its ``store_meta.schema_version`` is
            newer than this assay's.
    """
    try:
        with read_transaction(engine) as connection:
            if _current_schema_version(connection) == STORE_SCHEMA_VERSION:
                return
        with write_transaction(engine) as connection:
            if is_postgres(connection):
                connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_CREATE_LOCK})
            metadata.create_all(connection, checkfirst=True)
            found = _current_schema_version(connection)
            if found is None:
                connection.execute(
                    store_meta.insert().values(
                        key="schema_version", value=str(STORE_SCHEMA_VERSION)
                    )
                )
            elif found < STORE_SCHEMA_VERSION:  # the new tables were just created
                connection.execute(
                    update(store_meta)
                    .where(store_meta.c.key == "schema_version")
                    .values(value=str(STORE_SCHEMA_VERSION))
                )
            elif found > STORE_SCHEMA_VERSION:
                raise StoreError(
                    f"the store at {display_url(str(engine.url))} has schema version {found}; "
                    f"this assay reads version {STORE_SCHEMA_VERSION}",
                    hint="upgrade assay",
                )
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise StoreError(
            f"cannot open the store at {display_url(str(engine.url))}: {reason}"
        ) from None


def _current_schema_version(connection: Connection) -> int | None:
    if not inspect(connection).has_table("store_meta"):
        return None
    value = connection.execute(
        select(store_meta.c.value).where(store_meta.c.key == "schema_version")
    ).scalar_one_or_none()
    return int(value) if value is not None else None
