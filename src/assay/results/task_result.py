"""``task.json``: the result of one row-task replicate (Coder Eval's ``EvaluationResult``).

Field names follow ``reference/originals.md`` §1.10; assay adds ``schema_version``,
``suite_id``, ``row_id``, ``row_index``, ``replicate_index``, ``row``, ``agent``,
``transcript`` (what the agent did, summed up: :class:`TranscriptSummary`), in dialog mode
``simulation`` (the dialog: :class:`~assay.results.dialog.SimulationRecord`) and, for a
``qa:`` row, ``qa_record`` (its ``prediction.jsonl`` record, ``assay.qa.records``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.results.dialog import SimulationRecord
from assay.results.status import FinalStatus
from assay.results.transcript import TranscriptSummary

TASK_SCHEMA_VERSION = "1"


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class BasicCriterionResult(_Result):
    """The outcome of one criterion on one row: a score in [0, 1] plus details."""

    result_kind: Literal["basic"] = "basic"
    criterion_type: str
    description: str = ""
    score: float = Field(ge=0, le=1)
    details: str = ""
    error: str | None = None
    evaluation_status: Literal["evaluated", "error", "refused", "skipped"] = "evaluated"
    pass_threshold: float = 0.9
    gating: bool = True
    weight: float = 1.0

    @property
    def graded(self) -> bool:
        """The criterion evaluated the row (not an error, not a refusal); only such results
        enter a score, a rate or an average."""
        return self.error is None and self.evaluation_status == "evaluated"

    @property
    def passed(self) -> bool:
        """True when the criterion graded the row and the score reaches the pass threshold."""
        return self.graded and self.score >= self.pass_threshold

    @property
    def grader_failed(self) -> bool:
        """The criterion could not evaluate (its ``error``; an LLM judge without a verdict,
        a file it could not read): the row is neither right nor wrong, so a gating one ends
        the row ``ERROR`` rather than ``FAILURE``."""
        return self.error is not None

    @property
    def refused(self) -> bool:
        """The response was a refusal to answer (``REFUSED``, counted apart)."""
        return self.evaluation_status == "refused"


class ClassificationCriterionResult(BasicCriterionResult):
    """A criterion that compares an observed label with an expected one."""

    result_kind: Literal["classification"] = "classification"  # type: ignore[assignment]
    observed_label: str
    expected_label: str


class QaCriterionResult(BasicCriterionResult):
    """The grade of one QA row (``assay.qa.grading``).

    ``error_reason``: ``None`` (correct), ``wrong_answer``, ``content_none``,
    ``extraction_failed``, ``refused`` (``evaluation_status`` ``refused``, ``is_correct``
    ``None``) or ``judge_error`` (then ``error`` is set and ``is_correct`` is ``None``).
    ``sample_result`` is the full per-sample result written to ``metrics.json``.
    ``judge_tokens`` and ``judge_cost_usd``: the judge's calls on an open question, as an
    ``llm_judge``'s (:class:`JudgeCriterionResult`).
    """

    result_kind: Literal["qa"] = "qa"  # type: ignore[assignment]
    sample_id: str
    prompt_type: str
    is_correct: bool | None
    error_reason: str | None = None
    sample_result: dict[str, Any] = Field(default_factory=dict)
    judge_tokens: int = 0
    judge_cost_usd: float | None = None


class JudgeRef(_Result):
    """Which judge graded: ``name``, ``version`` (``None`` outside the store), the sha256
    ``content_hash`` of what can change a verdict, ``source`` (``file:PATH``,
    ``store:NAME@N``, ``inline``) and ``model``."""

    name: str
    version: int | None = None
    content_hash: str
    source: str = ""
    model: str = ""


class JudgeSampleRecord(_Result):
    """One of several samples of a verdict: its value and reason (``None`` when it could not
    be read), attempts and problem."""

    verdict: bool | str | float | None = None
    reason: str | None = None
    attempts: int = 1
    error: str | None = None


class JudgeCriterionResult(BasicCriterionResult):
    """The grade of an ``llm_judge``.

    ``verdict`` is the boolean, label or score the judge gave (the mean over samples for a
    scale; ``None`` on a judge error, when ``error`` starts with ``judge_error:`` and ``raw``
    keeps the unreadable reply); ``score`` is the verdict on [0, 1]; ``expected_label`` is
    the row's true label (labels verdicts); ``samples`` holds each sample when there were
    several, and ``self_agreement`` (binary, labels) or ``spread`` (scale) how much they
    agreed. ``evaluation_status`` is ``skipped`` for ``enabled: false``. An ``agent_judge``
    adds its ``findings`` (short observations; ``None`` for other judges). ``judge_tokens``
    are what the judge's calls used and ``judge_cost_usd`` what they cost (US dollars, from
    the run's price table, as an agent's; ``None``: no price for the judge's model).
    """

    result_kind: Literal["judge"] = "judge"  # type: ignore[assignment]
    judge: JudgeRef
    verdict_kind: Literal["binary", "labels", "scale"] = "binary"
    verdict: bool | str | float | None = None
    reason: str | None = None
    expected_label: str | None = None
    raw: str | None = None
    attempts: int = 0
    samples: list[JudgeSampleRecord] = Field(default_factory=list)
    self_agreement: float | None = None
    spread: float | None = None
    judge_tokens: int = 0
    judge_cost_usd: float | None = None
    findings: list[str] | None = None


CriterionResult = Annotated[
    QaCriterionResult | ClassificationCriterionResult | JudgeCriterionResult | BasicCriterionResult,
    Field(discriminator="result_kind"),
]


@dataclass(frozen=True)
class JudgeSpend:
    """What the judges of some criterion results used: ``tokens``, ``cost_usd`` (US dollars,
    the priced ones; ``None``: none was priced) and ``unpriced`` (verdicts with tokens but no
    price)."""

    tokens: int = 0
    cost_usd: float | None = None
    unpriced: int = 0

    def __add__(self, other: JudgeSpend) -> JudgeSpend:
        """Both together (a cost ``None`` only when neither was priced)."""
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return JudgeSpend(self.tokens + other.tokens, math.fsum(costs) if costs else None,
                          self.unpriced + other.unpriced)  # fmt: skip


def judge_spend(results: Iterable[object]) -> JudgeSpend:
    """The judges' tokens and cost over ``results`` (LLM, agent and QA judges' verdicts;
    other results have none)."""
    tokens = unpriced = 0
    costs: list[float] = []
    for judged in results:
        if not isinstance(judged, JudgeCriterionResult | QaCriterionResult):
            continue
        tokens += judged.judge_tokens
        if judged.judge_cost_usd is not None:
            costs.append(judged.judge_cost_usd)
        elif judged.judge_tokens:
            unpriced += 1
    return JudgeSpend(tokens, math.fsum(costs) if costs else None, unpriced)


class CommandResult(_Result):
    """One ``pre_run``/``post_run`` command: exit code, output tails (text), seconds, and
    ``output_logs``: the files in the row's folder a stream longer than
    ``sandbox.limits.max_output_mb`` was written to whole."""

    command: str
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    duration_seconds: float = 0.0
    error: str | None = None
    output_logs: list[str] = Field(default_factory=list)


class TokenUsage(_Result):
    """Tokens counted by the model endpoint for one row (all calls summed): ``input_tokens``
    counts every input token, of which ``cache_read_tokens`` and ``cache_write_tokens`` were
    read from or written to the provider's prompt cache; ``reasoning_tokens`` are part of
    ``output_tokens``; ``total_tokens`` = input + output."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0


class AttemptRecord(_Result):
    """A model call attempt that failed and was retried, and the wait (seconds) that followed."""

    number: int
    error: str
    status: int | None = None
    wait_seconds: float


class EarlyStopRecord(_Result):
    """Why a row's agent was ended by a live verdict (Coder Eval's ``early_stop``).

    Attributes:
        reason: ``criterion_passed``, ``criterion_failed`` or ``decision_budget_exceeded``.
        criterion_type, criterion_description: the criterion that decided.
        armed: the indexes (in ``success_criteria``) of the armed criteria.
        tool_call_index: tool calls that had run when it stopped (1-based count).
        elapsed_seconds: since the agent started.
        gate_threshold: the weighted score over the armed criteria a cut row needs to pass
            (``run_limits.stop_early_gate_threshold``).
    """

    reason: Literal["criterion_passed", "criterion_failed", "decision_budget_exceeded"]
    criterion_type: str
    criterion_description: str
    armed: list[int]
    tool_call_index: int
    elapsed_seconds: float
    gate_threshold: float = 1.0

    def message(self) -> str:
        """One line for ``stopped_early`` and the log."""
        what = {"criterion_passed": "passed", "criterion_failed": "failed",
                "decision_budget_exceeded": "was still undecided"}[self.reason]  # fmt: skip
        return (f"stopped early after {self.tool_call_index} tool call(s): "
                f"{self.criterion_type} '{self.criterion_description}' {what}")  # fmt: skip


class AgentRecord(_Result):
    """What the agent did: its exit code (command agents), calls (model agents), timing;
    ``output_dropped_bytes``: output past the per-stream cap, not kept in memory (the kept
    response ends with a note naming the cut); ``output_logs``: the files in the row's
    folder such a stream was written to whole (``agent.stdout.log``); ``stopped_early``:
    why the agent was ended before it finished while its row was still graded
    (``run_limits.max_tool_calls``, a live verdict: ``early_stop``, or a cap: ``max_turns``,
    ``max_total_tokens``, ``max_usd``)."""

    exit_code: int | None = None
    timed_out: bool = False
    stderr_tail: str = ""
    model_calls: int = 0
    retries: int = 0
    attempts: list[AttemptRecord] = Field(default_factory=list)
    cached: bool = False
    response_chars: int = 0
    output_dropped_bytes: int = 0
    output_logs: list[str] = Field(default_factory=list)
    duration_seconds: float = 0.0
    stopped_early: str | None = None
    early_stop: EarlyStopRecord | None = None


class TaskConfigRecord(_Result):
    """The row-task as it ran: ``resolved`` (after substitution) and where it came from."""

    resolved: dict[str, Any]
    source_file: str | None = None
    task_dir: str | None = None


class EvaluationResult(_Result):
    """One ``task.json``.

    ``post_failure_criteria_results``: after the agent crashed (the row is ``ERROR``), the
    criteria that only read what it left (files, the response, the transcript) are still
    graded, for diagnosis; they count in no score, rate or gate (Coder Eval's field).
    """

    schema_version: str = TASK_SCHEMA_VERSION
    task_id: str
    suite_id: str | None = None
    row_id: str | None = None
    row_index: int | None = None
    replicate_index: int = 0
    task_description: str = ""
    variant_id: str = "default"
    agent_type: str
    model_used: str | None = None
    started_at: str
    completed_at: str
    duration_seconds: float
    final_status: FinalStatus
    weighted_score: float | None = None
    success_criteria_results: list[CriterionResult] = Field(default_factory=list)
    post_failure_criteria_results: list[CriterionResult] = Field(default_factory=list)
    error_message: str | None = None
    agent: AgentRecord = Field(default_factory=AgentRecord)
    total_token_usage: TokenUsage | None = None
    cost_usd: float | None = None
    transcript: TranscriptSummary | None = None
    pre_run_results: list[CommandResult] = Field(default_factory=list)
    post_run_results: list[CommandResult] = Field(default_factory=list)
    sandbox_path: str | None = None
    row: dict[str, Any] | None = None
    row_hash: str | None = None
    """The row's content hash (:func:`assay.data.hashing.row_hash`) taken before the file was
    written: ``row`` is redacted as every file is, so a value that equals a secret's would
    read as changed data; ``None`` in older runs (the hash of ``row`` is used then)."""
    qa_record: dict[str, Any] | None = None
    simulation: SimulationRecord | None = None
    task_config: TaskConfigRecord
