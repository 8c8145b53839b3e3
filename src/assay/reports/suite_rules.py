"""The rules a suite's roll-up follows, one row at a time or for the whole suite: report
order, whether the suite is green (see the exit codes in the docs), a criterion's suite-wide
description and error, and what a failed row's summary says. :mod:`assay.reports.rollup`
applies them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from assay.data.substitute import PLACEHOLDER
from assay.reports.numbers import fmt_close
from assay.results.secrets import clip_head
from assay.results.status import RowCounts
from assay.results.suite import CriterionAggregate, FailedRowSummary, SuiteRollup, ThresholdCheck
from assay.results.task_result import EvaluationResult, QaCriterionResult
from assay.spec.criteria import CriterionSpec

FAILED_SAMPLE_LIMIT = 20
NOT_GRADED_ERROR = "no row was graded (run `assay evaluate RUN_DIR` to grade them)"
NO_ROWS_ERROR = (
    "no row was graded by this criterion (every row errored, or the criterion could not evaluate)"
)
EMPTY_SUITE_ERROR = "the suite has no rows"


def order_key(result: EvaluationResult) -> tuple[int, int, str]:
    """Dataset order, then replicate: the order of every report."""
    return (result.row_index if result.row_index is not None else -1, result.replicate_index,
            result.task_id)  # fmt: skip


def task_json_relpath(result: EvaluationResult) -> str:
    """``<variant>/<suite>/<row>/<NN>/task.json`` (or ``<variant>/<task>/<NN>/…``), POSIX."""
    parts = [result.variant_id]
    if result.suite_id is not None and result.row_id is not None:
        parts += [result.suite_id, result.row_id]
    else:
        parts.append(result.task_id)
    parts += [f"{result.replicate_index:02d}", "task.json"]
    return "/".join(parts)


def suite_result(
    criteria: Sequence[CriterionSpec],
    aggregates: Sequence[CriterionAggregate],
    counts: RowCounts,
    missing: int,
) -> tuple[Literal["passed", "failed", "none"], list[str]]:
    """The suite's gate and why it is not green (empty: green), by the documented exit codes.

    A suite with ``suite_thresholds`` is decided by its gate, except that rows that errored or
    refused make it red unless it gates ``completion_rate`` itself (then that gate decides); a
    suite without thresholds has no gate and is green only when every row succeeded
    (Coder Eval's rule). Rows that never ran make any suite red. A suite whose rows await
    ``assay evaluate`` is not decided: its reasons say so, and its gate,
    where it has one, is ``failed`` (no value to meet it).
    """
    reasons = [f"{missing} planned row(s) never ran"] if missing else []
    gated = any(spec.gates for spec in criteria)
    if counts.not_graded:  # `assay execute`'s rows: no verdict yet
        reasons += [_did_not_grade(counts)] if counts.did_not_grade else []
        reasons += [f"{counts.failed} failed"] if counts.failed else []
        reasons.append(f"{counts.not_graded} row(s) await `assay evaluate RUN_DIR`")
        return ("failed" if gated else "none"), reasons
    if not gated:
        if counts.total > counts.passed:
            reasons.append(f"no gate, and {_not_succeeded(counts)}")
        return "none", reasons
    failed_checks = [
        f"{a.criterion_type}.{c.name} "
        f"{_value(c.actual_value, c.min_value, a.undefined_metrics.get(c.metric))},"
        f" needs {c.min_value:g}" + (f" ({c.note})" if c.note else "")
        for a in aggregates
        for c in a.threshold_checks
        if not c.passed
    ]
    gate_errors = [a.error for a in aggregates if a.error and a.threshold_checks]
    passed = all(a.passed for a in aggregates)
    if not passed:
        reasons.append("gate failed: " + "; ".join(failed_checks or gate_errors or ["?"]))
    gates_completion = any("completion_rate" in (s.suite_thresholds or {}) for s in criteria)
    if counts.did_not_grade and not gates_completion:
        reasons.append(f"{_did_not_grade(counts)}, and the suite does not gate completion_rate")
    return ("passed" if passed else "failed"), reasons


def _value(value: float | None, threshold: float, undefined: str | None = None) -> str:
    """The gated value, or why there is none (the metric's ``undefined_metrics`` reason:
    ``0/0: label 'positive' was never expected``)."""
    if value is not None:
        return fmt_close(value, threshold)
    return f"is undefined ({undefined})" if undefined else "was not produced"


def _did_not_grade(counts: RowCounts) -> str:
    parts = [f"{counts.error} row(s) errored"] if counts.error else []
    if counts.refused:
        parts.append(f"{counts.refused} refused")
    return " and ".join(parts)


def _not_succeeded(counts: RowCounts) -> str:
    parts = [f"{counts.failed} failed"] if counts.failed else []
    parts += [f"{counts.error} errored"] if counts.error else []
    parts += [f"{counts.refused} refused"] if counts.refused else []
    parts += [f"{counts.not_graded} not graded"] if counts.not_graded else []
    return f"{', '.join(parts)} (every row must succeed)"


def aggregate_error(
    *, rows: int, not_graded: int, graded: int, gated: bool, failed: str | None = None
) -> str | None:
    """Why a criterion has no metric: its tally ``failed`` (the reason), an empty suite, rows
    not graded yet, or no row the criterion graded (``None`` when it graded some)."""
    if failed is not None:
        error = failed
    elif graded:
        return None
    elif not rows:
        error = EMPTY_SUITE_ERROR
    elif not_graded == rows:
        error = NOT_GRADED_ERROR
    else:
        error = NO_ROWS_ERROR
    return error + (", so its thresholds fail" if gated else "")


def suite_description(template: str, texts: set[str]) -> str:
    """A criterion's description for the whole suite: the rows' own (substituted) text when
    they all agree (``texts``: the distinct ones, two are enough), else the template with
    each ``${row.x}`` shown as ``<x>``."""
    if not PLACEHOLDER.search(template):
        return template
    if len(texts) == 1:
        return texts.pop()
    return PLACEHOLDER.sub(lambda match: f"<{match.group(1)}>", template)


def failure_reasons(result: EvaluationResult) -> list[str]:
    """Why a row did not pass: criteria with an error, a refusal or a score below 1.0."""
    reasons = []
    for item in result.success_criteria_results:
        if item.error:
            reasons.append(f"{item.criterion_type}: {item.error}")
        elif item.refused:
            reasons.append(f"{item.criterion_type}: refused")
        elif item.score < 1.0:
            reasons.append(item.details.splitlines()[0] if item.details else item.criterion_type)
    return reasons


ANSWER_SHOWN = 200


def qa_answer(result: EvaluationResult) -> tuple[str | None, str | None]:
    """A QA row's answer (its extracted letters with their texts, else the response) and
    the expected one (the correct letters with their texts, else the accepted answers)."""
    record = result.qa_record
    if record is None:
        return None, None
    options: dict[str, str] = record.get("options") or {}
    graded = next((c for c in result.success_criteria_results
                   if isinstance(c, QaCriterionResult)), None)  # fmt: skip
    letters = (graded.sample_result.get("extracted") if graded else None) or []
    content = (record.get("pred") or {}).get("content")
    if letters:
        answer: str | None = ", ".join(f"{x}. {options.get(x, '?')}" for x in letters)
    else:
        answer = None if content is None else _shorten(content)
    correct = record.get("correct_letters") or []
    if correct:
        expected: str | None = ", ".join(f"{x}. {options.get(x, '?')}" for x in correct)
    elif record.get("prompt_type") == "open_unanswerable":
        expected = "an abstention (the story does not answer it)"
    else:
        expected = " | ".join(record.get("correct_answers") or []) or None
    return answer, expected


def _shorten(text: str) -> str:
    text = text.strip()
    return clip_head(text, ANSWER_SHOWN)


def failed_summary(result: EvaluationResult, relpath: str) -> FailedRowSummary:
    answer, expected = qa_answer(result)
    return FailedRowSummary(
        answer=answer,
        expected=expected,
        row_id=result.row_id,
        task_id=result.task_id,
        final_status=result.final_status.value,
        weighted_score=result.weighted_score,
        failure_reasons=failure_reasons(result),
        error_message=result.error_message,
        task_json_relpath=relpath,
        replicate_index=result.replicate_index,
    )


def passed_gate_notes(suite: SuiteRollup) -> list[str]:
    """``"classification_match: accuracy = 0.400 >= 0.3 (the 95% interval … straddles …)"``
    for each gate that passed with a note (its interval straddles the threshold)."""
    return [gate_line(agg.criterion_type, c)
            for agg in suite.criterion_aggregates for c in agg.threshold_checks
            if c.passed and c.note and c.actual_value is not None]  # fmt: skip


def gate_line(criterion: str, check: ThresholdCheck) -> str:
    """``"criterion: name = value >= minimum (note)"`` (``<`` for a check that failed) of a
    check with a value."""
    assert check.actual_value is not None
    sign = ">=" if check.passed else "<"
    return (
        f"{criterion}: {check.name} = {fmt_close(check.actual_value, check.min_value)} "
        f"{sign} {check.min_value:g}" + (f" ({check.note})" if check.note else "")
    )
