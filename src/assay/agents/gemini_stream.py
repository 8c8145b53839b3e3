"""The Gemini CLI's ``--output-format stream-json`` events, read into a transcript.

One JSON object a line (Gemini CLI 0.61): ``init`` (``session_id``, ``model``), ``message``
(``role`` ``user`` | ``assistant``, ``content``, ``delta``: an assistant message arrives in
pieces), ``tool_use`` (``tool_name``, ``tool_id``, ``parameters``), ``tool_result``
(``tool_id``, ``status`` ``success`` | ``error``, ``output``, ``error: {type, message}``),
``error`` and ``result`` (``status``, ``error``, ``stats``: ``input_tokens``,
``output_tokens``, ``cached``, ``total_tokens``). Tool names follow Coder Eval's mapping
across harnesses (``run_shell_command`` is ``Bash``, ``write_file`` ``Write``, ``replace``
``Edit``, ``read_file`` ``Read``), so criteria read Gemini, Codex and Claude Code runs
alike; the assistant's text after the last tool call is the final answer. The CLI does not
report a shell command's exit code, so a command's is unknown (``None``).
"""

from __future__ import annotations

import time
from typing import Any

from assay.agents.cli import CliEnding, count, json_event
from assay.results.secrets import clip_tail
from assay.results.transcript import TokenBuckets, Transcript, TranscriptEvent

NAMES = {"run_shell_command": "Bash", "write_file": "Write", "replace": "Edit",
         "read_file": "Read", "glob": "Glob", "search_file_content": "Grep",
         "list_directory": "LS", "web_fetch": "WebFetch",
         "google_web_search": "WebSearch", "activate_skill": "Skill"}  # fmt: skip
"""Gemini's tool names as Coder Eval's (others keep their own)."""
_WRITES = {"Write": "add", "Edit": "update"}


class GeminiStreamParser:
    """Builds the transcript of one Gemini CLI run from its stdout lines."""

    def __init__(self) -> None:
        self.transcript = Transcript(agent="gemini")
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._reply: list[str] = []
        self._result: dict[str, Any] | None = None

    def feed(self, line: str) -> None:
        """Read one line; see the module docstring."""
        event = json_event(line)
        if event is None:
            return
        kind, now = event.get("type"), time.time_ns()
        if kind == "init":
            for key in ("session_id", "model"):
                if event.get(key):
                    self.transcript.cli[key] = str(event[key])
        elif kind == "message" and event.get("role") == "assistant":
            self._reply.append(str(event.get("content", "")))
        elif kind == "tool_use":
            self._tool_use(event, now)
        elif kind == "tool_result":
            self._tool_result(event, now)
        elif kind == "error":
            self.transcript.add(TranscriptEvent("error", now, text=str(event.get("message", ""))))
        elif kind == "result":
            self._result = event

    def _tool_use(self, event: dict[str, Any], now: int) -> None:
        self._flush_text(now)
        raw = str(event.get("tool_name", ""))
        name = NAMES.get(raw, raw)
        call_id = str(event.get("tool_id", ""))
        parameters = event.get("parameters")
        arguments = parameters if isinstance(parameters, dict) else {}
        self._calls[call_id] = (name, arguments)
        self.transcript.add(TranscriptEvent("tool_call", now, name=name, call_id=call_id,
                                            arguments=arguments))  # fmt: skip

    def _tool_result(self, event: dict[str, Any], now: int) -> None:
        call_id = str(event.get("tool_id", ""))
        name, arguments = self._calls.get(call_id, ("", {}))
        failed = event.get("status") != "success"
        error = event.get("error")
        output = event.get("output")
        if not isinstance(output, str):
            output = str(error.get("message", "")) if isinstance(error, dict) else ""
        self.transcript.add(TranscriptEvent("tool_result", now, name=name, call_id=call_id,
                                            text=output, is_error=failed))  # fmt: skip
        if name == "Bash" and not failed:
            command = str(arguments.get("command", ""))
            kept = clip_tail(output, 2000)
            self.transcript.add(TranscriptEvent("command", now, name=name, call_id=call_id,
                                                command=command, text=kept))  # fmt: skip
        if name in _WRITES and not failed and arguments.get("file_path"):
            self.transcript.add(TranscriptEvent("file_change", now, name=name, call_id=call_id,
                                                path=str(arguments["file_path"]),
                                                change=_WRITES[name]))  # fmt: skip

    def _flush_text(self, now: int) -> None:
        """The assistant's text before a tool call is a step of the run, not its answer."""
        if self._reply:
            self.transcript.add(TranscriptEvent("text", now, text="".join(self._reply)))
            self._reply = []

    def ending(self) -> CliEnding:
        """The final text, the CLI's own token counts, or its error."""
        result = self._result or {}
        stats = result.get("stats") if isinstance(result.get("stats"), dict) else {}
        usage = None
        if stats:
            total_input, output = count(stats.get("input_tokens") or 0), count(
                stats.get("output_tokens") or 0)  # fmt: skip
            usage = TokenBuckets(input=total_input, output=output,
                                 cache_read=count(stats.get("cached") or 0),
                                 total=total_input + output)  # fmt: skip
        error = result.get("error")
        if result.get("status") not in (None, "success"):
            message = error.get("message") if isinstance(error, dict) else error
            return CliEnding(api_error=str(message or result.get("status")), usage=usage)
        final = "".join(self._reply)
        if final:
            self.transcript.add(TranscriptEvent("text", time.time_ns(), text=final))
        return CliEnding(final=final if self._result is not None else None, usage=usage)
