"""Standardized QA: the sample schema, routing, deterministic option shuffling, prompts,
answer extraction, rule and LLM judging, per-replicate metrics and converters.

The pure core of a QA task (``reference/originals.md`` §2, ToMEval), used by the task
pipeline as::

    sample = normalize_sample(row, index=i, file=path, line=n)
    item = build_item(sample, dataset=name, replicate=r, templates=QaTemplates())
    ... ask a model item.prompt ...
    record = PredictionRecord.from_item(item, content=text)        # prediction.jsonl
    result = await grade_record(record, judge=judge_model)         # or grade_choice(...)
    metrics = replicate_metrics(records, results, group_by=["meta.ability"])
    document = metrics_document([metrics, ...])                    # metrics.json
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from assay.lazy import lazy_exports

if TYPE_CHECKING:
    from assay.qa.convert import (
        SHAPES,
        ConvertSummary,
        FieldMap,
        convert_file,
        convert_rows,
        preset,
    )
    from assay.qa.extract import ChoiceExtraction, extract_choice
    from assay.qa.grading import (
        ErrorReason,
        SampleResult,
        grade_choice,
        grade_item,
        grade_open,
        grade_record,
        rule_grade_open,
    )
    from assay.qa.hooks import MetricsHook, check_hook_result, load_metrics_hook
    from assay.qa.item import QaItem, build_item
    from assay.qa.judge import (
        VERDICT_SCHEMA,
        JudgeCheck,
        JudgeVerdict,
        check_judge,
        judge_messages,
        judge_open,
        parse_verdict,
    )
    from assay.qa.metrics import (
        average_metrics,
        base_metric_payload,
        base_metrics,
        first_value,
        generic_group_metrics,
        group_metrics,
        metrics_document,
        pooled_intervals,
        replicate_metrics,
    )
    from assay.qa.prompts import QaTemplates, render, render_prompt
    from assay.qa.records import (
        Prediction,
        PredictionRecord,
        by_replicate,
        iter_predictions,
        read_predictions,
    )
    from assay.qa.rules import is_abstention, is_refusal, normalize_answer
    from assay.qa.schema import PROMPT_TYPES, PromptType, QaSample, normalize_sample, route
    from assay.qa.shuffle import OptionShuffle, shuffle_options, shuffle_seed

# each name's module, imported on first use (PEP 562): importing the package, as the
# command line does for one of its modules, imports none of them
_EXPORTS = MappingProxyType(
    {
        "SHAPES": "assay.qa.convert",
        "ConvertSummary": "assay.qa.convert",
        "FieldMap": "assay.qa.convert",
        "convert_file": "assay.qa.convert",
        "convert_rows": "assay.qa.convert",
        "preset": "assay.qa.convert",
        "ChoiceExtraction": "assay.qa.extract",
        "extract_choice": "assay.qa.extract",
        "ErrorReason": "assay.qa.grading",
        "SampleResult": "assay.qa.grading",
        "grade_choice": "assay.qa.grading",
        "grade_item": "assay.qa.grading",
        "grade_open": "assay.qa.grading",
        "grade_record": "assay.qa.grading",
        "rule_grade_open": "assay.qa.grading",
        "MetricsHook": "assay.qa.hooks",
        "check_hook_result": "assay.qa.hooks",
        "load_metrics_hook": "assay.qa.hooks",
        "QaItem": "assay.qa.item",
        "build_item": "assay.qa.item",
        "VERDICT_SCHEMA": "assay.qa.judge",
        "JudgeCheck": "assay.qa.judge",
        "JudgeVerdict": "assay.qa.judge",
        "check_judge": "assay.qa.judge",
        "judge_messages": "assay.qa.judge",
        "judge_open": "assay.qa.judge",
        "parse_verdict": "assay.qa.judge",
        "average_metrics": "assay.qa.metrics",
        "base_metric_payload": "assay.qa.metrics",
        "base_metrics": "assay.qa.metrics",
        "first_value": "assay.qa.metrics",
        "generic_group_metrics": "assay.qa.metrics",
        "group_metrics": "assay.qa.metrics",
        "metrics_document": "assay.qa.metrics",
        "pooled_intervals": "assay.qa.metrics",
        "replicate_metrics": "assay.qa.metrics",
        "QaTemplates": "assay.qa.prompts",
        "render": "assay.qa.prompts",
        "render_prompt": "assay.qa.prompts",
        "Prediction": "assay.qa.records",
        "PredictionRecord": "assay.qa.records",
        "by_replicate": "assay.qa.records",
        "iter_predictions": "assay.qa.records",
        "read_predictions": "assay.qa.records",
        "is_abstention": "assay.qa.rules",
        "is_refusal": "assay.qa.rules",
        "normalize_answer": "assay.qa.rules",
        "PROMPT_TYPES": "assay.qa.schema",
        "PromptType": "assay.qa.schema",
        "QaSample": "assay.qa.schema",
        "normalize_sample": "assay.qa.schema",
        "route": "assay.qa.schema",
        "OptionShuffle": "assay.qa.shuffle",
        "shuffle_options": "assay.qa.shuffle",
        "shuffle_seed": "assay.qa.shuffle",
    }
)

__all__ = [
    "PROMPT_TYPES",
    "SHAPES",
    "VERDICT_SCHEMA",
    "ChoiceExtraction",
    "ConvertSummary",
    "ErrorReason",
    "FieldMap",
    "JudgeCheck",
    "JudgeVerdict",
    "MetricsHook",
    "OptionShuffle",
    "Prediction",
    "PredictionRecord",
    "PromptType",
    "QaItem",
    "QaSample",
    "QaTemplates",
    "SampleResult",
    "average_metrics",
    "base_metric_payload",
    "base_metrics",
    "build_item",
    "by_replicate",
    "check_hook_result",
    "check_judge",
    "convert_file",
    "convert_rows",
    "extract_choice",
    "first_value",
    "generic_group_metrics",
    "grade_choice",
    "grade_item",
    "grade_open",
    "grade_record",
    "group_metrics",
    "is_abstention",
    "is_refusal",
    "iter_predictions",
    "judge_messages",
    "judge_open",
    "load_metrics_hook",
    "metrics_document",
    "normalize_answer",
    "normalize_sample",
    "parse_verdict",
    "pooled_intervals",
    "preset",
    "read_predictions",
    "render",
    "render_prompt",
    "replicate_metrics",
    "route",
    "rule_grade_open",
    "shuffle_options",
    "shuffle_seed",
]


__getattr__ = lazy_exports("assay.qa", _EXPORTS)
