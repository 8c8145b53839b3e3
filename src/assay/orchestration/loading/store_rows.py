"""Rows from the store: ``dataset: {store: NAME, version: N}`` as a row source.

The version is resolved once, when the plan is built (the latest when ``version`` is absent),
and recorded with its content hash in ``plan.json``, ``run.json`` and every ``suite.json``, so
a later edit of the dataset cannot change what a run says it evaluated; a resumed run reads
the recorded version again. A row is the example's data plus its id under the store's id field
(and under the task's ``id_field`` when that differs and the data has no such field); a
``trace`` or ``session`` field holds the stored trace's id.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.data.rows import Rows, RowSource

if TYPE_CHECKING:  # the store (SQLAlchemy) is imported only by tasks that read it
    from assay.store import Store, VersionInfo


@dataclass(frozen=True)
class StoreSource:
    """Where a task's rows came from in the store.

    Attributes:
        url: the store URL (as opened; may hold a password, never written to reports).
        shown_url: ``url`` with any password hidden.
        name: the dataset.
        version: the version read.
        pointer_field: the dataset's ``trace``/``session`` field, if it has one.
        pointer_kind: ``trace`` or ``session`` (the type of that field), else ``None``.
    """

    url: str
    shown_url: str
    name: str
    version: VersionInfo
    pointer_field: str | None
    pointer_kind: str | None = None


def read_store_rows(
    name: str, *, version: int | None, id_field: str, url: str | None
) -> tuple[Rows, StoreSource]:
    """Every example of ``name@version`` (latest when ``None``) as rows, in insertion order.

    Raises:
        StoreError: unknown store, dataset or version (naming the versions that exist), its
            ``field`` the task file's that names what is missing (``dataset.store`` or
            ``dataset.version``).
    """
    from assay.errors import StoreError
    from assay.store import open_store
    from assay.store.engine import display_url, resolve_url, sqlite_path

    resolved_url = resolve_url(url)
    path = sqlite_path(resolved_url)
    if path is not None and not path.exists():  # reading never creates an empty store
        raise StoreError(
            f"no store at {path} (dataset '{name}' was asked for)",
            hint="run from the folder that holds .assay/store.db, or give --store URL / "
            "$ASSAY_STORE; assay dataset create makes a store",
            field="dataset.store",
        )
    store = open_store(resolved_url)
    try:
        try:
            info = store.dataset(name)
        except StoreError as exc:  # the message names the store: it depends on --store/cwd
            raise StoreError(f"{exc.message} at {display_url(resolved_url)}", hint=exc.hint,
                             field="dataset.store") from None  # fmt: skip
        try:
            pinned = store.resolve(name, version)
        except StoreError as exc:
            raise StoreError(exc.message, hint=exc.hint, field="dataset.version") from None
        rows = Rows()
        source = RowSource(f"store {name}@{pinned.number}", 0, array("l"))
        rows.sources.append(source)
        for example in store.iter_examples(name, pinned.number):
            rows.items.append(_row(example.data, example.example_id, info.id_field, id_field))
            source.lines.append(example.position + 1)
    finally:
        store.close()
    pointer = info.schema.pointer_field
    kind = info.schema.fields[pointer] if pointer is not None else None
    return rows, StoreSource(resolved_url, display_url(resolved_url), name, pinned, pointer, kind)


def _row(data: dict[str, Any], example_id: str, store_id: str, task_id: str) -> dict[str, Any]:
    row = {store_id: example_id, **data} if store_id not in data else dict(data)
    if task_id not in row:
        row[task_id] = example_id
    return row


def trace_reader(url: str) -> Store:
    """A store handle to read traces from while a run grades trace-backed rows."""
    from assay.store import open_store

    return open_store(url)
