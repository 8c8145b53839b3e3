"""The QA core end to end, as the task pipeline will drive it: build items per replicate, ask
a model (assay's mock provider, scripted), write prediction.jsonl, grade, write metrics.json;
then grade again from prediction.jsonl alone (the `assay evaluate` stage) and get the same
metrics."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from assay.providers.base import Message, ModelRequest
from assay.providers.mock import MockModel, MockRule
from assay.qa import (
    PredictionRecord,
    QaItem,
    SampleResult,
    build_item,
    by_replicate,
    grade_item,
    grade_record,
    load_metrics_hook,
    metrics_document,
    normalize_sample,
    read_predictions,
    replicate_metrics,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "qa"


def samples(folder: str, name: str, n: int, *, start: int = 0) -> list[Any]:
    """The first ``n`` rows, indexed from ``start`` (one dataset made of two files)."""
    lines = (EXAMPLES / folder / name).read_text(encoding="utf-8").splitlines()[:n]
    return [normalize_sample(json.loads(x), index=start + i) for i, x in enumerate(lines)]


# The answering model: always names the option whose text mentions "different person" (else "B"),
# in the forms models really write; for open questions it gives a fixed answer.
ANSWERER = MockModel(
    name="mock/answerer",
    rules=[
        MockRule(re.compile(r"(?m)^A\. [^\n]*different person"), reply="\\boxed{A}"),
        MockRule(re.compile(r"(?m)^B\. [^\n]*different person"), reply="ANSWER: $B$"),
        MockRule(re.compile(r"(?m)^C\. [^\n]*different person"), reply="**C**"),
        MockRule(re.compile(r"(?m)^D\. [^\n]*different person"), reply="I think it is (D)."),
        MockRule(re.compile(r"Options:"), reply="Hmm, hard to say."),
        MockRule(re.compile(r"last time anyone was on the moon"), reply="December 1972"),
        MockRule(
            re.compile(r"Bastard Executioner|bastard executioner"),
            reply="It ran for {a single} ${season}",
        ),
    ],
    default="Rihanna",
)
# The judge: accepts exactly the literal response "It ran for {a single} ${season}".
JUDGE = MockModel(
    name="mock/judge",
    rules=[
        MockRule(
            re.compile(re.escape("Model response:\nIt ran for {a single} ${season}\n")),
            reply='{"is_correct": true, "reason": "mentions the season"}',
        )
    ],
    default='{"is_correct": false, "reason": "no match"}',
)


async def answer(item: QaItem) -> str:
    request = ModelRequest(messages=(Message("user", item.prompt),))
    return (await ANSWERER.generate(request)).text


async def execute(dataset: str, items_per_replicate: list[list[QaItem]], out: Path) -> None:
    """The `assay execute` stage: ask, and write prediction.jsonl."""
    lines = []
    for items in items_per_replicate:
        for item in items:
            content = await answer(item)
            lines.append(PredictionRecord.from_item(item, content=content, model=ANSWERER.name))
    out.write_text("".join(r.to_json_line() + "\n" for r in lines), encoding="utf-8")


async def grade_all(records: list[PredictionRecord]) -> list[SampleResult]:
    return list(await asyncio.gather(*(grade_record(r, judge=JUDGE) for r in records)))


async def evaluate(path: Path, **kw: Any) -> dict[str, Any]:
    """The `assay evaluate` stage: prediction.jsonl → metrics.json."""
    all_metrics = []
    for _, records in by_replicate(read_predictions(path)).items():
        results = await grade_all(records)
        all_metrics.append(replicate_metrics(records, results, **kw))
    return metrics_document(all_metrics)


def test_run_then_evaluate_gives_the_same_metrics(tmp_path: Path) -> None:
    cosmos = samples("cosmosqa", "cosmosqa_valid_first100.qa.jsonl", 12)
    nq = samples("nq_open", "nq_open_dev_first100.qa.jsonl", 8, start=12)
    items = [
        [build_item(s, dataset="mixed", replicate=r) for s in [*cosmos, *nq]] for r in range(3)
    ]
    hook = load_metrics_hook(EXAMPLES / "cosmosqa" / "metrics.py")
    kw: dict[str, Any] = {"group_by": ["meta.label_index"], "hook": hook}

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        path = tmp_path / "prediction.jsonl"
        await execute("mixed", items, path)
        # `assay run`: grade what was just answered, straight from the items
        contents = [json.loads(line)["pred"]["content"] for line in path.read_text().splitlines()]
        flat = [item for replicate in items for item in replicate]
        results = await asyncio.gather(
            *(
                grade_item(item, text, judge=JUDGE)
                for item, text in zip(flat, contents, strict=True)
            )
        )
        records = read_predictions(path)
        per_replicate = []
        for r in range(3):
            pairs = [
                (rec, res) for rec, res in zip(records, results, strict=True) if rec.repeat == r
            ]
            per_replicate.append(
                replicate_metrics([p[0] for p in pairs], [p[1] for p in pairs], **kw)
            )
        answered_calls = ANSWERER.calls
        again = await evaluate(path, **kw)
        assert ANSWERER.calls == answered_calls  # evaluate never asks the answering model
        return metrics_document(per_replicate), again

    ran, evaluated = asyncio.run(run())
    assert ran == evaluated
    json.dumps(evaluated, allow_nan=False)
    (tmp_path / "metrics.json").write_text(json.dumps(evaluated, indent=2), encoding="utf-8")

    all_metrics = evaluated["all_metrics"]
    assert len(all_metrics) == 3
    for metrics in all_metrics:
        assert metrics["total"] == 20
        assert metrics["by_prompt_type_counts"] == {"mcq_single": 12, "open": 8}
        results = {r["sample_id"]: r for r in metrics["per_sample_results"]}
        # the model always picks the "different person" option: right on row 1, any letter
        first = results["cosmosqa-valid-00001"]
        assert first["is_correct"] is True
        assert first["extracted_answers"] == ["He wants to get married to a different person ."]
        assert results["nq-open-dev-00001"]["rule"] == "exact_match"
        # "{a single} ${season}" reached the judge literally and was accepted
        assert results["nq-open-dev-00003"]["graded_by"] == "judge"
        assert results["nq-open-dev-00003"]["is_correct"] is True
        assert results["nq-open-dev-00007"]["rule"] == "exact_match"  # Rihanna
        # rows without that option got "Hmm, hard to say.": extraction_failed
        assert metrics["extraction_failed"] == sum(
            1 for r in results.values() if r["error_reason"] == "extraction_failed"
        )
        assert metrics["extraction_failed"] > 0
    # the letter of the same answer moves between replicates, the grade does not
    letters = {tuple(m["per_sample_results"][0]["extracted"]) for m in all_metrics}
    assert len(letters) > 1
    assert evaluated["avg_metrics"]["accuracy"] == sum(m["accuracy"] for m in all_metrics) / 3
    assert "per_sample_results" not in evaluated["avg_metrics"]
