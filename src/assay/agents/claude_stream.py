"""Claude Code's ``--output-format stream-json`` events, read into a transcript.

One JSON object a line (``reference/coding_agents_offline.md``): ``system`` (``init``: cwd,
session id, tools, model, version; ``api_retry``), ``assistant`` (a message whose content
blocks are ``text``, ``thinking`` or ``tool_use``), ``user`` (``tool_result`` blocks, and
``tool_use_result`` with the tool's details: a Bash command's ``stdout``/``stderr``, a
Write's ``{type: create|update, filePath}``), and last ``result`` (``subtype``,
``is_error``, ``result`` = the final text, ``num_turns``, ``total_cost_usd``, ``usage``,
``permission_denials``, ``terminal_reason``, ``api_error_status``). A ``system``
``permission_denied`` event (``tool_use_id``, ``message``) says at once that a call was
refused, so a run that ends before its ``result`` still records the denial; a refused call
is a denial, never a command or a file change, and so is a call of a tool the CLI does not
offer (``disallowed_tools``: its result says ``No such tool available``) or one it refused
before running it (a ``<tool_use_error>`` result: its input invalid, a command blocked). A
line that is not JSON (a warning the CLI printed) is ignored.

Qwen Code prints the same shape under its own tool names; the parser takes a mapping of
those to Claude Code's (``names``) and how its shell results state the exit code.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from assay.agents.cli import CliEnding, count
from assay.results.secrets import clip_tail
from assay.results.transcript import (
    FILE_TOOLS,
    SHELL_TOOLS,
    TokenBuckets,
    Transcript,
    TranscriptEvent,
)

_EXIT = re.compile(r"^Exit code (-?\d+)")


UNAVAILABLE = "No such tool available"
"""What Claude Code answers a call of a tool it does not offer (one ``disallowed_tools``
removed): the call ran nothing."""


class ClaudeStreamParser:
    """Builds the transcript of one Claude Code run from its stdout lines.

    Args:
        agent: the transcript's agent type.
        names: the CLI's tool names → Claude Code's (others keep their own).
        exit_code: where a shell tool's result text states its exit code (the last match's
            first group); without one a failed command's code is unknown (``None``).
        session_total: the ``result`` event's usage is the session's running total, a
            resumed session's earlier runs included (Qwen Code's; Claude Code's is the run's).
    """

    def __init__(
        self,
        *,
        agent: str = "claude-code",
        names: Mapping[str, str] | None = None,
        exit_code: re.Pattern[str] = _EXIT,
        session_total: bool = False,
    ) -> None:
        self.transcript = Transcript(agent=agent)
        self._session_total = session_total
        self._names = dict(names or {})
        self._exit = exit_code
        self._calls: dict[str, tuple[str, Any]] = {}
        self._results: dict[str, str] = {}
        self._result: dict[str, Any] | None = None
        self._refused: set[str] = set()

    def feed(self, line: str) -> None:
        """Read one line; see the module docstring."""
        try:
            event = json.loads(line)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            self._init(event)
        elif kind == "system" and event.get("subtype") == "permission_denied":
            self._denied(event, _at(event))
        elif kind == "assistant":
            self._assistant(event.get("message") or {}, _at(event))
        elif kind == "user":
            self._user(event, _at(event))
        elif kind == "result":
            self._result = event

    def _init(self, event: dict[str, Any]) -> None:
        facts = {"version": event.get("claude_code_version"), "session_id":
                 event.get("session_id"), "model": event.get("model"),
                 "permission_mode": event.get("permissionMode")}  # fmt: skip
        self.transcript.cli.update({k: str(v) for k, v in facts.items() if v is not None})
        skills = event.get("skills")
        if isinstance(skills, list):
            self.transcript.skills_loaded = [str(s) for s in skills]

    def _assistant(self, message: dict[str, Any], now: int) -> None:
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and str(block.get("text", "")).strip():
                self.transcript.add(TranscriptEvent("text", now, text=str(block["text"])))
            elif block.get("type") == "tool_use":
                call_id, raw = str(block.get("id")), str(block.get("name"))
                name = self._names.get(raw, raw)
                arguments = block.get("input")
                self._calls[call_id] = (name, arguments)
                self.transcript.add(TranscriptEvent("tool_call", now, name=name, call_id=call_id,
                                                    arguments=arguments))  # fmt: skip

    def _user(self, event: dict[str, Any], now: int) -> None:
        details = event.get("tool_use_result")
        content = (event.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            call_id = str(block.get("tool_use_id"))
            name, arguments = self._calls.get(call_id, ("", None))
            text = _text(block.get("content"))
            error = bool(block.get("is_error"))
            self._results[call_id] = text
            self.transcript.add(TranscriptEvent("tool_result", now, name=name, call_id=call_id,
                                                text=text, is_error=error))  # fmt: skip
            if error and _not_run(text) and call_id not in self._refused:
                # a tool the CLI does not offer (disallowed_tools), or a call it refused before
                # running anything (its input invalid, a command blocked): nothing ran
                self._refused.add(call_id)
                self.transcript.add(TranscriptEvent("denial", now, name=name, call_id=call_id,
                                                    text=text))  # fmt: skip
            self._side_effects(now, name, call_id, arguments, text, error, details)

    def _side_effects(
        self, now: int, name: str, call_id: str, arguments: Any, text: str, error: bool,
        details: Any,
    ) -> None:  # fmt: skip
        given = arguments if isinstance(arguments, dict) else {}
        if call_id in self._refused:  # it ran nothing
            return
        if name in SHELL_TOOLS:
            found = list(self._exit.finditer(text))
            code = int(found[-1].group(1)) if found else (None if error else 0)
            self.transcript.add(
                TranscriptEvent(
                    "command",
                    now,
                    name=name,
                    call_id=call_id,
                    command=str(given.get("command", "")),
                    exit_code=code,
                    text=clip_tail(text, 2000),
                )
            )
        elif name in FILE_TOOLS and not error:
            info = details if isinstance(details, dict) else {}
            path = given.get("file_path") or given.get("notebook_path") or info.get("filePath")
            change = "add" if info.get("type") == "create" else "update"
            if path:
                self.transcript.add(TranscriptEvent("file_change", now, name=name,
                                                    call_id=call_id, path=str(path),
                                                    change=change))  # fmt: skip

    def ending(self) -> CliEnding:
        """What the ``result`` event said (an ending with nothing when the CLI died first)."""
        result = self._result
        if result is None:
            return CliEnding()
        self._denials(result.get("permission_denials"))
        usage = _usage(result.get("usage"))
        max_turns = result.get("subtype") == "error_max_turns" or (
            result.get("terminal_reason") == "max_turns"
        )
        text = result.get("result")
        failed = bool(result.get("is_error")) and not max_turns
        api_error = None
        if failed:
            status = result.get("api_error_status")
            fallback = f"HTTP {status}" if status else str(result.get("subtype"))
            api_error = str(text) if text else fallback
        cost = result.get("total_cost_usd")
        return CliEnding(
            final=str(text) if isinstance(text, str) and not failed and not max_turns else None,
            max_turns=max_turns, api_error=api_error, usage=usage,
            cost_usd=_money(cost), session_total=self._session_total,
        )  # fmt: skip

    def _denied(self, event: dict[str, Any], now: int) -> None:
        """A ``permission_denied`` event: the call it names was refused as it was made."""
        call_id = str(event.get("tool_use_id", ""))
        if not call_id or call_id in self._refused:
            return
        self._refused.add(call_id)
        reason = str(event.get("message") or "denied by the permission rules")
        self.transcript.add(TranscriptEvent("denial", now, name=self._name(event),
                                            call_id=call_id, text=reason))  # fmt: skip

    def _name(self, denial: dict[str, Any]) -> str:
        """The refused tool's name, as Claude Code's."""
        raw = str(denial.get("tool_name"))
        return self._names.get(raw, raw)

    def _denials(self, denials: Any) -> None:
        """Each refused call the ``result`` lists (not already seen), which ran nothing: it
        is a denial, not a command or a file change."""
        now = time.time_ns()
        refused = set()
        for denial in denials if isinstance(denials, list) else []:
            if not isinstance(denial, dict):
                continue
            call_id = str(denial.get("tool_use_id", ""))
            if call_id in self._refused:
                continue
            refused.add(call_id)
            reason = self._results.get(call_id, "denied by the permission rules")
            self.transcript.add(TranscriptEvent("denial", now, name=self._name(denial),
                                                call_id=call_id, text=reason))  # fmt: skip
        self._refused |= refused
        self.transcript.events = [
            e for e in self.transcript.events
            if not (e.kind in ("command", "file_change") and e.call_id in refused)
        ]  # fmt: skip


def _not_run(text: str) -> bool:
    """An error result of a call the CLI refused before running it: ``No such tool
    available``, or a ``<tool_use_error>`` (Claude Code's answer to a call whose input
    fails its schema, or that it blocks); a tool that ran and failed answers with its
    output."""
    return UNAVAILABLE in text or text.lstrip().startswith("<tool_use_error>")


def _at(event: dict[str, Any]) -> int:
    """When the CLI says the event happened (its ``timestamp``, milliseconds), else now: the
    CLI may print a tool's result after it has sent the next request."""
    stamp = event.get("timestamp")
    if isinstance(stamp, str):
        try:
            moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return time.time_ns()
        return int(moment.timestamp() * 1_000_000_000)
    return time.time_ns()


def _money(value: Any) -> float | None:
    """A cost the CLI reported, if it is a finite, non-negative number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _usage(raw: Any) -> TokenBuckets | None:
    if not isinstance(raw, dict):
        return None
    read = count(raw.get("cache_read_input_tokens") or 0)
    write = count(raw.get("cache_creation_input_tokens") or 0)
    total_input = count(raw.get("input_tokens") or 0) + read + write
    output = count(raw.get("output_tokens") or 0)
    return TokenBuckets(input=total_input, output=output, cache_read=read, cache_write=write,
                        total=total_input + output)  # fmt: skip
