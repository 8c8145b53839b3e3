"""Spans of one agent run, and their OTLP JSON encoding (``trace.json``).

The encoding follows the OpenTelemetry Protocol's JSON mapping (``opentelemetry-proto``,
``ExportTraceServiceRequest``): ``resourceSpans → scopeSpans → spans``; trace and span ids
are lowercase hex; times are Unix nanoseconds as decimal strings; attribute values are
``{"stringValue"| "intValue" | "doubleValue" | "boolValue": …}``. Attribute names follow the
GenAI semantic conventions (``gen_ai.request.model``, ``gen_ai.usage.input_tokens``, …).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

SCOPE = "assay"
STATUS_OK = 1
STATUS_ERROR = 2


def new_trace_id() -> str:
    """A random, non-zero 16-byte trace id, as 32 hex characters.

    Ids come from :func:`random.getrandbits`, as in the OpenTelemetry SDK's
    ``RandomIdGenerator``: they need to be unique, not secret, and this costs no system
    call (``os.urandom`` does, three times per row). W3C Trace Context forbids all zeros.
    """
    return f"{_nonzero_bits(128):032x}"


def new_span_id() -> str:
    """A random, non-zero 8-byte span id, as 16 hex characters (see :func:`new_trace_id`)."""
    return f"{_nonzero_bits(64):016x}"


def _nonzero_bits(bits: int) -> int:
    value = 0
    while not value:
        value = random.getrandbits(bits)
    return value


@dataclass(frozen=True)
class SpanEvent:
    """Something that happened at one moment of a span (OTLP ``Span.Event``)."""

    name: str
    time_ns: int
    attributes: dict[str, str | int | float | bool] = field(default_factory=dict)


@dataclass
class Span:
    """One timed operation. Times are Unix nanoseconds."""

    name: str
    trace_id: str
    span_id: str = field(default_factory=new_span_id)
    parent_span_id: str | None = None
    start_ns: int = field(default_factory=time.time_ns)
    end_ns: int | None = None
    attributes: dict[str, str | int | float | bool] = field(default_factory=dict)
    error: str | None = None
    events: list[SpanEvent] = field(default_factory=list)

    def end(self, *, error: str | None = None) -> None:
        """Close the span now, optionally as failed."""
        self.end_ns = time.time_ns()
        self.error = error

    def child(self, name: str) -> Span:
        """A new span under this one."""
        return Span(name=name, trace_id=self.trace_id, parent_span_id=self.span_id)


def _value(value: str | int | float | bool) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def _encode_span(span: Span) -> dict[str, Any]:
    encoded: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "kind": 1,
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns or span.start_ns),
        "attributes": [{"key": k, "value": _value(v)} for k, v in span.attributes.items()],
        "status": {"code": STATUS_ERROR, "message": span.error}
        if span.error
        else {"code": STATUS_OK},
    }
    if span.parent_span_id:
        encoded["parentSpanId"] = span.parent_span_id
    if span.events:
        encoded["events"] = [
            {"timeUnixNano": str(e.time_ns), "name": e.name,
             "attributes": [{"key": k, "value": _value(v)} for k, v in e.attributes.items()]}
            for e in span.events
        ]  # fmt: skip
    return encoded


def to_otlp_json(spans: list[Span], *, service: str = "assay") -> dict[str, Any]:
    """Encode ``spans`` as one OTLP ``ExportTraceServiceRequest`` JSON object."""
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": service}}]
                },
                "scopeSpans": [
                    {"scope": {"name": SCOPE}, "spans": [_encode_span(s) for s in spans]}
                ],
            }
        ]
    }


def iter_spans(trace: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every span object of an OTLP JSON object, in file order (non-objects are skipped)."""
    for resource in _objects(trace.get("resourceSpans")):
        for scope in _objects(resource.get("scopeSpans")):
            yield from _objects(scope.get("spans"))


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, dict))


def attribute(span: dict[str, Any], key: str) -> Any:
    """The plain value of a span attribute (``stringValue``, ``intValue``, …) or ``None``."""
    for item in _objects(span.get("attributes")):
        if item.get("key") == key:
            return _plain(item.get("value"))
    return None


def _plain(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    for kind in ("stringValue", "boolValue", "doubleValue"):
        if kind in value:
            return value[kind]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_plain(v) for v in value["arrayValue"].get("values", [])]
    return None


def _start(span: dict[str, Any]) -> int:
    try:
        return int(span.get("startTimeUnixNano") or 0)
    except (TypeError, ValueError):
        return 0


def split_traces(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """One OTLP object per ``traceId`` of ``trace`` (a session holds several), each keeping
    its spans' resource and scope, ordered by the trace's earliest span start (then by first
    appearance). Spans without a ``traceId`` are left out."""
    groups: dict[str, dict[tuple[int, int], list[dict[str, Any]]]] = {}
    shells: dict[tuple[int, int], tuple[dict[str, Any], dict[str, Any]]] = {}
    for r_index, resource in enumerate(_objects(trace.get("resourceSpans"))):
        for s_index, scope in enumerate(_objects(resource.get("scopeSpans"))):
            shells[(r_index, s_index)] = (resource, scope)
            for span in _objects(scope.get("spans")):
                trace_id = span.get("traceId")
                if isinstance(trace_id, str) and trace_id:
                    groups.setdefault(trace_id, {}).setdefault((r_index, s_index), []).append(span)
    parts = []
    for order, (trace_id, by_scope) in enumerate(groups.items()):
        spans = [s for members in by_scope.values() for s in members]
        start = min((_start(s) for s in spans), default=0)
        resource_spans = []
        for key, members in by_scope.items():
            resource, scope = shells[key]
            shell = {k: v for k, v in scope.items() if k != "spans"}
            body = {k: v for k, v in resource.items() if k != "scopeSpans"}
            resource_spans.append({**body, "scopeSpans": [{**shell, "spans": members}]})
        parts.append((start, order, trace_id, {"resourceSpans": resource_spans}))
    return [part for *_, part in sorted(parts, key=lambda p: (p[0], p[1]))]
