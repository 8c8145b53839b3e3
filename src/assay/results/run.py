"""``run.json``: one invocation of ``assay run`` / ``execute`` / ``evaluate`` (``RunSummary``).

Field names follow ``reference/originals.md`` §1.10; assay adds ``schema_version``,
``stage``, ``suites``, ``selections``, ``warnings``, ``secret_findings`` and ``exit_code``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.results.suite import DatasetRecord, SelectionRecord, verdict_of
from assay.results.task_result import TokenUsage

RUN_SCHEMA_VERSION = "1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SkippedTask(_Model):
    """A task file that did not run, and why (``skip: true``, tag filter)."""

    path: str
    reason: str


class TaskRow(_Model):
    """One row-task replicate, flattened for ``run.json``."""

    task_id: str
    suite_id: str | None
    row_id: str | None
    variant_id: str
    replicate_index: int
    final_status: str
    weighted_score: float | None
    duration_seconds: float
    task_json: str


class SuiteRef(_Model):
    """A suite written by this run, with its gate (``passed``/``failed``/``none``), whether it
    is green (``passed``) and why not, whether its rows await ``assay evaluate``
    (``awaiting_grading``), and where its report is."""

    suite_id: str
    variant_id: str
    passed: bool
    gate: str = "none"
    failed_gates: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    suite_json: str
    awaiting_grading: bool = False

    @property
    def verdict(self) -> str:
        """``PASSED``, ``FAILED``, or ``NOT GRADED`` (rows await ``assay evaluate``)."""
        return verdict_of(passed=self.passed, awaiting=self.awaiting_grading)


class TaskSelection(_Model):
    """The rows one dataset task selected."""

    task_id: str
    source_file: str
    dataset: DatasetRecord
    selection: SelectionRecord


class SecretFindingRecord(_Model):
    """A secret the scan found in the run folder: file, line, and what (never the value);
    line 0 for a file or folder the scan could not read."""

    file: str
    line: int
    kind: str

    def render(self) -> str:
        """``default/t/r1/00/task.json:12: the value of OPENAI_API_KEY``; no line for 0."""
        return f"{self.file}:{self.line}: {self.kind}" if self.line else f"{self.file}: {self.kind}"


class RunSummary(_Model):
    """One ``run.json``.

    ``pass_rate`` is **micro**: passed over graded rows pooled over every suite and task;
    ``pass_rate_macro`` is the mean of the suites' pass rates (each task without a dataset
    counts as a suite of its rows), ``null`` when no suite graded a row;
    ``pass_rate_macro_left_out`` names (``variant/suite``) the suites it left out because they
    graded no row. Rows that errored or
    refused are outside both (``tasks_error``, ``tasks_refused``).
    """

    schema_version: str = RUN_SCHEMA_VERSION
    run_id: str
    stage: Literal["run", "execute", "evaluate", "report"] = "run"
    start_time: str
    end_time: str
    total_duration_seconds: float
    sessions: int = 1
    total_token_usage: TokenUsage | None = None
    tasks_run: int
    tasks_succeeded: int
    tasks_failed: int
    tasks_error: int
    tasks_refused: int = 0
    tasks_not_graded: int
    tasks_graded: int
    pass_rate: float | None
    pass_rate_macro: float | None = None
    pass_rate_macro_left_out: list[str] = Field(default_factory=list)
    refusal_rate: float | None = None
    error_share: float | None
    tasks_token_budget_exceeded: int = 0
    tasks_cost_budget_exceeded: int = 0
    total_cost_usd: float | None = None
    cost_complete: bool = True
    simulator_input_tokens: int = 0
    simulator_output_tokens: int = 0
    simulator_cost_usd: float | None = None
    """Dialog mode: the simulated users' tokens and cost, counted apart from the agents'
    (``total_token_usage``, ``total_cost_usd``), as each row's ``simulation`` record keeps
    them; ``None``: no dialog, or no price for its model."""
    rows_usage_from_cli: int = 0
    rows_usage_unknown: int = 0
    """Rows whose model answered without reporting its usage: their tokens and cost are not
    in the totals (``cost_complete`` is false)."""
    judge_tokens: int = 0
    """The LLM and agent judges' tokens over every row, counted apart from the agents'."""
    judge_cost_usd: float | None = None
    """What those judges' calls cost (US dollars, from the run's price table), apart from
    ``total_cost_usd``; ``None``: none was priced."""
    judge_results_unpriced: int = 0
    """Judge verdicts whose calls used tokens but whose model has no price: their cost is
    not in ``judge_cost_usd``."""
    rows_from_cache: int = 0
    tasks_timeout: int = 0
    interrupted: bool = False
    exit_code: int | None = None
    max_parallel: int
    command: list[str] = Field(default_factory=list)
    skipped_tasks: list[SkippedTask] = Field(default_factory=list)
    selections: list[TaskSelection] = Field(default_factory=list)
    suites: list[SuiteRef] = Field(default_factory=list)
    task_criteria: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    judges: list[dict[str, Any]] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    secret_findings: list[SecretFindingRecord] = Field(default_factory=list)
    task_results: list[TaskRow] = Field(default_factory=list)
    framework_version: str
    environment_info: dict[str, Any] = Field(default_factory=dict)
