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

from assay.qa.convert import SHAPES, ConvertSummary, FieldMap, convert_file, convert_rows, preset
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
