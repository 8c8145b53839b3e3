"""Comparing run folders made by different executors: same files, same contents, aside from
what differs between any two runs (clock times and durations, trace and session ids, the
temporary folder a sandbox had, the user id a bwrap row ran as: handed out in the order rows
start, by each node on a cluster)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from assay.orchestration.running.progress import NoProgress
from assay.results.task_result import EvaluationResult

TIMING_KEYS = frozenset({
    "started_at", "completed_at", "duration_seconds", "start_time", "end_time",
    "total_duration_seconds", "run_id", "command", "seconds", "startTimeUnixNano",
    "endTimeUnixNano", "traceId", "spanId", "parentSpanId", "timeUnixNano", "session_id",
})  # fmt: skip
_CLOCK = re.compile(
    r"\d{2}:\d{2}:\d{2}(\.\d+)?|\d+(\.\d+)? ?(s|ms)\b|\d{4}-\d{2}-\d{2}[T _][\d:.-]+"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # a session id
    r"|/tmp/assay-[a-z0-9_]+"  # a sandbox's temporary folder
    r"|(?<=bwrap as uid )\d+"  # the user a bwrap row ran as
)


def _strip(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _strip(v) for k, v in data.items() if k not in TIMING_KEYS}
    if isinstance(data, list):
        return [_strip(v) for v in data]
    if isinstance(data, str):
        return _CLOCK.sub("<t>", data)
    return data


def run_contents(run_dir: Path) -> dict[str, Any]:
    """Every file of a run folder (``sessions.jsonl`` aside), JSON parsed and timings
    removed, text with clock times masked."""
    found: dict[str, Any] = {}
    for path in sorted(run_dir.rglob("*")):
        if not path.is_file() or path.name == "sessions.jsonl":
            continue
        name = path.relative_to(run_dir).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".json":
            found[name] = _strip(json.loads(text))
        else:
            found[name] = _CLOCK.sub("<t>", text)
    return found


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Where two :func:`run_contents` differ (empty: the same)."""
    out = [f"only in one: {n}" for n in sorted(set(a) ^ set(b))]
    out += [f"differs: {n}" for n in sorted(set(a) & set(b)) if a[n] != b[n]]
    return out


class NodeProgress(NoProgress):
    """Records what the executor says about nodes (the last rows-per-node it showed)."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.finished = 0

    def advance(self, result: EvaluationResult) -> None:
        self.finished += 1

    def nodes(self, rows: Any) -> None:
        self.rows = dict(rows)
