"""``assay dataset …``: the versioned dataset store, one command per verb of :mod:`assay.store`.

Every command takes ``--store URL`` (default ``$ASSAY_STORE``, else
``sqlite:///.assay/store.db``); bad input exits 2 with the message of its ``StoreError``.
The store package is imported only when a dataset command runs, so other commands start fast.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.errors import UsageError, UserError

if TYPE_CHECKING:
    from assay.store import DatasetInfo, Schema, Store, VersionInfo

dataset_app = typer.Typer(
    name="dataset",
    help="The versioned, schema-typed dataset store: create, add, remove, list, versions, "
    "show, export, import, schema.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

StoreUrl = Annotated[
    str | None,
    typer.Option("--store", help="Store URL (default: $ASSAY_STORE, else "
                 "sqlite:///.assay/store.db)."),
]  # fmt: skip
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
Name = Annotated[str, typer.Argument(help="The dataset's name.")]
Ref = Annotated[str, typer.Argument(help="NAME or NAME@N (default: the latest version).")]
IdField = Annotated[str, typer.Option("--id-field", help="The row field that holds example ids.")]
InlineTraces = Annotated[
    bool,
    typer.Option("--inline-traces",
                 help="Put each stored trace (OTLP JSON) in its field instead of its id."),
]  # fmt: skip

_REF = re.compile(r"(?P<name>[^@]+)(@v?(?P<version>[0-9]+))?")
HASH_SHOWN = 12


def _out() -> Console:
    """Standard output; tables get 160 columns when it is not a terminal."""
    return Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)


@contextmanager
def _user_errors() -> Iterator[None]:
    """Print a :class:`UserError` as the rest of the CLI does, and exit 2."""
    try:
        yield
    except UserError as exc:
        from assay.cli.app import fail

        raise fail(exc) from None


@contextmanager
def _opened(url: str | None) -> Iterator[Store]:
    from assay.store import open_store

    store = open_store(url)
    try:
        yield store
    finally:
        store.close()


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


def _hash(value: str) -> str:
    return value[:HASH_SHOWN]


def _dataset_json(info: DatasetInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "schema": info.schema.to_dict(),
        "id_field": info.id_field,
        "current_version": info.current_version,
        "item_count": info.item_count,
        "content_hash": info.content_hash,
        "created_at": info.created_at.isoformat(),
        "updated_at": info.updated_at.isoformat() if info.updated_at else None,
    }


def _version_json(version: VersionInfo) -> dict[str, Any]:
    return {
        "dataset": version.dataset,
        "number": version.number,
        "created_at": version.created_at.isoformat(),
        "item_count": version.item_count,
        "content_hash": version.content_hash,
        "operation": version.operation,
        "added": version.added,
        "removed": version.removed,
        "origin": version.origin,
    }


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _version_line(version: VersionInfo) -> str:
    return f"{version.ref} · {version.item_count} example(s) · hash {_hash(version.content_hash)}"


def _fields_text(schema: Schema) -> str:
    return ", ".join(f"{name} {kind}" for name, kind in schema.fields.items())


def _schema_from(schema_file: Path | None, infer_from: Path | None, id_field: str) -> Schema:
    from assay.store import load_schema
    from assay.store.infer import schema_of_file

    if (schema_file is None) == (infer_from is None):
        raise UsageError("give exactly one of --schema FILE and --infer-from FILE")
    if schema_file is not None:
        return load_schema(schema_file)
    assert infer_from is not None
    return schema_of_file(infer_from, id_field=id_field, display=str(infer_from))


@dataset_app.command()
def create(
    name: Name,
    schema: Annotated[
        Path | None, typer.Option("--schema", help="A schema file (YAML or JSON).")
    ] = None,
    infer_from: Annotated[
        Path | None,
        typer.Option("--infer-from", help="Infer the schema from this JSONL/CSV/Parquet file."),
    ] = None,
    id_field: IdField = "id",
    store: StoreUrl = None,
) -> None:
    """Create an empty dataset with a schema (no version until the first add)."""
    with _user_errors():
        chosen = _schema_from(schema, infer_from, id_field)
        with _opened(store) as opened:
            info = opened.create_dataset(name, chosen, id_field=id_field)
    _out().print(
        f"created dataset {info.name} (fields: {_fields_text(info.schema)}; id field "
        f"{info.id_field}); it has no version until the first add",
        markup=False,
    )


def _check_files(files: list[Path]) -> None:
    from assay.store.sources import file_format

    for path in files:
        file_format(path)
        if not path.is_file():
            raise UsageError(f"Dataset file not found: {path}")


@dataset_app.command()
def add(
    name: Name,
    files: Annotated[list[Path], typer.Argument(help="JSONL, CSV or Parquet files.")],
    store: StoreUrl = None,
) -> None:
    """Add the rows of FILES as one new version."""
    from assay.store import read_rows

    with _user_errors(), _opened(store) as opened:
        _check_files(files)
        info = opened.dataset(name)
        rows = itertools.chain.from_iterable(
            read_rows(path, schema=info.schema, id_field=info.id_field, display=str(path))
            for path in files
        )
        version = opened.add(name, rows)
    _out().print(f"added {version.added} example(s): {_version_line(version)}", markup=False)


def _ids_from(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the id list: {exc}", file=path) from None
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]


@dataset_app.command()
def remove(
    name: Name,
    ids: Annotated[list[str] | None, typer.Argument(help="Example ids to remove.")] = None,
    ids_from: Annotated[
        Path | None, typer.Option("--ids-from", help="A file with one example id per line.")
    ] = None,
    store: StoreUrl = None,
) -> None:
    """Remove examples from the latest version, as one new version."""
    with _user_errors():
        wanted = list(ids or []) + (_ids_from(ids_from) if ids_from else [])
        if not wanted:
            raise UsageError("give the example ids to remove, or --ids-from FILE")
        with _opened(store) as opened:
            result = opened.remove(name, wanted)
    console = _out()
    console.print(
        f"removed {len(result.removed_example_ids)} example(s) from {name}: "
        + ", ".join(result.removed_example_ids),
        markup=False,
    )
    console.print(f"version created: {_version_line(result.version)}", markup=False)


@dataset_app.command("list")
def list_datasets(store: StoreUrl = None, as_json: AsJson = False) -> None:
    """List the datasets of the store."""
    with _user_errors(), _opened(store) as opened:
        infos = opened.datasets()
    if as_json:
        _print_json([_dataset_json(info) for info in infos])
        return
    table = Table("dataset", "version", "examples", "fields", "id field", "updated")
    for info in infos:
        stamp = info.updated_at or info.created_at
        table.add_row(
            Text(info.name), str(info.current_version), str(info.item_count),
            Text(_fields_text(info.schema)), Text(info.id_field),
            stamp.strftime("%Y-%m-%d %H:%M:%S"),
        )  # fmt: skip
    _out().print(table if infos else "no datasets in the store")


@dataset_app.command()
def versions(name: Name, store: StoreUrl = None, as_json: AsJson = False) -> None:
    """List the versions of a dataset, oldest first."""
    with _user_errors(), _opened(store) as opened:
        found = opened.versions(name)
    if as_json:
        _print_json([_version_json(version) for version in found])
        return
    table = Table("version", "created (UTC)", "operation", "added", "removed", "examples",
                  "hash", "origin")  # fmt: skip
    for version in found:
        table.add_row(
            str(version.number), version.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            version.operation, str(version.added), str(version.removed),
            str(version.item_count), _hash(version.content_hash), Text(version.origin or ""),
        )  # fmt: skip
    _out().print(table if found else f"dataset {name} has no versions yet")


def _cell(value: Any, width: int = 60) -> Text:
    if isinstance(value, str):
        shown = value.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
    else:
        shown = json.dumps(value, ensure_ascii=False)
    return Text(shown if len(shown) <= width else shown[: width - 1] + "…")


@dataset_app.command()
def show(
    ref: Ref,
    limit: Annotated[int, typer.Option("--limit", min=0, help="Examples to show.")] = 20,
    inline_traces: InlineTraces = False,
    store: StoreUrl = None,
    as_json: AsJson = False,
) -> None:
    """Show a version (default: the latest) and its first examples."""
    with _user_errors():
        name, number = parse_ref(ref)
        with _opened(store) as opened:
            version = opened.resolve(name, number)
            info = opened.dataset(name)
            stream = opened.iter_examples(name, version.number, inline_traces=inline_traces)
            examples = list(itertools.islice(stream, limit))
            stream.close()
    if as_json:
        _print_json({**_version_json(version), "id_field": info.id_field,
                     "schema": info.schema.to_dict(),
                     "examples": [{"example_id": e.example_id, "data": e.data}
                                  for e in examples]})  # fmt: skip
        return
    console = _out()
    console.print(_version_line(version), markup=False)
    table = Table(info.id_field, *info.schema.fields)
    for example in examples:
        table.add_row(Text(example.example_id), *(_cell(example.data[f]) for f in info.schema))
    console.print(table)
    if version.item_count > len(examples):
        console.print(f"… {version.item_count - len(examples)} more (--limit)", markup=False)


def _export_to(opened: Store, name: str, version: int, fmt: str, out: Any, *, inline: bool) -> int:
    from assay.store.export import write_csv, write_jsonl, write_parquet

    info = opened.dataset(name)

    def examples() -> Iterator[Any]:
        return opened.iter_examples(name, version, inline_traces=inline)

    if fmt == "jsonl":
        return write_jsonl(examples(), out, id_field=info.id_field)
    if fmt == "csv":
        return write_csv(examples(), out, schema=info.schema, id_field=info.id_field)
    return write_parquet(examples, out, schema=info.schema, id_field=info.id_field)


def _export_file(
    opened: Store, name: str, version: int, fmt: str, output: Path, *, inline: bool
) -> int:
    """Write to ``output`` through a ``.partial`` file renamed at the end (or removed)."""
    partial = output.with_name(output.name + ".partial")
    try:
        with partial.open("wb") as handle:
            count = _export_to(opened, name, version, fmt, handle, inline=inline)
        os.replace(partial, output)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return count


def _format_of(fmt: str | None, output: Path | None) -> str:
    from assay.store.sources import FORMATS, file_format

    chosen = fmt or (file_format(output) if output else "jsonl")
    if chosen not in FORMATS:
        raise UsageError(f"unknown format {chosen!r}; use jsonl, csv or parquet")
    if chosen == "parquet" and output is None:
        raise UsageError("Parquet is binary: give the output file with -o FILE")
    return chosen


@dataset_app.command()
def export(
    ref: Ref,
    fmt: Annotated[
        str | None, typer.Option("--format", help="jsonl, csv or parquet (default: from -o).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here (default: stdout).")
    ] = None,
    inline_traces: InlineTraces = False,
    store: StoreUrl = None,
) -> None:
    """Export a version (default: the latest) as JSONL, CSV or Parquet."""
    with _user_errors():
        name, number = parse_ref(ref)
        chosen = _format_of(fmt, output)
        with _opened(store) as opened:
            version = opened.resolve(name, number)
            if output is None:
                _export_to(opened, name, version.number, chosen, sys.stdout.buffer,
                           inline=inline_traces)  # fmt: skip
                sys.stdout.buffer.flush()
                return
            count = _export_file(opened, name, version.number, chosen, output,
                                 inline=inline_traces)  # fmt: skip
    _out().print(f"wrote {count} example(s) of {version.ref} to {output}", markup=False)


@dataset_app.command("import")
def import_file(
    name: Name,
    file: Annotated[Path, typer.Argument(help="A JSONL, CSV or Parquet file.")],
    schema: Annotated[
        Path | None,
        typer.Option("--schema", help="A schema file (default: inferred from FILE)."),
    ] = None,
    id_field: IdField = "id",
    store: StoreUrl = None,
) -> None:
    """Create a dataset from a file: its schema (given or inferred) and its rows as v1."""
    from assay.store import load_schema, read_rows
    from assay.store.infer import schema_of_file

    with _user_errors():
        _check_files([file])
        chosen = load_schema(schema) if schema else schema_of_file(
            file, id_field=id_field, display=str(file))  # fmt: skip
        rows = read_rows(file, schema=chosen, id_field=id_field, display=str(file))
        with _opened(store) as opened:
            version = opened.import_dataset(name, chosen, rows, id_field=id_field)
    _out().print(
        f"imported {version.added} example(s) (fields: {_fields_text(chosen)}): "
        + _version_line(version),
        markup=False,
    )


@dataset_app.command("schema")
def schema_command(
    name: Name,
    set_file: Annotated[
        Path | None,
        typer.Option("--set", help="Replace the schema (only before the first add)."),
    ] = None,
    store: StoreUrl = None,
    as_json: AsJson = False,
) -> None:
    """Print a dataset's schema, or replace it with --set FILE while it has no examples."""
    import yaml

    from assay.store import load_schema

    with _user_errors(), _opened(store) as opened:
        if set_file is not None:
            info = opened.set_schema(name, load_schema(set_file))
        else:
            info = opened.dataset(name)
    data = info.schema.to_dict()
    if as_json:
        _print_json(data)
    else:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
