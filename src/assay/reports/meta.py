"""What a run's reports say beyond its rows (:class:`RunMeta`), and the shape of what writing
them returns (:class:`Reports`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from assay.criteria.registry import CriterionRegistry
from assay.results.run import RunSummary, SkippedTask, TaskSelection
from assay.results.secret_scan import SecretFinding
from assay.results.suite import SuiteRollup
from assay.results.task_result import EvaluationResult
from assay.spec.criteria import CriterionSpec

Stage = Literal["run", "execute", "evaluate", "report"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_INTERRUPTED = 130
GRADING_STOPPED = (
    "grading was stopped: the rows graded again so far keep their new grade, the rest their "
    "earlier one, and the reports are rebuilt over every row"
)
"""The warning of an ``assay evaluate`` stopped by a signal: its ``run.json`` exits 130 (as
the command did) until an ``assay evaluate`` that grades every row again replaces it."""


@dataclass
class RunMeta:
    """Facts about the invocation that the row results do not carry.

    ``session_times``: each session's start and end (``None``: killed); when given,
    ``active_seconds`` is worked out while the rows are read (a killed session ends at its
    last finished row). ``sequence``: for a run that stopped when decided, ``(suite, row)``
    → its place in the order the stopping test heard it (its suites' intervals, and the gates
    on them, are then confidence sequences over the rows in that order).
    """

    run_id: str
    stage: Stage
    start_time: datetime
    end_time: datetime
    max_parallel: int
    command: list[str] = field(default_factory=list)
    skipped: list[SkippedTask] = field(default_factory=list)
    selections: list[TaskSelection] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    criteria: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    active_seconds: float | None = None
    sessions: int = 1
    planned: dict[str, int] = field(default_factory=dict)
    experiment_id: str | None = None
    experiment_description: str = ""
    variant_ids: list[str] = field(default_factory=list)
    session_times: list[tuple[datetime, datetime | None]] | None = None
    sequence: dict[tuple[str, str], int] | None = None


@dataclass
class Reports:
    """What was written, the exit code it implies, and the secrets the scan found."""

    summary: RunSummary
    suites: list[SuiteRollup]
    exit_code: int
    secret_findings: list[SecretFinding] = field(default_factory=list)


def suite_criteria(
    suite_id: str,
    members: Sequence[EvaluationResult],
    meta: RunMeta,
    registry: CriterionRegistry,
) -> list[CriterionSpec]:
    """The suite's criteria as written (before substitution) when known, else as the first
    row resolved them, as instances of ``registry``'s classes."""
    raw = meta.criteria.get(suite_id)
    if raw is None:
        raw = members[0].task_config.resolved.get("success_criteria", []) if members else []
    return list(registry.validate(raw))


Source = Callable[[], Iterable[EvaluationResult]]
"""The rows of a run, read again each time it is called (a run folder is read from disk)."""
