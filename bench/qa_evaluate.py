"""`assay evaluate prediction.jsonl` on 100,000 rule-graded multiple-choice predictions, against
reading and writing the same JSONL with the standard library alone (the floor).

Target (issue 4): assay takes at most 1.5x the floor's time, measured side by side in one run.
The predictions are the 100 CosmosQA rows of examples/qa, each given new sample ids (50,000
samples x 2 replicates), answered in the forms models write (``\\boxed{B}``, ``Answer: C``,
``**D**``, ``(A)``, a bare letter, a sentence naming no letter, and two short reasoning
paragraphs that quote the question before the answer).
Usage: python bench/qa_evaluate.py [PREDICTIONS] [REPEATS]
"""

from __future__ import annotations

import json
import sys

from common import ASSAY, BENCH, REPO, WORK, median, save, timed

from assay.qa import PredictionRecord, build_item, normalize_sample

SOURCE = REPO / "examples" / "qa" / "cosmosqa" / "cosmosqa_valid_first100.qa.jsonl"
FORMS = (
    "\\boxed{{{0}}}",
    "Answer: {0}",
    "I pick **{0}**.",
    "It is ({0}).",
    "{0}",
    "The story does not say.",
    "The question asks: {1} The story suggests option {0} fits best, since the others do not "
    "follow from it.\nANSWER: {0}",
    "Let me think step by step. {1} Reading the passage again, only one option is supported. "
    "So the final answer is \\boxed{{{0}}}.",
)


def write_predictions(path: object, count: int) -> None:
    """``count`` records: ``count / 2`` samples in two replicates."""
    rows = [json.loads(line) for line in SOURCE.read_text(encoding="utf-8").splitlines()]
    with open(str(path), "w", encoding="utf-8") as handle:
        for index in range(count // 2):
            row = dict(rows[index % len(rows)], sample_id=f"s{index:06d}")
            sample = normalize_sample(row, index=index)
            for replicate in (0, 1):
                item = build_item(sample, dataset="bench", replicate=replicate)
                letter = "ABCD"[(index + replicate) % 4]
                form = FORMS[(index * 7 + replicate) % len(FORMS)]
                content = form.format(letter, sample.question)
                record = PredictionRecord.from_item(item, content=content, model="bench/x")
                handle.write(record.to_json_line() + "\n")


def main(count: int = 100_000, repeats: int = 3) -> dict[str, object]:
    folder = WORK / f"qa-evaluate-{count}"
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "prediction.jsonl"
    if not source.exists():
        write_predictions(source, count)
    commands = {
        "assay": [*ASSAY, "evaluate", str(source), "-o", str(folder / "metrics.json")],
        "stdlib": [sys.executable, str(BENCH / "stdlib_jsonl.py"), str(source),
                   str(folder / "copy.jsonl")],
    }  # fmt: skip
    runs: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            t = timed(command, cwd=folder)
            assert t.returncode == 0, f"{name} failed"
            runs[name].append(t.seconds)
    result: dict[str, object] = {
        "predictions": count,
        "repeats": repeats,
        "bytes": source.stat().st_size,
        **{name: {"seconds": median(values), "runs": values} for name, values in runs.items()},
    }
    result["ratio"] = median(runs["assay"]) / median(runs["stdlib"])
    save("qa_evaluate", result)
    return result


if __name__ == "__main__":
    print(json.dumps(main(*(int(a) for a in sys.argv[1:])), indent=2))
