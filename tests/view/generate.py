"""A generated run folder of N row-tasks, as ``assay run`` writes it, for the viewer's tests
and its bench (``bench/viewer.py``).

Every row is a real ``task.json`` (assay's own result models and writer), with its
``response.txt`` and ``task.log``; the suite, ``run.json``, ``run.md`` and ``plan.json`` come
from assay's report writer over those results. The rows mimic a three-label classification
task on SST-2 sentences: 80% of answers right, 1% agent errors, two criteria (the label and a
partial-credit keyword check), tokens and cost per row.

Usage: python tests/view/generate.py ROWS FOLDER      (writes FOLDER/<run>/)
"""

from __future__ import annotations

import json
import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

from assay.criteria.registry import default_criteria
from assay.reports.writer import RunMeta, task_json_relpath, write_reports
from assay.results.io import PLAIN, write_model_atomic, write_text
from assay.results.plan_record import PlanRecord, write_plan
from assay.results.status import FinalStatus
from assay.results.task_result import (
    BasicCriterionResult,
    ClassificationCriterionResult,
    EvaluationResult,
    TaskConfigRecord,
    TokenUsage,
)

SUITE = "sst2-three-way"
LABELS = ["positive", "negative", "neutral"]
SST2 = Path(__file__).resolve().parents[2] / "examples" / "sst2" / "data" / "sst2_dev.jsonl"
CRITERIA = [
    {"type": "classification_match", "expected_label": "${row.expected}",
     "allowed_labels": LABELS, "suite_thresholds": {"accuracy": 0.75}},
    {"type": "response_match", "expected": ["positive", "negative", "neutral"],
     "match": "contains", "weight": 0.0},
]  # fmt: skip


def _result(
    index: int, text: str, rng: random.Random, start: datetime, replicate: int, variant: str
) -> EvaluationResult:
    row_id = f"r{index:06d}"
    expected = LABELS[index % 3]
    errored = rng.random() < 0.01
    observed = expected if rng.random() < 0.8 else rng.choice(LABELS)
    prompt = f"Review: {text}\nAnswer with one of positive, negative, neutral.\nSentiment:"
    criteria = [] if errored else [
        ClassificationCriterionResult(
            criterion_type="classification_match", score=float(observed == expected),
            details=f"observed={observed!r}, expected={expected!r}",
            observed_label=observed, expected_label=expected),
        BasicCriterionResult(criterion_type="response_match", score=rng.choice([0.0, 0.5, 1.0]),
                             details="contains check", weight=0.0),
    ]  # fmt: skip
    status = FinalStatus.ERROR if errored else (
        FinalStatus.SUCCESS if observed == expected else FinalStatus.FAILURE)  # fmt: skip
    began = start + timedelta(seconds=index * 0.01)
    return EvaluationResult(
        task_id=f"{SUITE}/{row_id}", suite_id=SUITE, row_id=row_id, row_index=index,
        replicate_index=replicate, variant_id=variant,
        agent_type="llm", model_used="local/smollm2", started_at=began.isoformat(),
        completed_at=(began + timedelta(seconds=0.4)).isoformat(),
        duration_seconds=round(rng.uniform(0.1, 2.0), 3), final_status=status,
        weighted_score=None if errored else float(observed == expected),
        success_criteria_results=criteria,
        error_message="model call failed: gave up after 5 attempts (HTTP 503)" if errored else None,
        total_token_usage=TokenUsage(input_tokens=120, output_tokens=3, total_tokens=123),
        cost_usd=0.0000123,
        row={"id": row_id, "text": text, "expected": expected},
        task_config=TaskConfigRecord(resolved={"task_id": SUITE, "initial_prompt": prompt,
                                               "success_criteria": CRITERIA}),
    )  # fmt: skip


def _write_row(run_dir: Path, result: EvaluationResult) -> None:
    folder = run_dir / task_json_relpath(result).removesuffix("/task.json")
    first = result.success_criteria_results[0] if result.success_criteria_results else None
    observed = first.observed_label if isinstance(first, ClassificationCriterionResult) else ""
    write_text(folder / "response.txt", observed, redactor=None)
    write_text(
        folder / "task.log", f"model local/smollm2: 120 in / 3 out → {observed}\n", redactor=None
    )
    write_model_atomic(folder / "task.json", result, redactor=None)


def make_run(
    rows: int,
    root: Path,
    *,
    seed: int = 7,
    name: str | None = None,
    replicates: int = 1,
    variants: tuple[str, ...] = ("default",),
) -> Path:
    """Write a run of ``rows`` rows × ``replicates`` × ``variants`` under ``root`` (in folder
    ``name``, default a timestamp; with several variants, as an experiment) and return it."""
    texts = [json.loads(line)["text"] for line in SST2.read_text(encoding="utf-8").splitlines()]
    rng = random.Random(seed)
    start = datetime(2026, 12, 1, 9, 0, 0)
    run_dir = root / (name or start.strftime("%Y-%m-%d_%H-%M-%S"))
    run_dir.mkdir(parents=True, exist_ok=True)
    planned = {f"{v}/{SUITE}": rows * replicates for v in variants}
    plan = PlanRecord(files=[f"/bench/{SUITE}.yaml"], criteria={SUITE: CRITERIA},
                      work_items=rows * replicates * len(variants), planned=planned,
                      variants=list(variants))  # fmt: skip
    write_plan(run_dir, plan, writer=PLAIN)
    results = []
    for variant in variants:
        for index in range(rows):
            for replicate in range(replicates):
                result = _result(index, texts[index % len(texts)], rng, start, replicate, variant)
                _write_row(run_dir, result)
                results.append(result)
    experiment = "generated" if len(variants) > 1 else None
    meta = RunMeta(run_id=run_dir.name, stage="run", start_time=start,
                   end_time=start + timedelta(seconds=rows * 0.01), max_parallel=8,
                   command=["assay", "run", f"{SUITE}.yaml"], criteria={SUITE: CRITERIA},
                   planned=planned, experiment_id=experiment,
                   variant_ids=list(variants))  # fmt: skip
    write_reports(run_dir, results, meta, default_criteria())
    return run_dir


if __name__ == "__main__":
    print(make_run(int(sys.argv[1]), Path(sys.argv[2])))
