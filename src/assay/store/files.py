"""The store's verbs on files: add or import JSONL/CSV/Parquet files, export a version to
one, a schema from a file, ``NAME@N`` references and id lists (``assay dataset …`` and
:class:`assay.store.Store` call these)."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from assay.errors import UsageError
from assay.spec.ids import row_id_problem
from assay.store.export import write_csv, write_jsonl, write_parquet
from assay.store.infer import schema_of_file
from assay.store.models import DatasetInfo, Example, SourceRow, VersionInfo
from assay.store.schema import Schema, load_schema
from assay.store.sources import FORMATS, file_format, read_rows

_REF = re.compile(r"(?P<name>[^@]+)(@v?(?P<version>[0-9]+))?")


class RowStore(Protocol):
    """What these verbs need of :class:`assay.store.store.Store` (a structural type, so
    this module does not import the class whose methods call it)."""

    def dataset(self, name: str) -> DatasetInfo: ...

    def add(self, name: str, rows: Iterable[Mapping[str, Any] | SourceRow]) -> VersionInfo: ...

    def import_dataset(
        self,
        name: str,
        schema: Schema,
        rows: Iterable[Mapping[str, Any] | SourceRow],
        *,
        id_field: str = "id",
    ) -> VersionInfo: ...

    def iter_examples(
        self, name: str, version: int | None = None, *, inline_traces: bool = False
    ) -> Iterator[Example]: ...


def parse_ref(ref: str) -> tuple[str, int | None]:
    """``NAME`` → ``(NAME, None)``; ``NAME@3`` (or ``NAME@v3``) → ``(NAME, 3)``.

    Raises:
        UsageError: anything else after ``@``.
    """
    match = _REF.fullmatch(ref)
    if not match:
        raise UsageError(
            f"invalid dataset reference {ref!r}", hint="write NAME or NAME@N, e.g. sst2@3"
        )
    version = match.group("version")
    return match.group("name"), int(version) if version is not None else None


def schema_from(
    *, schema_file: Path | None = None, infer_from: Path | None = None, id_field: str = "id"
) -> Schema:
    """The schema in ``schema_file`` (YAML or JSON), or inferred from the rows of
    ``infer_from`` (JSONL, CSV or Parquet); exactly one of them.

    Raises:
        UsageError: both or neither given. StoreError: an invalid schema or rows.
    """
    if (schema_file is None) == (infer_from is None):
        raise UsageError("give exactly one of --schema FILE and --infer-from FILE")
    if schema_file is not None:
        return load_schema(schema_file)
    assert infer_from is not None
    return schema_of_file(infer_from, id_field=id_field, display=str(infer_from))


def check_files(files: Sequence[Path]) -> None:
    """Every file has a known format (by its suffix) and exists.

    Raises:
        StoreError: an unknown suffix. UsageError: a missing file.
    """
    for path in files:
        file_format(path)
        if not path.is_file():
            raise UsageError(f"Dataset file not found: {path}")


def add_files(store: RowStore, name: str, files: Sequence[Path]) -> VersionInfo:
    """Add the rows of ``files``, read with the dataset's schema, as one new version.

    Raises:
        UsageError, StoreError: a missing or unreadable file, a row that breaks the schema
            (file, line, id, field); nothing is written then.
    """
    check_files(files)
    info = store.dataset(name)
    rows = itertools.chain.from_iterable(
        read_rows(path, schema=info.schema, id_field=info.id_field, display=str(path))
        for path in files
    )
    return store.add(name, rows)


def import_file(
    store: RowStore, name: str, file: Path, *, schema: Schema | None = None, id_field: str = "id"
) -> tuple[Schema, VersionInfo]:
    """Create dataset ``name`` from ``file``: its schema (``schema``, else inferred from the
    file) and its rows as version 1. Returns the schema used and the version.

    Raises:
        UsageError, StoreError: as :func:`add_files`, or a taken name; nothing exists then.
    """
    check_files([file])
    chosen = schema or schema_of_file(file, id_field=id_field, display=str(file))
    rows = read_rows(file, schema=chosen, id_field=id_field, display=str(file))
    return chosen, store.import_dataset(name, chosen, rows, id_field=id_field)


def row_id_warning(store: RowStore, name: str, version: int) -> str | None:
    """What a task over version ``version`` of ``name`` would refuse: its example ids that
    cannot name a row-task (:func:`assay.spec.ids.row_id_problem`), counted, the first one's
    problem shown, with the fix; ``None`` when every id can."""
    count, first = 0, None
    for example in store.iter_examples(name, version):
        problem = row_id_problem(example.example_id)
        if problem is not None:
            count += 1
            first = first or problem
    if first is None:
        return None
    return (f"{count} example id(s) of {name}@{version} cannot name a row-task, so a task over "
            f"this dataset refuses it ({first}); import the rows with --id-field naming a "
            "field whose values fit, or set the task's dataset.id_field to one")  # fmt: skip


def read_id_list(path: Path) -> list[str]:
    """The example ids of ``path``, one per line (blank lines skipped).

    Raises:
        UsageError: the file cannot be read as UTF-8 text.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the id list: {exc}", file=path) from None
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]


def export_format(fmt: str | None, output: Path | None) -> str:
    """The export format: ``fmt``, else from ``output``'s suffix, else ``jsonl``.

    Raises:
        UsageError: an unknown format, or Parquet without an output file.
        StoreError: ``output`` has an unknown suffix and no format was given.
    """
    chosen = fmt or (file_format(output) if output else "jsonl")
    if chosen not in FORMATS:
        raise UsageError(f"unknown format {chosen!r}; use jsonl, csv or parquet")
    if chosen == "parquet" and output is None:
        raise UsageError("Parquet is binary: give the output file with -o FILE")
    return chosen


def export_to(
    store: RowStore, name: str, version: int, fmt: str, out: IO[bytes], *, inline: bool = False
) -> int:
    """Write version ``version`` of ``name`` to the binary stream ``out`` in ``fmt``
    (``jsonl``, ``csv`` or ``parquet``); returns how many examples were written.

    Raises:
        StoreError: no such dataset or version; Parquet without ``pyarrow``.
    """
    info = store.dataset(name)

    def examples() -> Iterator[Example]:
        return store.iter_examples(name, version, inline_traces=inline)

    if fmt == "jsonl":
        return write_jsonl(examples(), out, id_field=info.id_field)
    if fmt == "csv":
        return write_csv(examples(), out, schema=info.schema, id_field=info.id_field)
    return write_parquet(examples, out, schema=info.schema, id_field=info.id_field)


def export_file(
    store: RowStore, name: str, version: int, fmt: str, output: Path, *, inline: bool = False
) -> int:
    """:func:`export_to` into ``output``, through a ``.partial`` file renamed at the end (or
    removed, so a failed export leaves no half file).

    Raises:
        UsageError: ``output`` cannot be written. StoreError: as :func:`export_to`.
    """
    partial = output.with_name(output.name + ".partial")
    try:
        with partial.open("wb") as handle:
            count = export_to(store, name, version, fmt, handle, inline=inline)
        os.replace(partial, output)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return count
