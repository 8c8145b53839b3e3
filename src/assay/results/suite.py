"""``suite.json``: the roll-up of one suite for one variant (Coder Eval's ``SuiteRollup``).

Field names follow ``reference/originals.md`` §1.5. An undefined metric (a zero denominator,
an empty suite) is ``null`` in ``metrics`` and its reason is in ``undefined_metrics``; JSON
never carries NaN. assay adds ``schema_version``, ``dataset`` and ``selection``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

SUITE_SCHEMA_VERSION = "1"


def verdict_of(*, passed: bool, awaiting: bool) -> str:
    """A suite's result as the reports print it: ``NOT GRADED`` while its rows await ``assay
    evaluate`` (``awaiting``), else ``PASSED`` or ``FAILED``."""
    if awaiting:
        return "NOT GRADED"
    return "PASSED" if passed else "FAILED"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ThresholdCheck(_Model):
    """One suite gate: ``passed`` is ``actual_value >= min_value``; a missing value fails.

    ``bound`` is ``point`` (the metric's value is gated) or ``lower`` (the lower bound of its
    cluster-robust 95% interval is gated: ``actual_value`` is that bound). ``interval`` is
    the metric's ``[low, high]`` when it has one; ``note`` says when a point gate's interval
    straddles the threshold (the point estimate decided it, the data could not), or why a
    bound gate has no bound."""

    metric: str
    min_value: float
    actual_value: float | None
    passed: bool
    bound: Literal["point", "lower"] = "point"
    interval: list[float] | None = None
    note: str | None = None

    @model_serializer(mode="wrap")
    def _coder_eval_keys_first(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Coder Eval's four keys always; assay's ``bound``, ``interval`` and ``note`` only
        when they say something (a bound gate, an interval, a note)."""
        data: dict[str, Any] = handler(self)
        for key, default in (("bound", "point"), ("interval", None), ("note", None)):
            if data.get(key) == default:
                data.pop(key, None)
        return data

    @property
    def name(self) -> str:
        """``accuracy``, or ``accuracy (95% lower bound)`` for a bound gate."""
        return self.metric if self.bound == "point" else f"{self.metric} (95% lower bound)"


class IntervalRecord(_Model):
    """A rate or mean with its cluster-robust 95% interval (``assay.metrics.clustered``):
    ``method`` is ``cluster t`` or ``cluster exact``; ``observations`` counts graded values
    (each replicate once), ``clusters`` the clusters they fall in; without an interval,
    ``low``/``high`` are ``null`` and ``reason`` says why."""

    value: float | None
    low: float | None = None
    high: float | None = None
    se: float | None = None
    method: str
    observations: int
    clusters: int
    reason: str | None = None


class CriterionAggregate(_Model):
    """A criterion's metrics over the suite's rows (by position in ``success_criteria``);
    ``intervals`` holds the cluster-robust intervals of its ``mean`` (and ``accuracy``)."""

    criterion_type: str
    description: str = ""
    rows_total: int
    rows_excluded: int
    metrics: dict[str, float | None] = Field(default_factory=dict)
    undefined_metrics: dict[str, str] = Field(default_factory=dict)
    threshold_checks: list[ThresholdCheck] = Field(default_factory=list)
    passed: bool = True
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    intervals: dict[str, IntervalRecord] = Field(default_factory=dict)


class CriterionStat(_Model):
    """Per criterion (``criterion_index``: its 0-based position in ``success_criteria``;
    Coder Eval's list is per type, the same when no type repeats): rows it graded, their
    mean score, and apart from them the rows whose criterion errored or met a refusal
    (never averaged in as a 0)."""

    criterion_type: str
    criterion_index: int = 0
    rows_evaluated: int
    average_score: float | None
    error_count: int
    refused_count: int = 0


class FailedRowSummary(_Model):
    """A row that did not pass, with a link to its ``task.json`` (POSIX, run-relative);
    for a QA row, what it answered and what was expected."""

    row_id: str | None
    task_id: str
    final_status: str
    weighted_score: float | None
    failure_reasons: list[str] = Field(default_factory=list)
    error_message: str | None = None
    task_json_relpath: str
    replicate_index: int = 0
    answer: str | None = None
    expected: str | None = None


class SelectionRecord(_Model):
    """Which rows a run selected: the selectors applied, the ids in dataset order, and each
    selected row's content hash (:func:`assay.data.hashing.row_hash`), so that a change of a
    row's content is detected (a resumed run, ``assay evaluate``/``report``/``compare``).

    A run lists the ids and hashes once, in its ``selection.jsonl`` (``rows_file``; see
    :mod:`assay.results.selection_file`), and leaves ``row_ids``/``row_hashes`` empty here;
    a plan shown by ``assay plan``, and runs written before that file, list them here."""

    rows_in_dataset: int
    rows_selected: int
    applied: list[str] = Field(default_factory=list)
    sample: int | None = None
    sample_per_stratum: int | None = None
    split: str | None = None
    stratify_field: str | None = None
    stratified_seed: int | None = None
    seed_was_drawn: bool = False
    row_ids: list[str] = Field(default_factory=list)
    row_hashes: dict[str, str] = Field(default_factory=dict)
    rows_file: str | None = None


class FileRecord(_Model):
    """One file of a ``paths`` dataset: the path as written and the ``sha256`` of its bytes."""

    path: str
    sha256: str


class DatasetRecord(_Model):
    """Where the rows came from: files (paths as written, each with its hash), inline rows, or
    a store dataset at one version (with its example count). ``content_hash`` is the store
    version's hash, the hash over the files' hashes, or the hash of the inline rows
    (:mod:`assay.data.hashing`)."""

    source: str
    paths: list[str] = Field(default_factory=list)
    files: list[FileRecord] = Field(default_factory=list)
    id_field: str = "id"
    cluster_field: str | None = None
    store: str | None = None
    store_url: str | None = None
    version: int | None = None
    content_hash: str | None = None
    item_count: int | None = None


class ReplicateRollup(_Model):
    """One replicate's counts and metrics (suites run with ``repeats`` > 1)."""

    replicate_index: int
    rows_total: int
    rows_passed: int
    rows_graded: int
    pass_rate: float | None
    criterion_metrics: list[dict[str, float | None]] = Field(default_factory=list)


class SuiteRollup(_Model):
    """One ``suite.json``.

    ``gate`` is ``passed``/``failed`` for a suite with ``suite_thresholds`` and ``none``
    without; ``passed`` is whether the suite is green (the documented exit codes): a gated suite
    whose gate passed, with every planned row run, and no row that errored or refused unless
    it gates ``completion_rate``; a suite without a gate whose every row succeeded.
    ``result_reasons`` says why it is not green. ``refusal_rate`` is
    ``rows_refused / (rows_graded + rows_refused)``. ``intervals`` holds the pass rate's
    cluster-robust interval, clustered by row and by ``cluster_field`` when the dataset has one.
    ``stopped_early``: rows whose agent was ended on purpose and graded as it stood, by why
    (``max_tool_calls``, or a live verdict's ``criterion_passed``, ``criterion_failed``,
    ``decision_budget_exceeded``).
    """

    schema_version: str = SUITE_SCHEMA_VERSION
    suite_id: str
    variant_id: str
    rows_total: int
    rows_passed: int
    rows_failed: int
    rows_error: int
    rows_refused: int = 0
    rows_not_graded: int
    rows_missing: int = 0
    rows_graded: int
    pass_rate: float | None
    refusal_rate: float | None = None
    average_weighted_score: float | None
    criterion_stats: list[CriterionStat] = Field(default_factory=list)
    failed_samples: list[FailedRowSummary] = Field(default_factory=list)
    failed_samples_total: int = 0
    criterion_aggregates: list[CriterionAggregate] = Field(default_factory=list)
    gate: Literal["passed", "failed", "none"] = "none"
    passed: bool
    result_reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    dataset: DatasetRecord | None = None
    selection: SelectionRecord | None = None
    criteria: list[dict[str, Any]] | None = None
    replicates: int = 1
    per_replicate: list[ReplicateRollup] = Field(default_factory=list)
    pass_k: dict[str, dict[str, float | int]] = Field(default_factory=dict)
    intervals: dict[str, IntervalRecord] = Field(default_factory=dict)
    cluster_field: str | None = None
    stopped_early: dict[str, int] = Field(default_factory=dict)

    @property
    def awaiting_grading(self) -> bool:
        """Rows wait for ``assay evaluate`` (an ``assay execute`` run): the suite has no
        verdict yet, whatever ``passed`` says."""
        return bool(self.rows_not_graded)

    @property
    def verdict(self) -> str:
        """``PASSED``, ``FAILED``, or ``NOT GRADED`` (:attr:`awaiting_grading`)."""
        return verdict_of(passed=self.passed, awaiting=self.awaiting_grading)

    def criterion_names(self) -> list[str]:
        """Each criterion's name in a report, by its place in ``success_criteria``: its
        type, with ``#N`` (its 1-based place) when another criterion has the same type."""
        types = [a.criterion_type for a in self.criterion_aggregates]
        return [f"{kind} #{place + 1}" if types.count(kind) > 1 else kind
                for place, kind in enumerate(types)]  # fmt: skip
