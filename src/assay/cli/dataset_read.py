"""``assay dataset list | versions | show | diff | export``: reading the store (the module
:mod:`assay.cli.dataset` has the writing verbs and what every dataset command shares)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from assay.store.models import DatasetDiff

from assay.cli.shared.common import user_errors
from assay.cli.shared.dataset_support import (
    AsJson,
    InlineTraces,
    Name,
    Ref,
    StoreUrl,
    datasets_table,
    diff_summary,
    open_store,
    out,
    print_examples,
    print_json,
    versions_table,
)


def list_datasets(store: StoreUrl = None, as_json: AsJson = False) -> None:
    """List the datasets of the store."""
    with user_errors(), open_store(store) as opened:
        infos = opened.datasets()
    if as_json:
        print_json([info.to_json() for info in infos])
        return
    out().print(datasets_table(infos) if infos else "no datasets in the store")


def versions(name: Name, store: StoreUrl = None, as_json: AsJson = False) -> None:
    """List the versions of a dataset, oldest first."""
    with user_errors(), open_store(store) as opened:
        found = opened.versions(name)
    if as_json:
        print_json([version.to_json() for version in found])
        return
    out().print(versions_table(found) if found else f"dataset {name} has no versions yet")


def show(
    ref: Ref,
    limit: Annotated[int, typer.Option("--limit", min=0, help="Examples to show.")] = 20,
    inline_traces: InlineTraces = False,
    store: StoreUrl = None,
    as_json: AsJson = False,
) -> None:
    """Show a version (default: the latest) and its first examples."""
    from assay.store.files import parse_ref

    with user_errors():
        name, number = parse_ref(ref)
        with open_store(store) as opened:
            version = opened.resolve(name, number)
            info = opened.dataset(name)
            stream = opened.iter_examples(name, version.number, inline_traces=inline_traces)
            examples = list(itertools.islice(stream, limit))
            stream.close()
    if as_json:
        print_json({**version.to_json(), "id_field": info.id_field,
                     "schema": info.schema.to_dict(),
                     "examples": [{"example_id": e.example_id, "data": e.data}
                                  for e in examples]})  # fmt: skip
        return
    print_examples(version, info, examples)


def export(
    ref: Ref,
    fmt: Annotated[
        str | None, typer.Option("--format", help="jsonl, csv or parquet (default: from -o).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here (default, or -: stdout).")
    ] = None,
    inline_traces: InlineTraces = False,
    store: StoreUrl = None,
) -> None:
    """Export a version (default: the latest) as JSONL, CSV or Parquet."""
    from assay.results.io import check_output_file
    from assay.store.files import export_format, parse_ref

    if output is not None and str(output) == "-":  # the convention of every Unix tool
        output = None
    with user_errors():
        name, number = parse_ref(ref)
        if output is not None:
            check_output_file(output, "--output")
        chosen = export_format(fmt, output)
        with open_store(store) as opened:
            version = opened.resolve(name, number)
            count = opened.export(name, output or sys.stdout.buffer, version=version.number,
                                  format=chosen, inline_traces=inline_traces)  # fmt: skip
    if output is None:
        sys.stdout.buffer.flush()
        return
    out().print(f"wrote {count} example(s) of {version.ref} to {output}", markup=False)


def diff(
    ref_a: Annotated[str, typer.Argument(help="NAME@N (or NAME: the latest).")],
    ref_b: Annotated[str, typer.Argument(help="NAME@N (or NAME: the latest).")],
    limit: Annotated[int, typer.Option("--limit", min=0, help="Ids to list per kind.")] = 20,
    store: StoreUrl = None,
    as_json: AsJson = False,
    exit_code: Annotated[
        bool, typer.Option("--exit-code", help="Exit 1 when the versions differ (as diff).")
    ] = False,
) -> None:
    """Show the examples added, removed and changed (by id) between two versions.

    Exits 0 (with --exit-code: 0 when they hold the same examples, 1 when they differ), 2
    on bad input."""
    from assay.store.files import parse_ref

    with user_errors():
        (name_a, number_a), (name_b, number_b) = parse_ref(ref_a), parse_ref(ref_b)
        with open_store(store) as opened:
            found = opened.diff(name_a, number_a, name_b, number_b)
    if as_json:
        print_json({"a": found.a.to_json(), "b": found.b.to_json(), "added": found.added,
                    "removed": found.removed, "changed": found.changed,
                    "unchanged": found.unchanged})  # fmt: skip
    else:
        _print_diff(found, limit)
    if exit_code and (found.added or found.removed or found.changed):
        raise typer.Exit(1)


def _print_diff(found: DatasetDiff, limit: int) -> None:
    console = out()
    console.print(diff_summary(found), markup=False)
    for kind, ids in (("added", found.added), ("removed", found.removed),
                      ("changed", list(found.changed))):  # fmt: skip
        for example_id in ids[:limit]:
            fields = f" ({', '.join(found.changed[example_id])})" if kind == "changed" else ""
            console.print(f"  {kind:<8} {example_id}{fields}", markup=False)
        if len(ids) > limit:
            console.print(f"  … {len(ids) - limit} more {kind} (--limit)", markup=False)
