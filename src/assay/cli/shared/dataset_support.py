"""What the ``assay dataset …`` commands share: their options, the opened store, and how
they print datasets, versions and examples (tables and JSON)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.results.secrets import clip_head

if TYPE_CHECKING:
    from assay.store import DatasetDiff, DatasetInfo, Example, Schema, Store, VersionInfo

HASH_SHOWN = 12

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


@contextmanager
def open_store(url: str | None) -> Iterator[Store]:
    """The store at ``url``, closed after the block."""
    from assay.store import Store

    store = Store(url)
    try:
        yield store
    finally:
        store.close()


def out() -> Console:
    """Standard output; tables get 160 columns when it is not a terminal."""
    return Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)


def _hash(value: str) -> str:
    return value[:HASH_SHOWN]


def print_json(data: Any) -> None:
    """``data`` as indented JSON on standard output."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def version_line(version: VersionInfo) -> str:
    """``name@N · count example(s) · hash <12 hex>``."""
    return f"{version.ref} · {version.item_count} example(s) · hash {_hash(version.content_hash)}"


def fields_text(schema: Schema) -> str:
    """``text string, label string``."""
    return ", ".join(f"{name} {kind}" for name, kind in schema.fields.items())


def _cell(value: Any, width: int = 60) -> Text:
    if isinstance(value, str):
        shown = value.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
    else:
        shown = json.dumps(value, ensure_ascii=False)
    return Text(clip_head(shown, width))


def datasets_table(infos: list[DatasetInfo]) -> Table:
    """One line per dataset: version, examples, fields, id field, last change."""
    table = Table("dataset", "version", "examples", "fields", "id field", "updated")
    for info in infos:
        stamp = info.updated_at or info.created_at
        table.add_row(
            Text(info.name), str(info.current_version), str(info.item_count),
            Text(fields_text(info.schema)), Text(info.id_field),
            stamp.strftime("%Y-%m-%d %H:%M:%S"),
        )  # fmt: skip
    return table


def versions_table(found: list[VersionInfo]) -> Table:
    """One line per version, oldest first."""
    table = Table("version", "created (UTC)", "operation", "added", "removed", "examples",
                  "hash", "origin")  # fmt: skip
    for version in found:
        table.add_row(
            str(version.number), version.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            version.operation, str(version.added), str(version.removed),
            str(version.item_count), _hash(version.content_hash), Text(version.origin or ""),
        )  # fmt: skip
    return table


def print_examples(version: VersionInfo, info: DatasetInfo, examples: list[Example]) -> None:
    """A version's line, a table of ``examples``, and how many more there are."""
    console = out()
    console.print(version_line(version), markup=False)
    table = Table(info.id_field, *info.schema.fields)
    for example in examples:
        table.add_row(Text(example.example_id), *(_cell(example.data[f]) for f in info.schema))
    console.print(table)
    if version.item_count > len(examples):
        console.print(f"… {version.item_count - len(examples)} more (--limit)", markup=False)


def added_text(version: VersionInfo) -> str:
    """What an add did: the version it made, or that the content was already there."""
    if not version.created:
        return (f"nothing added: all {version.unchanged} example(s) are already in "
                f"{version_line(version)} with the same content; no new version")  # fmt: skip
    skipped = (f" ({version.unchanged} already present with the same content, skipped)"
               if version.unchanged else "")  # fmt: skip
    return f"added {version.added} example(s){skipped}: {version_line(version)}"


def diff_summary(found: DatasetDiff) -> str:
    """``a@1 (hash …) → a@3 (hash …): 2 added, 1 removed, 1 changed, 6 unchanged``."""
    counts = (f"{len(found.added)} added, {len(found.removed)} removed, "
              f"{len(found.changed)} changed, {found.unchanged} unchanged")  # fmt: skip
    same = "; the same content" if found.same else ""
    return (f"{found.a.ref} (hash {_hash(found.a.content_hash)}) → {found.b.ref} "
            f"(hash {_hash(found.b.content_hash)}): {counts}{same}")  # fmt: skip
