"""The transcript: what an agent did during one row-task, whatever CLI it was.

Each agent turns its own events (Claude Code's stream-json, Codex's ``exec --json``, an
``llm`` call, a command's exit) into one list of :class:`TranscriptEvent`, in the order they
happened. Criteria read the transcript, never a CLI's raw output. It is stored twice:
:class:`TranscriptSummary` in ``task.json``, and every event as OTLP spans in ``trace.json``
(:mod:`assay.results.transcript_otlp`), from which it can be read back.

Event kinds:

- ``model_call``: one call of the model (``name`` the model, ``usage``, ``cost_usd``,
  ``stop_reason``, ``arguments`` the names of the tools the answer called, ``is_error``
  and ``text`` the error);
- ``text``: assistant text between tool calls;
- ``tool_call``: ``name``, ``call_id``, ``arguments`` (the input: a mapping, or text);
- ``tool_result``: ``call_id``, ``name``, ``text`` (the output), ``is_error``;
- ``command``: a shell command (``command``, ``exit_code``, ``text`` the output tail);
- ``file_change``: ``path`` and ``change`` (``add``, ``update``, ``delete``);
- ``denial``: a tool call the permission rules refused (``name``, ``call_id``, ``text``);
- ``error``: something the agent reported as failed (``text``);
- ``final``: the final answer (``text``); in dialog mode, the agent's answer of each turn;
- ``user``: in dialog mode, a user message (``text``; ``name`` is ``simulated`` for the
  simulated user's, ``initial_prompt`` for the task's opener).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from assay.results.secrets import clip_head

PROVIDER_REFUSALS = frozenset({"refusal", "content_filter", "SAFETY", "PROHIBITED_CONTENT",
                               "BLOCKLIST", "SPII"})  # fmt: skip
"""Finish reasons by which a provider declines to answer: Anthropic's ``refusal`` (and
assay's for an OpenAI message whose ``refusal`` field holds the answer), OpenAI's
``content_filter``, Gemini's ``SAFETY``, ``PROHIBITED_CONTENT``, ``BLOCKLIST``, ``SPII``."""

EventKind = Literal[
    "model_call", "text", "tool_call", "tool_result", "command", "file_change", "denial",
    "error", "final", "user",
]  # fmt: skip
SHELL_TOOLS = frozenset(
    {"Bash", "exec_command", "shell", "local_shell", "run_shell_command", "run_command"}
)
FILE_TOOLS = frozenset(
    {"Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch", "write_file", "edit_file"}
)
LAST_LINES = 12


@dataclass(frozen=True)
class TranscriptEvent:
    """One thing the agent did (see the module docstring for the fields of each kind)."""

    kind: EventKind
    at_ns: int
    name: str = ""
    call_id: str = ""
    arguments: Any = None
    text: str = ""
    is_error: bool = False
    command: str = ""
    exit_code: int | None = None
    path: str = ""
    change: str = ""
    usage: TokenBuckets | None = None
    cost_usd: float | None = None
    stop_reason: str | None = None
    duration_ns: int = 0


@dataclass(frozen=True)
class ToolUse:
    """A tool call joined with its result: ``result`` is ``None`` when none came back (the
    run ended first), ``denied`` when the permission rules refused it."""

    name: str
    call_id: str
    arguments: Any
    result: str | None
    is_error: bool
    denied: bool
    exit_code: int | None = None

    @property
    def ran(self) -> bool:
        """The call happened: it was not denied and its result came back. A denied or
        never-answered call is never counted as done, whatever its criterion asks."""
        return self.result is not None and not self.denied


_JOINED = ("tool_result", "command", "denial")
"""The events joined to a tool call by its id (:meth:`Transcript.tool_uses`)."""


def _join(
    joined: list[dict[str, TranscriptEvent]], slots: list[int], event: TranscriptEvent
) -> bool:
    """Give ``event`` to the first of ``slots`` without one of its kind (the last, for a
    command); ``False``: every one has one."""
    order = reversed(slots) if event.kind == "command" else slots
    free = next((i for i in order if event.kind not in joined[i]), None)
    if free is None:
        return False
    joined[free][event.kind] = event
    return True


def _use(call: TranscriptEvent, found: dict[str, TranscriptEvent]) -> ToolUse:
    result, command = found.get("tool_result"), found.get("command")
    denied = "denial" in found
    return ToolUse(name=call.name, call_id=call.call_id, arguments=call.arguments,
                   result=result.text if result is not None else None,
                   is_error=bool(result is not None and result.is_error) or denied,
                   denied=denied,
                   exit_code=command.exit_code if command is not None else None)  # fmt: skip


@dataclass
class Transcript:
    """Everything one agent run did.

    Attributes:
        agent: the agent type (``claude-code``, ``codex``, ``llm``, ``command``).
        events: in the order they happened.
        stop_reason: why the run ended (``end_turn``, ``max_turns``, ``token_budget``,
            ``timeout``, ``api_error``, ``crashed``, …).
        cli: facts the CLI reported about itself (``version``, ``session_id``, ``model``).
        cli_usage, cli_cost_usd: the CLI's own totals (cross-checked with the bridge's).
        skills_offered: skills the agent was offered (from its plugins).
        skills_loaded: the skills the CLI itself said it loaded (Claude Code's ``system/init``
            event, plugin skills as ``plugin:skill``), or ``None`` when it does not say.
        usage_source: ``bridge`` (every call counted by assay), ``cli`` (direct mode: the
            CLI's totals alone) or ``model`` (an ``llm`` agent's own call).
    """

    agent: str
    events: list[TranscriptEvent] = field(default_factory=list)
    stop_reason: str | None = None
    cli: dict[str, str] = field(default_factory=dict)
    cli_usage: TokenBuckets | None = None
    cli_cost_usd: float | None = None
    skills_offered: list[str] = field(default_factory=list)
    skills_loaded: list[str] | None = None
    usage_source: Literal["bridge", "cli", "model"] | None = None

    def add(self, event: TranscriptEvent) -> None:
        """Append ``event``."""
        self.events.append(event)

    def of_kind(self, kind: EventKind) -> list[TranscriptEvent]:
        """The events of one kind, in order."""
        return [e for e in self.events if e.kind == kind]

    def provider_refusal(self) -> str | None:
        """The finish reason by which the provider declined the last model call
        (:data:`PROVIDER_REFUSALS`), or ``None``: the answer it left is a refusal, whatever
        its text."""
        calls = self.of_kind("model_call")
        reason = calls[-1].stop_reason if calls else None
        return reason if reason in PROVIDER_REFUSALS else None

    @property
    def final(self) -> str | None:
        """The final answer, or ``None``."""
        finals = self.of_kind("final")
        return finals[-1].text if finals else None

    @property
    def model_calls(self) -> int:
        """How many times the model was called."""
        return len(self.of_kind("model_call"))

    @property
    def usage(self) -> TokenBuckets | None:
        """Tokens of every model call (``None`` when no call reported any)."""
        usages = [e.usage for e in self.of_kind("model_call") if e.usage is not None]
        if not usages:
            return None
        total = TokenBuckets()
        for usage in usages:
            total = total + usage
        return total

    @property
    def cost_usd(self) -> float | None:
        """US dollars of every priced model call (``None`` when none was priced)."""
        costs = [e.cost_usd for e in self.of_kind("model_call") if e.cost_usd is not None]
        return sum(costs) if costs else None

    def tool_uses(self) -> list[ToolUse]:
        """Every tool call with its result, exit code and denial, in call order. A result,
        command or denial goes to a call with its id made before it: the first such call
        still without one (the last, for a command: a call that ran no command never gets
        one), so a model or CLI that gives two calls one id (an id per turn that starts
        again, an empty id) keeps each call's own outcome; one with no such call before it
        goes to the first call of its id without one."""
        calls = self.of_kind("tool_call")
        joined: list[dict[str, TranscriptEvent]] = [{} for _ in calls]
        before: dict[str, list[int]] = {}
        late: list[TranscriptEvent] = []
        position = 0
        for event in self.events:
            if event.kind == "tool_call":
                before.setdefault(event.call_id, []).append(position)
                position += 1
            elif (event.kind in _JOINED and (event.kind != "command" or event.call_id)
                  and not _join(joined, before.get(event.call_id, []), event)):  # fmt: skip
                late.append(event)
        every: dict[str, list[int]] = {}
        for index, call in enumerate(calls):
            every.setdefault(call.call_id, []).append(index)
        for event in late:
            _join(joined, every.get(event.call_id, []), event)
        return [_use(call, found) for call, found in zip(calls, joined, strict=True)]

    def lines(self) -> list[str]:
        """The transcript as readable lines (``task.log``)."""
        return [line for event in self.events if (line := _line(event))]

    def summary(self) -> TranscriptSummary:
        """The part of the transcript stored in ``task.json``."""
        uses = self.tool_uses()
        commands = self.of_kind("command")
        usage = self.usage
        return TranscriptSummary(
            agent=self.agent,
            model_calls=self.model_calls,
            turns=self.model_calls,
            tool_calls=len(uses),
            tool_calls_by_name=dict(Counter(u.name for u in uses)),
            tool_calls_requested=self._requested(),
            tool_errors=sum(1 for u in uses if u.is_error),
            commands=len(commands),
            commands_failed=sum(1 for c in commands if c.exit_code not in (0, None)),
            files_changed=sorted({e.path for e in self.of_kind("file_change")})[:100],
            denials=[_denial(e) for e in self.of_kind("denial")],
            stop_reason=self.stop_reason,
            usage=usage,
            cost_usd=self.cost_usd,
            usage_source=self.usage_source,
            cli_usage=self.cli_usage,
            cli_cost_usd=self.cli_cost_usd,
            usage_difference=self.usage_difference(),
            cli=dict(self.cli),
            skills_offered=list(self.skills_offered),
            skills_loaded=list(self.skills_loaded) if self.skills_loaded is not None else None,
            last_lines=self.lines()[-LAST_LINES:],
        )

    def tool_calls_asked(self) -> int:
        """How many tool calls the model's answers asked for (as the model bridge and the
        tool loop count them against ``run_limits.max_tool_calls``), at least the calls
        recorded (a CLI whose answers are not read call by call)."""
        return max(sum(self._requested().values()), len(self.of_kind("tool_call")))

    def _requested(self) -> dict[str, int]:
        """Tool name → how many times the model's answers called it."""
        names = Counter[str]()
        for event in self.of_kind("model_call"):
            if isinstance(event.arguments, list):
                names.update(event.arguments)
        return dict(names)

    def usage_difference(self) -> str | None:
        """How the CLI's own token totals differ from the bridge's, or ``None`` when they
        agree (or one side is missing)."""
        if self.usage_source != "bridge" or self.cli_usage is None:
            return None
        ours, theirs = self.usage or TokenBuckets(), self.cli_usage
        pairs = [("input", ours.input, theirs.input), ("output", ours.output, theirs.output)]
        different = [f"{name} {a} (bridge) vs {b} (CLI)" for name, a, b in pairs if a != b]
        return "; ".join(different) or None


def _denial(event: TranscriptEvent) -> DenialRecord:
    return DenialRecord(tool=event.name, reason=clip_head(event.text, 300))


def _line(event: TranscriptEvent) -> str:
    if event.kind == "model_call":
        usage = event.usage or TokenBuckets()
        cost = f" ${event.cost_usd:.6f}" if event.cost_usd is not None else ""
        error = f" ERROR {event.text}" if event.is_error else ""
        return (f"model {event.name}: {usage.input} in / {usage.output} out{cost}"
                f" → {event.stop_reason or '?'}{error}")  # fmt: skip
    if event.kind == "tool_call":
        return f"tool {event.name}({_short(event.arguments)})"
    if event.kind == "tool_result":
        mark = "error" if event.is_error else "result"
        return f"  {mark} of {event.name or event.call_id}: {_short(event.text)}"
    if event.kind == "command":
        return f"  $ {_short(event.command)} → exit {event.exit_code}"
    if event.kind == "file_change":
        return f"  file {event.change}: {event.path}"
    if event.kind == "denial":
        return f"  denied {event.name}: {_short(event.text)}"
    labels = {"text": "assistant", "error": "error", "final": "final answer", "user": "user"}
    return f"{labels[event.kind]}: {_short(event.text)}"


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return clip_head(text, limit)


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class TokenBuckets(_Record):
    """Tokens by bucket: ``input`` (all input, cache included), of which ``cache_read`` and
    ``cache_write``; ``output``, of which ``reasoning``; ``total`` = input + output."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    total: int = 0

    def __add__(self, other: TokenBuckets) -> TokenBuckets:
        return TokenBuckets(**{k: getattr(self, k) + getattr(other, k) for k in _BUCKETS})

    def since(self, earlier: TokenBuckets) -> TokenBuckets | None:
        """What a running total added since ``earlier`` (bucket by bucket); ``None`` when a
        bucket went down, so this is not a running total of ``earlier``'s."""
        spent = {k: getattr(self, k) - getattr(earlier, k) for k in _BUCKETS}
        return TokenBuckets(**spent) if min(spent.values()) >= 0 else None


_BUCKETS = ("input", "output", "cache_read", "cache_write", "reasoning", "total")


class DenialRecord(_Record):
    """A tool call the permission rules refused."""

    tool: str
    reason: str = ""


class TranscriptSummary(_Record):
    """What ``task.json`` keeps of a transcript (the whole of it is in ``trace.json``).

    ``turns`` counts model calls; ``tool_calls_by_name`` counts the tool calls the CLI ran
    (named as the CLI names them) and ``tool_calls_requested`` the tool calls the model's
    answers asked for (named as the model did; a call of a tool the CLI does not have shows
    here only); ``usage`` is counted by assay (the bridge, or the model call),
    ``cli_usage`` is the CLI's own report, and ``usage_difference`` says where they differ.
    """

    agent: str
    model_calls: int = 0
    turns: int = 0
    tool_calls: int = 0
    tool_calls_by_name: dict[str, int] = {}
    tool_calls_requested: dict[str, int] = {}
    tool_errors: int = 0
    commands: int = 0
    commands_failed: int = 0
    files_changed: list[str] = []
    denials: list[DenialRecord] = []
    stop_reason: str | None = None
    usage: TokenBuckets | None = None
    cost_usd: float | None = None
    usage_source: str | None = None
    cli_usage: TokenBuckets | None = None
    cli_cost_usd: float | None = None
    usage_difference: str | None = None
    cli: dict[str, str] = {}
    skills_offered: list[str] = []
    skills_loaded: list[str] | None = None
    last_lines: list[str] = []
