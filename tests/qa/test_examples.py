"""examples/qa: the converted datasets load, route as documented, and their task files
and metrics hooks are consistent with the QA core."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.orchestration.planning.plan import PlanOptions, build_plan
from assay.qa import (
    PredictionRecord,
    QaTemplates,
    build_item,
    grade_choice,
    load_metrics_hook,
    normalize_sample,
    replicate_metrics,
)
from assay.qa.grading import rule_grade_open

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "qa"

DATASETS = {
    "cosmosqa": ("cosmosqa_valid_first100.qa.jsonl", {"mcq_single": 100}),
    "nq_open": ("nq_open_dev_first100.qa.jsonl", {"open": 100}),
    "gsm8k": ("gsm8k_test_first100.qa.jsonl", {"open": 100}),
    "squad_v2": ("squad_v2_sample.qa.jsonl", {"open": 8, "open_unanswerable": 6}),
}


def rows(folder: str) -> list[dict[str, Any]]:
    path = EXAMPLES / folder / DATASETS[folder][0]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def task(folder: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / folder / "task.yaml").read_text())
    return data


@pytest.mark.parametrize("folder", sorted(DATASETS))
def test_dataset_loads_and_routes(folder: str) -> None:
    samples = [
        normalize_sample(row, index=i, file=DATASETS[folder][0], line=i + 1)
        for i, row in enumerate(rows(folder))
    ]
    assert Counter(s.prompt_type for s in samples) == DATASETS[folder][1]
    assert len({s.sample_id for s in samples}) == len(samples)


# the plan checks that local/smollm2's weights are installed; it starts no server
@pytest.mark.local_model(own_server=True)
@pytest.mark.parametrize("folder", sorted(DATASETS))
def test_task_file_is_consistent(folder: str) -> None:
    spec = task(folder)
    assert spec["dataset"]["paths"] == [DATASETS[folder][0]]
    assert spec["dataset"]["id_field"] == "sample_id"
    qa = spec["qa"]
    templates = QaTemplates.from_mapping(qa.get("templates", {}))
    samples = [normalize_sample(row, index=i) for i, row in enumerate(rows(folder))]
    for sample in samples:  # every prompt renders (no template drops a story)
        build_item(sample, dataset=spec["task_id"], replicate=0, templates=templates)
    if "metrics_hook" in qa:
        assert (EXAMPLES / folder / qa["metrics_hook"]).is_file()
    # the examples grade by rule only: SmolLM2-135M is no judge (examples/qa/README.md)
    assert "judge" not in qa
    plan = build_plan([str(EXAMPLES / folder / "task.yaml")], PlanOptions())
    assert plan.row_task_count == len(samples)


def test_cosmosqa_hook_reports_letter_choices() -> None:
    hook = load_metrics_hook(EXAMPLES / "cosmosqa" / "metrics.py")
    samples = [normalize_sample(row, index=i) for i, row in enumerate(rows("cosmosqa")[:8])]
    items = [build_item(s, dataset="cosmosqa-mc", replicate=0) for s in samples]
    records = [PredictionRecord.from_item(item, content="Answer: B") for item in items]
    results = [grade_choice(item, "Answer: B") for item in items]
    metrics = replicate_metrics(records, results, hook=hook)
    assert metrics["chosen_letter"] == {"B": 8}
    assert sum(metrics["correct_letter"].values()) == 8
    assert metrics["correct"] == sum(1 for item in items if item.correct_letters == ("B",))


def test_squad_hook_separates_answerable_and_unanswerable() -> None:
    hook = load_metrics_hook(EXAMPLES / "squad_v2" / "metrics.py")
    samples = [normalize_sample(row, index=i) for i, row in enumerate(rows("squad_v2"))]
    items = [build_item(s, dataset="squad", replicate=0) for s in samples]
    response = "The story does not say."  # always abstain
    results = [rule_grade_open(item, response) for item in items]
    assert all(result is not None for result in results)
    records = [PredictionRecord.from_item(item, content=response) for item in items]
    metrics = replicate_metrics(records, [r for r in results if r is not None], hook=hook)
    assert metrics["no_ans_accuracy"] == 1.0 and metrics["no_ans_total"] == 6
    assert metrics["has_ans_accuracy"] == 0.0 and metrics["has_ans_total"] == 8
    assert metrics["abstained_on_answerable"] == 8
    assert metrics["accuracy"] == pytest.approx(6 / 14)
