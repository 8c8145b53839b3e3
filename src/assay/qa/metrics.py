"""QA metrics per replicate, grouped accuracies, and the ``metrics.json`` document.

One replicate's metrics (:func:`replicate_metrics`)::

    accuracy              correct / graded; null when graded is 0 (reason in undefined_metrics)
    accuracy_ci           Wilson 95% interval of accuracy: {low, high, confidence} or null;
                          when samples share a story (not independent), the interval
                          clustered by story instead (:func:`pooled_intervals`' form)
    correct               samples graded correct
    total                 samples in the replicate
    graded                total - excluded (accuracy's denominator)
    excluded              samples kept out of the denominator: judge_errors + answer_errors
                          + refused
    judge_errors          the judge gave no verdict
    answer_errors         the answering model never answered (its call failed)
    refused               the response declined the task (not a wrong answer)
    refusal_rate          refused / (graded + refused); null when both are 0
    extraction_failed, extraction_failed_rate   choice responses naming no option (/ graded)
    content_none          missing or blank responses
    by_prompt_type …      always grouped by prompt type (open, open_unanswerable, …)
    by_<key> …            one group per ``group_by`` path
    per_sample_results    one SampleResult dict per sample
    undefined_metrics     metric → why it is null

Decisions:

- a **judge error** is not a wrong answer: it leaves the denominator (``excluded``) and is
  counted in ``judge_errors``; an answer error and a refusal likewise (``answer_errors``,
  ``refused``): what did not grade is counted apart, never as a zero;
- an **extraction failure** is a wrong answer (the model was asked for a letter and gave
  none; excluding it would reward unparseable output) and is also reported on its own as
  ``extraction_failed`` and ``extraction_failed_rate``; ``content_none`` likewise.

Grouping (ToMEval's ``generic_group_metrics``): a ``group_by`` path is dotted and read from the
record (``meta.ability``, ``meta.source.kind``, ``prompt_type``); a list value gives its first
non-blank item (ToMEval's ``first_value``); a missing, null or blank value is ``"unknown"``;
a boolean is ``"true"``/``"false"``. For the group named ``by_<path without "meta.">`` it adds
ToMEval's three entries, the flat ``by_x.<key>`` accuracies, the dict ``by_x`` and the counts
``by_x_counts`` (samples graded per key: its accuracy's denominator, as in ToMEval, where
nothing is excluded), plus ``by_x_ci``, each key's interval (as ``accuracy_ci``); a key with
nothing graded
has a null accuracy and interval, its reason in ``undefined_metrics`` (``by_x.<key>``).

``metrics.json`` (:func:`metrics_document`) is ``{schema_version, avg_metrics, all_metrics}``:
``all_metrics`` holds one dict per replicate; ``avg_metrics`` (:func:`average_metrics`)
averages numbers recursively, key by key, over the replicates that define them (``null``
when none does), and drops lists (``per_sample_results``), strings and booleans;
``undefined_metrics`` keeps the reasons of the metrics that stay ``null``. Intervals
(``accuracy_ci``, ``by_<key>_ci``) are never averaged: averaging the replicates' bounds is not
an interval of anything. ``avg_metrics`` holds one interval over every replicate instead
(:func:`pooled_intervals`): cluster-robust, each sample's replicates one cluster and the
samples that share a story one cluster (:mod:`assay.metrics.clustered`), with its ``method``,
``se`` and number of ``clusters``. That interval is of ``accuracy_pooled``: every replicate's
correct over every replicate's graded (the suite's accuracy, which its ``qa.accuracy`` gate
reads), not of ``accuracy``, ToMEval's mean of the replicates' accuracies; the two differ
only when the replicates grade different numbers of samples (errors, refusals or samples
that fall unevenly), and ``suite.md`` then shows both, named.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.errors import TaskFileError
from assay.metrics.clustered import QA_CLUSTER_FIELD, ClusterSums, cluster_of
from assay.metrics.intervals import wilson_interval
from assay.qa.grading import SampleResult
from assay.qa.hooks import MetricsHook, call_hook
from assay.qa.records import PredictionRecord
from assay.qa.schema import lookup

UNKNOWN = "unknown"
CONFIDENCE = 0.95
NO_GRADED = (
    "0/0: no graded samples (every sample was a judge error, an answer error or a refusal, "
    "or there are none)"
)


def group_name(path: str) -> str:
    """``meta.ability`` → ``by_ability``; ``prompt_type`` → ``by_prompt_type``."""
    return "by_" + path.removeprefix("meta.")


def first_value(value: Any, default: str = UNKNOWN) -> str:
    """ToMEval's ``first_value``: a list gives its first non-blank item; ``None``/blank give
    ``default``; booleans are spelled ``true``/``false``."""
    if isinstance(value, list):
        return next((first_value(item) for item in value if str(item).strip()), default)
    if isinstance(value, bool):
        return "true" if value else "false"
    text = "" if value is None else str(value).strip()
    return text or default


def interval(correct: int, graded: int, confidence: float = CONFIDENCE) -> dict[str, float] | None:
    """``{low, high, confidence}`` of the Wilson interval, or ``None`` when ``graded`` is 0."""
    bounds = wilson_interval(correct, graded, confidence)
    if bounds is None:
        return None
    return {"low": bounds[0], "high": bounds[1], "confidence": confidence}


def _reason(result: SampleResult | Mapping[str, Any]) -> Any:
    return result.get("error_reason") if isinstance(result, Mapping) else result.error_reason


def _correct(result: SampleResult | Mapping[str, Any]) -> Any:
    return result.get("is_correct") if isinstance(result, Mapping) else result.is_correct


NOT_GRADED_REASONS = frozenset({"judge_error", "answer_error", "refused"})
"""The per-sample outcomes that did not grade: kept out of accuracy, counted apart."""


def _counts(results: Sequence[SampleResult | Mapping[str, Any]]) -> dict[str, int]:
    reasons = [_reason(r) for r in results]
    judge_errors = reasons.count("judge_error")
    answer_errors = reasons.count("answer_error")
    refusals = reasons.count("refused")
    excluded = judge_errors + answer_errors + refusals
    return {
        "correct": sum(1 for r in results if _correct(r) is True),
        "total": len(results),
        "graded": len(results) - excluded,
        "excluded": excluded,
        "judge_errors": judge_errors,
        "answer_errors": answer_errors,
        "refused": refusals,
        "extraction_failed": reasons.count("extraction_failed"),
        "content_none": reasons.count("content_none"),
    }


def base_metrics(
    results: Sequence[SampleResult | Mapping[str, Any]], confidence: float = CONFIDENCE
) -> dict[str, Any]:
    """Accuracy, its interval and the counts of the module docstring (no groups).

    ``results`` are :class:`SampleResult` objects or their dicts (``per_sample_results`` as a
    metrics hook receives them).
    """
    counts = _counts(results)
    graded = counts["graded"]
    answered = graded + counts["refused"]
    metrics: dict[str, Any] = {
        "accuracy": counts["correct"] / graded if graded else None,
        "accuracy_ci": interval(counts["correct"], graded, confidence),
        **counts,
        "extraction_failed_rate": counts["extraction_failed"] / graded if graded else None,
        "refusal_rate": counts["refused"] / answered if answered else None,
    }
    undefined = {}
    if not graded:
        undefined["accuracy"] = undefined["extraction_failed_rate"] = NO_GRADED
    if not answered:
        undefined["refusal_rate"] = "0/0: no sample was graded or refused"
    metrics["undefined_metrics"] = undefined
    return metrics


def group_metrics(
    rows: Sequence[Mapping[str, Any]],
    results: Sequence[SampleResult | Mapping[str, Any]],
    path: str,
    confidence: float = CONFIDENCE,
) -> dict[str, Any]:
    """The grouped entries of one ``group_by`` path (see the module docstring)."""
    members: dict[str, list[SampleResult | Mapping[str, Any]]] = {}
    for row, result in zip(rows, results, strict=True):
        members.setdefault(first_value(lookup(row, path)), []).append(result)
    name = group_name(path)
    out: dict[str, Any] = {}
    accuracies: dict[str, float | None] = {}
    intervals: dict[str, dict[str, float] | None] = {}
    graded_counts: dict[str, int] = {}
    for key in sorted(members):
        counts = _counts(members[key])
        graded = graded_counts[key] = counts["graded"]
        accuracies[key] = counts["correct"] / graded if graded else None
        intervals[key] = interval(counts["correct"], graded, confidence)
        out[f"{name}.{key}"] = accuracies[key]
    out[name] = accuracies
    out[f"{name}_counts"] = graded_counts
    out[f"{name}_ci"] = intervals
    return out


def base_metric_payload(per_sample_results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """ToMEval's helper for a metrics hook: ``{accuracy, correct, total, graded,
    per_sample_results}`` of the plain dicts a hook receives.

    ``accuracy`` is ``correct / graded`` (``None`` when nothing graded): judge errors, answer
    errors and refusals are kept out of it, as in every assay report; ``graded`` is returned
    so the Wilson interval assay adds uses the same denominator.
    """
    counts = _counts(per_sample_results)
    graded = counts["graded"]
    return {
        "accuracy": counts["correct"] / graded if graded else None,
        "correct": counts["correct"],
        "total": counts["total"],
        "graded": graded,
        "per_sample_results": list(per_sample_results),
    }


def generic_group_metrics(
    records: Sequence[Mapping[str, Any]],
    per_sample_results: Sequence[Mapping[str, Any]],
    specs: Sequence[tuple[str, Callable[[Mapping[str, Any]], Any]]],
) -> dict[str, Any]:
    """ToMEval's grouped helper for a metrics hook: for each ``(name, key_fn)``, the
    accuracy per key (``key_fn(record)``, made text by :func:`first_value`) as flat
    ``name.<key>`` entries and as the dict ``name``, and the graded samples per key (the
    accuracy's denominator, as assay's own ``by_<key>_counts``) as ``<name>_counts``. Works
    on the plain dicts a hook receives; accuracy per key is ``correct / graded`` (``None``
    when a key has no graded sample).

    Raises:
        ValueError: ``records`` and ``per_sample_results`` differ in length.
    """
    if len(records) != len(per_sample_results):
        raise ValueError(f"{len(records)} records but {len(per_sample_results)} results")
    out: dict[str, Any] = {}
    for name, key_fn in specs:
        members: dict[str, list[Mapping[str, Any]]] = {}
        for record, result in zip(records, per_sample_results, strict=True):
            members.setdefault(first_value(key_fn(record)), []).append(result)
        accuracies: dict[str, float | None] = {}
        graded: dict[str, int] = {}
        for key in sorted(members):
            counts = _counts(members[key])
            graded[key] = counts["graded"]
            accuracies[key] = counts["correct"] / counts["graded"] if counts["graded"] else None
            out[f"{name}.{key}"] = accuracies[key]
        out[name] = accuracies
        out[f"{name}_counts"] = graded
    return out


def replicate_metrics(
    records: Sequence[PredictionRecord | Mapping[str, Any]],
    results: Sequence[SampleResult],
    *,
    group_by: Sequence[str] = (),
    hook: MetricsHook | None = None,
    hook_file: str | Path = "metrics hook",
    confidence: float = CONFIDENCE,
) -> dict[str, Any]:
    """The metrics of one replicate.

    Args:
        records: the replicate's prediction records, in the same order as ``results``.
        results: their grades.
        group_by: dotted paths to group accuracy by (``meta.ability``).
        hook: a per-dataset ``compute_metrics(records, per_sample_results)``; its dict is
            merged over the built-in metrics (its keys win) and checked by
            :func:`assay.qa.hooks.check_hook_result`; ``accuracy_ci`` becomes the Wilson
            interval of ``correct / graded`` (the hook's ``graded`` if it returns one) when
            that is the hook's ``accuracy``, else ``None`` (an accuracy the hook defines
            otherwise has no interval assay can compute).
        hook_file: the hook's file, named in errors.
        confidence: the intervals' confidence level.

    Raises:
        ValueError: ``records`` and ``results`` differ in length or sample order.
        TaskFileError: the hook's result is invalid (naming ``hook_file``), or its
            ``correct`` exceeds ``graded``.
    """
    views = [_view(record) for record in records]
    _check_aligned(views, results)
    metrics = base_metrics(results, confidence)
    for path in ("prompt_type", *group_by):
        grouped = group_metrics(views, results, path, confidence)
        metrics.update(grouped)
        metrics["undefined_metrics"].update(
            {f"{group_name(path)}.{key}": NO_GRADED
             for key, value in grouped[group_name(path)].items() if value is None})  # fmt: skip
    stories = {cluster_of(view, QA_CLUSTER_FIELD, result.sample_id)
               for view, result in zip(views, results, strict=True)
               if result.error_reason not in NOT_GRADED_REASONS}  # fmt: skip
    if len(stories) < metrics["graded"]:  # samples share a story: not independent
        _clustered(metrics, pooled_intervals([(records, results)], group_by=group_by,
                                             confidence=confidence))  # fmt: skip
    # every field of a SampleResult is JSON-native, so the Python dump is the JSON one
    metrics["per_sample_results"] = [result.to_dict() for result in results]
    if hook is None:
        return metrics
    rows = [_as_dict(record) for record in records]
    # ToMEval's hooks read a sample's replicate as ``repeat``: they get both names
    given = [{**result, "repeat": result["replicate"]} for result in metrics["per_sample_results"]]
    returned = call_hook(hook, rows, given, file=hook_file)
    merged = {**metrics, **returned}
    graded = int(merged["graded"])
    if merged["correct"] > graded:
        raise TaskFileError(
            f"compute_metrics returned correct={merged['correct']}, more than the "
            f"{graded} graded samples",
            file=hook_file,
            hint="return graded too when the hook counts its own denominator",
        )
    accuracy = merged["accuracy"]
    agrees = accuracy is not None and graded and abs(accuracy - merged["correct"] / graded) < 1e-9
    if (merged["correct"], graded) != (metrics["correct"], metrics["graded"]):  # its own counts
        merged["accuracy_ci"] = (
            interval(int(merged["correct"]), graded, confidence) if agrees else None
        )
    elif not agrees:
        merged["accuracy_ci"] = None
    return merged


def _clustered(metrics: dict[str, Any], clustered: Mapping[str, Any]) -> None:
    """Put the intervals of :func:`pooled_intervals` (clustered by story) in place of the
    Wilson ones, which would take the samples of one story for independent; a group key
    without a clustered interval (nothing graded, or one cluster) gets ``None``."""
    metrics["accuracy_ci"] = clustered["accuracy_ci"]
    for name, found in clustered.items():
        if name != "accuracy_ci" and name in metrics:
            metrics[name] = {key: found.get(key) for key in metrics[name]}


def _view(record: PredictionRecord | Mapping[str, Any]) -> Mapping[str, Any]:
    """The record's top-level fields without copying (``meta`` is a plain dict)."""
    return record.__dict__ if isinstance(record, PredictionRecord) else record


def _as_dict(record: PredictionRecord | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(record, PredictionRecord):
        return record.model_dump(mode="json")
    return dict(record)


def _check_aligned(rows: Sequence[Mapping[str, Any]], results: Sequence[SampleResult]) -> None:
    if len(rows) != len(results):
        raise ValueError(f"{len(rows)} records but {len(results)} results")
    for row, result in zip(rows, results, strict=True):
        if str(row.get("sample_id")) != result.sample_id:
            raise ValueError(
                f"record {row.get('sample_id')!r} is paired with the result of {result.sample_id!r}"
            )


def average_metrics(all_metrics: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Average per-replicate metrics recursively (see the module docstring)."""
    keys: dict[str, None] = {}
    for metrics in all_metrics:
        keys.update(dict.fromkeys(metrics))
    out: dict[str, Any] = {}
    for key in keys:
        if key.endswith("_ci"):
            continue  # bounds are not averaged: see pooled_intervals
        values = [m[key] for m in all_metrics if key in m]
        if any(isinstance(v, Mapping) for v in values):
            out[key] = average_metrics([v for v in values if isinstance(v, Mapping)])
        elif all(v is None or _is_number(v) for v in values):
            numbers = [float(v) for v in values if v is not None]
            out[key] = sum(numbers) / len(numbers) if numbers else None
    if "undefined_metrics" in out:
        out["undefined_metrics"] = _still_undefined(all_metrics, out)
    return out


def _still_undefined(
    all_metrics: Sequence[Mapping[str, Any]], averaged: Mapping[str, Any]
) -> dict[str, str]:
    """The reasons of the metrics that stay ``None`` after averaging (first reason wins)."""
    reasons: dict[str, str] = {}
    for metrics in all_metrics:
        for name, reason in (metrics.get("undefined_metrics") or {}).items():
            if name in averaged and averaged[name] is None:
                reasons.setdefault(name, str(reason))
    return reasons


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def metrics_document(
    all_metrics: Sequence[Mapping[str, Any]], pooled: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``metrics.json`` object: ``{schema_version, avg_metrics, all_metrics}``;
    ``pooled`` (:func:`pooled_intervals`) gives ``avg_metrics`` its intervals."""
    average = average_metrics(all_metrics)
    average["accuracy_pooled"] = pooled_accuracy(all_metrics)
    if pooled:
        hook_accuracy = all(m.get("accuracy_ci") is None for m in all_metrics) and any(
            m.get("accuracy") is not None for m in all_metrics)  # fmt: skip
        average.update({k: v for k, v in pooled.items()
                        if not (k == "accuracy_ci" and hook_accuracy)})  # fmt: skip
    return {
        "schema_version": 1,
        "avg_metrics": average,
        "all_metrics": [dict(m) for m in all_metrics],
    }


def pooled_accuracy(all_metrics: Sequence[Mapping[str, Any]]) -> float | None:
    """Every replicate's ``correct`` over every replicate's ``graded`` (``None``: nothing
    graded); a hook's own ``correct``/``graded`` count as it returns them."""
    correct = sum(float(m.get("correct") or 0) for m in all_metrics)
    graded = sum(float(m.get("graded") or 0) for m in all_metrics)
    return correct / graded if graded else None


def pooled_intervals(
    replicates: Sequence[
        tuple[Sequence[PredictionRecord | Mapping[str, Any]], Sequence[SampleResult]]
    ],
    *,
    group_by: Sequence[str] = (),
    cluster_field: str = QA_CLUSTER_FIELD,
    confidence: float = CONFIDENCE,
) -> dict[str, Any]:
    """One interval of accuracy over every replicate, and one per group key, clustered by
    sample and by ``cluster_field`` (the story): ``{"accuracy_ci": {...} | None,
    "by_<key>_ci": {key: {...} | None}}``. Each interval is ``{low, high, confidence,
    method, se, clusters}``; ``None`` with fewer than 2 clusters or no graded sample.
    What did not grade (judge and answer errors, refusals) is outside it."""
    overall = ClusterSums()
    groups: dict[str, dict[str, ClusterSums]] = {}
    for records, results in replicates:
        for record, result in zip(records, results, strict=True):
            if result.error_reason in NOT_GRADED_REASONS:
                continue
            view = _view(record)
            cluster = cluster_of(view, cluster_field, result.sample_id)
            correct = 1.0 if result.is_correct is True else 0.0
            overall.add(cluster, correct)
            for path in ("prompt_type", *group_by):
                key = first_value(lookup(view, path))
                sums = groups.setdefault(group_name(path), {}).setdefault(key, ClusterSums())
                sums.add(cluster, correct)
    out: dict[str, Any] = {"accuracy_ci": _pooled(overall, confidence)}
    for name, members in groups.items():
        out[f"{name}_ci"] = {key: _pooled(members[key], confidence) for key in sorted(members)}
    return out


def _pooled(sums: ClusterSums, confidence: float) -> dict[str, Any] | None:
    found = sums.estimate(proportion=True, confidence=confidence)
    if found.low is None or found.high is None:
        return None
    return {"low": found.low, "high": found.high, "confidence": confidence,
            "method": found.method, "se": found.se, "clusters": found.clusters}  # fmt: skip


def metrics_file(
    document: dict[str, Any],
    *,
    suite_id: str | None,
    variant_id: str | None,
    dataset: str | None,
    judge: str | None,
    judge_warnings: Sequence[str],
    source: str,
) -> dict[str, Any]:
    """The ``metrics.json`` a run writes and ``assay evaluate prediction.jsonl`` writes,
    with the same keys: ``{schema_version, suite_id, variant_id, dataset, source, judge,
    judge_warnings, avg_metrics, all_metrics}`` (``document``: :func:`assay.qa.metrics_document`;
    ``source``: the ``prediction.jsonl`` graded)."""
    return {
        "schema_version": document["schema_version"],
        "suite_id": suite_id,
        "variant_id": variant_id,
        "dataset": dataset,
        "source": source,
        "judge": judge,
        "judge_warnings": list(judge_warnings),
        "avg_metrics": document["avg_metrics"],
        "all_metrics": document["all_metrics"],
    }
