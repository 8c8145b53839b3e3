"""Cases from a file of OTLP traces written elsewhere (``assay dataset add-traces``).

The file holds OTLP JSON (``ExportTraceServiceRequest``): one object, or one object per line
(JSONL, as the OpenTelemetry Collector's file exporter writes it). Every distinct
``traceId`` is one case (id: the trace id); with ``session_by`` (a span attribute such as
``session.id`` or ``gen_ai.conversation.id``) the traces that share its value are one
session-backed case (id: that value), ordered by start time.

Sources a case offers (:mod:`assay.store.capture`): ``trace`` (the trace, or the session's
traces), ``trace_id``, ``input`` and ``output`` (the GenAI attributes
:func:`assay.store.traces.trace_input` and :func:`~assay.store.traces.final_output` read; a
session's output is its whole conversation), and ``attr.<name>`` for every span attribute
(the root span's value first).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from assay.errors import StoreError, UsageError
from assay.results.trace import attribute, iter_spans, split_traces
from assay.store.capture import Captured
from assay.store.schema import Schema
from assay.store.traces import conversation, final_output, merge, otlp_problem, trace_input

TRACE_SCHEMA = Schema({"input": "string", "actual_output": "string", "trace": "trace"})
ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
SESSION_SCHEMA = Schema({"input": "string", "actual_output": "string", "session": "session"})


def read_trace_file(path: Path) -> list[dict[str, Any]]:
    """The OTLP objects of ``path`` (one JSON object, or JSON lines).

    Raises:
        UsageError: a missing file. StoreError: a line that is not JSON or not OTLP JSON
            (with the file and line).
    """
    if not path.is_file():
        raise UsageError(f"trace file not found: {path}")
    text = path.read_text(encoding="utf-8-sig")
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        _check(whole, path, None)
        return [whole]
    objects = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise StoreError(f"not JSON: {exc.msg}", file=path, line=number) from None
        _check(item, path, number)
        objects.append(item)
    if not objects:
        raise StoreError("the file holds no trace", file=path)
    return objects


def _check(item: Any, path: Path, line: int | None) -> None:
    problem = otlp_problem(item)
    if problem is not None:
        raise StoreError(
            problem,
            file=path,
            line=line,
            hint="a line is one OTLP ExportTraceServiceRequest JSON object",
        )


def attributes(trace: dict[str, Any]) -> dict[str, Any]:
    """``attr.<name>`` → value for every span attribute of ``trace`` (root spans first)."""
    spans = list(iter_spans(trace))
    ids = {s.get("spanId") for s in spans}
    roots = [s for s in spans if not s.get("parentSpanId") or s.get("parentSpanId") not in ids]
    found: dict[str, Any] = {}
    for span in roots + [s for s in spans if s not in roots]:
        for item in span.get("attributes") or []:
            key = item.get("key") if isinstance(item, dict) else None
            if isinstance(key, str) and f"attr.{key}" not in found:
                found[f"attr.{key}"] = attribute(span, key)
    return found


def trace_cases(
    objects: list[dict[str, Any]], *, origin: str, session_by: str | None = None
) -> list[Captured]:
    """One case per trace (or per session, with ``session_by``), in start order.

    Raises:
        StoreError: with ``session_by``, traces without that attribute (the first named).
    """
    parts = split_traces(merge(objects))
    if session_by is None:
        return [_case(part, str(next(iter_spans(part))["traceId"]), origin) for part in parts]
    sessions: dict[str, list[dict[str, Any]]] = {}
    missing = []
    for part in parts:
        value = next(
            (
                attribute(s, session_by)
                for s in iter_spans(part)
                if attribute(s, session_by) is not None
            ),
            None,
        )
        if value is None:
            missing.append(str(next(iter_spans(part))["traceId"]))
            continue
        sessions.setdefault(str(value), []).append(part)
    if missing:
        raise StoreError(
            f"{len(missing)} trace(s) in {origin} have no '{session_by}' "
            f"attribute (first: {missing[0]}), so they belong to no session",
            hint="give --session-by the attribute that names the session",
        )
    return [
        _case(merge(members), safe_id(key), origin, first=members[0])
        for key, members in sessions.items()
    ]


def safe_id(value: str) -> str:
    """``value`` as an example id a task accepts as a row id (letters, digits, ``_.-``, not
    starting with ``.`` or ``-``): other characters become ``_`` and a hash of the value is
    appended, so distinct values stay distinct."""
    if ID.fullmatch(value):
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    cleaned = re.sub(r"[^A-Za-z0-9_.\-]", "_", value).lstrip(".-")[:150]
    return f"{cleaned or 'session'}-{digest}"


def _case(
    trace: dict[str, Any], case_id: str, origin: str, *, first: dict[str, Any] | None = None
) -> Captured:
    session = first is not None
    values: dict[str, Any] = {
        **attributes(trace),
        "trace": trace,
        "trace_id": case_id,
        "input": trace_input(first if first is not None else trace),
        "output": conversation(trace) if session else final_output(trace),
    }
    kind = "session" if session else "trace"
    return Captured(
        case_id,
        values,
        f"{origin} ({kind} {case_id})",
        output_source="output",
        input_source="input",
    )
