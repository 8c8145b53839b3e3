"""Codex's ``exec --json`` events, read into a transcript.

One JSON object a line (``reference/coding_agents_offline.md``): ``thread.started``
(``thread_id``), ``turn.started``, ``item.started`` / ``item.updated`` / ``item.completed``
with an ``item`` of type ``command_execution`` (``command``, ``aggregated_output``,
``exit_code``, ``status``), ``file_change`` (``changes: [{path, kind}]``), ``agent_message``
(``text``), ``reasoning``, ``mcp_tool_call``, ``web_search``, ``todo_list`` or ``error``;
``turn.completed`` (``usage``: ``input_tokens`` with cached ones included,
``cached_input_tokens``, ``output_tokens``, ``reasoning_output_tokens``: the session's
running total, so on ``exec resume`` the earlier turns' too), ``turn.failed``
and ``error``. Tool names follow Coder Eval's mapping across harnesses (a command is
``Bash``, a file change ``Write``), so criteria such as ``command_executed`` read Codex and
Claude Code runs alike; the last agent message is the final answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from assay.agents.cli import CliEnding, count, json_event
from assay.results.secrets import clip_tail
from assay.results.transcript import TokenBuckets, Transcript, TranscriptEvent

_CHANGES = {"add": "add", "delete": "delete", "update": "update"}


class CodexStreamParser:
    """Builds the transcript of one Codex run from its stdout lines."""

    def __init__(self) -> None:
        self.transcript = Transcript(agent="codex")
        self._started: set[str] = set()
        self._messages: list[str] = []
        self._usage: TokenBuckets | None = None
        self._failure: str | None = None

    def feed(self, line: str) -> None:
        """Read one line; see the module docstring."""
        event = json_event(line)
        if event is None:
            return
        kind = event.get("type")
        if kind == "thread.started" and event.get("thread_id"):
            self.transcript.cli["session_id"] = str(event["thread_id"])
        elif kind in ("item.started", "item.completed") and isinstance(event.get("item"), dict):
            self._item(event["item"], done=kind == "item.completed")
        elif kind == "turn.completed":
            self._add_usage(event.get("usage"))
        elif kind == "turn.failed":
            error = event.get("error")
            self._failure = str(error.get("message") if isinstance(error, dict) else error)
        elif kind == "error":
            self.transcript.add(
                TranscriptEvent("error", time.time_ns(), text=str(event.get("message", "")))
            )

    def _item(self, item: dict[str, Any], *, done: bool) -> None:
        kind, item_id = item.get("type"), str(item.get("id", ""))
        now = time.time_ns()
        if kind == "agent_message" and done:
            text = str(item.get("text", ""))
            self._messages.append(text)
            self.transcript.add(TranscriptEvent("text", now, text=text))
        elif kind == "error" and done:
            self.transcript.add(TranscriptEvent("error", now, text=str(item.get("message", ""))))
        elif kind in _TOOLS:
            name, arguments = _TOOLS[kind](item)
            if item_id not in self._started:
                self._started.add(item_id)
                self.transcript.add(TranscriptEvent("tool_call", now, name=name, call_id=item_id,
                                                    arguments=arguments))  # fmt: skip
            if done:
                self._completed(kind, name, item_id, item, now)

    def _completed(
        self, kind: str, name: str, item_id: str, item: dict[str, Any], now: int
    ) -> None:
        status = str(item.get("status", ""))
        failed = status in ("failed", "declined")
        if status == "declined":  # ran nothing: a denial, never a command or a file change
            self._declined(name, item_id, item, now)
            return
        if kind == "command_execution":
            code = item.get("exit_code")
            failed = failed or (isinstance(code, int) and code != 0)
            output = str(item.get("aggregated_output", ""))
            self.transcript.add(TranscriptEvent("tool_result", now, name=name, call_id=item_id,
                                                text=output, is_error=failed))  # fmt: skip
            self.transcript.add(TranscriptEvent("command", now, name=name, call_id=item_id,
                                                command=str(item.get("command", "")),
                                                exit_code=code if isinstance(code, int) else None,
                                                text=clip_tail(output, 2000)))  # fmt: skip
            return
        result = item.get("result") or item.get("error") or status
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        self.transcript.add(TranscriptEvent("tool_result", now, name=name, call_id=item_id,
                                            text=text, is_error=failed))  # fmt: skip
        if kind == "file_change" and not failed:
            for change in item.get("changes") or []:
                if isinstance(change, dict) and change.get("path"):
                    self.transcript.add(TranscriptEvent(
                        "file_change", now, name=name, call_id=item_id, path=str(change["path"]),
                        change=_CHANGES.get(str(change.get("kind")), "update")))  # fmt: skip

    def _declined(self, name: str, item_id: str, item: dict[str, Any], now: int) -> None:
        """A call Codex's approval policy declined: its result (what Codex said) and a
        denial."""
        said = item.get("aggregated_output") or item.get("error") or item.get("result")
        text = said if isinstance(said, str) and said else "declined"
        self.transcript.add(TranscriptEvent("tool_result", now, name=name, call_id=item_id,
                                            text=text, is_error=True))  # fmt: skip
        reason = "declined by Codex's approval policy"
        self.transcript.add(TranscriptEvent("denial", now, name=name, call_id=item_id,
                                            text=reason))  # fmt: skip

    def _add_usage(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        total_input = count(raw.get("input_tokens") or 0)
        output = count(raw.get("output_tokens") or 0)
        usage = TokenBuckets(input=total_input, output=output,
                             cache_read=count(raw.get("cached_input_tokens") or 0),
                             cache_write=count(raw.get("cache_write_input_tokens") or 0),
                             reasoning=count(raw.get("reasoning_output_tokens") or 0),
                             total=total_input + output)  # fmt: skip
        self._usage = usage if self._usage is None else self._usage + usage

    def ending(self) -> CliEnding:
        """The last agent message as the final answer, or the turn's failure."""
        final = self._messages[-1] if self._messages and self._failure is None else None
        return CliEnding(final=final, api_error=self._failure, usage=self._usage,
                         session_total=True)  # fmt: skip


def _command(item: dict[str, Any]) -> tuple[str, Any]:
    return "Bash", {"command": str(item.get("command", ""))}


def _file_change(item: dict[str, Any]) -> tuple[str, Any]:
    paths = [c.get("path") for c in item.get("changes") or [] if isinstance(c, dict)]
    return "Write", {"paths": paths}


def _mcp(item: dict[str, Any]) -> tuple[str, Any]:
    return f"mcp__{item.get('server')}__{item.get('tool')}", item.get("arguments")


def _search(item: dict[str, Any]) -> tuple[str, Any]:
    return "WebSearch", {"query": item.get("query")}


def _todo(item: dict[str, Any]) -> tuple[str, Any]:
    return "TodoWrite", {"items": item.get("items")}


_TOOLS: dict[str, Callable[[dict[str, Any]], tuple[str, Any]]] = {
    "command_execution": _command,
    "file_change": _file_change,
    "mcp_tool_call": _mcp,
    "web_search": _search,
    "todo_list": _todo,
}
