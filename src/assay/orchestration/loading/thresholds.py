"""Suite thresholds: which metric names exist, and checking a gate.

Metric names (``reference/originals.md`` §1.4): every criterion has ``count``, ``mean``,
``median``, ``std``, ``min``, ``max`` and ``completion_rate``; classification criteria add
``accuracy``, ``macro_f1``, ``weighted_f1``, ``micro_f1`` and ``precision.<label>``,
``recall.<label>``, ``f1.<label>`` for each allowed label and ``(none)``/``(other)``
(``skill_triggered``: the labels ``yes`` and ``no``); the ``qa`` criterion adds ``accuracy``;
``llm_judge`` adds its verdict kind's metrics (:func:`assay.spec.judge.judge_metric_names`:
``pass_rate``, ``corrected_pass_rate``, ``share.<label>``, ``verdict_mean`` on the judge's own
scale, …), checked once the judge is resolved.
A name outside that set is a load-time error with a suggestion: a typo would otherwise make
a gate that can never pass.
"""

from __future__ import annotations

from collections.abc import Mapping

from assay.criteria.base import Criterion
from assay.errors import TaskFileError
from assay.results.suite import IntervalRecord, ThresholdCheck
from assay.spec.base import did_you_mean
from assay.spec.criteria import CriterionSpec
from assay.spec.source import YamlDocument, field_path
from assay.spec.task import TaskDefinition

BOUND_METRICS = ("mean", "accuracy")
"""The metrics with a cluster-robust interval, whose lower bound a gate may set."""


def known_metrics(spec: CriterionSpec) -> set[str] | None:
    """The metric names ``spec`` can produce (its class names them:
    :meth:`assay.criteria.Criterion.metric_names`); ``None`` when they are not known at
    load, or for a config that is not a registered criterion's."""
    return spec.metric_names() if isinstance(spec, Criterion) else None


def check_threshold_names(task: TaskDefinition, *, display: str, document: YamlDocument) -> None:
    """Reject unknown metric names and minimums no value can reach.

    Raises:
        TaskFileError: naming the criterion's ``suite_thresholds.<metric>`` and its line.
    """
    for index, spec in enumerate(task.success_criteria):
        known = known_metrics(spec)
        for metric, minimum in (spec.suite_thresholds or {}).items():
            loc = ("success_criteria", index, "suite_thresholds", metric)
            line, name = document.line_of(loc), field_path(loc)
            if known is not None and metric not in known:
                cased = sorted(k for k in known if k.lower() == metric.lower())
                hint = (f"did you mean '{cased[0]}'? (metric names are matched as written)"
                         if cased else did_you_mean(metric, known)
                         or "known: " + ", ".join(sorted(known)))  # fmt: skip
                raise TaskFileError(
                    f"'{spec.type}' produces no metric named '{metric}'",
                    file=display, line=line, field=name, hint=hint,
                )  # fmt: skip
            counts = type(spec).unbounded_metrics
            if metric not in counts and not metric.startswith("verdict_") and not 0 <= minimum <= 1:
                raise TaskFileError(
                    f"minimum {minimum} for '{metric}' is outside [0, 1], so the gate can never "
                    "be decided as intended",
                    file=display, line=line, field=name, hint=(
                        f"'{metric}' is a share in [0, 1] (70% is 0.7); a metric its criterion "
                        "class lists in unbounded_metrics may exceed 1"),
                )  # fmt: skip
        for metric, minimum in (spec.suite_lower_bounds or {}).items():
            loc = ("success_criteria", index, "suite_thresholds", metric)
            line, name = document.line_of(loc), field_path((*loc, "lower"))
            has = sorted(m for m in BOUND_METRICS if known is None or m in known)
            if metric not in has:
                raise TaskFileError(
                    f"'{spec.type}' has no interval for '{metric}', so its lower bound cannot "
                    "be gated",
                    file=display, line=line, field=name,
                    hint="gate the lower bound of one of: " + ", ".join(has)
                    + f"; or gate the point estimate ({metric}: {minimum:g})",
                )  # fmt: skip
            if not 0 <= minimum <= 1:
                raise TaskFileError(
                    f"minimum {minimum} for the lower bound of '{metric}' is outside [0, 1], so "
                    "the gate can never be decided as intended",
                    file=display, line=line, field=name,
                )  # fmt: skip


def check_gate(
    metric: str,
    minimum: float,
    values: dict[str, float | None],
    intervals: Mapping[str, IntervalRecord] | None = None,
) -> ThresholdCheck:
    """One gate: passes when the metric exists, is defined and is at least ``minimum``; when
    the metric's interval straddles ``minimum`` the check says so in ``note``."""
    actual = values.get(metric)
    found = (intervals or {}).get(metric)
    bounds = _bounds(found)
    note = None
    if bounds is not None and bounds[0] < minimum < bounds[1]:
        note = (f"the 95% interval [{bounds[0]:.3f}, {bounds[1]:.3f}] straddles {minimum:g}: "
                "the point estimate decided this gate, the data cannot (more rows or clusters "
                "would, or gate the lower bound)")  # fmt: skip
    return ThresholdCheck(
        metric=metric,
        min_value=minimum,
        actual_value=actual,
        passed=actual is not None and actual >= minimum,
        interval=list(bounds) if bounds else None,
        note=note,
    )


def check_lower_bound(
    metric: str, minimum: float, intervals: Mapping[str, IntervalRecord]
) -> ThresholdCheck:
    """A bound gate: passes when the metric's 95% interval exists and its lower bound is at
    least ``minimum``; without an interval it fails and ``note`` says why."""
    found = intervals.get(metric)
    bounds = _bounds(found)
    note = None
    if bounds is None:
        why = found.reason if found is not None and found.reason else "no interval was computed"
        note = f"no 95% interval for {metric}: {why}"
    return ThresholdCheck(
        metric=metric,
        min_value=minimum,
        actual_value=bounds[0] if bounds else None,
        passed=bounds is not None and bounds[0] >= minimum,
        bound="lower",
        interval=list(bounds) if bounds else None,
        note=note,
    )


def gate_checks(
    spec: CriterionSpec,
    values: dict[str, float | None],
    intervals: Mapping[str, IntervalRecord] | None = None,
) -> list[ThresholdCheck]:
    """Every gate of ``spec``: its point gates, then its bound gates."""
    found = intervals or {}
    checks = [check_gate(m, v, values, found) for m, v in (spec.suite_thresholds or {}).items()]
    checks += [check_lower_bound(m, v, found)
               for m, v in (spec.suite_lower_bounds or {}).items()]  # fmt: skip
    return checks


def _bounds(found: IntervalRecord | None) -> tuple[float, float] | None:
    if found is None or found.low is None or found.high is None:
        return None
    return found.low, found.high
