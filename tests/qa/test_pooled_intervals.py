"""The interval over replicates in ``metrics.json`` is ONE cluster-robust interval (each
sample's replicates a cluster, the samples of one story a cluster), never the mean of the
replicates' bounds; checked against statsmodels on real CosmosQA stories."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm

from assay.qa import (
    PredictionRecord,
    SampleResult,
    build_item,
    metrics_document,
    normalize_sample,
    pooled_intervals,
    replicate_metrics,
)

DATA = Path(__file__).parent / "data" / "cosmosqa_valid_first100.qa.jsonl"


def rows() -> list[dict[str, object]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]


def graded(sample_id: str, index: int, replicate: int, correct: bool | None) -> SampleResult:
    return SampleResult(
        sample_id=sample_id, sample_index=index, replicate=replicate, prompt_type="mcq_single",
        unanswerable=False, is_correct=correct,
        error_reason=None if correct else ("judge_error" if correct is None else "wrong_answer"),
    )  # fmt: skip


def replicates(count: int, seed: int) -> list[tuple[list[PredictionRecord], list[SampleResult]]]:
    """Each replicate answers every CosmosQA row; a story's questions share a skill level."""
    data = rows()
    rng = np.random.default_rng(seed)
    skill = {story: rng.uniform(0.1, 0.9) for story in {str(r["story"]) for r in data}}
    out = []
    for replicate in range(count):
        records, results = [], []
        for index, row in enumerate(data):
            sample = normalize_sample(row, index=index)
            item = build_item(sample, dataset="cosmosqa", replicate=replicate)
            records.append(PredictionRecord.from_item(item, content="A"))
            draw = rng.uniform()
            correct = None if draw > 0.97 else bool(draw < skill[str(row["story"])])
            results.append(graded(sample.sample_id, index, replicate, correct))
        out.append((records, results))
    return out


def oracle(
    runs: list[tuple[list[PredictionRecord], list[SampleResult]]],
) -> tuple[float, float, int]:
    values, groups = [], []
    for records, results in runs:
        for record, result in zip(records, results, strict=True):
            if result.is_correct is not None:
                values.append(float(result.is_correct))
                groups.append(record.story)
    codes = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    fit = sm.OLS(np.array(values), np.ones(len(values))).fit(
        cov_type="cluster", cov_kwds={"groups": np.array([codes[g] for g in groups])},
        use_t=True)  # fmt: skip
    return float(fit.params[0]), float(fit.bse[0]), len(codes)


@pytest.mark.parametrize(("count", "seed"), [(1, 1), (3, 2), (5, 3)])
def test_one_clustered_interval_over_replicates(count: int, seed: int) -> None:
    runs = replicates(count, seed)
    per = [replicate_metrics(records, results) for records, results in runs]
    document = metrics_document(per, pooled_intervals(runs))
    found = document["avg_metrics"]["accuracy_ci"]
    mean, se, clusters = oracle(runs)
    assert found["se"] == pytest.approx(se, rel=1e-9)
    assert 70 < found["clusters"] == clusters <= 84 and found["method"] == "cluster t"
    from scipy.stats import t

    half = float(t.ppf(0.975, clusters - 1)) * se
    assert (found["low"], found["high"]) == (pytest.approx(mean - half), pytest.approx(mean + half))
    if count > 1:
        averaged = np.mean([m["accuracy_ci"]["low"] for m in per])
        assert found["low"] != pytest.approx(averaged)
        # more replicates of the same samples cannot shrink the interval like new samples would
        assert found["high"] - found["low"] > 0.5 * (per[0]["accuracy_ci"]["high"]
                                                    - per[0]["accuracy_ci"]["low"])  # fmt: skip


def test_group_intervals_are_pooled_too() -> None:
    runs = replicates(2, 9)
    pooled = pooled_intervals(runs)
    (key,) = pooled["by_prompt_type_ci"]
    assert pooled["by_prompt_type_ci"][key]["se"] == pytest.approx(oracle(runs)[1])


def test_fewer_than_two_clusters_gives_no_interval() -> None:
    runs = [(r[:1], s[:1]) for r, s in replicates(3, 4)]
    document = metrics_document([replicate_metrics(*run) for run in runs], pooled_intervals(runs))
    assert document["avg_metrics"]["accuracy_ci"] is None


def test_one_replicates_interval_is_clustered_by_story_when_samples_share_one() -> None:
    """A replicate's own accuracy_ci was a Wilson interval over samples that share stories,
    taken for independent (a statistician's break-test: [0.397, 0.892] where the story
    clustered interval is [0.198, 0.980])."""
    (run,) = replicates(1, 5)
    metrics = replicate_metrics(*run)
    found = metrics["accuracy_ci"]
    mean, se, clusters = oracle([run])
    assert metrics["accuracy"] == pytest.approx(mean) and found["low"] < mean < found["high"]
    assert found["se"] == pytest.approx(se, rel=1e-9) and found["clusters"] == clusters < 100
    assert found["method"] == "cluster t"
    (key,) = metrics["by_prompt_type_ci"]
    assert metrics["by_prompt_type_ci"][key]["se"] == pytest.approx(se, rel=1e-9)
