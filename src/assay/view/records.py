"""One row's line in the viewer's index: what the rows table shows, filters and sorts on,
taken from its ``task.json`` (and ``response.txt``).

``error_kind`` names why a row did not grade or pass cleanly, one word per row:
``timeout``, ``max_turns``, ``budget`` (token or cost), ``build_failed`` (``pre_run``),
``refused`` (the model declined to answer),
``judge_error`` (a grader gave no verdict), ``agent_error`` (any other ``ERROR``),
``criterion_error`` (a criterion could not evaluate), the QA reasons ``extraction_failed``
and ``content_none``, ``unreadable`` (the ``task.json`` itself); ``None`` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.reports.rollup import failure_reasons
from assay.results.secrets import clip_head
from assay.results.status import FinalStatus
from assay.results.task_result import (
    ClassificationCriterionResult,
    CriterionResult,
    EvaluationResult,
    JudgeCriterionResult,
    QaCriterionResult,
)
from assay.view.queries import is_number

TEXT_LIMIT = 20_000  # characters of prompt and response kept for search and previews
_STATUS_KINDS = {
    FinalStatus.TIMEOUT: "timeout",
    FinalStatus.MAX_TURNS_EXHAUSTED: "max_turns",
    FinalStatus.TOKEN_BUDGET_EXCEEDED: "budget",
    FinalStatus.COST_BUDGET_EXCEEDED: "budget",
    FinalStatus.BUILD_FAILED: "build_failed",
    FinalStatus.REFUSED: "refused",
}
QA_KINDS = ("extraction_failed", "content_none", "judge_error")


@dataclass
class CriterionLine:
    """One criterion's outcome on the row: ``outcome`` is ``pass``, ``fail``, ``error`` or
    ``refused``."""

    position: int
    type: str
    score: float | None
    outcome: str
    expected: str | None = None
    observed: str | None = None
    qa_correct: int | None = None


@dataclass
class RowLine:
    """A row-task replicate as the index keeps it (``folder``: run-relative, POSIX)."""

    folder: str
    variant: str
    suite: str
    task_id: str
    row_id: str | None
    row_index: int | None
    replicate: int
    status: str
    category: str
    score: float | None = None
    duration: float | None = None
    tokens: int | None = None
    cost: float | None = None
    model: str | None = None
    expected: str | None = None
    observed: str | None = None
    error_kind: str | None = None
    reason: str | None = None
    prompt: str = ""
    response: str = ""
    problem: str | None = None
    uncertainty: float | None = None
    criteria: list[CriterionLine] = field(default_factory=list)


def place(folder: str) -> dict[str, Any]:
    """Variant, suite, row and replicate read from a row folder's path (for a ``task.json``
    that cannot be read): ``<variant>/<suite>/<row>/<NN>`` or ``<variant>/<task>/<NN>``."""
    parts = folder.split("/")
    replicate = int(parts[-1]) if is_number(parts[-1]) else 0
    if len(parts) >= 4:
        return {"variant": parts[0], "suite": parts[1], "task_id": f"{parts[1]}/{parts[2]}",
                "row_id": parts[2], "replicate": replicate}  # fmt: skip
    return {"variant": parts[0], "suite": parts[1] if len(parts) > 1 else "", "row_id": None,
            "task_id": parts[1] if len(parts) > 1 else folder, "replicate": replicate}  # fmt: skip


def unreadable(folder: str, problem: str) -> RowLine:
    """The line of a row whose ``task.json`` could not be read."""
    where = place(folder)
    return RowLine(folder=folder, row_index=None, status="UNREADABLE", category="unreadable",
                   error_kind="unreadable", reason=problem, problem=problem,
                   **where)  # fmt: skip


def row_line(folder: str, result: EvaluationResult, response: str) -> RowLine:
    """The index line of one valid ``task.json``."""
    criteria = [_criterion(i, item) for i, item in enumerate(result.success_criteria_results)]
    labelled = next((c for c in criteria if c.expected is not None), None)
    usage = result.total_token_usage
    reasons = ([result.error_message.splitlines()[0]] if result.error_message else []) + [
        r.splitlines()[0] for r in failure_reasons(result) if r
    ]
    prompt = result.task_config.resolved.get("initial_prompt")
    return RowLine(
        folder=folder,
        variant=result.variant_id,
        suite=result.suite_id or result.task_id,
        task_id=result.task_id,
        row_id=result.row_id,
        row_index=result.row_index,
        replicate=result.replicate_index,
        status=result.final_status.value,
        category=result.final_status.category,
        score=result.weighted_score,
        duration=result.duration_seconds,
        tokens=usage.total_tokens if usage is not None else None,
        cost=result.cost_usd,
        model=result.model_used,
        expected=labelled.expected if labelled else None,
        observed=labelled.observed if labelled else None,
        error_kind=error_kind(result),
        reason=reasons[0] if reasons and result.final_status is not FinalStatus.SUCCESS else None,
        prompt=clip_head(prompt if isinstance(prompt, str) else "", TEXT_LIMIT),
        response=clip_head(response, TEXT_LIMIT),
        uncertainty=judge_uncertainty(result.success_criteria_results),
        criteria=criteria,
    )


def judge_uncertainty(items: list[CriterionResult]) -> float | None:
    """How unsure the row's LLM judges were, on [0, 1] (the most unsure judge counts):
    1 for a judge that gave no verdict; with several samples, 1 minus their agreement;
    for a scale verdict, 1 minus twice its distance from the scale's middle (a binary or
    label verdict of one sample is sure: 0). ``None`` when no judge graded the row."""
    found: list[float] = []
    for item in items:
        if not isinstance(item, JudgeCriterionResult) or item.evaluation_status == "skipped":
            continue
        if item.grader_failed:
            found.append(1.0)
            continue
        unsure = 0.0
        if item.self_agreement is not None:
            unsure = 1.0 - item.self_agreement
        if item.verdict_kind == "scale":
            unsure = max(unsure, 1.0 - abs(2.0 * item.score - 1.0))
        found.append(min(1.0, max(0.0, unsure)))
    return max(found) if found else None


def _criterion(position: int, item: CriterionResult) -> CriterionLine:
    """``outcome``: ``pass``/``fail`` when the criterion graded the row, else ``error`` or
    ``refused`` (kept out of every score and rate)."""
    if item.graded:
        outcome = "pass" if item.passed else "fail"
    else:
        outcome = "refused" if item.evaluation_status == "refused" else "error"
    line = CriterionLine(position, item.criterion_type, item.score, outcome)
    if isinstance(item, ClassificationCriterionResult):
        line.expected, line.observed = item.expected_label, item.observed_label
    elif isinstance(item, QaCriterionResult) and item.is_correct is not None:
        line.qa_correct = int(item.is_correct)
    return line


def error_kind(result: EvaluationResult) -> str | None:
    """The row's error kind (see the module docstring), or ``None``."""
    status = result.final_status
    if status in _STATUS_KINDS:
        return _STATUS_KINDS[status]
    items = result.success_criteria_results
    if status is FinalStatus.ERROR:
        return "judge_error" if any(i.grader_failed for i in items) else "agent_error"
    for item in items:
        if isinstance(item, QaCriterionResult) and item.error_reason in QA_KINDS:
            return item.error_reason
    if any(i.error is not None for i in items):
        return "criterion_error"
    return None


def raw_line(folder: str, data: Any, problem: str) -> RowLine:
    """The line of a ``task.json`` that is JSON but not a valid result (another schema
    version, a field missing): what its fields say, with the problem."""
    line = unreadable(folder, problem)
    if not isinstance(data, dict):
        return line
    status = data.get("final_status")
    if isinstance(status, str) and status in FinalStatus.__members__:
        line.status, line.category = status, FinalStatus(status).category
        line.error_kind = None
    score = data.get("weighted_score")
    line.score = float(score) if isinstance(score, int | float) else None
    index = data.get("row_index")
    line.row_index = index if isinstance(index, int) else None
    for key, attribute in (("variant_id", "variant"), ("suite_id", "suite"),
                           ("task_id", "task_id"), ("row_id", "row_id")):  # fmt: skip
        if isinstance(data.get(key), str):
            setattr(line, attribute, data[key])
    return line
