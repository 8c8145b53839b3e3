"""``assay dataset create | add | remove | import | schema``: writing the versioned dataset
store, one command per verb of :class:`assay.store.Store` (the reading verbs are in
:mod:`assay.cli.dataset_read`, what they share in :mod:`assay.cli.shared.dataset_support`).

Every command takes ``--store URL`` (default ``$ASSAY_STORE``, else
``sqlite:///.assay/store.db``); bad input exits 2 with the message of its ``StoreError``.
The store package is imported only when a dataset command runs, so other commands start fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from assay.cli.shared.common import user_errors, warn
from assay.cli.shared.dataset_support import (
    AsJson,
    IdField,
    Name,
    StoreUrl,
    added_text,
    fields_text,
    open_store,
    out,
    print_json,
    version_line,
)
from assay.errors import UsageError


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
    from assay.store.files import schema_from

    with user_errors():
        chosen = schema_from(schema_file=schema, infer_from=infer_from, id_field=id_field)
        with open_store(store) as opened:
            info = opened.create_dataset(name, chosen, id_field=id_field)
    out().print(
        f"created dataset {info.name} (fields: {fields_text(info.schema)}; id field "
        f"{info.id_field}); it has no version until the first add",
        markup=False,
    )


def add(
    name: Name,
    files: Annotated[list[Path], typer.Argument(help="JSONL, CSV or Parquet files.")],
    store: StoreUrl = None,
) -> None:
    """Add the rows of FILES as one new version."""
    from assay.store.files import row_id_warning

    with user_errors(), open_store(store) as opened:
        version = opened.add_files(name, files)
        found = row_id_warning(opened, name, version.number)
    out().print(added_text(version), markup=False)
    if found:
        warn(found)


def remove(
    name: Name,
    ids: Annotated[list[str] | None, typer.Argument(help="Example ids to remove.")] = None,
    ids_from: Annotated[
        Path | None, typer.Option("--ids-from", help="A file with one example id per line.")
    ] = None,
    store: StoreUrl = None,
) -> None:
    """Remove examples from the latest version, as one new version."""
    from assay.store.files import read_id_list

    with user_errors():
        wanted = list(ids or []) + (read_id_list(ids_from) if ids_from else [])
        if not wanted:
            raise UsageError("give the example ids to remove, or --ids-from FILE")
        with open_store(store) as opened:
            result = opened.remove(name, wanted)
    console = out()
    console.print(
        f"removed {len(result.removed_example_ids)} example(s) from {name}: "
        + ", ".join(result.removed_example_ids),
        markup=False,
    )
    console.print(f"version created: {version_line(result.version)}", markup=False)


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
    from assay.store import load_schema
    from assay.store.files import check_files, row_id_warning
    from assay.store.files import import_file as import_rows

    with user_errors():
        check_files([file])
        given = load_schema(schema) if schema else None
        with open_store(store) as opened:
            chosen, version = import_rows(opened, name, file, schema=given, id_field=id_field)
            found = row_id_warning(opened, name, version.number)
    out().print(
        f"imported {version.added} example(s) (fields: {fields_text(chosen)}): "
        + version_line(version),
        markup=False,
    )
    if found:
        warn(found)


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

    with user_errors(), open_store(store) as opened:
        if set_file is not None:
            info = opened.set_schema(name, load_schema(set_file))
        else:
            info = opened.dataset(name)
    data = info.schema.to_dict()
    if as_json:
        print_json(data)
    else:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
