"""The stream parser of the test-only ``toy-cli`` agent (``tests/agents/toy_cli/toy-cli``):
its JSON lines as a transcript."""

from __future__ import annotations

import json
import time

from assay.agents.cli import CliEnding
from assay.results.transcript import Transcript, TranscriptEvent


class ToyStreamParser:
    """Reads toy-cli's events: ``tool``, ``result``, ``final``, ``error``."""

    def __init__(self) -> None:
        self.transcript = Transcript(agent="toy-cli")
        self._final: str | None = None
        self._error: str | None = None

    def feed(self, line: str) -> None:
        """Read one line of toy-cli's standard output."""
        event = json.loads(line)
        now, kind = time.time_ns(), event.get("type")
        if kind == "tool":
            self.transcript.add(TranscriptEvent("tool_call", now, name=event["name"],
                                                call_id=event["id"],
                                                arguments=event["arguments"]))  # fmt: skip
        elif kind == "result":
            self.transcript.add(TranscriptEvent("tool_result", now, call_id=event["id"],
                                                text=event["text"],
                                                is_error=bool(event["error"])))  # fmt: skip
        elif kind == "final":
            self._final = str(event["text"])
        elif kind == "error":
            self._error = str(event["text"])
            self.transcript.add(TranscriptEvent("error", now, text=self._error))

    def ending(self) -> CliEnding:
        """The final answer, or the error the CLI reported."""
        return CliEnding(final=self._final, api_error=self._error)
