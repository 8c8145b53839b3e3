"""SQuAD 2.0 metrics hook: accuracy on answerable (HasAns) and unanswerable (NoAns) questions.

assay calls ``compute_metrics(records, per_sample_results)`` once per replicate with the
replicate's ``prediction.jsonl`` records and their grades (plain dicts, in sample order). The
returned dict must hold ``accuracy``, ``correct``, ``total`` and ``per_sample_results``; assay
merges it over its own metrics and adds the Wilson interval of ``accuracy``.

SQuAD 2.0 reports HasAns and NoAns separately because a model that always abstains scores
well on NoAns and zero on HasAns; the mean hides that. ``abstained_on_answerable`` counts the
answerable questions the model declined (graded wrong by the abstention rule).
"""

from __future__ import annotations

from typing import Any


def _accuracy(results: list[dict[str, Any]]) -> float | None:
    # judge and answer errors (is_correct null) are kept out of the denominator, as by assay
    graded = [r for r in results if r["is_correct"] is not None]
    if not graded:
        return None
    return sum(1 for r in graded if r["is_correct"]) / len(graded)


def compute_metrics(
    records: list[dict[str, Any]], per_sample_results: list[dict[str, Any]]
) -> dict[str, Any]:
    del records  # every field needed is in the results
    graded = [r for r in per_sample_results if r["is_correct"] is not None]
    correct = sum(1 for r in graded if r["is_correct"])
    has_answer = [r for r in per_sample_results if not r["unanswerable"]]
    no_answer = [r for r in per_sample_results if r["unanswerable"]]
    return {
        "accuracy": correct / len(graded) if graded else None,
        "correct": correct,
        "total": len(per_sample_results),
        "graded": len(graded),
        "per_sample_results": per_sample_results,
        "has_ans_accuracy": _accuracy(has_answer),
        "has_ans_total": len(has_answer),
        "no_ans_accuracy": _accuracy(no_answer),
        "no_ans_total": len(no_answer),
        "abstained_on_answerable": sum(1 for r in has_answer if r["rule"] == "abstention"),
    }
