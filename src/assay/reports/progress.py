"""Progress while rows run: a rich bar on a terminal, plain periodic lines otherwise.

:class:`Progress` (the protocol) and :class:`NoProgress` live in
:mod:`assay.orchestration.running.progress`; they are imported here for the displays' users.

Both show rows done/total, passed, errors (and refusals), rows per second and the time left.
The rate and the time left are measured from the first finished row, not from the start: the
first rows wait for a model server to warm up and for a whole batch of ``-j`` rows to finish,
and a rate over that wait would promise hours. Until two rows have finished, the time left is
shown as unknown (``…``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import IO

from rich.markup import escape

from assay.orchestration.running.progress import NoProgress, Progress
from assay.providers.retry import Attempt
from assay.results.task_result import EvaluationResult

MIN_RATE_SPAN = 1.0  # seconds of finished rows before a rate is shown


class _Counts:
    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.passed = 0
        self.errors = 0
        self.refused = 0
        self.retries = 0
        self.kept = 0
        self.started = time.monotonic()
        self.first_done: float | None = None
        self.nodes: dict[str, int] = {}

    def add(self, result: EvaluationResult) -> None:
        self.done += 1
        if self.first_done is None:
            self.first_done = time.monotonic()
        category = result.final_status.category
        self.passed += category == "passed"
        self.errors += category == "error"
        self.refused += category == "refused"

    def rate(self) -> float | None:
        """Rows per second since the first row finished; ``None`` before two rows did or
        before :data:`MIN_RATE_SPAN` seconds passed (a rate over less is noise)."""
        if self.first_done is None or self.done < 2:
            return None
        span = time.monotonic() - self.first_done
        return (self.done - 1) / span if span >= MIN_RATE_SPAN else None

    def eta(self) -> str:
        rate = self.rate()
        if rate is None:
            return "ETA … (measuring)"
        return f"{rate:.1f} rows/s · ETA {(self.total - self.done) / rate:.0f} s"

    def outcome(self) -> str:
        refused = f" · {self.refused} refused" if self.refused else ""
        return f"{self.passed} passed · {self.errors} errors{refused}"

    def line(self) -> str:
        kept = f" (+{self.kept} kept)" if self.kept else ""
        retries = f" · {self.retries} retries" if self.retries else ""
        return (f"{self.done}/{self.total} rows{kept} · {self.outcome()}{retries} · {self.eta()}"
                f"{self.node_text()}")  # fmt: skip

    def node_text(self) -> str:
        """`` · 2 nodes: a 10, b 12`` on a cluster (rows per node), else nothing."""
        if not self.nodes:
            return ""
        live = sum(1 for name in self.nodes if not name.endswith("(lost)"))
        rows = ", ".join(f"{name} {done}" for name, done in self.nodes.items())
        return f" · {live} node{'s' if live != 1 else ''}: {rows}"


class PlainProgress:
    """One line to ``stream`` every ``every`` seconds and at the end (for logs and CI)."""

    def __init__(self, stream: IO[str] | None = None, every: float = 10.0) -> None:
        self.stream = stream or sys.stderr
        self.every = every
        self.counts = _Counts()
        self._last = 0.0

    def start(self, total: int, *, already_done: int = 0) -> None:
        """Remember the total."""
        self.counts = _Counts()
        self.counts.total = total
        self.counts.kept = already_done
        self._last = time.monotonic()
        self._last_retry = 0.0

    def advance(self, result: EvaluationResult) -> None:
        """Count the row; print when ``every`` seconds have passed."""
        self.counts.add(result)
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            print(f"[assay] {self.counts.line()}", file=self.stream, flush=True)

    def retry(self, model: str, attempt: Attempt) -> None:
        """Count the retry; say so at most once every ``every`` / 5 seconds."""
        self.counts.retries += 1
        now = time.monotonic()
        if now - self._last_retry >= self.every / 5:
            self._last_retry = now
            print(f"[assay] {retry_text(model, attempt)}", file=self.stream, flush=True)

    def nodes(self, rows: Mapping[str, int]) -> None:
        """Remember the rows per node; say so at once when a node joins or is lost."""
        changed = set(rows) != set(self.counts.nodes)
        self.counts.nodes = dict(rows)
        if changed and self.counts.total:
            print(f"[assay] {self.counts.line()}", file=self.stream, flush=True)

    def stop(self) -> None:
        """Print the final line."""
        if self.counts.total:
            print(f"[assay] {self.counts.line()}", file=self.stream, flush=True)


class RichProgress:
    """A rich progress bar with the same counters in its description, on ``stream``
    (default: ``sys.stderr``)."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.counts = _Counts()
        self.stream = stream if stream is not None else sys.stderr  # where it prints
        self.bar = Progress(
            TextColumn("[bold]assay"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True) if stream is None else Console(file=stream),
            transient=False,
        )
        self.task_id = self.bar.add_task("rows", total=0, status="")

    def start(self, total: int, *, already_done: int = 0) -> None:
        """Show the bar."""
        self.counts = _Counts()
        self.counts.total = total
        self.counts.kept = already_done
        self.bar.update(self.task_id, total=total)
        self.bar.start()

    def advance(self, result: EvaluationResult) -> None:
        """Move the bar by one row."""
        self.counts.add(result)
        self.bar.update(self.task_id, advance=1, status=self._status())

    def _status(self) -> str:
        retries = f" · [yellow]{self.counts.retries} retries[/]" if self.counts.retries else ""
        refused = f" · {self.counts.refused} refused" if self.counts.refused else ""
        return (
            f"[green]{self.counts.passed} passed[/] · [red]{self.counts.errors} errors[/]"
            f"{refused}{retries} · {self.counts.eta()}"
            f"{escape(self.counts.node_text())}"
        )

    def retry(self, model: str, attempt: Attempt) -> None:
        """Count the retry and show the latest cause under the bar."""
        self.counts.retries += 1
        self.bar.update(self.task_id, status=self._status())
        self.bar.console.print(
            f"[yellow]retry[/] {escape(retry_text(model, attempt))}",
            highlight=False,
            soft_wrap=True,
        )  # the text as it is, one piece

    def nodes(self, rows: Mapping[str, int]) -> None:
        """Show the rows per node in the bar's description."""
        self.counts.nodes = dict(rows)
        self.bar.update(self.task_id, status=self._status())

    def stop(self) -> None:
        """Remove the live display."""
        self.bar.stop()


def retry_text(model: str, attempt: Attempt) -> str:
    """One line about a retried call: model, cause, attempt number, wait."""
    return (
        f"{model}: attempt {attempt.number} failed ({attempt.error}); "
        f"retrying in {attempt.wait_seconds:.1f} s"
    )


def make_progress(stream: IO[str] | None = None, *, quiet: bool = False) -> Progress:
    """A rich bar when stderr is a terminal, plain lines otherwise, nothing when quiet."""
    if quiet:
        return NoProgress()
    target = stream or sys.stderr
    if target.isatty():
        return RichProgress(stream)
    return PlainProgress(target)
