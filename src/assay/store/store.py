"""The :class:`Store`: the Python API that ``assay dataset …`` calls, verb for verb."""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from assay.errors import StoreError
from assay.store import files as files_verbs
from assay.store import judges as judge_rows
from assay.store import reads, writes
from assay.store.engine import (
    display_url,
    ensure_tables,
    make_engine,
    read_transaction,
    resolve_url,
    write_transaction,
)
from assay.store.judges import CalibrationRecord, JudgeRecord
from assay.store.models import (
    DatasetDiff,
    DatasetInfo,
    Example,
    RemoveResult,
    SourceRow,
    VersionInfo,
)
from assay.store.schema import Schema
from assay.store.writes import OnConflict


@contextmanager
def _database_errors(engine: Engine) -> Iterator[None]:
    """Turn the database's refusals into :class:`StoreError` naming the store."""
    try:
        yield
    except (IntegrityError, OperationalError) as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise StoreError(f"the store at {display_url(str(engine.url))} refused: {reason}") from exc


class Store:
    """A versioned, schema-typed dataset store on one database (SQLite or PostgreSQL).

    Close it (or use it as a context manager) when done. ``assay dataset <verb>`` calls the
    method of the same name.

    Args:
        url: a SQLAlchemy URL; ``None`` means ``$ASSAY_STORE``, else
            ``sqlite:///.assay/store.db`` under the working directory. Its tables are
            created on first use.

    Raises:
        StoreError: bad URL, missing driver, unreachable database, or a newer store schema.
    """

    def __init__(self, url: str | None = None) -> None:
        self._engine = make_engine(resolve_url(url))
        ensure_tables(self._engine)

    @property
    def url(self) -> str:
        """The store's URL, password hidden."""
        return display_url(str(self._engine.url))

    def close(self) -> None:
        """Release the database connections."""
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def create_dataset(self, name: str, schema: Schema, *, id_field: str = "id") -> DatasetInfo:
        """Create an empty dataset (no version until the first add).

        Args:
            name: ``[A-Za-z0-9_][A-Za-z0-9_.-]*``, at most 200 characters, unique.
            schema: its fields; editable with :meth:`set_schema` until the first add.
            id_field: the row field whose value becomes the example id; not a schema field.

        Raises:
            StoreError: invalid name, taken name, or the schema declares ``id_field``.
        """
        with _database_errors(self._engine), write_transaction(self._engine) as connection:
            writes.create(connection, name, schema, id_field)
        return self.dataset(name)

    def set_schema(self, name: str, schema: Schema) -> DatasetInfo:
        """Replace the schema of a dataset that has no examples yet.

        Raises:
            StoreError: unknown dataset, or its schema is locked (it has had examples).
        """
        with _database_errors(self._engine), write_transaction(self._engine) as connection:
            writes.set_schema(connection, name, schema)
        return self.dataset(name)

    def dataset(self, name: str) -> DatasetInfo:
        """The dataset called ``name``.

        Raises:
            StoreError: no such dataset (with a "did you mean" hint).
        """
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            return reads.get_dataset(connection, name).info

    def datasets(self) -> list[DatasetInfo]:
        """Every dataset, by name."""
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            return reads.list_datasets(connection)

    def add(
        self,
        name: str,
        rows: Iterable[Mapping[str, Any] | SourceRow],
        *,
        origin: str | None = None,
        base_dir: Path | None = None,
        on_conflict: OnConflict = "refuse",
    ) -> VersionInfo:
        """Add a batch of examples as exactly one new version, in one transaction.

        Args:
            name: the dataset.
            rows: dicts (field → value, plus the id field if any) or :class:`SourceRow`
                (which carries its own file, line and base folder); consumed once, as a
                stream, so a million rows need not be in memory.
            origin: the file the dict rows came from, for messages and the version record.
            base_dir: where relative trace/session paths of dict rows are resolved
                (default: the working directory).
            on_conflict: a row whose id is a member with other content is refused
                (``refuse``: nothing is written) or added under a new id (``new_id``: the id,
                ``~`` and 8 hex digits of its content's sha256; the result's ``renamed``
                lists them).

        Returns:
            The version created.

        Raises:
            StoreError: a row breaks the schema (naming file, line, example id and field),
                an id is already a member or repeats in the batch, or there are no rows;
                nothing is written.
        """
        with _database_errors(self._engine), write_transaction(self._engine) as connection:
            return writes.add(
                connection, name, rows, origin=origin, base_dir=base_dir, on_conflict=on_conflict
            )

    def put(
        self, name: str, rows: Sequence[Mapping[str, Any]], *, origin: str | None = None
    ) -> VersionInfo:
        """Add a small batch of examples as exactly one new version, a row whose id is
        already a member with other content replacing it (the new version has the new
        content; earlier versions keep the old). Concurrent puts never lose one another:
        each runs in one transaction with the dataset locked and builds on the latest
        version, so two batches become two versions, the later holding both.

        Args:
            name: the dataset.
            rows: dicts (field → value, plus the id field), held in memory.
            origin: what the rows came from, for the version record.

        Returns:
            The version created (``operation`` ``replace`` when a member was replaced), or
            the latest with ``created`` false when every row was present with the same
            content.

        Raises:
            StoreError: a row breaks the schema (naming the example and field), an id
                repeats in the batch, or there are no rows; nothing is written.
        """
        with _database_errors(self._engine), write_transaction(self._engine) as connection:
            return writes.put(connection, name, rows, origin=origin)

    def import_dataset(
        self,
        name: str,
        schema: Schema,
        rows: Iterable[Mapping[str, Any] | SourceRow],
        *,
        id_field: str = "id",
        origin: str | None = None,
        base_dir: Path | None = None,
    ) -> VersionInfo:
        """Create a dataset and add ``rows`` as its version 1, all in one transaction.

        Raises:
            StoreError: as :meth:`create_dataset` and :meth:`add`; on error nothing exists.
        """
        with _database_errors(self._engine), write_transaction(self._engine) as connection:
            writes.create(connection, name, schema, id_field)
            return writes.add(connection, name, rows, origin=origin, base_dir=base_dir)

    def remove(self, name: str, example_ids: Sequence[str]) -> RemoveResult:
        """Remove examples from the latest version, as exactly one new version.

        Repeated ids count once. Earlier versions keep the removed examples.

        Returns:
            ``removed_example_ids`` (in the order given) and ``version_created``.

        Raises:
            StoreError: no ids, or ids that are not in the latest version (all named;
                nothing changes).
        """
        with _database_errors(self._engine), write_transaction(self._engine) as connection:
            return writes.remove(connection, name, example_ids)

    def versions(self, name: str) -> list[VersionInfo]:
        """Every version of the dataset, oldest (1) first; empty before the first add."""
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            return reads.list_versions(connection, reads.get_dataset(connection, name))

    def resolve(self, name: str, version: int | None = None) -> VersionInfo:
        """Version ``version`` of the dataset, or its latest when ``None``.

        Raises:
            StoreError: unknown dataset, no versions yet, or no such version (naming the
                versions that exist).
        """
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            dataset = reads.get_dataset(connection, name)
            return reads.resolve_version(connection, dataset, version)

    def iter_examples(
        self, name: str, version: int | None = None, *, inline_traces: bool = False
    ) -> Generator[Example, None, None]:
        """Stream the examples of one version (``None``: the latest), in insertion order,
        in constant memory.

        The dataset and version are checked now (raising :class:`StoreError`); rows are
        fetched in batches as the iterator is consumed, on a connection it holds until it
        is exhausted or closed.

        Args:
            inline_traces: put the stored OTLP JSON object in the trace/session field
                instead of its id.
        """
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            dataset = reads.get_dataset(connection, name)
            number = reads.resolve_version(connection, dataset, version).number
        return self._stream(dataset, number, inline_traces)

    def _stream(
        self, dataset: reads.DatasetRow, version: int, inline_traces: bool
    ) -> Generator[Example, None, None]:
        with read_transaction(self._engine) as connection:
            yield from reads.stream_examples(
                connection, dataset, version, inline_traces=inline_traces
            )

    def add_files(self, name: str, files: Sequence[str | Path]) -> VersionInfo:
        """Add the rows of JSONL, CSV or Parquet ``files`` (read with the dataset's schema)
        as one new version.

        Raises:
            UsageError: a missing file. StoreError: as :meth:`add`, or an unreadable file.
        """
        return files_verbs.add_files(self, name, [Path(f) for f in files])

    def import_file(
        self, name: str, file: str | Path, *, schema: Schema | None = None, id_field: str = "id"
    ) -> VersionInfo:
        """Create dataset ``name`` from ``file``: its schema (``schema``, else inferred from
        the file) and its rows as version 1.

        Raises:
            UsageError: a missing file. StoreError: as :meth:`import_dataset`.
        """
        chosen = files_verbs.import_file(self, name, Path(file), schema=schema, id_field=id_field)
        return chosen[1]

    def export(
        self,
        name: str,
        output: str | Path | IO[bytes],
        *,
        version: int | None = None,
        format: str | None = None,
        inline_traces: bool = False,
    ) -> int:
        """Write a version (default: the latest) to ``output``, a file (written whole or not
        at all) or a binary stream, as ``format`` (``jsonl``, ``csv`` or ``parquet``; for a
        file, default from its suffix). Returns how many examples were written.

        Raises:
            UsageError: an unknown format, Parquet to a stream, an unwritable file.
            StoreError: no such dataset or version; Parquet without ``pyarrow``.
        """
        path = Path(output) if isinstance(output, (str, Path)) else None
        fmt = files_verbs.export_format(format, path)
        number = self.resolve(name, version).number
        if path is not None:
            return files_verbs.export_file(self, name, number, fmt, path, inline=inline_traces)
        assert not isinstance(output, (str, Path))
        return files_verbs.export_to(self, name, number, fmt, output, inline=inline_traces)

    def diff(
        self, name_a: str, version_a: int | None, name_b: str, version_b: int | None
    ) -> DatasetDiff:
        """What changed from ``name_a@version_a`` to ``name_b@version_b`` (``None``: the
        latest), by example id: added, removed, changed (with the fields that differ) and how
        many are unchanged. Both versions are streamed in id order, in constant memory.

        Raises:
            StoreError: an unknown dataset or version.
        """
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            dataset_a = reads.get_dataset(connection, name_a)
            dataset_b = reads.get_dataset(connection, name_b)
            a = reads.resolve_version(connection, dataset_a, version_a)
            b = reads.resolve_version(connection, dataset_b, version_b)
            added, removed, changed, unchanged = reads.diff_versions(
                reads.stream_by_id(connection, dataset_a, a.number),
                reads.stream_by_id(connection, dataset_b, b.number),
            )
        return DatasetDiff(a, b, added, removed, changed, unchanged)

    def get_trace(self, trace_id: str) -> dict[str, Any]:
        """The stored OTLP JSON object of a trace or session id.

        Raises:
            StoreError: no such trace or session.
        """
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            return reads.get_trace(connection, trace_id)

    def member_ids(self, name: str, example_ids: Sequence[str]) -> set[str]:
        """Which of ``example_ids`` are members of the dataset's latest version.

        Raises:
            StoreError: no such dataset.
        """
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            dataset = reads.get_dataset(connection, name)
            return reads.open_member_ids(connection, dataset, example_ids)

    def add_judge(
        self,
        name: str,
        definition: dict[str, Any],
        content_hash: str,
        *,
        origin: str | None = None,
    ) -> tuple[JudgeRecord, bool]:
        """Store ``definition`` as judge ``name``'s next version, unless its content hash
        equals the latest version's.

        Returns:
            The version (new, or the unchanged latest) and whether it was created.

        Raises:
            StoreError: an invalid name.
        """
        with _database_errors(self._engine), write_transaction(self._engine) as connection:
            return judge_rows.add_judge(connection, name, definition, content_hash,
                                        origin=origin, now=writes.now_text())  # fmt: skip

    def judge(self, name: str, version: int | None = None) -> JudgeRecord:
        """Version ``version`` of judge ``name`` (the latest when ``None``).

        Raises:
            StoreError: no such judge or version.
        """
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            return judge_rows.get_judge(connection, name, version)

    def judges(self) -> list[JudgeRecord]:
        """The latest version of every judge, by name."""
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            return judge_rows.list_judges(connection)

    def judge_versions(self, name: str) -> list[JudgeRecord]:
        """Every version of judge ``name``, oldest first.

        Raises:
            StoreError: no such judge.
        """
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            return judge_rows.judge_versions(connection, name)

    def add_calibration(self, record: dict[str, Any], report: dict[str, Any]) -> CalibrationRecord:
        """Store a calibration (see :func:`assay.store.judges.add_calibration`)."""
        with _database_errors(self._engine), write_transaction(self._engine) as connection:
            return judge_rows.add_calibration(connection, record, report, now=writes.now_text())

    def calibrations(
        self, *, judge_hash: str | None = None, judge_name: str | None = None
    ) -> list[CalibrationRecord]:
        """Stored calibrations of a judge's content hash or name, newest first."""
        with _database_errors(self._engine), read_transaction(self._engine) as connection:
            return judge_rows.find_calibrations(connection, judge_hash=judge_hash,
                                                judge_name=judge_name)  # fmt: skip


def open_store(url: str | None = None) -> Store:
    """Open (and on first use create) the store at ``url``.

    Args:
        url: a SQLAlchemy URL; ``None`` means ``$ASSAY_STORE``, else
            ``sqlite:///.assay/store.db`` under the working directory.

    Raises:
        StoreError: bad URL, missing driver, unreachable database, or a newer store schema.
    """
    return Store(url)
