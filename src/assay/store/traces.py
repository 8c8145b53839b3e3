"""OTLP JSON traces: checking them, naming them, and reading their final output.

A trace is one ``ExportTraceServiceRequest`` in the OTLP JSON mapping, as OpenTelemetry
exporters write it: ``{"resourceSpans": [{"resource": …, "scopeSpans": [{"scope": …,
"spans": [{"traceId", "spanId", "parentSpanId", "name", "startTimeUnixNano",
"endTimeUnixNano", "attributes": [{"key", "value": {"stringValue": …}}]}]}]}]}``.

- A ``trace`` field's value holds the spans of exactly one trace; its id is their
  ``traceId``.
- A ``session`` field's value may hold several traces; its id is the sha256 (64 hex digits)
  of the object's canonical JSON (sorted keys, no spaces), so equal content gives equal ids.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from assay.results.trace import attribute, iter_spans, split_traces

OUTPUT_ATTRIBUTES = (
    "output.value",  # OpenInference
    "gen_ai.completion",  # OpenLLMetry
    "gen_ai.completion.0.content",  # OpenLLMetry, indexed form
    "assay.response",  # assay's own agents
)
INPUT_ATTRIBUTES = (
    "input.value",  # OpenInference
    "gen_ai.prompt",  # OpenLLMetry
    "gen_ai.prompt.0.content",  # OpenLLMetry, indexed form
    "gen_ai.input.messages",  # OpenTelemetry GenAI conventions (JSON)
    "assay.prompt",  # assay's own agents
)


def otlp_problem(trace: Any) -> str | None:
    """Why ``trace`` is not an OTLP JSON trace object, or ``None`` if it is one."""
    if not isinstance(trace, dict):
        return "a trace must be an OTLP JSON object with 'resourceSpans'"
    if not isinstance(trace.get("resourceSpans"), list):
        return "a trace must be an OTLP JSON object with a 'resourceSpans' list"
    spans = list(iter_spans(trace))
    if not spans:
        return "the trace holds no spans"
    for span in spans:
        trace_id = span.get("traceId")
        if not isinstance(trace_id, str) or not trace_id:
            return f"span {span.get('name', '?')!r} has no 'traceId'"
    return None


def trace_ids(trace: dict[str, Any]) -> list[str]:
    """The distinct ``traceId`` values of the spans, in order of first appearance."""
    return list(dict.fromkeys(str(span.get("traceId")) for span in iter_spans(trace)))


def canonical_trace(trace: dict[str, Any]) -> str:
    """Sorted-keys, no-space JSON of a trace: what its session id and equality are based on."""
    return json.dumps(trace, sort_keys=True, separators=(",", ":"), allow_nan=False)


def session_id(trace: dict[str, Any]) -> str:
    """A session's id: sha256 of :func:`canonical_trace`, 64 hex digits."""
    return hashlib.sha256(canonical_trace(trace).encode("utf-8", "surrogatepass")).hexdigest()


def merge(traces: list[dict[str, Any]]) -> dict[str, Any]:
    """One OTLP object holding the ``resourceSpans`` of each of ``traces``, in order."""
    return {"resourceSpans": [r for t in traces for r in t.get("resourceSpans", [])]}


def _output_of(span: dict[str, Any], keys: tuple[str, ...] = OUTPUT_ATTRIBUTES) -> str | None:
    for key in keys:
        value = attribute(span, key)
        if value is not None:
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return None


def _end(span: dict[str, Any]) -> int:
    try:
        return int(span.get("endTimeUnixNano") or span.get("startTimeUnixNano") or 0)
    except (TypeError, ValueError):
        return 0


def final_output(trace: dict[str, Any]) -> str | None:
    """The output text of a trace (or session), or ``None`` if no span carries one.

    Looks at the attributes ``output.value`` (OpenInference), ``gen_ai.completion`` and
    ``gen_ai.completion.0.content`` (OpenLLMetry), ``assay.response``, in that order: first
    on the root span (a span without ``parentSpanId``, or whose parent is not in the trace;
    of several roots, the latest-ending one that has an output), else on the latest-ending
    span that has one. Non-string attribute values are returned as JSON text.
    """
    return _attribute_text(trace, OUTPUT_ATTRIBUTES)


def _attribute_text(trace: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    spans = list(iter_spans(trace))
    ids = {span.get("spanId") for span in spans}
    roots = [s for s in spans if not s.get("parentSpanId") or s.get("parentSpanId") not in ids]
    for group in (roots, spans):
        found = [(_end(s), i, _output_of(s, keys)) for i, s in enumerate(group)]
        latest = max(((end, i, out) for end, i, out in found if out is not None), default=None)
        if latest is not None:
            return latest[2]
    return None


def trace_input(trace: dict[str, Any]) -> str | None:
    """The input text of a trace (as :func:`final_output` finds the output): the attributes
    ``input.value`` (OpenInference), ``gen_ai.prompt`` / ``gen_ai.prompt.0.content``
    (OpenLLMetry), ``gen_ai.input.messages`` (GenAI conventions), ``assay.prompt``."""
    return _attribute_text(trace, INPUT_ATTRIBUTES)


def conversation(trace: dict[str, Any]) -> str | None:
    """A session as one text, every trace in it in order (by start time): each turn's input
    and output (``Turn N``, ``Input:``, ``Output:``); ``None`` when no trace has either. A
    single trace gives its output alone."""
    parts = split_traces(trace)
    if len(parts) <= 1:
        return final_output(trace)
    turns = []
    for number, part in enumerate(parts, start=1):
        asked, said = trace_input(part), final_output(part)
        if asked is None and said is None:
            continue
        lines = [f"Turn {number}"]
        if asked is not None:
            lines.append("Input: " + asked)
        lines.append("Output: " + (said if said is not None else "(none)"))
        turns.append("\n".join(lines))
    return "\n\n".join(turns) or None
