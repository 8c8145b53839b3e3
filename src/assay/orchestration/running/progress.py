"""What a run reports while rows run: the :class:`Progress` protocol (displays implementing
it are in :mod:`assay.reports.progress`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Protocol

from assay.providers.retry import Attempt
from assay.results.io import Writer
from assay.results.task_result import EvaluationResult


class Progress(Protocol):
    """Receives one call per finished row and per retried model call."""

    def start(self, total: int, *, already_done: int = 0) -> None:
        """Called once before the first row; ``already_done`` rows were kept (resume)."""

    def advance(self, result: EvaluationResult) -> None:
        """Called when a row finishes."""

    def retry(self, model: str, attempt: Attempt) -> None:
        """Called when a model call failed and will be tried again."""

    def nodes(self, rows: Mapping[str, int]) -> None:
        """Called on a cluster (``--executor ray``) when its nodes or their counts change:
        node label → rows it finished in this session (a lost node's label ends
        ``(lost)``)."""

    def stop(self) -> None:
        """Called once at the end."""


class NoProgress:
    """A :class:`Progress` that shows nothing (``-q``; the default of the Python API)."""

    def start(self, total: int, *, already_done: int = 0) -> None:
        """Nothing to show."""

    def advance(self, result: EvaluationResult) -> None:
        """Nothing to show."""

    def retry(self, model: str, attempt: Attempt) -> None:
        """Nothing to show."""

    def nodes(self, rows: Mapping[str, int]) -> None:
        """Nothing to show."""

    def stop(self) -> None:
        """Nothing to show."""


class RedactedProgress:
    """A caller's own :class:`Progress` told what the run's files hold: each finished row
    and each retried call's error as ``writer`` (the run's) writes them: the secrets replaced
    by their markers, as every file and printed line of the run has them."""

    def __init__(self, inner: Progress, writer: Writer, *, rows: bool = True) -> None:
        self.inner = inner
        self.writer = writer
        self.rows = rows

    def start(self, total: int, *, already_done: int = 0) -> None:
        """Passed on."""
        self.inner.start(total, already_done=already_done)

    def advance(self, result: EvaluationResult) -> None:
        """Passed on redacted (every text of the row, as its ``row.json`` has it); as it is
        when not ``rows`` (assay's own display, which shows no text of a row)."""
        if not self.rows:
            self.inner.advance(result)
            return
        data = self.writer.redact_data(result.model_dump(mode="json"))
        self.inner.advance(EvaluationResult.model_validate(data))

    def retry(self, model: str, attempt: Attempt) -> None:
        """Passed on with the attempt's error redacted."""
        self.inner.retry(model, replace(attempt, error=self.writer.redact(attempt.error)))

    def nodes(self, rows: Mapping[str, int]) -> None:
        """Passed on (to a progress object that has the method: it is optional)."""
        show = getattr(self.inner, "nodes", None)
        if show is not None:
            show(rows)

    def stop(self) -> None:
        """Passed on."""
        self.inner.stop()
