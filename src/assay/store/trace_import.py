"""``assay dataset add-traces`` for Python: a trace file's cases into a dataset."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from assay.results.io import Writer
from assay.store.capture import CaptureResult, capture, parse_mapping
from assay.store.store import open_store
from assay.store.trace_cases import SESSION_SCHEMA, TRACE_SCHEMA, read_trace_file, trace_cases


def add_traces_to_dataset(
    name: str,
    file: str | Path,
    *,
    mapping: Sequence[str] | dict[str, str] = (),
    session_by: str | None = None,
    store: str | None = None,
) -> CaptureResult:
    """Add the traces of an OTLP JSON file (one object, or JSON lines) as examples of dataset
    ``name`` (created when missing), one per trace or, with ``session_by`` (a span
    attribute), one per session (``assay dataset add-traces``). What is stored is redacted
    with the secrets of this process's environment.

    Args:
        mapping: ``FIELD=SOURCE`` items (or a dict) naming where each field's value comes
            from (:func:`~assay.store.capture.parse_mapping`).
        store: the store URL (``None``: ``$ASSAY_STORE``, else ``.assay/store.db``).

    Raises:
        UsageError: a missing file, a bad mapping. StoreError: a line that is not OTLP JSON,
            traces without the session attribute, a value that does not fit its field.
    """
    fields = dict(mapping) if isinstance(mapping, dict) else parse_mapping(mapping)
    path = Path(file)
    cases = trace_cases(read_trace_file(path), origin=str(path), session_by=session_by)
    schema = SESSION_SCHEMA if session_by else TRACE_SCHEMA
    writer = Writer.from_environment(os.environ)
    with open_store(store) as opened:
        return capture(opened, name, cases, mapping=fields, default_schema=schema,
                       origin=str(path), writer=writer)  # fmt: skip
