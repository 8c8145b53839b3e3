"""The criterion base class: check one row, aggregate a suite.

A criterion is one class per ``type`` (:class:`Criterion`), whose fields are its YAML
config. ``check`` grades one row from a :class:`GradingContext` (the sandbox, the final
response, the transcript; what one kind needs it asks for with :meth:`GradingContext.need`)
and returns a criterion result (a score in [0, 1] plus details); ``tally`` aggregates the
results of every graded row into suite metrics. The base aggregate is descriptive statistics
of the scores (``reference/originals.md`` §1.4); classification criteria add their own.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal,
    Protocol,
    TypeVar,
    cast,
    get_args,
    get_origin,
)

from assay.metrics.descriptive import describe_stats
from assay.metrics.streaming import ScoreStats
from assay.metrics.values import MetricTable
from assay.results.task_result import BasicCriterionResult, CriterionResult
from assay.results.transcript import Transcript
from assay.sandbox.tempdir import LinkEscape, Sandbox, SandboxEscape
from assay.spec.criterion_base import CriterionSpec

if TYPE_CHECKING:
    from assay.providers.base import Model
    from assay.providers.pool import ModelKey
    from assay.providers.pricing import Price


class ModelSource(Protocol):
    """Where a criterion that needs a model (a judge) gets it: the run's started models
    (:class:`assay.providers.pool.ModelPool`)."""

    def get(self, key: ModelKey) -> Model:
        """The model for ``key`` (started with the run)."""
        ...

    def price(self, model: str) -> Price | None:
        """The price of ``model`` (``provider/name``) in the run's price table (``--prices``
        and the built-in entries); ``None``: none."""
        ...


MAX_READ_BYTES = 64 * 1024 * 1024
T = TypeVar("T")


@dataclass(frozen=True)
class Service(Generic[T]):
    """The key of something one kind of criterion needs from the row (a QA item, a judge,
    a reference folder): the criterion defines the key, whoever grades the row offers a
    value under it (:attr:`GradingContext.services`), the criterion asks with
    :meth:`GradingContext.need`. ``name`` says what it is, in errors."""

    name: str


@dataclass
class GradingContext:
    """What a criterion may look at for one row; nothing here belongs to one kind of
    criterion (what one kind needs it asks for: :meth:`need`).

    Attributes:
        sandbox: the row's sandbox after the agent, or ``None`` when it was not preserved.
        response: the agent's final response, or ``None`` when it gave none.
        env: the environment for commands run by criteria.
        transcript: what the agent did (tool calls, commands, file changes, model calls),
            live or read back from ``trace.json``; ``None`` for an agent without one.
        row: the dataset row (``None`` for a task without a dataset).
        models: the run's models, for a criterion that asks a model (a judge); ``None``
            when grading without them.
        services: what the row offers one kind of criterion, by :class:`Service` key.
    """

    sandbox: Sandbox | None
    response: str | None
    env: dict[str, str] = field(default_factory=dict)
    transcript: Transcript | None = None
    row: dict[str, Any] | None = None
    models: ModelSource | None = None
    services: Mapping[Service[Any], Any] = field(default_factory=dict)

    def need(self, key: Service[T]) -> T | None:
        """What the row offers under ``key``; ``None`` when it offers nothing there."""
        return cast("T | None", self.services.get(key))

    def refusal(self) -> str | None:
        """The finish reason by which the model's provider declined to answer (a content
        filter, a refusal: :meth:`Transcript.provider_refusal
        <assay.results.transcript.Transcript.provider_refusal>`), or ``None``: a criterion
        that grades the response then records a refusal, which counts in no average."""
        return self.transcript.provider_refusal() if self.transcript is not None else None


@dataclass(frozen=True)
class Text:
    """Text a criterion reads: ``value`` is ``None`` when the file (or response) is absent."""

    value: str | None
    source: str


class CriterionError(Exception):
    """The criterion cannot be evaluated (its result gets ``error``, counts in no average,
    and the row is ``ERROR`` when the criterion gates): for what the grader itself lacks (a
    program not installed, a judge that gave no verdict, a sandbox not kept)."""


class EvidenceError(CriterionError):
    """What the agent left cannot be graded as the criterion reads it (a file removed or
    replaced by a folder, a call log gone, a scoring command that fails, tests deleted): the
    criterion scores 0.0 with this message as its details, as Coder Eval scores it
    (``coder_eval_agents.md`` §2), never an error, so destroying the evidence cannot take a
    failure out of the averages."""


def read_text(path: str | None, context: GradingContext, *, utf8: bool = False) -> Text:
    """Read ``path`` from the sandbox, or the final response when ``path`` is ``None``; bytes
    that are not UTF-8 are replaced, or, with ``utf8`` (JSON, which RFC 8259 has in UTF-8),
    refused.

    Raises:
        EvidenceError: the path leaves the sandbox through a link the agent made, is a
            directory or another non-regular file, is larger than 64 MiB, or (``utf8``) is
            not UTF-8.
        CriterionError: the sandbox is gone, or the path as written leaves it.
    """
    if path is None:
        return Text(context.response, "the final response" + _cut(context))
    target, name = located(sandbox_of(context), path)
    if not target.exists():
        return Text(None, name)
    if target.is_dir():
        raise EvidenceError(f"{name} is a directory, not a file")
    if not target.is_file():  # a FIFO or a device would block the read forever
        raise EvidenceError(f"{name} is not a regular file")
    with target.open("rb") as handle:
        data = handle.read(MAX_READ_BYTES + 1)
    if len(data) > MAX_READ_BYTES:
        raise EvidenceError(
            f"{name} is larger than {MAX_READ_BYTES // (1024 * 1024)} MiB; criteria do not "
            "grade part of a file"
        )
    try:
        return Text(data.decode("utf-8", errors="strict" if utf8 else "replace"), name)
    except UnicodeDecodeError as exc:
        raise EvidenceError(
            f"{name} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


_CUT = re.compile(
    r"\n\[assay: output cut after (\d+) bytes; (\d+) more bytes [^\n]*?"
    r"(?:the last (\d+) bytes above are its end)?\]\n$"
)


def _cut(context: GradingContext) -> str:
    """`` (cut at sandbox.limits.max_output_mb: …)`` when the agent's answer was longer than
    the cap (the transcript's final answer holds assay's note of the cut), else ``""``."""
    final = context.transcript.final if context.transcript is not None else None
    found = _CUT.search(final[-600:]) if final else None
    if found is None:
        return ""
    end = f" and its last {found.group(3)}" if found.group(3) else ""
    return (f" (cut at sandbox.limits.max_output_mb: graded on its first {found.group(1)} "
            f"bytes{end}, {found.group(2)} {'between' if end else 'more'} not seen)")  # fmt: skip


def located(sandbox: Sandbox, path: str) -> tuple[Path, str]:
    """The file ``path`` names in ``sandbox`` and how messages name it (quoted): the path
    itself, or, when it does not exist and is a glob, its one match (``'m.py' (the one match
    of 'src/*.py')``; Coder Eval's fallback). A missing file is returned as it is, for the
    caller to say so.

    Raises:
        EvidenceError: the path leaves the sandbox through a link the agent made; the glob
            matches more than one file (a check of one file's content needs exactly one: the
            first ten are named).
        CriterionError: the path as written leaves the sandbox (absolute, ``..``).
    """
    try:
        target = sandbox.resolve(path)
        found = [] if target.exists() else sandbox.matches(path)
    except LinkEscape as exc:  # a link the agent made
        raise EvidenceError(str(exc)) from None
    except SandboxEscape as exc:  # the path as the task wrote it
        raise CriterionError(str(exc)) from None
    if len(found) > 1:
        shown = ", ".join(found[:10]) + (" …" if len(found) > 10 else "")
        raise EvidenceError(f"'{path}' matches {len(found)} files ({shown}); a check of a "
                             "file's content needs a path or glob naming exactly one")  # fmt: skip
    if found:
        return sandbox.resolve(found[0]), f"'{found[0]}' (the one match of '{path}')"
    return target, f"'{path}'"


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
    """A :class:`BasicCriterionResult` carrying ``spec``'s description, threshold and weight
    (``score`` in [0, 1]; a rounding error's worth outside, :data:`SCORE_SLACK`, is taken as
    the bound).

    Raises:
        CriterionError: ``score`` is not a finite number (NaN is not a score), is a bool,
            or is outside [0, 1]: refused, not clamped (a count where a share was meant
            would pass every row), as a judge's score outside its scale is.
    """
    if not error:
        _check_score(score)
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


SCORE_SLACK = 1e-9
"""How far outside [0, 1] a score may stray by floating-point rounding (taken as the bound)."""


def in_score_range(score: float) -> bool:
    """``score`` lies in [0, 1], :data:`SCORE_SLACK` either side allowed."""
    return -SCORE_SLACK <= score <= 1 + SCORE_SLACK


def _check_score(score: object) -> None:
    if isinstance(score, bool) or not isinstance(score, numbers.Real):  # numpy's too
        raise CriterionError(f"the score is {type(score).__name__} {score!r}, not a number "
                             "in [0, 1]")  # fmt: skip
    if not math.isfinite(score):
        raise CriterionError(f"the score is not a finite number ({score!r})")
    if not in_score_range(float(score)):
        raise CriterionError(f"the score {score!r} is outside [0, 1]: a criterion scores a "
                             "share, not a count (refused, not clamped)")  # fmt: skip


class Tally(Protocol):
    """A suite aggregate built one graded row at a time, in memory that does not grow with
    the rows; the same numbers whatever order the rows come in."""

    def add(self, result: CriterionResult) -> None:
        """Count one graded row's result."""

    def result(self) -> tuple[MetricTable, dict[str, Any]]:
        """Suite metrics and details over the rows added."""
        ...


@dataclass(frozen=True)
class ProgramCheck:
    """Whether the program a criterion runs in a row is found here (``assay doctor``).

    Attributes:
        program: what the criterion runs, as a row runs it (``pytest``, ``python3 -m
            pylint``).
        found: where it was found and what it answered (its version), or ``None``.
        fix: how to install it, when it is not found.
        reason: why not, when it is not found (not on the rows' ``PATH``, its exit code,
            no answer within the time).
    """

    program: str
    found: str | None
    fix: str | None = None
    reason: str | None = None


ANSWER_SECONDS = 30
"""How long a program may take to give its version (``assay doctor``)."""


def answering_program(
    program: str, argv: list[str], *, path_variable: str, fix: str
) -> ProgramCheck:
    """:class:`ProgramCheck` of ``argv`` (its first item looked up on ``path_variable``) run
    for real in a session of its own: found when it exits 0 within :data:`ANSWER_SECONDS`,
    as its first line of output and its path; on a timeout its whole process group is
    killed. ``program`` is what the criterion runs, as shown; ``fix`` how to install it."""
    found = shutil.which(argv[0], path=path_variable)
    if found is None:
        return ProgramCheck(program, None, fix, "not on the rows' PATH")
    try:
        process = subprocess.Popen([found, *argv[1:]], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                   start_new_session=True,
                                   env={**os.environ, "PATH": path_variable})  # fmt: skip
    except OSError as exc:
        return ProgramCheck(program, None, fix, f"{found} cannot start ({exc.strerror})")
    try:
        out, err = process.communicate(timeout=ANSWER_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return ProgramCheck(program, None, f"see why {found} hangs",
                            f"{found} gave no answer within {ANSWER_SECONDS} s")  # fmt: skip
    lines = (out or err).strip().splitlines()
    if process.returncode != 0 or not lines:
        return ProgramCheck(program, None, fix, f"{found} exited with {process.returncode}")
    return ProgramCheck(program, f"{lines[0]} ({found})")


class Criterion(CriterionSpec):
    """One criterion type: its pydantic fields are its YAML config (with ``type`` a
    ``Literal`` of its name), :meth:`check` grades one row, :meth:`tally` aggregates a suite
    (the scores' descriptive statistics unless it says otherwise), :meth:`metric_names`
    names what the aggregate produces, and the class variables declare its capabilities
    (:class:`~assay.spec.criterion_base.CriterionSpec`: ``reads_sandbox``,
    ``graded_after_crash``, ``reads_transcript``, ``has_labels``).

    A new criterion is one such class and one registration
    (:data:`assay.criteria.registry.BUILT_INS`, ``assay.run(criteria=[...])`` or the
    ``assay.criteria`` entry-point group).
    """

    @classmethod
    def type_name(cls) -> str:
        """The ``type`` a task file names it by (its ``type`` field's ``Literal``).

        Raises:
            TypeError: ``type`` is not a ``Literal`` of one string.
        """
        annotation = cls.model_fields["type"].annotation
        values = get_args(annotation) if get_origin(annotation) is Literal else ()
        if len(values) != 1 or not isinstance(values[0], str):
            raise TypeError(
                f"{cls.__qualname__}.type must be a Literal of one name, e.g. "
                "type: Literal['my_check']"
            )
        return values[0]

    async def check(self, context: GradingContext) -> CriterionResult:
        """Grade one row: a score in [0, 1] with details (:func:`basic_result`).

        Raises:
            CriterionError: the criterion cannot evaluate this row.
        """
        raise NotImplementedError(f"{type(self).__qualname__} does not define check()")

    def tally(self) -> Tally:
        """A new aggregate of this criterion over a suite's graded rows (count, mean,
        median, std, min, max of the scores)."""
        return ScoreTally()

    def live_verdict(self, transcript: Transcript) -> bool | None:
        """While the agent still runs: ``True`` once this row is decided a pass on this
        criterion whatever the agent does next, ``False`` once decided a fail, ``None``
        while undecided. The default never decides (graded only at the end); a criterion
        that can decide early (``stop_early``) overrides it."""
        return None

    def aggregate(self, results: list[CriterionResult]) -> tuple[MetricTable, dict[str, Any]]:
        """Suite metrics and details over the graded rows' results (:meth:`tally` fed with
        them)."""
        tally = self.tally()
        for result in results:
            tally.add(result)
        return tally.result()

    def metric_names(self) -> set[str] | None:
        """The suite metric names this criterion produces (what ``suite_thresholds`` may
        gate); ``None`` when they are not known before the run."""
        return set(BASE_METRICS)

    @classmethod
    def program_check(cls, path_variable: str) -> ProgramCheck | None:
        """Capability (``assay doctor``): whether the program this criterion runs in a
        ``tempdir`` or ``bwrap`` row is found on the rows' ``PATH`` (``path_variable``);
        ``None`` for a criterion that runs no program of its own (a ``docker`` row uses
        its image's)."""
        return None


BASE_METRICS = ("count", "mean", "median", "std", "min", "max", "completion_rate")
"""The metrics of every criterion (``reference/originals.md`` §1.4)."""


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


def path_label(path: str | None) -> str:
    """How a criterion names what it read: the file, or the final response."""
    return f"'{path}'" if path else "the final response"
