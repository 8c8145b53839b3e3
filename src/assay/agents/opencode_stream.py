"""OpenCode's ``opencode run --format json`` events, read into a transcript.

One JSON object a line (OpenCode 1.18), each with ``type``, ``timestamp`` (milliseconds),
``sessionID`` and a ``part``: ``step_start`` (a model step begins), ``tool_use`` (a finished
tool call: ``part.tool``, ``part.callID``, ``part.state`` with ``status`` ``completed`` |
``error``, ``input``, ``output`` or ``error``, and ``metadata``: a shell command's ``exit``
code, a written file's ``exists`` before the write), ``text`` (``part.text``, the
assistant's text), ``step_finish`` (``part.reason`` ``tool-calls`` | ``stop``,
``part.tokens`` {``input``, ``output``, ``reasoning``, ``cache`` {``read``, ``write``}},
``part.cost``) and ``error`` (``error`` {``name``, ``data`` {``message``}}). Tool names are
mapped as Coder Eval maps them across harnesses (``bash`` is ``Bash``, ``write`` ``Write``,
``edit`` ``Edit``, ``read`` ``Read``), so criteria read OpenCode, Codex and Claude Code
runs alike; the assistant's text after the last tool call is the final answer. A call its
permission rules refused, or of a tool they took away (OpenCode's ``invalid`` tool, naming
the tool), is a denial, never a command or a file change.
"""

from __future__ import annotations

import time
from typing import Any

from assay.agents.cli import CliEnding, count, json_event
from assay.results.secrets import clip_tail
from assay.results.transcript import TokenBuckets, Transcript, TranscriptEvent

NAMES = {"bash": "Bash", "write": "Write", "edit": "Edit", "multiedit": "MultiEdit",
         "read": "Read", "glob": "Glob", "grep": "Grep", "list": "LS",
         "webfetch": "WebFetch", "websearch": "WebSearch", "todowrite": "TodoWrite",
         "todoread": "TodoRead", "task": "Task", "skill": "Skill",
         "patch": "apply_patch", "apply_patch": "apply_patch"}  # fmt: skip
"""OpenCode's tool names as Coder Eval's (others keep their own)."""
_WRITES = frozenset({"Write", "Edit", "MultiEdit"})
_DENIED = ("rejected permission", "specified a rule which prevents", "permission denied by",
           "user has specifically restricted", "the user rejected")  # fmt: skip
"""What OpenCode's error for a call its permission rules refused says near its start (lower
case): ``The user has specified a rule which prevents you from using this specific tool
call…`` for a command no rule allows."""
_UNAVAILABLE = "model tried to call unavailable tool"
"""How OpenCode's error for a call of a tool it does not offer begins (lower case): a tool of
its own (:data:`NAMES`) that the permissions took away, when even its ``invalid`` tool is
(``"*": "deny"``)."""


class OpenCodeStreamParser:
    """Builds the transcript of one OpenCode run from its stdout lines."""

    def __init__(self) -> None:
        self.transcript = Transcript(agent="opencode")
        self._reply: list[str] = []
        self._tokens = [0, 0, 0, 0, 0]  # input, output, cache read, cache write, reasoning
        self._cost = 0.0
        self._steps = 0
        self._finished: str | None = None
        self._error: str | None = None

    def feed(self, line: str) -> None:
        """Read one line; see the module docstring."""
        event = json_event(line)
        if event is None:
            return
        kind, now = event.get("type"), _at(event)
        part = _object(event, "part")
        if event.get("sessionID") and "session_id" not in self.transcript.cli:
            self.transcript.cli["session_id"] = str(event["sessionID"])
        if kind == "text":
            text = str(part.get("text", ""))
            if text.strip():
                self._reply.append(text)
        elif kind == "tool_use":
            self._tool(part, now)
        elif kind == "step_finish":
            self._step(part)
        elif kind == "error":
            self._failed(event, now)

    def _tool(self, part: dict[str, Any], now: int) -> None:
        self._flush_text(now)
        raw = str(part.get("tool", ""))
        call_id = str(part.get("callID", ""))
        state = _object(part, "state")
        given = state.get("input")
        arguments = given if isinstance(given, dict) else {}
        failed = state.get("status") != "completed"
        text = str(state.get("error") if failed else state.get("output", "") or "")
        taken = raw == "invalid" and str(arguments.get("tool", "")) in NAMES
        if taken:  # a tool its permissions took away: the call ran nothing
            raw, failed = str(arguments["tool"]), True
        name = NAMES.get(raw, raw)
        self.transcript.add(TranscriptEvent("tool_call", now, name=name, call_id=call_id,
                                            arguments=arguments))  # fmt: skip
        self.transcript.add(TranscriptEvent("tool_result", now, name=name, call_id=call_id,
                                            text=text, is_error=failed))  # fmt: skip
        if taken or (failed and _denied(text, raw)):
            self.transcript.add(TranscriptEvent("denial", now, name=name, call_id=call_id,
                                                text=text))  # fmt: skip
            return
        metadata = _object(state, "metadata")
        if name == "Bash":
            code = metadata.get("exit")
            self.transcript.add(TranscriptEvent(
                "command", now, name=name, call_id=call_id,
                command=str(arguments.get("command", "")),
                exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
                text=clip_tail(text, 2000)))  # fmt: skip
        elif name in _WRITES and not failed and arguments.get("filePath"):
            change = "add" if name == "Write" and metadata.get("exists") is False else "update"
            self.transcript.add(TranscriptEvent("file_change", now, name=name, call_id=call_id,
                                                path=str(arguments["filePath"]),
                                                change=change))  # fmt: skip

    def _step(self, part: dict[str, Any]) -> None:
        """A model step ended: its tokens and cost add to the run's."""
        self._steps += 1
        self._finished = str(part.get("reason") or "")
        tokens = _object(part, "tokens")
        cache = _object(tokens, "cache")
        for index, value in enumerate((tokens.get("input"), tokens.get("output"),
                                       cache.get("read"), cache.get("write"),
                                       tokens.get("reasoning"))):  # fmt: skip
            self._tokens[index] += count(value or 0)
        cost = part.get("cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
            self._cost += float(cost)

    def _failed(self, event: dict[str, Any], now: int) -> None:
        error = _object(event, "error")
        data = _object(error, "data")
        message = str(data.get("message") or error.get("name") or "unknown error")
        self._error = message
        self.transcript.add(TranscriptEvent("error", now, text=message))

    def _flush_text(self, now: int) -> None:
        """The assistant's text before a tool call is a step of the run, not its answer."""
        if self._reply:
            self.transcript.add(TranscriptEvent("text", now, text="".join(self._reply)))
            self._reply = []

    def ending(self) -> CliEnding:
        """The final text, the CLI's own token counts and cost, or its error."""
        usage = None
        if self._steps:
            total_input, output, read, write, reasoning = self._tokens
            total_input += read + write
            usage = TokenBuckets(input=total_input, output=output, cache_read=read,
                                 cache_write=write, reasoning=reasoning,
                                 total=total_input + output)  # fmt: skip
        cost = self._cost if self._steps else None
        if self._error is not None:
            return CliEnding(api_error=self._error, usage=usage, cost_usd=cost)
        final = "".join(self._reply)
        if final:
            self.transcript.add(TranscriptEvent("text", time.time_ns(), text=final))
        done = self._finished not in (None, "tool-calls")
        return CliEnding(final=final if done else None, usage=usage, cost_usd=cost)


def _denied(error: str, tool: str) -> bool:
    """A failed call's ``error`` says its permission rules refused it, or that the tool, one
    of OpenCode's own, is not offered (they took it away)."""
    start = error.lower().lstrip()[:200]
    return any(words in start for words in _DENIED) or (
        start.startswith(_UNAVAILABLE) and tool in NAMES
    )


def _object(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """``parent[key]`` when it is a JSON object, else an empty one."""
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def _at(event: dict[str, Any]) -> int:
    """When the CLI says the event happened (``timestamp``, milliseconds), else now."""
    stamp = event.get("timestamp")
    if isinstance(stamp, int) and not isinstance(stamp, bool) and stamp > 0:
        return stamp * 1_000_000
    return time.time_ns()
