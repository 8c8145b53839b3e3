"""Grading one row: run its criteria in order, then decide its status and weighted score.

Criteria run sequentially in declaration order (a ``run_command`` may prepare a file a later
criterion reads). Task success and the weighted score follow Coder Eval
(``reference/originals.md`` §1.7): the row succeeds when every gating criterion
(``weight > 0``) scores at least its ``pass_threshold``;
``weighted_score = Σ score·weight / Σ weight`` (``None`` when every weight is 0).

What did not grade is not a score (:mod:`assay.results.status`): a gating criterion that
could not evaluate ends the row ``ERROR`` and one that met a refusal ends it ``REFUSED``;
such a row has no weighted score (``None``), never a 0 averaged in.
"""

from __future__ import annotations

import asyncio
import traceback
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from assay.agents.base import OutcomeStatus
from assay.criteria.agent_judge import AGENT_HOST, AgentHost
from assay.criteria.base import CriterionError, EvidenceError, GradingContext, Service, basic_result
from assay.criteria.code_checks import REFERENCE_DIR
from assay.criteria.live import armed_passed
from assay.criteria.qa import QA_ITEM, QA_JUDGE, QA_JUDGE_SETTINGS
from assay.criteria.registry import CriterionRegistry
from assay.providers.base import Model
from assay.qa.item import QaItem
from assay.results.status import FinalStatus
from assay.results.task_result import BasicCriterionResult, CriterionResult, EarlyStopRecord
from assay.spec.criteria import CriterionSpec
from assay.spec.task import TaskDefinition

Stage = Literal["run", "execute"]
TRACE_LINES = 40
"""The last lines of a criterion's traceback kept in its result's ``details`` (a bug of a
criterion of one's own is found there)."""


async def grade(
    criteria: list[CriterionSpec], context: GradingContext, registry: CriterionRegistry
) -> list[CriterionResult]:
    """Check each criterion in order; a criterion that cannot evaluate records its error,
    as does one whose check outlasts its class's ``check_seconds`` or returns no criterion
    result (the others' results are kept); one that finds the agent's evidence unreadable
    (:class:`~assay.criteria.base.EvidenceError`) scores 0.0 with the reason."""
    return [await _graded(spec, context, registry) for spec in criteria]


async def _graded(
    spec: CriterionSpec, context: GradingContext, registry: CriterionRegistry
) -> CriterionResult:
    timer: asyncio.Timeout | None = None
    try:
        criterion = registry.bind(spec)
        timer = asyncio.timeout(type(criterion).check_seconds)
        async with timer:
            result = await criterion.check(context)
    except EvidenceError as exc:  # what the agent left: a failing score, not an error
        return basic_result(spec, 0.0, str(exc))
    except CriterionError as exc:
        return _errored(spec, str(exc))
    except Exception as exc:  # a criterion's bug must not lose the row
        if isinstance(exc, TimeoutError) and timer is not None and timer.expired():
            return _errored(spec, f"{spec.type} did not finish within "
                                  f"{type(criterion).check_seconds:g} s (its class's "
                                  "check_seconds): ended")  # fmt: skip
        trace = "".join(traceback.format_exception(exc)[-TRACE_LINES:])
        return _errored(spec, f"internal error in {spec.type}: {exc!r}", details=trace)
    if not isinstance(result, BasicCriterionResult):
        return _errored(spec, f"internal error in {spec.type}: check() returned "
                              f"{type(result).__name__}, not a criterion result "
                              "(basic_result(...))")  # fmt: skip
    return _revalidated(spec, result)


def _revalidated(spec: CriterionSpec, result: BasicCriterionResult) -> CriterionResult:
    """``result`` checked again against its model: a field changed after it was made (a
    score scaled past 1, ``model_construct``) is the criterion's error on this row, named,
    not an invalid ``task.json`` that stops the run's reports."""
    try:
        return type(result).model_validate(result.model_dump())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(the result)"
        why = f"{where} is invalid ({first['msg']}; was it changed after basic_result(...)?)"
        return _errored(spec, f"internal error in {spec.type}: check() returned a "
                              f"{type(result).__name__} whose {why}")  # fmt: skip


def row_services(
    *,
    qa_item: QaItem | None,
    judge: Model | None,
    task: TaskDefinition,
    reference: Path | None,
    agents: AgentHost | None = None,
) -> dict[Service[Any], Any]:
    """What a row offers the criteria that need more than the shared context, by key: the
    QA item, judge and ``qa.judge`` settings of a ``qa:`` row, the task's reference folder,
    the run's coding-agent services (``agent_judge``) (each only when there is one)."""
    offered: dict[Service[Any], Any] = {
        QA_ITEM: qa_item,
        QA_JUDGE: judge,
        QA_JUDGE_SETTINGS: task.qa.judge if task.qa else None,
        REFERENCE_DIR: reference,
        AGENT_HOST: agents,
    }
    return {key: value for key, value in offered.items() if value is not None}


def _errored(spec: CriterionSpec, message: str, *, details: str = "") -> CriterionResult:
    return BasicCriterionResult(
        criterion_type=spec.type,
        description=spec.description,
        score=0.0,
        details=details,
        error=message,
        evaluation_status="error",
        pass_threshold=spec.pass_threshold,
        gating=spec.gating,
        weight=spec.weight,
    )


def weighted_score(results: list[CriterionResult]) -> float | None:
    """``Σ score·weight / Σ weight``; ``None`` when the weights sum to 0, or when a gating
    criterion did not grade (an error or a refusal: the row has no score)."""
    if any(r.gating and not r.graded for r in results):
        return None
    graded = [r for r in results if r.graded]
    total = sum(r.weight for r in graded)
    if total == 0:
        return None
    return sum(r.score * r.weight for r in graded) / total


def passed(results: list[CriterionResult]) -> bool:
    """Every gating criterion reached its threshold without error, and there was at least
    one: a row never passes on weight-0 (informational) criteria alone."""
    gating = [r for r in results if r.gating]
    return bool(gating) and all(r.passed for r in gating)


_AGENT_STATUS: dict[OutcomeStatus, FinalStatus] = {
    "timeout": FinalStatus.TIMEOUT,
    "token_budget": FinalStatus.TOKEN_BUDGET_EXCEEDED,
    "cost_budget": FinalStatus.COST_BUDGET_EXCEEDED,
    "max_turns": FinalStatus.MAX_TURNS_EXHAUSTED,
}


STOPPED_EARLY: frozenset[OutcomeStatus] = frozenset({"max_tool_calls", "early_stop"})
"""Agent outcomes of an agent ended on purpose whose row is graded as it stands."""

CAPS: frozenset[OutcomeStatus] = frozenset({"max_turns", "token_budget", "cost_budget"})
"""The ``run_limits`` caps: a row whose agent hit one passes when its criteria pass (Coder
Eval: "a cap hit whose criteria pass is SUCCESS", ``coder_eval_agents.md`` §4), else it
ends with the cap's own status; a timeout keeps ``TIMEOUT`` (the agent was cut off, not
capped)."""


def final_status(
    agent_status: OutcomeStatus,
    results: list[CriterionResult],
    *,
    graded: bool,
    early: EarlyStopRecord | None = None,
) -> FinalStatus:
    """The row's status from the agent's outcome and the criteria's results.

    An agent error is ``ERROR`` (no criteria ran), and so is a gating criterion that could not
    evaluate (a judge without a verdict); a gating criterion that met a refusal makes it
    ``REFUSED``; a timeout keeps ``TIMEOUT`` even when criteria pass, and a cap
    (``max_turns``, tokens, cost: :data:`CAPS`) its own status when they do not (they pass:
    ``SUCCESS``); without grading it is ``NOT_GRADED``. A row whose agent
    a live verdict ended (``early``) passes when its armed criteria reach the gate threshold
    (:func:`assay.criteria.live.armed_passed`), whatever the others say.
    """
    if agent_status == "error":
        return FinalStatus.ERROR
    capped = (
        agent_status in CAPS
        and graded
        and passed(results)
        and not any(r.gating and (r.grader_failed or r.refused) for r in results)
    )
    if agent_status in _AGENT_STATUS and not capped:
        return _AGENT_STATUS[agent_status]
    if not graded:
        return FinalStatus.NOT_GRADED
    if any(r.gating and r.grader_failed for r in results):
        return FinalStatus.ERROR
    if any(r.gating and r.refused for r in results):
        return FinalStatus.REFUSED
    if agent_status == "early_stop" and early is not None:
        scores = [(r.score, r.weight, not r.grader_failed) for r in results]
        return FinalStatus.SUCCESS if armed_passed(early, scores) else FinalStatus.FAILURE
    return FinalStatus.SUCCESS if passed(results) else FinalStatus.FAILURE


def grading_message(status: FinalStatus, results: list[CriterionResult]) -> str | None:
    """Why grading left the row ``ERROR`` or ``REFUSED`` (the first gating criterion that
    did not grade), else ``None``."""
    if status is FinalStatus.ERROR:
        return next((r.error for r in results if r.gating and r.grader_failed), None)
    if status is FinalStatus.REFUSED:
        found = next((r for r in results if r.gating and r.refused), None)
        return f"the model refused to answer ({found.criterion_type})" if found else None
    return None
