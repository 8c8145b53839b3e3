"""CosmosQA metrics hook: which option letters the model picks (position bias).

assay calls ``compute_metrics(records, per_sample_results)`` once per replicate (plain dicts,
in sample order) and merges the returned dict over its own metrics. The dict must hold
``accuracy``, ``correct``, ``total`` and ``per_sample_results``; here they are assay's own
definitions (judge errors, which multiple choice never has, would leave the denominator).

A weak model often answers the same letter whatever the question; since assay shuffles the
options per replicate, the correct letter is spread over A–D, and ``chosen_letter`` next to
``correct_letter`` shows such a bias at a glance. ``chosen_letter.none`` counts responses
from which no letter could be extracted.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def compute_metrics(
    records: list[dict[str, Any]], per_sample_results: list[dict[str, Any]]
) -> dict[str, Any]:
    graded = [r for r in per_sample_results if r["is_correct"] is not None]
    correct = sum(1 for r in graded if r["is_correct"])
    chosen = Counter(
        "".join(r["extracted"]) if r["extracted"] else "none" for r in per_sample_results
    )
    truth = Counter("".join(record["correct_letters"]) for record in records)
    return {
        "accuracy": correct / len(graded) if graded else None,
        "correct": correct,
        "total": len(per_sample_results),
        "graded": len(graded),
        "per_sample_results": per_sample_results,
        "chosen_letter": dict(sorted(chosen.items())),
        "correct_letter": dict(sorted(truth.items())),
    }
