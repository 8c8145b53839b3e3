"""``Store.put``: a small batch as one version, where a row whose id is a member with other
content replaces it (the human labels of ``assay view`` are saved this way); earlier versions
keep what they had, the content hash follows, and two puts at once both land."""

from __future__ import annotations

import threading

import pytest

from assay.errors import StoreError
from assay.store import Schema, Store
from assay.store.values import EMPTY_HASH, combine, example_digest

SCHEMA = Schema({"label": "string", "n": "number"})


def rows_of(store: Store, version: int | None = None) -> dict[str, dict[str, object]]:
    return {e.example_id: e.data for e in store.iter_examples("d", version)}


def test_put_adds_replaces_and_skips_in_one_version(store: Store) -> None:
    store.create_dataset("d", SCHEMA)
    first = store.put("d", [{"id": "a", "label": "pass", "n": 1},
                            {"id": "b", "label": "fail", "n": 2}])  # fmt: skip
    assert (first.number, first.operation, first.added, first.removed) == (1, "add", 2, 0)
    second = store.put("d", [{"id": "a", "label": "fail", "n": 1},   # replaced
                             {"id": "b", "label": "fail", "n": 2},   # same: skipped
                             {"id": "c", "label": "pass", "n": 3}])  # new  # fmt: skip
    assert (second.number, second.operation, second.added, second.removed) == (2, "replace", 2, 1)
    assert second.unchanged == 1 and second.item_count == 3
    assert rows_of(store, 1) == {"a": {"label": "pass", "n": 1}, "b": {"label": "fail", "n": 2}}
    assert rows_of(store, 2) == {"a": {"label": "fail", "n": 1}, "b": {"label": "fail", "n": 2},
                                 "c": {"label": "pass", "n": 3}}  # fmt: skip
    expected = EMPTY_HASH
    for example_id, data in rows_of(store, 2).items():
        expected = combine(expected, add=example_digest(example_id, data))
    assert second.content_hash == expected == store.resolve("d").content_hash
    again = store.put("d", [{"id": "c", "label": "pass", "n": 3}])
    assert again.created is False and again.number == 2 and again.unchanged == 1
    assert [v.number for v in store.versions("d")] == [1, 2]


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        ([], "no examples"),
        ([{"id": "a", "label": "x", "n": 1}, {"id": "a", "label": "y", "n": 1}], "twice"),
        ([{"id": "a", "label": 3, "n": 1}], "label"),
        ([{"id": "a", "label": "x", "n": 1, "extra": 1}], "extra"),
    ],
)
def test_put_refuses_bad_batches_and_writes_nothing(
    store: Store, rows: list[dict[str, object]], words: str
) -> None:
    store.create_dataset("d", SCHEMA)
    store.put("d", [{"id": "z", "label": "pass", "n": 0}])
    with pytest.raises(StoreError) as caught:
        store.put("d", rows)
    assert words in str(caught.value)
    assert [v.number for v in store.versions("d")] == [1]


def test_puts_from_threads_at_once_lose_no_batch(store: Store, store_url: str) -> None:
    """Eight writers, each its own Store (own connections), put at once; every batch is a
    version and the latest version holds every row, the replaced ones with their last
    content."""
    store.create_dataset("d", SCHEMA)
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def writer(number: int) -> None:
        own = Store(store_url)
        try:
            start.wait()
            own.put("d", [{"id": f"w{number}", "label": "pass", "n": number},
                          {"id": "shared", "label": f"by {number}", "n": number}])  # fmt: skip
        except BaseException as exc:
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [v.number for v in store.versions("d")] == list(range(1, 9))
    latest = rows_of(store)
    assert {k for k in latest if k != "shared"} == {f"w{n}" for n in range(8)}
    last = store.versions("d")[-1]
    assert latest["shared"]["n"] in range(8) and last.item_count == 9
