"""Reading "the latest version" through every store verb that takes an optional version."""

from __future__ import annotations

import pytest

from assay.errors import StoreError
from assay.store import Schema, Store

SCHEMA = Schema({"text": "string"})


def ids(store: Store, name: str, version: int | None) -> list[str]:
    return [e.example_id for e in store.iter_examples(name, version)]


def test_iter_examples_without_a_version_reads_the_latest_after_adds_and_removes(
    store: Store,
) -> None:
    store.create_dataset("d", SCHEMA)
    store.add("d", [{"id": "a", "text": "1"}, {"id": "b", "text": "2"}])
    assert ids(store, "d", None) == ["a", "b"]
    store.add("d", [{"id": "c", "text": "3"}])
    assert ids(store, "d", None) == ["a", "b", "c"]
    store.remove("d", ["a"])
    assert ids(store, "d", None) == ["b", "c"]
    assert [e.example_id for e in store.iter_examples("d")] == ["b", "c"]
    assert ids(store, "d", 1) == ["a", "b"]


def test_iter_examples_without_a_version_on_an_empty_dataset_is_a_store_error(
    store: Store,
) -> None:
    store.create_dataset("empty", SCHEMA)
    with pytest.raises(StoreError, match="has no versions yet"):
        list(store.iter_examples("empty", None))
