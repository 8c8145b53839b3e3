"""One row-task replicate as the row page shows it: the prompt, the response, every
criterion with its score and reason (judge verdicts of QA rows included), the agent's
transcript read back from ``trace.json`` (:func:`~assay.results.transcript_otlp.from_trace`),
the agent's stderr, ``pre_run``/``post_run`` output, ``task.log`` and the files in the row's
folder (a kept sandbox included).

A file that cannot be read is shown as a problem; a ``task.json`` that does not validate is
shown as its raw JSON.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.results.task_result import TASK_SCHEMA_VERSION, EvaluationResult
from assay.results.transcript import Transcript, TranscriptEvent
from assay.results.transcript_otlp import from_trace
from assay.view.reading import Problem, read_json_text, read_text_head, read_text_tail, validate

TEXT_LIMIT = 200_000
FILE_LIMIT = 500
OWN_FILES = frozenset({"task.json", "response.txt", "trace.json", "task.log"})


@dataclass(frozen=True)
class FileEntry:
    """A file under the row's folder: run-relative path, size in bytes, and whether it is
    one of assay's own (``task.json``, ``response.txt``, ``trace.json``, ``task.log``)."""

    path: str
    size: int
    own: bool


@dataclass
class EventView:
    """One transcript event, ready to show."""

    kind: str
    at_seconds: float
    title: str
    body: str = ""
    is_error: bool = False
    tokens: str = ""
    cost: float | None = None


@dataclass
class RowView:
    """Everything the row page shows (see the module docstring)."""

    folder: str
    result: EvaluationResult | None
    raw: Any
    prompt: str | None
    response: str | None
    response_cut: bool
    transcript: Transcript | None
    events: list[EventView]
    log: str | None
    log_cut: bool
    files: list[FileEntry]
    files_more: int
    problems: list[Problem] = field(default_factory=list)

    @property
    def sandbox_kept(self) -> bool:
        """The row's sandbox was kept in its folder."""
        return any(f"{self.folder}/sandbox/" in f.path for f in self.files)


def read_row_view(run_dir: Path, folder: str) -> RowView:
    """The row in ``run_dir / folder`` (``folder`` already checked to be inside the run)."""
    base = run_dir / folder
    problems: list[Problem] = []
    data, problem = read_json_text(base / "task.json", f"{folder}/task.json")
    result = None
    if problem is not None:
        problems.append(problem)
    else:
        result, _, found = validate(data, f"{folder}/task.json", EvaluationResult,
                                    current=TASK_SCHEMA_VERSION)  # fmt: skip
        problems += found
    response, cut = read_text_head(base / "response.txt", limit=TEXT_LIMIT)
    transcript = _transcript(base, folder, problems)
    log, log_cut = read_text_tail(base / "task.log", limit=TEXT_LIMIT)
    files, more = list_files(run_dir, folder)
    prompt = result.task_config.resolved.get("initial_prompt") if result else None
    return RowView(folder=folder, result=result, raw=data, prompt=prompt if isinstance(
        prompt, str) else None, response=response, response_cut=cut, transcript=transcript,
        events=event_views(transcript) if transcript else [], log=log, log_cut=log_cut,
        files=files, files_more=more, problems=problems)  # fmt: skip


def _transcript(base: Path, folder: str, problems: list[Problem]) -> Transcript | None:
    if not (base / "trace.json").exists():
        return None
    data, problem = read_json_text(base / "trace.json", f"{folder}/trace.json")
    if problem is not None:
        problems.append(problem)
        return None
    try:
        return from_trace(data) if isinstance(data, dict) else None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        problems.append(Problem(f"{folder}/trace.json", f"has spans that could not be read "
                                                        f"as a transcript ({exc})"))  # fmt: skip
        return None


def list_files(run_dir: Path, folder: str) -> tuple[list[FileEntry], int]:
    """Files under the row's folder (sorted, at most ``FILE_LIMIT``), and how many more;
    symbolic links are listed, never followed."""
    found: list[FileEntry] = []
    more = 0
    base = run_dir / folder
    for root, dirs, names in os.walk(base, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            if len(found) >= FILE_LIMIT:
                more += 1
                continue
            try:
                size = path.lstat().st_size
            except OSError:
                continue
            relative = path.relative_to(run_dir).as_posix()
            found.append(FileEntry(relative, size, Path(root) == base and name in OWN_FILES))
    return found, more


def event_views(transcript: Transcript) -> list[EventView]:
    """The transcript's events with times relative to the first one."""
    start = min((e.at_ns for e in transcript.events if e.at_ns), default=0)
    return [_event(e, (e.at_ns - start) / 1e9 if e.at_ns else 0.0) for e in transcript.events]


def _pretty(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def _event(event: TranscriptEvent, at: float) -> EventView:
    kind = event.kind
    if kind == "model_call":
        usage = event.usage
        tokens = (f"{usage.input} in ({usage.cache_read} cache read, {usage.cache_write} cache "
                  f"write) / {usage.output} out ({usage.reasoning} reasoning)"
                  if usage else "")  # fmt: skip
        title = f"model call {event.name} → {event.stop_reason or '?'}"
        return EventView(
            kind, at, title, _clipped(event.text), event.is_error, tokens, event.cost_usd
        )
    titles = {
        "text": "assistant",
        "tool_call": f"tool call {event.name}",
        "tool_result": f"tool result {event.name}".rstrip(),
        "command": f"$ {event.command} → exit {event.exit_code}",
        "file_change": f"file {event.change}: {event.path}",
        "denial": f"denied {event.name}",
        "error": "error",
        "final": "final answer",
        "user": "user (simulated)" if event.name == "simulated" else "user",
    }
    body = _pretty(event.arguments) if kind == "tool_call" else event.text
    return EventView(kind, at, titles.get(kind, kind), _clipped(body), event.is_error)


def _clipped(text: str) -> str:
    """An event's text cut at :data:`TEXT_LIMIT` characters, saying how much was left out (a
    final answer repeats the whole response, which the Response section clips too)."""
    if len(text) <= TEXT_LIMIT:
        return text
    return (
        f"{text[:TEXT_LIMIT]}\n… [cut: {len(text) - TEXT_LIMIT:,} more characters; the whole "
        "event is in the row's trace.json]"
    )


def safe_path(run_dir: Path, relative: str) -> Path | None:
    """``run_dir / relative`` when it stays inside the run folder (no ``..``, no symbolic
    link leading out); ``None`` otherwise."""
    if not relative or relative.startswith("/") or "\\" in relative:
        return None
    candidate = run_dir / relative
    try:
        resolved = candidate.resolve(strict=True)
        root = run_dir.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if resolved != root and root not in resolved.parents:
        return None
    return resolved
