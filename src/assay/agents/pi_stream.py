"""Pi's ``pi -p --mode json`` events, read into a transcript.

One JSON object a line (pi-coding-agent 0.73): ``session`` (``id``, ``cwd``), ``agent_start``,
``turn_start`` / ``turn_end``, ``message_start`` / ``message_update`` / ``message_end`` (a
``message`` with ``role`` ``user`` | ``assistant`` | ``toolResult``; an assistant message's
``content`` holds ``text``, ``thinking`` and ``toolCall`` blocks (``id``, ``name``,
``arguments``), its ``usage`` {``input``, ``output``, ``cacheRead``, ``cacheWrite``,
``cost`` {``total``}}, ``stopReason`` ``stop`` | ``toolUse`` | ``length`` | ``error`` |
``aborted`` and ``errorMessage``), ``tool_execution_start`` / ``_update`` / ``_end``
(``toolCallId``, ``toolName``, ``result.content`` text blocks, ``isError``) and
``agent_end``. A shell command that fails ends its result with ``Command exited with code
N``. Tool names are mapped as Coder Eval maps them (``bash`` is ``Bash``, ``write`` ``Write``,
``edit`` ``Edit``, ``read`` ``Read``); the text of the last assistant message is the final
answer. A call of a tool Pi was not given (``Tool bash not found``) ran nothing: it is a
denial, never a command.
"""

from __future__ import annotations

import re
import time
from typing import Any

from assay.agents.cli import CliEnding, count, json_event
from assay.results.secrets import clip_tail
from assay.results.transcript import TokenBuckets, Transcript, TranscriptEvent

NAMES = {"bash": "Bash", "write": "Write", "edit": "Edit", "read": "Read", "grep": "Grep",
         "find": "Glob", "ls": "LS"}  # fmt: skip
"""Pi's tool names as Coder Eval's (others keep their own)."""
_EXIT = re.compile(r"Command exited with code (-?\d+)\s*$")
_WRITES = {"Write": "add", "Edit": "update"}
_ABSENT = re.compile(r"^Tool \S+ not found$")
"""Pi's result for a call of a tool it was not given (left out of ``--tools``)."""


class PiStreamParser:
    """Builds the transcript of one Pi run from its stdout lines."""

    def __init__(self) -> None:
        self.transcript = Transcript(agent="pi")
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._tokens = [0, 0, 0, 0]  # input, output, cache read, cache write
        self._cost = 0.0
        self._messages = 0
        self._last: dict[str, Any] | None = None

    def feed(self, line: str) -> None:
        """Read one line; see the module docstring."""
        event = json_event(line)
        if event is None:
            return
        kind, now = event.get("type"), time.time_ns()
        if kind == "session" and event.get("id"):
            self.transcript.cli["session_id"] = str(event["id"])
        elif kind == "message_end":
            message = event.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                self._assistant(message, now)
        elif kind == "tool_execution_end":
            self._result(event, now)

    def _assistant(self, message: dict[str, Any], now: int) -> None:
        self._messages += 1
        self._last = message
        usage = _object(message, "usage")
        for index, key in enumerate(("input", "output", "cacheRead", "cacheWrite")):
            self._tokens[index] += count(usage.get(key) or 0)
        cost = usage.get("cost")
        total = cost.get("total") if isinstance(cost, dict) else None
        if isinstance(total, int | float) and not isinstance(total, bool) and total >= 0:
            self._cost += float(total)
        if message.get("model") and "model" not in self.transcript.cli:
            self.transcript.cli["model"] = str(message["model"])
        blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
        calls = [b for b in blocks if b.get("type") == "toolCall"]
        text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        if calls and text.strip():
            self.transcript.add(TranscriptEvent("text", now, text=text))
        for block in calls:
            raw, call_id = str(block.get("name", "")), str(block.get("id", ""))
            name = NAMES.get(raw, raw)
            given = block.get("arguments")
            arguments = given if isinstance(given, dict) else {}
            self._calls[call_id] = (name, arguments)
            self.transcript.add(TranscriptEvent("tool_call", now, name=name, call_id=call_id,
                                                arguments=arguments))  # fmt: skip
        if message.get("stopReason") == "error":
            error = str(message.get("errorMessage") or "the model call failed")
            self.transcript.add(TranscriptEvent("error", now, text=error))

    def _result(self, event: dict[str, Any], now: int) -> None:
        call_id = str(event.get("toolCallId", ""))
        raw = str(event.get("toolName", ""))
        name, arguments = self._calls.get(call_id, (NAMES.get(raw, raw), {}))
        result = _object(event, "result")
        content = result.get("content")
        text = "".join(str(b.get("text", "")) for b in content or []
                       if isinstance(b, dict) and b.get("type") == "text")  # fmt: skip
        failed = bool(event.get("isError"))
        self.transcript.add(TranscriptEvent("tool_result", now, name=name, call_id=call_id,
                                            text=text, is_error=failed))  # fmt: skip
        if failed and _ABSENT.match(text.strip()):  # a tool it was not given: nothing ran
            self.transcript.add(TranscriptEvent("denial", now, name=name, call_id=call_id,
                                                text=text))  # fmt: skip
        elif name == "Bash":
            found = _EXIT.search(text)
            code = int(found.group(1)) if found else (None if failed else 0)
            self.transcript.add(TranscriptEvent(
                "command", now, name=name, call_id=call_id,
                command=str(arguments.get("command", "")), exit_code=code,
                text=clip_tail(text, 2000)))  # fmt: skip
        elif name in _WRITES and not failed and arguments.get("path"):
            self.transcript.add(TranscriptEvent("file_change", now, name=name, call_id=call_id,
                                                path=str(arguments["path"]),
                                                change=_WRITES[name]))  # fmt: skip

    def ending(self) -> CliEnding:
        """The last assistant message's text, the CLI's own token counts and cost, or its
        error."""
        usage = None
        if self._messages:
            fresh, output, read, write = self._tokens
            total_input = fresh + read + write
            usage = TokenBuckets(input=total_input, output=output, cache_read=read,
                                 cache_write=write, total=total_input + output)  # fmt: skip
        cost = self._cost if self._messages else None
        last = self._last or {}
        reason = last.get("stopReason")
        if reason in ("error", "aborted"):
            message = str(last.get("errorMessage") or f"the run ended: {reason}")
            return CliEnding(api_error=message, usage=usage, cost_usd=cost)
        blocks = [b for b in last.get("content") or [] if isinstance(b, dict)]
        final = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        if final:
            self.transcript.add(TranscriptEvent("text", time.time_ns(), text=final))
        done = self._last is not None and reason != "toolUse"
        return CliEnding(final=final if done else None, usage=usage, cost_usd=cost)


def _object(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """``parent[key]`` when it is a JSON object, else an empty one."""
    value = parent.get(key)
    return value if isinstance(value, dict) else {}
