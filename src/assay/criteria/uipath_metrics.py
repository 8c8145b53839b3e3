"""The metrics of a ``uipath eval`` report and the threshold score of ``uipath_eval``
(``reference/coder_eval_agents.md`` §2; Coder Eval's checker).

From the report's ``evaluationSetResults[].evaluationRunResults[]``: per ``evaluatorId``,
the mean of its ``result.score`` over the evaluations (a missing or non-numeric score is 0,
as when the agent's code failed), and ``*`` the mean of those means (a macro average). An
evaluator that raised instead of scoring (``uipath`` records its ``details`` as ``Exception
thrown by evaluator: …``: an LLM evaluator without UiPath's platform, offline) did not
grade: it has no metric and is left out of ``*``; when a threshold needs it (or ``*``) the
criterion cannot grade. A report without ``evaluationSetResults`` is read as flat metrics
(``{"name": value}``). Score = thresholds met / thresholds given (1.0 for none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from assay.criteria.base import CriterionError

MACRO = "*"
EVALUATOR_RAISED = "Exception thrown by evaluator:"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Metrics:
    """A report's metrics (name → value) and the evaluators that did not score (id → why)."""

    values: dict[str, Any] = field(default_factory=dict)
    unscored: dict[str, str] = field(default_factory=dict)


def metrics_of(report: dict[str, Any], *, needed: set[str]) -> Metrics:
    """The metrics of a ``uipath eval`` report (see the module docstring).

    Raises:
        CriterionError: an evaluator whose metric ``needed`` names (every one, for ``*``)
            raised instead of scoring.
    """
    if "evaluationSetResults" not in report:
        return Metrics(dict(report))
    scores: dict[str, list[float]] = {}
    found = Metrics()
    for evaluation in report.get("evaluationSetResults") or []:
        for run in evaluation.get("evaluationRunResults") or []:
            evaluator = run.get("evaluatorId")
            result = run.get("result") or {}
            if not evaluator:
                continue
            why = _raised(result)
            if why is None:
                scores.setdefault(evaluator, []).append(_number(result.get("score")))
            elif evaluator in needed or MACRO in needed:
                raise CriterionError(
                    f"evaluator '{evaluator}' could not score evaluation "
                    f"'{evaluation.get('evaluationName', '?')}': {why} (UiPath's LLM "
                    "evaluators need its platform; offline, use deterministic ones such as "
                    "uipath-exact-match or uipath-json-similarity)"
                )
            else:
                found.unscored.setdefault(evaluator, why)
    means = {name: sum(values) / len(values) for name, values in scores.items()
             if name not in found.unscored}  # fmt: skip
    found.values = {**means, MACRO: sum(means.values()) / len(means) if means else 0.0}
    return found


def _raised(result: dict[str, Any]) -> str | None:
    """Why the evaluator raised instead of scoring (its first line), or ``None``."""
    details = result.get("details")
    if not (isinstance(details, str) and details.startswith(EVALUATOR_RAISED)):
        return None
    lines = ANSI.sub("", details[len(EVALUATOR_RAISED) :]).strip().splitlines()
    return lines[0] if lines else "no reason given"


def _number(score: object) -> float:
    """A score as a number; none, or not a number, is 0 (Coder Eval's rule)."""
    if isinstance(score, bool) or not isinstance(score, int | float):
        return 0.0
    return float(score)


def threshold_score(
    metrics: dict[str, Any], thresholds: dict[str, float]
) -> tuple[float, list[str]]:
    """The share of ``thresholds`` met (a metric passes at or above its minimum; 1.0 when
    there are none) and a line for each one not met."""
    failed = []
    for name, minimum in thresholds.items():
        value = metrics.get(name)
        if name not in metrics:
            failed.append(f"missing metric: {name}")
        elif not isinstance(value, int | float) or isinstance(value, bool):
            failed.append(f"{name}: {type(value).__name__} {value!r} is not a number")
        elif value < minimum:
            failed.append(f"{name}: {value:.3f} < {minimum:g}")
    if not thresholds:
        return 1.0, failed
    return (len(thresholds) - len(failed)) / len(thresholds), failed


def details(metrics: Metrics, failed: list[str]) -> str:
    """``Metrics: a 0.500, * 0.500. All thresholds met`` (the macro mean last), with the
    evaluators that did not score and why."""
    values = metrics.values
    names = sorted(values, key=lambda name: (name == MACRO, name))
    shown = ", ".join(f"{name} {value:.3f}" if isinstance(value, float) else f"{name} {value!r}"
                      for name, value in ((n, values[n]) for n in names))  # fmt: skip
    verdict = "All thresholds met" if not failed else "Not met: " + "; ".join(failed)
    text = f"Metrics: {shown or 'none'}. {verdict}"
    for evaluator, why in metrics.unscored.items():
        text += f". Not scored (left out of *): {evaluator}: {why}"
    return text
