"""The criterion protocol: check one row, aggregate a suite.

A checker is a small class per criterion ``type``. ``check`` grades one row from a
:class:`GradingContext` (the sandbox and the final response) and returns a criterion result
(a score in [0, 1] plus details); ``aggregate`` turns the results of every graded row into
suite metrics. The base aggregate is descriptive statistics of the scores
(``reference/originals.md`` §1.4); classification checkers add their own metrics.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from assay.metrics.descriptive import describe_stats
from assay.metrics.streaming import ScoreStats
from assay.metrics.values import MetricTable
from assay.results.task_result import BasicCriterionResult, CriterionResult
from assay.results.transcript import Transcript
from assay.sandbox.tempdir import Sandbox, SandboxEscape
from assay.spec.criteria import CriterionSpec, LlmJudge
from assay.spec.qa import QaJudge

if TYPE_CHECKING:
    from assay.providers.base import Model
    from assay.providers.pool import ModelKey
    from assay.qa.item import QaItem


class ModelSource(Protocol):
    """Where a criterion that needs a model (a judge) gets it: the run's started models
    (:class:`assay.providers.pool.ModelPool`)."""

    def get(self, key: ModelKey) -> Model:
        """The model for ``key`` (started with the run)."""
        ...


MAX_READ_BYTES = 64 * 1024 * 1024


@dataclass
class GradingContext:
    """What a criterion may look at for one row.

    Attributes:
        sandbox: the row's sandbox after the agent, or ``None`` when it was not preserved.
        response: the agent's final response, or ``None`` when it gave none.
        env: the environment for commands run by criteria.
        qa_item: the row's QA item (prompt, shuffled options, answers), for a ``qa:`` row.
        judge: the started judge model of a ``qa:`` task with ``qa.judge``.
        judge_settings: that ``qa.judge`` block (retries, story, rules).
        transcript: what the agent did (tool calls, commands, file changes, model calls),
            live or read back from ``trace.json``; ``None`` for an agent without one.
        row: the dataset row (``None`` for a task without a dataset).
        models: the run's models, for a criterion that asks a model (a judge); ``None``
            when grading without them.
        reference_dir: the task's reference folder (absolute), ``None`` without one.
    """

    sandbox: Sandbox | None
    response: str | None
    env: dict[str, str] = field(default_factory=dict)
    qa_item: QaItem | None = None
    judge: Model | None = None
    judge_settings: QaJudge | None = None
    transcript: Transcript | None = None
    row: dict[str, Any] | None = None
    models: ModelSource | None = None
    reference_dir: Path | None = None


@dataclass(frozen=True)
class Text:
    """Text a criterion reads: ``value`` is ``None`` when the file (or response) is absent."""

    value: str | None
    source: str


class CriterionError(Exception):
    """The criterion cannot be evaluated (its result gets ``error`` and score 0)."""


def read_text(path: str | None, context: GradingContext) -> Text:
    """Read ``path`` from the sandbox, or the final response when ``path`` is ``None``.

    Raises:
        CriterionError: the path leaves the sandbox, is a directory or another non-regular
            file, is larger than 64 MiB, or the sandbox is gone.
    """
    if path is None:
        return Text(context.response, "the final response")
    root = sandbox_of(context)
    try:
        target = root.resolve(path)
    except SandboxEscape as exc:
        raise CriterionError(str(exc)) from None
    if not target.exists():
        return Text(None, f"'{path}'")
    if target.is_dir():
        raise CriterionError(f"'{path}' is a directory, not a file")
    if not target.is_file():  # a FIFO or a device would block the read forever
        raise CriterionError(f"'{path}' is not a regular file")
    with target.open("rb") as handle:
        data = handle.read(MAX_READ_BYTES + 1)
    if len(data) > MAX_READ_BYTES:
        raise CriterionError(
            f"'{path}' is larger than {MAX_READ_BYTES // (1024 * 1024)} MiB; criteria do not "
            "grade part of a file"
        )
    return Text(data.decode("utf-8", errors="replace"), f"'{path}'")


def sandbox_of(context: GradingContext) -> Sandbox:
    """The sandbox, or an error saying it was not kept.

    Raises:
        CriterionError: the run did not preserve sandboxes.
    """
    if context.sandbox is None:
        raise CriterionError(
            "the row's sandbox was not kept, so files cannot be graded again; "
            "use `assay execute` (or `assay run --keep-sandboxes`) before `assay evaluate`"
        )
    return context.sandbox


def basic_result(
    spec: CriterionSpec, score: float, details: str, error: str | None = None
) -> BasicCriterionResult:
    """A :class:`BasicCriterionResult` carrying ``spec``'s description, threshold and weight."""
    return BasicCriterionResult(
        criterion_type=spec.type,
        description=spec.description,
        score=0.0 if error else min(1.0, max(0.0, score)),
        details=details,
        error=error,
        evaluation_status="error" if error else "evaluated",
        pass_threshold=spec.pass_threshold,
        gating=spec.gating,
        weight=spec.weight,
    )


class Tally(Protocol):
    """A suite aggregate built one graded row at a time, in memory that does not grow with
    the rows; the same numbers whatever order the rows come in."""

    def add(self, result: CriterionResult) -> None:
        """Count one graded row's result."""

    def result(self) -> tuple[MetricTable, dict[str, Any]]:
        """Suite metrics and details over the rows added."""
        ...


class Checker(Protocol):
    """Grades one criterion type."""

    type_name: str

    async def check(self, spec: Any, context: GradingContext) -> CriterionResult:
        """Grade one row. Raises :class:`CriterionError` when it cannot evaluate."""
        ...

    def tally(self, spec: Any) -> Tally:
        """A new aggregate of this criterion over a suite's graded rows."""
        ...

    def aggregate(
        self, spec: Any, results: list[CriterionResult]
    ) -> tuple[MetricTable, dict[str, Any]]:
        """Suite metrics and details over the graded rows' results (:meth:`tally` fed
        with them)."""
        ...


class TallyAggregate:
    """:meth:`aggregate` of a list, through the checker's own :meth:`tally`."""

    def tally(self, spec: Any) -> Tally:
        """The checker's aggregate (each checker defines it)."""
        raise NotImplementedError

    def aggregate(
        self, spec: Any, results: list[CriterionResult]
    ) -> tuple[MetricTable, dict[str, Any]]:
        """Suite metrics and details over ``results``."""
        tally = self.tally(spec)
        for result in results:
            tally.add(result)
        return tally.result()


class ScoreTally:
    """The base aggregate's tally: the scores' descriptive statistics."""

    def __init__(self) -> None:
        self.scores = ScoreStats()

    def add(self, result: CriterionResult) -> None:
        """Count one score."""
        self.scores.add(result.score)

    def result(self) -> tuple[MetricTable, dict[str, Any]]:
        """count, mean, median, std, min, max."""
        return describe_stats(self.scores), {}


class ScoreAggregate(TallyAggregate):
    """The base aggregate: count, mean, median, std, min, max of the scores."""

    def tally(self, spec: Any) -> Tally:
        """Descriptive statistics of the scores."""
        return ScoreTally()


class CriterionRegistry:
    """Criterion type → checker; rejects duplicates, suggests on unknown names."""

    def __init__(self) -> None:
        self._checkers: dict[str, Checker] = {}

    def register(self, checker: Checker) -> None:
        """Add a checker.

        Raises:
            ValueError: its type is already registered.
        """
        if checker.type_name in self._checkers:
            raise ValueError(f"criterion type '{checker.type_name}' is already registered")
        self._checkers[checker.type_name] = checker

    def get(self, type_name: str) -> Checker:
        """The checker for ``type_name``.

        Raises:
            KeyError: unknown type, with a suggestion.
        """
        checker = self._checkers.get(type_name)
        if checker is None:
            close = difflib.get_close_matches(type_name, list(self._checkers), n=1)
            suggestion = f"; did you mean '{close[0]}'?" if close else ""
            raise KeyError(f"unknown criterion type '{type_name}'{suggestion}")
        return checker

    @property
    def types(self) -> list[str]:
        """Registered type names, sorted."""
        return sorted(self._checkers)


SANDBOX_TYPES = frozenset({"file_exists", "run_command", "pytest", "import_check", "pylint_score"})
READ_ONLY_TYPES = frozenset({
    "file_exists", "file_check", "file_contains", "file_matches_regex", "json_check",
    "reference_comparison", "cli_called",
    "classification_match", "response_match", "skill_triggered", "command_executed",
    "tool_called", "commands_efficiency",
})  # fmt: skip
"""Criteria that only read what the agent left (no program, no judge): graded even after the
agent crashed (``post_failure_criteria_results``)."""


def needs_sandbox(spec: CriterionSpec) -> bool:
    """True when the criterion reads the sandbox (a file, or a command run in it; a judge
    shown sandbox files)."""
    if isinstance(spec, LlmJudge):
        return any(not f.startswith(("$TASK_DIR/", "${TASK_DIR}/")) for f in spec.files)
    return spec.type in SANDBOX_TYPES or getattr(spec, "path", None) is not None


def path_label(path: str | None) -> str:
    """How a criterion names what it read: the file, or the final response."""
    return f"'{path}'" if path else "the final response"
