"""``llm_judge``: an LLM grades the row against a rubric; the suite's judge metrics.

The judge (resolved when the run was planned: :mod:`assay.judges.assets`) sees the rubric
with the row's values, the response, the ``files`` and the transcript
(:mod:`assay.judges.prompt`), and answers JSON of its verdict's kind; the row's score is the
verdict on [0, 1] (binary: 1 or 0; labels: 1 when the label passes, i.e. is in
``pass_labels`` or equals ``expected_label``; scale: ``(score − min)/(max − min)``). The
judge's model comes from the run's models (``GradingContext.models``). A verdict that cannot
be read after the retries is a ``judge_error``: the criterion did not grade the row (the row
ends ``ERROR``), and it is left out of every number below and counted apart.

Suite metrics, by verdict kind (:mod:`assay.criteria.judge_metrics`; besides the scores'
``count``/``mean``/…):

- binary: ``pass_rate`` (verdicts true / verdicts) with its Wilson 95% interval, and, when
  the judge has a stored calibration, ``corrected_pass_rate``: Rogan–Gladen for the judge's
  measured sensitivity and specificity, with an interval that carries the calibration's
  uncertainty (:func:`assay.metrics.agreement.rogan_gladen`);
- labels: ``share.<label>`` (the label distribution) and ``pass_rate``; with
  ``expected_label``, accuracy, macro/weighted/micro F1, per-label precision/recall/F1 and
  the confusion matrix (expected vs the judge's label);
- scale: ``verdict_mean``, ``verdict_median``, ``verdict_std``, ``verdict_min``,
  ``verdict_max`` on the judge's own scale, ``pass_rate`` (score ≥ ``pass_threshold``) and a
  histogram;
- with ``samples`` > 1: ``self_agreement`` (mean share of agreeing sample pairs) or
  ``sample_spread`` (mean standard deviation of the samples' scores).
"""

from __future__ import annotations

import glob
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from assay.agents.llm import model_key
from assay.criteria.base import (
    Criterion,
    CriterionError,
    EvidenceError,
    GradingContext,
    Tally,
    read_text,
    sandbox_of,
)
from assay.criteria.code_checks import REFERENCE_DIR
from assay.criteria.judge_metrics import judge_metrics
from assay.data.substitute import PlaceholderKeyError
from assay.judges.grade import JudgeOutcome, judge_case
from assay.judges.prompt import JudgeCase, dialog_text, transcript_text
from assay.metrics.values import MetricTable
from assay.providers.pricing import Price
from assay.results.task_result import (
    CriterionResult,
    JudgeCriterionResult,
    JudgeRef,
    JudgeSampleRecord,
)
from assay.sandbox.tempdir import LinkEscape, SandboxEscape
from assay.spec.criteria import LlmJudge
from assay.spec.judge import JudgeAsset, VerdictSpec, judge_metric_names
from assay.spec.judge_criteria import REFERENCE_DIR_PREFIXES, TASK_DIR_PREFIXES, SystemOneJudge

Aggregated = tuple[MetricTable, dict[str, Any]]

MAX_GLOB_FILES = 20


def inline_asset(spec: LlmJudge, base_dir: str) -> JudgeAsset:
    """The asset of an inline judge not resolved by a plan (no store calibration)."""
    definition = spec.inline_definition()
    return JudgeAsset(
        definition=definition,
        name="inline",
        version=None,
        content_hash=definition.content_hash(),
        source="inline",
        base_dir=base_dir,
    )


def judge_ref(asset: JudgeAsset) -> JudgeRef:
    """What a graded row records of its judge."""
    return JudgeRef(
        name=asset.name,
        version=asset.version,
        content_hash=asset.content_hash,
        source=asset.source,
        model=asset.definition.model,
    )


class LlmJudgeCriterion(LlmJudge, Criterion):
    """Grades ``llm_judge`` criteria and aggregates the suite's judge metrics."""

    check_seconds: ClassVar[float | None] = None  # the judge's calls have their own timeouts

    async def check(self, context: GradingContext) -> CriterionResult:
        """Ask the judge about this row.

        Raises:
            CriterionError: the judge was not resolved, the run gave no models, a ``files``
                entry cannot be read, or a ``${row.x}`` of the rubric is not in the row.
        """
        task_dir = context.env.get("ASSAY_TASK_DIR") or "."
        asset = self.asset
        if asset is None:
            if self.judge is not None:
                raise CriterionError(
                    f"the judge {self.judge!r} was not resolved before "
                    "grading (grade through assay run or assay evaluate)"
                )
            asset = inline_asset(self, task_dir)
        if not self.enabled:
            return _result(
                self, asset, score=0.0, details="(skipped: enabled=false)", status="skipped"
            )
        if context.models is None:
            raise CriterionError("llm_judge needs the run's models to reach its judge")
        definition = asset.definition
        model = context.models.get(model_key(definition, Path(asset.base_dir)))
        case = JudgeCase(
            row=context.row or {},
            response=context.response,
            files=tuple(_files(self, context, task_dir)),
            transcript=_transcript(self, definition.rubric, context),
            dialog=_dialog(self, definition.rubric, context),
        )
        try:
            outcome = await judge_case(
                model, definition, case, include_response=self.include_agent_output
            )
        except PlaceholderKeyError as exc:
            raise CriterionError(f"the rubric of judge {asset.name}: {exc}") from None
        price = context.models.price(definition.model)
        return outcome_result(self, asset, outcome, price=price)

    def aggregate(self, results: list[CriterionResult]) -> tuple[MetricTable, dict[str, Any]]:
        """Score statistics and the judge metrics of the verdict's kind
        (:func:`assay.criteria.judge_metrics.judge_metrics`)."""
        asset = self.asset
        verdict = asset.definition.verdict if asset is not None else _inline_verdict(self)
        return judge_metrics(self, verdict, results)

    def tally(self) -> Tally:
        """:meth:`aggregate` over the graded results, kept as they come (the judge metrics
        need them all at once: a suite's judge results grow with its rows)."""
        return _KeptTally(self.aggregate)

    def metric_names(self) -> set[str] | None:
        """The base metrics and those of the verdict's kind
        (:func:`assay.spec.judge.judge_metric_names`: ``pass_rate``, ``share.<label>``,
        ``verdict_mean``, …); ``None`` for a judge file or store judge not resolved yet."""
        if self.asset is not None:
            verdict = self.asset.definition.verdict
        elif self.judge is None:
            verdict = _inline_verdict(self)
        else:
            return None
        names = super().metric_names() or set()
        return names | judge_metric_names(verdict, expected_label=self.expected_label is not None)


class _KeptTally:
    """A tally that keeps the results and aggregates them at the end."""

    def __init__(self, aggregate: Callable[[list[CriterionResult]], Aggregated]) -> None:
        self.aggregate = aggregate
        self.results: list[CriterionResult] = []

    def add(self, result: CriterionResult) -> None:
        """Keep one graded row's result."""
        self.results.append(result)

    def result(self) -> Aggregated:
        """The aggregate over every result kept."""
        return self.aggregate(self.results)


def _inline_verdict(spec: LlmJudge) -> VerdictSpec:
    return spec.verdict or VerdictSpec(kind="scale", min=0.0, max=1.0)


def _files(spec: LlmJudge, context: GradingContext, task_dir: str) -> list[tuple[str, str]]:
    shown: list[tuple[str, str]] = []
    for entry in spec.files:
        for name, text in _read_entry(entry, context, task_dir):
            if len(text) > spec.max_file_chars:
                cut = len(text) - spec.max_file_chars
                text = text[: spec.max_file_chars] + f"\n… [{cut} more characters not shown]"
            shown.append((name, text))
    return shown


def _read_entry(entry: str, context: GradingContext, task_dir: str) -> list[tuple[str, str]]:
    reference = context.need(REFERENCE_DIR)
    for prefixes, folder in ((TASK_DIR_PREFIXES, Path(task_dir)),
                             (REFERENCE_DIR_PREFIXES, reference)):  # fmt: skip
        prefix = next((p for p in prefixes if entry.startswith(p)), None)
        if prefix is None:
            continue
        if folder is None:  # refused at load; a run recorded before that rule
            raise CriterionError(f"files: {entry} names the reference folder; the task has none")
        path = Path(folder) / entry[len(prefix) :]
        if not path.is_file():
            return [(entry, "(this file does not exist)")]
        return [(entry, path.read_text(encoding="utf-8", errors="replace"))]
    if not glob.has_magic(entry):
        text = read_text(entry, context)
        return [(entry, text.value if text.value is not None else "(this file does not exist)")]
    sandbox = sandbox_of(context)
    try:  # the literal path first, then the glob (Sandbox.matches: no ignored folder, no link out)
        literal = sandbox.resolve(entry).is_file()
        names = [] if literal else sandbox.matches(entry)
    except LinkEscape as exc:  # a link the agent made
        raise EvidenceError(str(exc)) from None
    except SandboxEscape as exc:
        raise CriterionError(str(exc)) from None
    if literal:
        return [(entry, read_text(entry, context).value or "")]
    files = [name for name in names if (sandbox.root / name).is_file()][:MAX_GLOB_FILES]
    if not files:
        return [(entry, "(no file matches this pattern)")]
    return [(name, read_text(name, context).value or "") for name in files]


def _transcript(spec: LlmJudge, rubric: str, context: GradingContext) -> str | None:
    if not (spec.include_tool_calls or "${transcript}" in rubric):
        return None
    return transcript_text(context.transcript, limit=spec.max_transcript_chars)


def _dialog(spec: LlmJudge, rubric: str, context: GradingContext) -> str | None:
    if not (spec.include_dialog or "${dialog}" in rubric):
        return None
    return dialog_text(context.transcript, limit=spec.max_dialog_chars)


def _score(spec: LlmJudge, verdict: VerdictSpec, value: bool | str | float) -> float:
    if verdict.kind == "scale":
        assert verdict.min is not None and verdict.max is not None
        return (float(value) - verdict.min) / (verdict.max - verdict.min)
    if verdict.kind == "labels" and spec.expected_label is not None:
        return 1.0 if _same_label(str(value), spec.expected_label) else 0.0
    passes = verdict.passes(value)
    if passes is not None:
        return 1.0 if passes else 0.0
    raise CriterionError(
        "a labels judge needs pass_labels (in the judge) or expected_label "
        "(in the criterion) to decide which labels pass a row"
    )


def _same_label(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def outcome_result(
    spec: LlmJudge, asset: JudgeAsset, outcome: JudgeOutcome, *, price: Price | None = None
) -> JudgeCriterionResult:
    """The criterion result of one judged row (a judge error when no verdict was read);
    ``price``: the judge model's (its calls unpriced when ``None``)."""
    verdict = asset.definition.verdict
    samples = [
        JudgeSampleRecord(verdict=s.value, reason=s.reason, attempts=s.attempts, error=s.error)
        for s in outcome.samples
    ]
    common: dict[str, Any] = {
        "attempts": outcome.attempts,
        "samples": samples if len(samples) > 1 else [],
        "self_agreement": outcome.self_agreement,
        "spread": outcome.spread,
        "judge_tokens": outcome.usage.total_tokens,
        "judge_cost_usd": price.cost(outcome.usage) if price is not None else None,
    }
    if outcome.value is None:
        return _result(
            spec,
            asset,
            score=0.0,
            status="error",
            raw=outcome.raw,
            details=f"judge_error after {outcome.attempts} call(s): {outcome.error}",
            error=f"judge_error: {outcome.error}",
            **common,
        )
    score = _score(spec, verdict, outcome.value)
    details = f"verdict {verdict_text(outcome.value)}: {outcome.reason or '(no reason given)'}"
    return _result(
        spec,
        asset,
        score=score,
        details=details,
        verdict=outcome.value,
        reason=outcome.reason,
        **common,
    )


def _result(
    spec: LlmJudge,
    asset: JudgeAsset,
    *,
    score: float,
    details: str,
    status: str = "evaluated",
    error: str | None = None,
    **fields: Any,
) -> JudgeCriterionResult:
    skipped = status == "skipped"
    return JudgeCriterionResult(
        criterion_type=spec.type,
        description=spec.description,
        score=min(1.0, max(0.0, score)),
        details=details,
        error=error,
        evaluation_status=status,
        pass_threshold=spec.pass_threshold,
        gating=spec.gating and not skipped,
        weight=0.0 if skipped else spec.weight,
        judge=judge_ref(asset),
        verdict_kind=asset.definition.verdict.kind,
        expected_label=spec.expected_label,
        **fields,
    )


def verdict_text(value: bool | str | float) -> str:
    """A verdict as JSON writes it: ``true``, ``"label"``, ``4``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, ensure_ascii=False)


class SystemOneJudgeCriterion(SystemOneJudge, LlmJudgeCriterion):
    """Grades ``system_one_judge``: an inline ``llm_judge`` with System One's defaults
    (:class:`assay.spec.judge_criteria.SystemOneJudge`)."""
