"""``prediction.jsonl`` and ``metrics.json`` of a QA suite, and their section of ``suite.md``.

Beside ``suite.json`` in ``<run>/<variant>/<suite>/`` (``reference/originals.md`` §2.3-2.4):

- ``prediction.jsonl``: one :class:`~assay.qa.records.PredictionRecord` per row and
  replicate, sorted by replicate then sample index; written by every stage (``execute`` too).
- ``metrics.json``: ``{schema_version, suite_id, variant_id, dataset, source, judge,
  judge_warnings, avg_metrics, all_metrics}`` (:func:`assay.qa.metrics.metrics_file`, the
  same keys that ``assay evaluate prediction.jsonl`` writes) with one entry of
  :func:`assay.qa.replicate_metrics` per replicate (the task's ``qa.group_by`` groups and its
  ``qa.metrics_hook``); written once rows are graded. ``suite.md`` shows the hook's added
  numbers in a "Metrics hook" table.

Each row's grade is the one in its ``task.json`` (the ``qa`` criterion's ``sample_result``),
so these files always agree with ``suite.json``; a row whose agent failed is an
``answer_error`` (outside accuracy).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import TaskFileError
from assay.qa import (
    PredictionRecord,
    SampleResult,
    load_metrics_hook,
    metrics_document,
    pooled_intervals,
    replicate_metrics,
)
from assay.qa.grading import answer_error
from assay.qa.metrics import base_metrics, metrics_file
from assay.reports.markdown import code, md_table
from assay.reports.numbers import fmt, plural
from assay.results.io import PLAIN, Writer
from assay.results.safe_text import md_text
from assay.results.status import FinalStatus
from assay.results.task_result import EvaluationResult, QaCriterionResult
from assay.spec.qa import QaConfig

PREDICTIONS = "prediction.jsonl"
METRICS = "metrics.json"


@dataclass
class QaFiles:
    """What :func:`write_qa_files` wrote: the metrics document (``None`` before grading) and
    a hook error to report once every other file is written."""

    document: dict[str, Any] | None
    error: TaskFileError | None = None


def write_qa_files(
    folder: Path,
    members: Sequence[EvaluationResult],
    *,
    warnings: Sequence[str] = (),
    writer: Writer = PLAIN,
) -> QaFiles | None:
    """Write ``prediction.jsonl`` and, when every row is graded, ``metrics.json``, through
    ``writer`` (the run's: its secrets redacted).

    ``warnings`` are the run's; a failed sanity check of this suite's judge is copied into
    ``metrics.json`` (``judge_warnings``), so the file says its verdicts are suspect.

    Returns:
        ``None`` when the suite is not a QA suite (no row has a ``qa_record``).
    """
    rows = [(r, PredictionRecord.model_validate(r.qa_record)) for r in members if r.qa_record]
    if not rows:
        return None
    rows.sort(key=lambda pair: (pair[1].repeat, pair[1].sample_index))
    lines = "".join(record.to_json_line() + "\n" for _, record in rows)
    writer.json_lines(folder / PREDICTIONS, lines)
    if any(r.final_status is FinalStatus.NOT_GRADED for r, _ in rows):
        return QaFiles(None)
    config = _config(rows[0][0])
    try:
        document = qa_metrics(rows, config, task_dir=rows[0][0].task_config.task_dir)
    except TaskFileError as exc:
        return QaFiles(None, exc)
    document = metrics_file(
        document, suite_id=rows[0][0].suite_id, variant_id=rows[0][0].variant_id,
        dataset=rows[0][1].dataset, judge=config.judge.display if config.judge else None,
        judge_warnings=_judge_warnings(config, warnings), source=PREDICTIONS,
    )  # fmt: skip
    writer.json(folder / METRICS, document)
    return QaFiles(document)


def _judge_warnings(config: QaConfig, warnings: Sequence[str]) -> list[str]:
    if config.judge is None:
        return []
    return [w for w in warnings if w.startswith(f"judge {config.judge.display} failed its sanity")]


def _config(result: EvaluationResult) -> QaConfig:
    return QaConfig.model_validate(result.task_config.resolved.get("qa") or {})


def sample_result(result: EvaluationResult, record: PredictionRecord) -> SampleResult:
    """The row's grade: its ``qa`` criterion's result, or an ``answer_error`` when the agent
    failed before grading."""
    for item in result.success_criteria_results:
        if isinstance(item, QaCriterionResult) and item.sample_result:
            return SampleResult.from_dict(item.sample_result)
    return answer_error(record.to_item())


def qa_metrics(
    rows: Sequence[tuple[EvaluationResult, PredictionRecord]],
    config: QaConfig,
    *,
    task_dir: str | None,
) -> dict[str, Any]:
    """The ``metrics.json`` document of graded rows (one entry per replicate).

    Raises:
        TaskFileError: the metrics hook is missing, fails, or returns an invalid dict.
    """
    hook, hook_file = None, "metrics hook"
    if config.metrics_hook is not None:
        path = Path(config.metrics_hook)
        path = path if path.is_absolute() else Path(task_dir or ".") / path
        hook, hook_file = load_metrics_hook(path), str(path)
    by_replicate: dict[int, list[tuple[PredictionRecord, SampleResult]]] = defaultdict(list)
    for result, record in rows:
        by_replicate[record.repeat].append((record, sample_result(result, record)))
    all_metrics = [
        replicate_metrics(
            [record for record, _ in pairs],
            [graded for _, graded in pairs],
            group_by=config.group_by,
            hook=hook,
            hook_file=hook_file,
        )
        for _, pairs in sorted(by_replicate.items())
    ]
    replicates = [([record for record, _ in pairs], [graded for _, graded in pairs])
                  for _, pairs in sorted(by_replicate.items())]  # fmt: skip
    return metrics_document(all_metrics, pooled_intervals(replicates, group_by=config.group_by))


def render_qa(document: dict[str, Any]) -> str:
    """The "QA metrics" section of ``suite.md``: accuracy per replicate with its Wilson 95%
    interval and counts; with replicates, a ``pooled`` row (every replicate's correct over
    every replicate's graded: the suite's accuracy and its gate's, with the one interval over
    every replicate and the counts summed) and a ``mean of replicates`` row (ToMEval's
    ``avg_metrics.accuracy``, without an interval or counts of its own); then each group's
    pooled accuracy and its graded samples over all replicates."""
    per = document["all_metrics"]
    lines = ["", "## QA metrics", ""]
    judge = document.get("judge")
    lines.append(f"From `{METRICS}` ({plural(len(per), 'replicate')}; judge: "
                 f"{code(judge) if judge else 'none, rules only'}).")  # fmt: skip
    lines += [f"\n**Warning**: {md_text(warning)}"
                  for warning in document.get("judge_warnings") or []]  # fmt: skip
    lines.append("")
    header = ["replicate", "accuracy", "95% CI", "correct / graded", "extraction failed",
              "empty", "judge errors", "answer errors", "refused"]  # fmt: skip
    rows = [_replicate_row(replicate_label(i, m), m) for i, m in enumerate(per)]
    average = document["avg_metrics"]
    if len(per) > 1:
        totals = {key: sum(m.get(key) or 0 for m in per) for key in _COUNTS}
        rows.append(
            _replicate_row(
                "pooled", {**average, **totals, "accuracy": average.get("accuracy_pooled")}
            )
        )
        rows.append(_replicate_row("mean of replicates", {"accuracy": average.get("accuracy")}))
    lines += md_table(header, rows)
    if len(per) > 1:
        lines += ["", _pooled_note(average)]
    for name in _group_names(document["avg_metrics"]):
        lines += ["", f"### {name.removeprefix('by_')}", ""]
        keys = document["avg_metrics"].get(name) or {}
        lines += md_table(
            ["value", "accuracy (pooled)", "graded (all replicates)"],
            [[code(str(k)), fmt(accuracy), str(graded)]
             for k, (accuracy, graded) in ((k, _pooled_group(per, name, k)) for k in keys)],
        )  # fmt: skip
    extras = hook_rows(document["avg_metrics"], per)
    if extras:
        lines += ["", "### Metrics hook", ""]
        lines += md_table(["metric", "mean over replicates", "per replicate"], extras)
    undefined = document["avg_metrics"].get("undefined_metrics") or {}
    if undefined:
        lines += [""] + [f"- `{k}` is undefined: {md_text(v)}" for k, v in undefined.items()]
    return "\n".join(lines) + "\n"


_COUNTS = ("correct", "graded", "extraction_failed", "content_none", "judge_errors",
           "answer_errors", "refused")  # fmt: skip
"""The counts of a replicate's row (correct / graded, then a column each), summed over
replicates on the ``pooled`` row."""


def _pooled_group(per: Sequence[dict[str, Any]], name: str, key: str) -> tuple[float | None, int]:
    """Key ``key`` of group ``name`` over every replicate: its correct over its graded (each
    replicate's accuracy times its graded count), as the suite's pooled accuracy is."""
    correct = graded = 0.0
    for metrics in per:
        count = (metrics.get(f"{name}_counts") or {}).get(key) or 0
        accuracy = (metrics.get(name) or {}).get(key)
        if count and isinstance(accuracy, int | float):
            correct, graded = correct + accuracy * count, graded + count
    return (correct / graded if graded else None), int(graded)


def replicate_label(index: int, metrics: dict[str, Any]) -> str:
    """A replicate's number as its records give it (``repeat`` 0, 1, 5), else its place."""
    samples = metrics.get("per_sample_results") or []
    found = samples[0].get("replicate") if samples and isinstance(samples[0], dict) else None
    return str(found if isinstance(found, int) else index)


def _pooled_note(average: dict[str, Any]) -> str:
    """What the ``pooled`` and ``mean of replicates`` rows are, and the interval's method."""
    note = ("`pooled` is every replicate's correct over every replicate's graded: the suite's "
            "accuracy, which a `qa.accuracy` gate reads; `mean of replicates` is ToMEval's "
            "mean of the replicates' accuracies (`avg_metrics.accuracy`)")  # fmt: skip
    mean, pooled = average.get("accuracy"), average.get("accuracy_pooled")
    if mean is not None and pooled is not None and abs(mean - pooled) > 1e-12:
        note += (f"; they differ here ({fmt(pooled)} against {fmt(mean)}) because the "
                 "replicates graded different numbers of samples")  # fmt: skip
    interval = average.get("accuracy_ci")
    if interval and "clusters" in interval:
        note += (f". The pooled 95% CI is one interval over every replicate "
                 f"({interval['method']}, {interval['clusters']} clusters: a sample's "
                 "replicates and the samples of one story are one cluster), not an average "
                 "of the replicates' bounds")  # fmt: skip
    return note + "."


def _replicate_row(label: str, m: dict[str, Any]) -> list[str]:
    ci = m.get("accuracy_ci")
    interval = f"[{fmt(ci['low'])}, {fmt(ci['high'])}]" if ci else "—"

    def count(key: str) -> str:
        value = m.get(key)
        return "—" if value is None else f"{value:g}"

    fraction = "—" if m.get("graded") is None else f"{count('correct')} / {count('graded')}"
    return [label, fmt(m.get("accuracy")), interval, fraction,
            *(count(key) for key in _COUNTS[2:])]  # fmt: skip


def hook_rows(average: dict[str, Any], per: Sequence[dict[str, Any]]) -> list[list[str]]:
    """The "Metrics hook" table: every value a hook added, whatever its type. Numbers show
    their mean over replicates; a mapping is flattened (``chosen_letter.A``); any other value
    (text, a list, a boolean) is shown as JSON per replicate."""
    builtin = {*base_metrics([]), "per_sample_results"}
    keys = [k for k in dict.fromkeys(k for m in per for k in m)
            if k not in builtin and not k.startswith("by_")]  # fmt: skip
    rows: list[list[str]] = []
    for key in keys:
        rows += _hook_value_rows(key, average.get(key), [m.get(key) for m in per])
    return rows


def _hook_value_rows(name: str, mean: Any, values: list[Any]) -> list[list[str]]:
    if all(isinstance(v, dict) for v in values if v is not None) and any(values):
        inner = list(dict.fromkeys(k for v in values if isinstance(v, dict) for k in v))
        return [row for key in inner for row in _hook_value_rows(
            f"{name}.{key}", mean.get(key) if isinstance(mean, dict) else None,
            [v.get(key) if isinstance(v, dict) else None for v in values])]  # fmt: skip
    if all(_is_number(v) or v is None for v in values):
        return [[code(name), fmt(mean), ", ".join(fmt(v) for v in values)]]
    shown = ", ".join(code(json.dumps(v, ensure_ascii=False)) for v in values)
    return [[code(name), "—", shown]]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _group_names(metrics: dict[str, Any]) -> list[str]:
    return [
        key
        for key, value in metrics.items()
        if key.startswith("by_")
        and isinstance(value, dict)
        and not key.endswith(("_counts", "_ci"))
    ]
