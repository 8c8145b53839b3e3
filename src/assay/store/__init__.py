"""The versioned, schema-typed dataset store (``assay dataset …`` is its command line).

A dataset is a named collection with one typed schema; an example is one of its rows; a
version is a membership snapshot (``name@3``) that never changes. Every batch add or remove
creates exactly one new version; a new dataset has none (``current_version`` 0) until its
first add.

```python
from assay.store import open_store, Schema

store = open_store()        # --store URL / $ASSAY_STORE / sqlite:///.assay/store.db
store.create_dataset("sst2", Schema({"text": "string", "label": "string"}))
v1 = store.add("sst2", [{"id": "s1", "text": "fine .", "label": "positive"}])
store.remove("sst2", ["s1"])                          # → RemoveResult(["s1"], 2, …)
pinned = store.resolve("sst2", 1)                     # VersionInfo: number, content_hash, …
for example in store.iter_examples("sst2", pinned.number):   # streamed, insertion order
    print(example.example_id, example.data)
```

API (all errors about bad input are :class:`assay.errors.StoreError`):

==========================================  ===============================================
``Store(url=None)``, ``open_store(url)``     ``None``: ``$ASSAY_STORE``, else the SQLite file
                                            ``.assay/store.db``; also PostgreSQL
                                            (``postgresql+psycopg://…``, extra ``postgres``)
``create_dataset(name, schema, *,           an empty dataset; ``id_field`` names the row
id_field="id") -> DatasetInfo``             field that holds example ids
``set_schema(name, schema)``                only until the first add; locked after
``dataset(name)``, ``datasets()``           :class:`DatasetInfo`
``add(name, rows, *, origin, base_dir)``    one new version for the whole batch (a
``-> VersionInfo``                          stream of dicts or :class:`SourceRow`); rows
                                            already present with the same content are
                                            skipped (``unchanged``), and a batch of only
                                            those makes no version (``created`` false)
``put(name, rows, *, origin)``              one new version for a small batch; a row
``-> VersionInfo``                          whose id is a member with other content
                                            replaces it (``operation`` ``replace``)
``import_dataset(name, schema, rows, …)``   create + add as version 1, atomically
``remove(name, example_ids)``               one new version; :class:`RemoveResult`
``versions(name)``, ``resolve(name, v)``    :class:`VersionInfo`; ``v=None`` is the latest
``iter_examples(name, version, *,           :class:`Example` (``example_id``, ``data``,
inline_traces=False)``                      ``position``), streamed in constant memory
``add_files``, ``import_file``, ``export``   the verbs on JSONL/CSV/Parquet files
                                            (:mod:`.files`)
``diff(name_a, v_a, name_b, v_b)``          :class:`DatasetDiff`: ids added, removed,
                                            changed (with the fields), unchanged count
``get_trace(trace_id) -> dict``             a stored trace or session (OTLP JSON)
``final_output(trace) -> str | None``       the trace's output text (:mod:`.traces`)
==========================================  ===============================================

Field types, value rules and the content hash: :mod:`assay.store.values`. Schema files:
:mod:`assay.store.schema`; inference: :mod:`assay.store.infer`. Tables and how membership
is stored as intervals: :mod:`assay.store.tables`. Locking: :mod:`assay.store.engine`.
Files in and out: :mod:`assay.store.sources`, :mod:`assay.store.export`.
"""

from assay.errors import StoreError
from assay.store.engine import DEFAULT_STORE_URL, STORE_ENV, resolve_url
from assay.store.infer import infer_schema
from assay.store.models import (
    DatasetDiff,
    DatasetInfo,
    Example,
    RemoveResult,
    SourceRow,
    VersionInfo,
)
from assay.store.run_capture import add_run_to_dataset
from assay.store.schema import FIELD_TYPES, FieldType, Schema, load_schema, parse_schema
from assay.store.sources import read_rows
from assay.store.store import Store, open_store
from assay.store.trace_import import add_traces_to_dataset
from assay.store.traces import final_output

__all__ = [
    "DEFAULT_STORE_URL",
    "FIELD_TYPES",
    "STORE_ENV",
    "DatasetDiff",
    "DatasetInfo",
    "Example",
    "FieldType",
    "RemoveResult",
    "Schema",
    "SourceRow",
    "Store",
    "StoreError",
    "VersionInfo",
    "add_run_to_dataset",
    "add_traces_to_dataset",
    "final_output",
    "infer_schema",
    "load_schema",
    "open_store",
    "parse_schema",
    "read_rows",
    "resolve_url",
]
