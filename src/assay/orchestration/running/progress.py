"""What a run reports while rows run: the :class:`Progress` protocol (displays implementing
it are in :mod:`assay.reports.progress`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from assay.providers.retry import Attempt
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
