"""A transcript as OTLP spans (``trace.json``), and back.

Spans follow the OpenTelemetry semantic conventions for generative AI (``gen-ai-spans``,
``gen-ai-agent-spans``):

- the agent span ``invoke_agent <agent>``: ``gen_ai.operation.name = invoke_agent``,
  ``gen_ai.agent.name``, token totals (``gen_ai.usage.*``), and the final answer in
  ``assay.response`` (what :func:`assay.store.traces.final_output` reads, so a run's own
  trace can be added to a store dataset and graded again); assistant text and errors are
  its span events ``gen_ai.assistant.message`` and ``assay.error``;
- one span per model call, ``chat <model>`` (a completion-format call: operation
  ``text_completion``; read back too: ``generate_content``): ``gen_ai.request.model``,
  ``gen_ai.usage.input_tokens`` / ``output_tokens`` / ``cache_read.input_tokens`` /
  ``cache_creation.input_tokens``, ``gen_ai.response.finish_reasons``;
- one ``execute_tool <name>`` span per tool call: ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``, and
  assay's ``assay.tool.is_error``, ``assay.tool.denied``, ``assay.command``,
  ``assay.exit_code``; file changes are its span events ``assay.file_change``.

:func:`from_trace` rebuilds the :class:`Transcript` from such spans, so criteria grade a run
read back from disk (``assay evaluate``) exactly as they graded it live.
"""

from __future__ import annotations

import json
from typing import Any

from assay.results.secrets import clip_head
from assay.results.trace import Span, SpanEvent, attribute, iter_spans, split_traces
from assay.results.transcript import TokenBuckets, Transcript, TranscriptEvent

MODEL_CALLS = frozenset({"chat", "text_completion", "generate_content"})  # GenAI operations

KEPT = 8000
"""Characters of a tool's arguments or result kept in a span attribute."""

_USAGE_KEYS = {
    "gen_ai.usage.input_tokens": "input",
    "gen_ai.usage.output_tokens": "output",
    "gen_ai.usage.cache_read.input_tokens": "cache_read",
    "gen_ai.usage.cache_creation.input_tokens": "cache_write",
    "assay.usage.reasoning_tokens": "reasoning",
}


def agent_attributes(transcript: Transcript) -> dict[str, str | int | float | bool]:
    """The attributes of the agent span that sum up ``transcript``."""
    attributes: dict[str, str | int | float | bool] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": transcript.agent,
        "assay.turns": transcript.model_calls,
    }
    if transcript.final is not None:
        attributes["assay.response"] = transcript.final
    if transcript.stop_reason:
        attributes["assay.stop_reason"] = transcript.stop_reason
    if transcript.usage_source:
        attributes["assay.usage_source"] = transcript.usage_source
    if transcript.usage is not None:
        attributes.update(_usage_attributes(transcript.usage))
    if transcript.cost_usd is not None:
        attributes["assay.cost_usd"] = transcript.cost_usd
    if transcript.cli_usage is not None:
        attributes["assay.cli.usage"] = transcript.cli_usage.model_dump_json()
    if transcript.cli_cost_usd is not None:
        attributes["assay.cli.cost_usd"] = transcript.cli_cost_usd
    if transcript.skills_offered:
        attributes["assay.skills_offered"] = ",".join(transcript.skills_offered)
    if transcript.skills_loaded is not None:
        attributes["assay.skills_loaded"] = ",".join(transcript.skills_loaded)
    for key, value in transcript.cli.items():
        attributes[f"assay.cli.{key}"] = value
    return attributes


def _usage_attributes(usage: TokenBuckets) -> dict[str, str | int | float | bool]:
    return {key: getattr(usage, bucket) for key, bucket in _USAGE_KEYS.items()}


def to_spans(transcript: Transcript, agent_span: Span) -> list[Span]:
    """The child spans of ``agent_span`` for ``transcript``; ``agent_span`` itself gets the
    summary attributes and the text and error events."""
    agent_span.attributes.update(agent_attributes(transcript))
    spans: list[Span] = []
    tools: dict[str, Span] = {}
    dialog = any(e.kind == "user" for e in transcript.events)  # each turn's answer is kept
    for event in transcript.events:
        if event.kind == "model_call":
            spans.append(_chat_span(agent_span, event))
        elif event.kind == "tool_call":
            span = _tool_span(agent_span, event)
            tools[event.call_id] = span
            spans.append(span)
        elif event.kind in ("tool_result", "command", "denial", "file_change"):
            _on_tool(tools.get(event.call_id), agent_span, event)
        elif event.kind in ("text", "error"):
            name = "gen_ai.assistant.message" if event.kind == "text" else "assay.error"
            agent_span.events.append(SpanEvent(name, event.at_ns, {"content": event.text}))
        elif event.kind == "user" or (event.kind == "final" and dialog):
            name = "gen_ai.user.message" if event.kind == "user" else "assay.reply"
            attributes: dict[str, str | int | float | bool] = {"content": event.text}
            if event.name:
                attributes["assay.from"] = event.name
            agent_span.events.append(SpanEvent(name, event.at_ns, attributes))
    return spans


def _chat_span(parent: Span, event: TranscriptEvent) -> Span:
    span = parent.child(f"chat {event.name}")
    span.start_ns, span.end_ns = event.at_ns - event.duration_ns, event.at_ns
    span.attributes.update({"gen_ai.operation.name": "chat", "gen_ai.request.model": event.name})
    if event.usage is not None:
        span.attributes.update(_usage_attributes(event.usage))
    if event.stop_reason:
        span.attributes["gen_ai.response.finish_reasons"] = event.stop_reason
    if event.cost_usd is not None:
        span.attributes["assay.cost_usd"] = event.cost_usd
    if isinstance(event.arguments, list) and event.arguments:
        span.attributes["assay.tool_calls"] = ",".join(event.arguments)
    if event.is_error:
        span.error = event.text or "the model call failed"
    return span


def _tool_span(parent: Span, event: TranscriptEvent) -> Span:
    span = parent.child(f"execute_tool {event.name}")
    span.start_ns = span.end_ns = event.at_ns
    arguments = event.arguments
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    span.attributes.update({
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": event.name,
        "gen_ai.tool.call.id": event.call_id,
        "gen_ai.tool.call.arguments": clip_head(text, KEPT),
        "assay.tool.arguments_json": not isinstance(arguments, str),
    })  # fmt: skip
    return span


def _on_tool(span: Span | None, agent_span: Span, event: TranscriptEvent) -> None:
    if event.kind == "file_change":
        target = span if span is not None else agent_span
        target.events.append(
            SpanEvent(
                "assay.file_change", event.at_ns, {"path": event.path, "change": event.change}
            )
        )
        return
    if span is None:  # a result or command without its call: keep it on the agent span
        agent_span.events.append(
            SpanEvent(
                f"assay.{event.kind}",
                event.at_ns,
                {
                    "content": clip_head(event.text, KEPT),
                    "command": event.command,
                    "name": event.name,
                },
            )
        )
        return
    span.end_ns = max(span.end_ns or span.start_ns, event.at_ns)
    if event.kind == "tool_result":
        span.attributes["gen_ai.tool.call.result"] = clip_head(event.text, KEPT)
        if event.is_error:
            span.attributes["assay.tool.is_error"] = True
            span.error = _first_line(event.text) or "the tool reported an error"
    elif event.kind == "command":
        span.attributes["assay.command"] = event.command
        if event.exit_code is not None:
            span.attributes["assay.exit_code"] = event.exit_code
    else:
        span.attributes["assay.tool.denied"] = True
        span.attributes["assay.tool.denial"] = clip_head(event.text, KEPT)
        span.error = "denied: " + (_first_line(event.text) or "by the permission rules")


def _first_line(text: str) -> str:
    return clip_head(text.strip().splitlines()[0], 200) if text.strip() else ""


def from_trace(trace: dict[str, Any]) -> Transcript | None:
    """The transcript recorded in an OTLP trace, or ``None`` when it has no agent span
    (a trace that assay's coding agents did not write)."""
    spans = list(iter_spans(trace))
    agent = next((s for s in spans if attribute(s, "gen_ai.operation.name") == "invoke_agent"),
                 None)  # fmt: skip
    if agent is None:
        return None
    transcript = Transcript(
        agent=str(attribute(agent, "gen_ai.agent.name") or ""),
        stop_reason=attribute(agent, "assay.stop_reason"),
        usage_source=attribute(agent, "assay.usage_source"),
        cli_cost_usd=attribute(agent, "assay.cli.cost_usd"),
    )
    cli_usage = attribute(agent, "assay.cli.usage")
    if isinstance(cli_usage, str):
        transcript.cli_usage = TokenBuckets.model_validate_json(cli_usage)
    skills = attribute(agent, "assay.skills_offered")
    transcript.skills_offered = skills.split(",") if isinstance(skills, str) and skills else []
    loaded = attribute(agent, "assay.skills_loaded")
    if isinstance(loaded, str):
        transcript.skills_loaded = loaded.split(",") if loaded else []
    transcript.cli = _cli_facts(agent)
    children = [s for s in spans if s.get("parentSpanId") == agent.get("spanId")]
    events = [e for s in children for e in _events_of(s)] + _agent_events(agent)
    events.sort(key=lambda pair: pair[0])
    transcript.events = [event for _, event in events]
    final = attribute(agent, "assay.response")
    if isinstance(final, str) and not transcript.of_kind("final"):  # a dialog kept its own
        transcript.add(TranscriptEvent("final", _time(agent, "endTimeUnixNano"), text=final))
    return transcript


def from_session(trace: dict[str, Any]) -> Transcript | None:
    """The transcript of every trace of a session, one after another (each trace's events in
    order, the traces by start time); ``None`` when no trace has an agent span. The stop
    reason is the last trace's; the skills offered and loaded are every trace's."""
    parts = [t for t in (from_trace(one) for one in split_traces(trace)) if t is not None]
    if not parts:
        return None
    whole = Transcript(agent=parts[0].agent, stop_reason=parts[-1].stop_reason,
                       usage_source=parts[0].usage_source)  # fmt: skip
    for part in parts:
        whole.events.extend(part.events)
        whole.skills_offered += [s for s in part.skills_offered if s not in whole.skills_offered]
        if part.skills_loaded is not None:
            known = whole.skills_loaded or []
            whole.skills_loaded = known + [s for s in part.skills_loaded if s not in known]
        whole.cli.update(part.cli)
    return whole


def _cli_facts(agent: dict[str, Any]) -> dict[str, str]:
    facts = {}
    for item in agent.get("attributes") or []:
        key = item.get("key", "") if isinstance(item, dict) else ""
        if key.startswith("assay.cli.") and key not in ("assay.cli.usage", "assay.cli.cost_usd"):
            facts[key.removeprefix("assay.cli.")] = str(attribute(agent, key))
    return facts


def _time(span: dict[str, Any], key: str) -> int:
    try:
        return int(span.get(key) or 0)
    except (TypeError, ValueError):
        return 0


def _events_of(span: dict[str, Any]) -> list[tuple[int, TranscriptEvent]]:
    kind = attribute(span, "gen_ai.operation.name")
    start, end = _time(span, "startTimeUnixNano"), _time(span, "endTimeUnixNano")
    if kind in MODEL_CALLS:
        usage = {bucket: attribute(span, key) or 0 for key, bucket in _USAGE_KEYS.items()}
        buckets = TokenBuckets(**usage, total=usage["input"] + usage["output"])
        error = (span.get("status") or {}).get("message") or ""
        return [(end, TranscriptEvent(
            "model_call", end, name=str(attribute(span, "gen_ai.request.model") or ""),
            usage=buckets, cost_usd=attribute(span, "assay.cost_usd"),
            stop_reason=attribute(span, "gen_ai.response.finish_reasons"),
            is_error=bool(error), text=error, duration_ns=end - start,
            arguments=_names(attribute(span, "assay.tool_calls"))))]  # fmt: skip
    if kind == "execute_tool":
        return _tool_events(span, start, end)
    return []


def _names(value: Any) -> list[str] | None:
    return value.split(",") if isinstance(value, str) and value else None


def _tool_events(span: dict[str, Any], start: int, end: int) -> list[tuple[int, TranscriptEvent]]:
    name = str(attribute(span, "gen_ai.tool.name") or "")
    call_id = str(attribute(span, "gen_ai.tool.call.id") or "")
    text = str(attribute(span, "gen_ai.tool.call.arguments") or "")
    arguments: Any = text
    if attribute(span, "assay.tool.arguments_json"):
        try:
            arguments = json.loads(text)
        except ValueError:
            arguments = text
    events = [(start, TranscriptEvent("tool_call", start, name=name, call_id=call_id,
                                      arguments=arguments))]  # fmt: skip
    result = attribute(span, "gen_ai.tool.call.result")
    if result is not None:
        error = bool(attribute(span, "assay.tool.is_error"))
        events.append((end, TranscriptEvent("tool_result", end, name=name, call_id=call_id,
                                            text=str(result), is_error=error)))  # fmt: skip
    command = attribute(span, "assay.command")
    if command is not None:
        code = attribute(span, "assay.exit_code")
        events.append((end, TranscriptEvent("command", end, name=name, call_id=call_id,
                                            command=str(command), exit_code=code)))  # fmt: skip
    for raw in span.get("events") or []:
        if isinstance(raw, dict) and raw.get("name") == "assay.file_change":
            at = _time(raw, "timeUnixNano")
            events.append((at, TranscriptEvent(
                "file_change", at, call_id=call_id, name=name,
                path=str(attribute(raw, "path") or ""), change=str(attribute(raw, "change") or ""),
            )))  # fmt: skip
    if attribute(span, "assay.tool.denied"):
        denial = str(attribute(span, "assay.tool.denial") or "")
        events.append((end, TranscriptEvent("denial", end, name=name, call_id=call_id,
                                            text=denial)))  # fmt: skip
    return events


def _agent_events(agent: dict[str, Any]) -> list[tuple[int, TranscriptEvent]]:
    events = []
    kinds = {"gen_ai.assistant.message": "text", "assay.error": "error",
             "gen_ai.user.message": "user", "assay.reply": "final"}  # fmt: skip
    for raw in agent.get("events") or []:
        kind = kinds.get(str(raw.get("name"))) if isinstance(raw, dict) else None
        if kind is not None:
            at = _time(raw, "timeUnixNano")
            content = str(attribute(raw, "content") or "")
            name = str(attribute(raw, "assay.from") or "")
            events.append((at, TranscriptEvent(kind, at, text=content, name=name)))  # type: ignore[arg-type]
    return events
