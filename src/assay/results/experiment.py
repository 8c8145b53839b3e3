"""``experiment.json`` (and ``assay compare``'s JSON): metrics with intervals per variant, and
paired comparisons per pair of variants.

Every estimate carries its method (``cluster t``, ``cluster exact`` or ``bootstrap``: see
:mod:`assay.metrics.clustered`), its cluster-robust standard error and number of clusters
where it has them, and, when no interval can be given, ``low``/``high`` are ``null`` with the
reason; never NaN.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.results.suite import DatasetRecord

EXPERIMENT_SCHEMA_VERSION = "1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class Estimate(_Model):
    """A metric's value and 95% interval; ``se`` and ``clusters`` for a cluster-robust one."""

    value: float | None
    low: float | None = None
    high: float | None = None
    method: str
    rows: int
    reason: str | None = None
    se: float | None = None
    clusters: int | None = None


class VariantSuite(_Model):
    """One variant's metrics on one suite: ``rows`` the suite's rows compared, ``rows_ran``
    those of them the variant ran (fewer when the run stopped when decided or was interrupted;
    absent in older reports)."""

    variant_id: str
    suite_id: str
    rows: int
    rows_ran: int | None = None
    replicates: int
    metrics: dict[str, Estimate] = Field(default_factory=dict)
    pass_k: dict[str, dict[str, float | int]] = Field(default_factory=dict)


class Difference(_Model):
    """``b - a`` for one metric, with a paired 95% interval: cluster-robust (``se``,
    ``clusters``) for a mean or a rate, a bootstrap over clusters for F1 (``method``)."""

    a: float | None
    b: float | None
    difference: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = None
    method: str = "bootstrap"
    se: float | None = None
    clusters: int | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    survives: bool | None = None
    detectable: float | None = None
    """The smallest true difference these rows detect with 80% power at 0.05 (from ``se``)."""
    note: str | None = None
    """How to read a difference that is not simply ``b - a`` as shown (a judged difference
    whose arms were clipped to [0, 1])."""


class FlippedRow(_Model):
    """A row whose pass/fail differs between the arms, with both ``task.json`` files."""

    row_id: str
    a_task_json: str
    b_task_json: str


class McNemarRecord(_Model):
    """McNemar's exact test on per-row pass/fail (a row passes when it passed in more than half
    of its graded replicates)."""

    a_only: int
    b_only: int
    p_value: float
    p_adjusted: float | None = None
    survives: bool | None = None


class SequentialRecord(_Model):
    """The anytime-valid betting test of the pass-rate difference replayed over the compared
    rows in a seeded random order (``assay.metrics.sequential``): where a run that stops when
    decided would have stopped, and why. ``unit``: ``rows``, or ``clusters`` when rows share
    a ``cluster_field`` value (each cluster one difference, the mean of its rows'; ``rows``
    and ``of_rows`` then count clusters): the test needs independent differences."""

    decision: str
    rows: int
    of_rows: int
    low: float | None = None
    high: float | None = None
    reason: str
    alpha: float = 0.05
    seed: int
    unit: str = "rows"


class Comparison(_Model):
    """Arm ``variant_b`` against arm ``variant_a`` on one suite, row by row."""

    suite_id: str
    variant_a: str
    variant_b: str
    rows: int
    metrics: dict[str, Difference] = Field(default_factory=dict)
    mcnemar: McNemarRecord
    became_pass: list[FlippedRow] = Field(default_factory=list)
    became_fail: list[FlippedRow] = Field(default_factory=list)
    became_pass_total: int = 0
    became_fail_total: int = 0
    sequential: SequentialRecord | None = None


class ArmDataset(_Model):
    """The data one arm (variant, or side of ``assay compare``) read for one suite."""

    variant_id: str
    suite_id: str
    dataset: DatasetRecord | None = None


class ExperimentResult(_Model):
    """One ``experiment.json``.

    ``excluded_rows`` (suite → row ids) are rows whose content differs between the arms (each
    ``task.json`` keeps its row): they are left out of every metric and paired statistic,
    never silently paired. ``datasets`` says what each arm read (version and content hash).

    Multiplicity: within a suite, the p-values of every paired difference (every pair of
    variants × every metric with a cluster-robust interval; the t test of ``b - a = 0``) are
    one family, adjusted by ``adjustment`` (Holm by default; ``p_adjusted``), and McNemar's
    p-values of every pair another; ``survives`` is ``p_adjusted <= alpha``.
    """

    schema_version: str = EXPERIMENT_SCHEMA_VERSION
    experiment_id: str
    description: str = ""
    variant_ids: list[str]
    row_ids: dict[str, list[str]] = Field(default_factory=dict)
    datasets: list[ArmDataset] = Field(default_factory=list)
    excluded_rows: dict[str, list[str]] = Field(default_factory=dict)
    adjustment: str = "holm"
    alpha: float = 0.05
    variants: list[VariantSuite] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)
    stopping: dict[str, Any] | None = None
    """The run's ``stopping.json`` when it ran with ``experiment.stop``: the decision, why,
    after how many rows and model calls, and what every planned row would have cost."""
