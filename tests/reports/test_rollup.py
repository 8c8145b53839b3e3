"""The suite roll-up (suite.json) built from hand-made row results.

The rows are built the way ``orchestration/running/runner.py`` fills ``EvaluationResult``: graded
rows carry one criterion result per declared criterion (in order); ERROR rows carry none.
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Sequence
from typing import Any

import pytest

from assay.criteria.registry import default_criteria
from assay.reports.markdown import render_suite
from assay.reports.rollup import FAILED_SAMPLE_LIMIT, build_suite
from assay.results.status import FinalStatus
from assay.results.suite import SuiteRollup
from assay.results.task_result import (
    BasicCriterionResult,
    ClassificationCriterionResult,
    CriterionResult,
    EvaluationResult,
    TaskConfigRecord,
)
from assay.spec.criteria import ClassificationMatch, CriterionSpec, RunCommand

SUITE = "sentiment_classification"
PREPARE = RunCommand(
    type="run_command",
    description="scripted correct model writes the sentiment of the text to result.txt",
    weight=0,
    command="python3 -c \"open('result.txt','w').write('positive')\"",
)
CLASSIFY = ClassificationMatch(
    type="classification_match",
    description="Sentiment label matches ground truth",
    path="result.txt",
    expected_label="${row.expected}",
    allowed_labels=["positive", "negative"],
    suite_thresholds={"accuracy": 0.6, "macro_f1": 0.5, "recall.positive": 0.9},
)
SENTIMENT = [("r1", "positive", "positive"), ("r2", "negative", "negative"),
             ("r3", "negative", "positive")]  # fmt: skip


def classify(
    thresholds: dict[str, float] | None = None, labels: Sequence[str] = ()
) -> CriterionSpec:
    """The sentiment criterion with other thresholds (and allowed labels)."""
    update: dict[str, Any] = {"suite_thresholds": thresholds}
    if labels:
        update["allowed_labels"] = list(labels)
    return CLASSIFY.model_copy(update=update)


def command_result(score: float = 1.0, error: str | None = None) -> BasicCriterionResult:
    return BasicCriterionResult(
        criterion_type="run_command",
        description=PREPARE.description,
        score=score,
        details="Command: …\nExit code: 0 (expected: 0)",
        error=error,
        evaluation_status="error" if error else "evaluated",
        gating=False,
        weight=0.0,
    )


def label_result(expected: str, observed: str) -> ClassificationCriterionResult:
    return ClassificationCriterionResult(
        criterion_type="classification_match",
        description=CLASSIFY.description,
        score=1.0 if observed == expected else 0.0,
        details=f"observed={observed!r}, expected={expected!r}",
        observed_label=observed,
        expected_label=expected,
    )


def row(
    index: int,
    status: FinalStatus,
    results: Sequence[CriterionResult] = (),
    *,
    row_id: str | None = None,
    replicate: int = 0,
    score: float | None = None,
    error: str | None = None,
) -> EvaluationResult:
    rid = row_id or f"r{index + 1:02d}"
    return EvaluationResult(
        task_id=f"{SUITE}/{rid}",
        suite_id=SUITE,
        row_id=rid,
        row_index=index,
        replicate_index=replicate,
        task_description="sentiment",
        agent_type="none",
        started_at="2026-01-01T00:00:00",
        completed_at="2026-01-01T00:00:01",
        duration_seconds=1.0,
        final_status=status,
        weighted_score=score,
        success_criteria_results=list(results),
        error_message=error,
        task_config=TaskConfigRecord(resolved={"task_id": f"{SUITE}/{rid}"}),
    )


def graded(index: int, expected: str, observed: str, **kw: Any) -> EvaluationResult:
    """A row graded by (run_command, classification_match), as the runner fills it."""
    ok = expected == observed
    status = FinalStatus.SUCCESS if ok else FinalStatus.FAILURE
    results = [command_result(), label_result(expected, observed)]
    return row(index, status, results, score=1.0 if ok else 0.0, **kw)


def errored(index: int, **kw: Any) -> EvaluationResult:
    return row(index, FinalStatus.ERROR, error="agent crashed: boom", **kw)


def relpath(result: EvaluationResult) -> str:
    return f"{result.variant_id}/{SUITE}/{result.row_id}/{result.replicate_index:02d}/task.json"


def roll_up(
    results: Sequence[EvaluationResult], criteria: Sequence[CriterionSpec] = (PREPARE, CLASSIFY)
) -> SuiteRollup:
    return build_suite(
        suite_id=SUITE,
        variant_id="default",
        results=results,
        criteria=criteria,
        registry=default_criteria(),
        task_json_paths={id(r): relpath(r) for r in results},
    )


def sentiment_rows() -> list[EvaluationResult]:
    return [graded(i, e, o, row_id=rid) for i, (rid, e, o) in enumerate(SENTIMENT)]


def strict_json(suite: SuiteRollup) -> dict[str, Any]:
    """suite.json as written: ``allow_nan=False`` raises on NaN or infinity."""
    loaded: dict[str, Any] = json.loads(json.dumps(suite.model_dump(mode="json"), allow_nan=False))
    return loaded


def checks(suite: SuiteRollup, position: int = 1) -> dict[str, tuple[float | None, bool]]:
    agg = suite.criterion_aggregates[position]
    return {c.metric: (c.actual_value, c.passed) for c in agg.threshold_checks}


# --- the Coder Eval sample (seed_sentiment_suite.json), copied as literals ---------------

SAMPLE_COUNTS = {
    "rows_total": 3, "rows_passed": 2, "rows_failed": 1, "rows_error": 0,
    "rows_not_graded": 0, "rows_graded": 3, "pass_rate": 0.6666666666666666,
    "average_weighted_score": 0.6666666666666666, "passed": True,
}  # fmt: skip
SAMPLE_CRITERION_STATS = [
    {"criterion_type": "classification_match", "rows_evaluated": 3,
     "average_score": 0.6666666666666666, "error_count": 0},
    {"criterion_type": "run_command", "rows_evaluated": 3, "average_score": 1.0,
     "error_count": 0},
]  # fmt: skip
SAMPLE_FAILED = [
    {"row_id": "r3", "task_id": "sentiment_classification/r3", "final_status": "FAILURE",
     "weighted_score": 0.0, "failure_reasons": ["observed='positive', expected='negative'"],
     "error_message": None,
     "task_json_relpath": "default/sentiment_classification/r3/00/task.json",
     "replicate_index": 0},
]  # fmt: skip
SAMPLE_COMMAND_METRICS = {
    "count": 3.0, "mean": 1.0, "median": 1.0, "std": 0.0, "min": 1.0, "max": 1.0,
    "completion_rate": 1.0,
}  # fmt: skip
SAMPLE_CLASSIFY_METRICS = {
    "count": 3.0, "mean": 0.6666666666666666, "median": 1.0, "std": 0.4714045207910317,
    "min": 0.0, "max": 1.0, "precision.negative": 1.0, "recall.negative": 0.5,
    "f1.negative": 0.6666666666666666, "precision.positive": 0.5, "recall.positive": 1.0,
    "f1.positive": 0.6666666666666666, "accuracy": 0.6666666666666666,
    "macro_f1": 0.6666666666666666, "weighted_f1": 0.6666666666666666,
    "micro_f1": 0.6666666666666666, "completion_rate": 1.0,
}  # fmt: skip
SAMPLE_CHECKS = [
    {"metric": "accuracy", "min_value": 0.6, "actual_value": 0.6666666666666666, "passed": True},
    {"metric": "macro_f1", "min_value": 0.5, "actual_value": 0.6666666666666666, "passed": True},
    {"metric": "recall.positive", "min_value": 0.9, "actual_value": 1.0, "passed": True},
]
SAMPLE_DETAILS = {
    "labels": ["negative", "positive"],
    "per_label": [
        {"label": "negative", "precision": 1.0, "recall": 0.5, "f1": 0.6666666666666666,
         "support": 2},
        {"label": "positive", "precision": 0.5, "recall": 1.0, "f1": 0.6666666666666666,
         "support": 1},
    ],
    "confusion": [
        {"expected": "negative", "observed": "negative", "count": 1},
        {"expected": "negative", "observed": "positive", "count": 1},
        {"expected": "positive", "observed": "positive", "count": 1},
    ],
    "total_pairs": 3,
}  # fmt: skip


def test_sample_suite_counts_match_coder_eval() -> None:
    data = strict_json(roll_up(sentiment_rows()))
    assert {key: data[key] for key in SAMPLE_COUNTS} == SAMPLE_COUNTS
    assert (data["suite_id"], data["variant_id"]) == (SUITE, "default")


def _coder_eval_keys(items: list[dict[str, Any]], like: list[dict[str, Any]]) -> list[Any]:
    """Coder Eval's keys of each item (assay adds refusal counts and a QA row's answer)."""
    return [{key: item[key] for key in sample} for item, sample in zip(items, like, strict=True)]


def test_sample_criterion_stats_match_coder_eval() -> None:
    stats = strict_json(roll_up(sentiment_rows()))["criterion_stats"]
    assert _coder_eval_keys(stats, SAMPLE_CRITERION_STATS) == SAMPLE_CRITERION_STATS
    assert {s["refused_count"] for s in stats} == {0}


def test_sample_failed_samples_match_coder_eval() -> None:
    data = strict_json(roll_up(sentiment_rows()))
    assert _coder_eval_keys(data["failed_samples"], SAMPLE_FAILED) == SAMPLE_FAILED
    assert data["failed_samples_total"] == 1


def test_sample_run_command_aggregate_matches_coder_eval() -> None:
    agg = strict_json(roll_up(sentiment_rows()))["criterion_aggregates"][0]
    assert agg["criterion_type"] == "run_command"
    assert agg["description"] == PREPARE.description
    assert (agg["rows_total"], agg["rows_excluded"]) == (3, 0)
    assert agg["metrics"] == SAMPLE_COMMAND_METRICS
    assert (agg["threshold_checks"], agg["passed"], agg["details"], agg["error"]) == (
        [], True, {}, None,
    )  # fmt: skip


def test_sample_classification_aggregate_matches_coder_eval() -> None:
    agg = strict_json(roll_up(sentiment_rows()))["criterion_aggregates"][1]
    assert agg["criterion_type"] == "classification_match"
    assert agg["description"] == CLASSIFY.description
    assert (agg["rows_total"], agg["rows_excluded"]) == (3, 0)
    assert agg["metrics"] == SAMPLE_CLASSIFY_METRICS
    coder_eval = [{k: c[k] for k in SAMPLE_CHECKS[0]} for c in agg["threshold_checks"]]
    assert coder_eval == SAMPLE_CHECKS
    # assay adds each gate's interval, and says when it straddles the threshold (3 rows)
    assert ["interval" in c for c in agg["threshold_checks"]] == [True, False, False]
    assert "straddles 0.6" in agg["threshold_checks"][0]["note"]
    assert agg["details"] == SAMPLE_DETAILS
    assert (agg["passed"], agg["error"], agg["undefined_metrics"]) == (True, None, {})


# --- row accounting ---------------------------------------------------------------------


def mixed_rows() -> list[EvaluationResult]:
    timeout = row(5, FinalStatus.TIMEOUT, [command_result(), label_result("positive", "(none)")],
                  score=0.0)  # fmt: skip
    return [
        graded(0, "positive", "positive"),
        graded(1, "negative", "negative"),
        graded(2, "negative", "positive"),
        errored(3),
        row(4, FinalStatus.BUILD_FAILED, error="pre_run failed"),
        timeout,
        row(6, FinalStatus.NOT_GRADED),
    ]


def test_status_categories_sum_to_rows_total() -> None:
    suite = roll_up(mixed_rows())
    assert suite.rows_total == 7
    assert (suite.rows_passed, suite.rows_failed, suite.rows_error) == (2, 2, 2)
    assert suite.rows_not_graded == 1
    total = suite.rows_passed + suite.rows_failed + suite.rows_error + suite.rows_not_graded
    assert total == suite.rows_total


def test_rows_that_ran_into_a_limit_are_failures_and_the_suite_says_so() -> None:
    suite = roll_up(mixed_rows())
    assert suite.rows_failed == 2  # the TIMEOUT row is graded, as Coder Eval counts it
    assert [w for w in suite.warnings if "run_limits" in w] == [
        "1 row(s) ended TIMEOUT (run_limits.task_timeout): failures graded on what the agent "
        "left, not errors (a model that did not answer in time is a wrong answer); raise the "
        "limit if it cut rows short"
    ]
    assert "1 row(s) ended TIMEOUT" in render_suite(suite)
    assert not [w for w in roll_up(mixed_rows()[:3]).warnings if "run_limits" in w]


def test_pass_rate_is_passed_over_graded() -> None:
    suite = roll_up(mixed_rows())
    assert suite.rows_graded == 4
    assert suite.pass_rate == 0.5


def test_pass_rate_is_none_when_nothing_graded() -> None:
    suite = roll_up([errored(0), row(1, FinalStatus.NOT_GRADED)])
    assert (suite.rows_graded, suite.pass_rate, suite.average_weighted_score) == (0, None, None)
    assert strict_json(suite)["pass_rate"] is None


def test_average_weighted_score_skips_rows_without_score() -> None:
    rows = [graded(0, "positive", "positive"), graded(1, "negative", "positive"), errored(2)]
    assert roll_up(rows).average_weighted_score == 0.5


def test_error_rows_are_excluded_from_criterion_denominator() -> None:
    agg = roll_up(mixed_rows()).criterion_aggregates[1]
    assert (agg.rows_total, agg.rows_excluded) == (7, 3)
    assert agg.metrics["count"] == 4.0
    assert agg.metrics["completion_rate"] == pytest.approx(4 / 7, abs=1e-15)
    assert agg.details["total_pairs"] == 4


def test_error_rows_do_not_change_classification_metrics() -> None:
    clean = roll_up(sentiment_rows()).criterion_aggregates[1].metrics
    rows = [*sentiment_rows(), errored(3), errored(4)]
    with_errors = roll_up(rows).criterion_aggregates[1].metrics
    assert with_errors.pop("completion_rate") == 0.6
    assert {k: v for k, v in clean.items() if k != "completion_rate"} == with_errors


def test_completion_rate_gate_fails_when_rows_errored() -> None:
    spec = classify({"completion_rate": 0.9})
    suite = roll_up([*sentiment_rows(), errored(3)], (PREPARE, spec))
    assert checks(suite) == {"completion_rate": (0.75, False)}
    assert suite.passed is False


def test_errored_classification_result_is_scored_but_not_a_pair() -> None:
    broken = BasicCriterionResult(
        criterion_type="classification_match", score=0.0, error="the row's sandbox was not kept",
        evaluation_status="error",
    )  # fmt: skip
    rows = [*sentiment_rows(), row(3, FinalStatus.FAILURE, [command_result(), broken], score=0.0)]
    agg = roll_up(rows).criterion_aggregates[1]
    # A criterion that could not evaluate is excluded from every metric of that criterion and
    # shows in completion_rate, like a row that errored before grading.
    assert (agg.metrics["count"], agg.details["total_pairs"]) == (3.0, 3)
    assert agg.details["criterion_errors"] == 1
    assert (agg.rows_total, agg.rows_excluded) == (4, 1)
    assert agg.metrics["completion_rate"] == pytest.approx(3 / 4)
    assert agg.metrics["accuracy"] == pytest.approx(2 / 3, abs=1e-15)


def test_every_row_errored_gives_aggregate_error_and_failed_gate() -> None:
    suite = roll_up([errored(0), errored(1)])
    agg = suite.criterion_aggregates[1]
    assert agg.error == (
        "no row was graded by this criterion (every row errored, or the criterion could not "
        "evaluate), so its thresholds fail"
    )
    assert (agg.metrics["count"], agg.metrics["completion_rate"]) == (0.0, 0.0)
    assert all(actual is None and not ok for actual, ok in checks(suite).values())
    assert (agg.passed, suite.passed) == (False, False)


def test_nothing_graded_gives_not_graded_error() -> None:
    suite = roll_up([row(0, FinalStatus.NOT_GRADED), row(1, FinalStatus.NOT_GRADED)])
    assert suite.criterion_aggregates[1].error == (
        "no row was graded (run `assay evaluate RUN_DIR` to grade them), so its thresholds fail"
    )
    assert suite.passed is False


# --- thresholds -------------------------------------------------------------------------

# accuracy 3/4 and weighted F1 exactly 3/4 (summed naively in floats it is 0.7499999999999999)
THREE_QUARTERS = [("a", "a"), ("a", "c"), ("b", "b"), ("c", "c")]


def abc_rows() -> list[EvaluationResult]:
    return [graded(i, e, o) for i, (e, o) in enumerate(THREE_QUARTERS)]


def test_threshold_passes_at_equality() -> None:
    thresholds = {"accuracy": 0.75, "weighted_f1": 0.75, "recall.b": 1.0, "completion_rate": 1.0}
    suite = roll_up(abc_rows(), (PREPARE, classify(thresholds, ["a", "b", "c"])))
    assert checks(suite) == {
        "accuracy": (0.75, True),
        "weighted_f1": (0.75, True),
        "recall.b": (1.0, True),
        "completion_rate": (1.0, True),
    }
    assert suite.passed is True


def test_threshold_fails_just_below() -> None:
    suite = roll_up(abc_rows(), (PREPARE, classify({"accuracy": 0.7500001}, ["a", "b", "c"])))
    assert checks(suite) == {"accuracy": (0.75, False)}
    assert (suite.criterion_aggregates[1].passed, suite.passed) == (False, False)


def test_threshold_checks_keep_declaration_order() -> None:
    spec = classify({"recall.positive": 0.9, "accuracy": 0.6, "macro_f1": 0.5})
    suite = roll_up(sentiment_rows(), (PREPARE, spec))
    assert list(checks(suite)) == ["recall.positive", "accuracy", "macro_f1"]


def test_metric_never_produced_fails_with_actual_none() -> None:
    spec = classify({"accuracy": 0.5, "recall.neutral": 0.1})
    suite = roll_up(sentiment_rows(), (PREPARE, spec))
    assert checks(suite) == {
        "accuracy": (pytest.approx(2 / 3), True),
        "recall.neutral": (None, False),
    }
    assert "recall.neutral" not in suite.criterion_aggregates[1].metrics
    assert suite.passed is False


def test_undefined_metric_fails_its_gate() -> None:
    # "negative" is expected but never predicted: its precision is 0/0.
    rows = [graded(0, "positive", "positive"), graded(1, "negative", "positive")]
    suite = roll_up(rows, (PREPARE, classify({"precision.negative": 0.0})))
    agg = suite.criterion_aggregates[1]
    assert agg.metrics["precision.negative"] is None
    assert agg.undefined_metrics["precision.negative"] == (
        "0/0: label 'negative' was never predicted"
    )
    assert checks(suite) == {"precision.negative": (None, False)}
    assert suite.passed is False


def test_suite_passes_only_when_every_aggregate_passes() -> None:
    failing = classify({"accuracy": 0.9})
    passing = classify({"accuracy": 0.5})
    suite = roll_up(sentiment_rows(), (PREPARE, failing))
    assert [a.passed for a in suite.criterion_aggregates] == [True, False]
    assert suite.passed is False
    assert roll_up(sentiment_rows(), (PREPARE, passing)).passed is True


# --- empty suite, JSON ------------------------------------------------------------------


def test_empty_suite_does_not_crash() -> None:
    suite = roll_up([])
    assert (suite.rows_total, suite.rows_graded, suite.pass_rate) == (0, 0, None)
    assert (suite.average_weighted_score, suite.failed_samples, suite.criterion_stats) == (
        None, [], [],
    )  # fmt: skip
    agg = suite.criterion_aggregates[1]
    assert (agg.rows_total, agg.rows_excluded) == (0, 0)
    assert agg.error == "the suite has no rows, so its thresholds fail"
    assert agg.metrics["completion_rate"] is None
    assert agg.undefined_metrics["completion_rate"]
    assert agg.metrics["accuracy"] is None
    assert all(not ok for _, ok in checks(suite).values())
    assert suite.passed is False


def test_empty_suite_json_has_nulls_not_nan() -> None:
    data = strict_json(roll_up([]))
    metrics = data["criterion_aggregates"][1]["metrics"]
    assert metrics["accuracy"] is None and metrics["mean"] is None
    assert metrics["count"] == 0.0


def test_rollup_json_never_contains_nan() -> None:
    rows = [graded(0, "positive", "(other)"), errored(1), row(2, FinalStatus.NOT_GRADED)]
    data = strict_json(roll_up(rows))
    agg = data["criterion_aggregates"][1]
    assert agg["metrics"]["precision.positive"] is None
    assert agg["metrics"]["recall.(other)"] is None
    assert set(agg["undefined_metrics"]) == {"precision.positive", "recall.(other)"}
    assert agg["details"]["per_label"][0] == {
        "label": "(other)", "precision": 0.0, "recall": None, "f1": 0.0, "support": 0,
    }  # fmt: skip


def test_undefined_metrics_are_exactly_the_null_metrics() -> None:
    for rows in ([], mixed_rows(), [graded(0, "positive", "(none)")]):
        for agg in roll_up(rows).criterion_aggregates:
            nulls = {name for name, value in agg.metrics.items() if value is None}
            assert set(agg.undefined_metrics) == nulls


# --- failed samples and order -----------------------------------------------------------


def test_failed_samples_capped_at_twenty_with_total() -> None:
    rows = [graded(i, "positive", "negative" if i % 6 else "positive") for i in range(30)]
    suite = roll_up(rows)
    assert FAILED_SAMPLE_LIMIT == 20
    assert suite.failed_samples_total == 25
    assert len(suite.failed_samples) == 20
    expected_ids = [f"r{i + 1:02d}" for i in range(30) if i % 6][:20]
    assert [s.row_id for s in suite.failed_samples] == expected_ids
    assert suite.failed_samples[0].task_json_relpath == f"default/{SUITE}/r02/00/task.json"


def test_failed_sample_of_errored_row_carries_error_message() -> None:
    sample = roll_up([errored(0, row_id="r9")]).failed_samples[0]
    assert (sample.row_id, sample.final_status, sample.weighted_score) == ("r9", "ERROR", None)
    assert (sample.error_message, sample.failure_reasons) == ("agent crashed: boom", [])
    assert sample.task_json_relpath == f"default/{SUITE}/r9/00/task.json"


def test_failure_reasons_name_errored_criteria() -> None:
    results = [command_result(0.0, error="timed out"), label_result("negative", "positive")]
    rows = [row(0, FinalStatus.FAILURE, results, score=0.0)]
    assert roll_up(rows).failed_samples[0].failure_reasons == [
        "run_command: timed out",
        "observed='positive', expected='negative'",
    ]


def test_passing_rows_are_not_failed_samples() -> None:
    rows = [graded(0, "positive", "positive"), graded(1, "negative", "negative")]
    suite = roll_up(rows)
    assert (suite.failed_samples, suite.failed_samples_total) == ([], 0)


def test_shuffled_results_come_out_in_dataset_order() -> None:
    rows = [graded(i, "positive", "negative", replicate=rep) for i in range(8) for rep in (1, 0)]
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    samples = roll_up(shuffled).failed_samples
    order = [(s.row_id, s.replicate_index) for s in samples]
    assert order == [(f"r{i + 1:02d}", rep) for i in range(8) for rep in (0, 1)]
    assert samples[1].task_json_relpath == f"default/{SUITE}/r01/01/task.json"


def test_shuffled_results_give_the_same_rollup() -> None:
    rows = mixed_rows()
    shuffled = list(reversed(rows))
    assert strict_json(roll_up(shuffled)) == strict_json(roll_up(rows))


# --- criterion stats and per-position aggregates ----------------------------------------


def test_criterion_stats_one_per_criterion_sorted_by_type() -> None:
    """One line per criterion (two of one type are not pooled: found in review), each over
    the rows it graded, sorted by type as Coder Eval's list is."""
    second = PREPARE.model_copy(update={"description": "second command"})
    rows = [
        row(0, FinalStatus.SUCCESS,
            [command_result(), label_result("a", "a"), command_result(0.5)], score=1.0),
        row(1, FinalStatus.FAILURE,
            [command_result(0.0, error="exit 1"), label_result("a", "b"), command_result()],
            score=0.0),
        errored(2),
    ]  # fmt: skip
    stats = roll_up(rows, (PREPARE, classify(None, ["a", "b"]), second)).criterion_stats
    # the errored run_command result is counted apart, never averaged in as a 0
    assert [s.model_dump() for s in stats] == [
        {"criterion_type": "classification_match", "criterion_index": 1, "rows_evaluated": 2,
         "average_score": 0.5, "error_count": 0, "refused_count": 0},
        {"criterion_type": "run_command", "criterion_index": 0, "rows_evaluated": 1,
         "average_score": 1.0, "error_count": 1, "refused_count": 0},
        {"criterion_type": "run_command", "criterion_index": 2, "rows_evaluated": 2,
         "average_score": statistics.fmean([0.5, 1.0]), "error_count": 0, "refused_count": 0},
    ]  # fmt: skip
    table = render_suite(roll_up(rows, (PREPARE, classify(None, ["a", "b"]), second)))
    assert "| `classification_match` | 2 | 0.500 | 0 | 0 |" in table  # its type is alone
    assert "| `run_command #1` | 1 | 1.000 | 1 | 0 |" in table
    assert "| `run_command #3` | 2 | 0.750 | 0 | 0 |" in table
    assert "## Aggregate metrics — `run_command #3` (no thresholds)" in table


def test_aggregates_follow_criteria_positions() -> None:
    first = classify(None, ["yes", "no"])
    second = classify(None, ["yes", "no"]).model_copy(update={"description": "second skill"})
    rows = [
        row(0, FinalStatus.SUCCESS, [label_result("yes", "yes"), label_result("no", "no")]),
        row(1, FinalStatus.FAILURE, [label_result("yes", "no"), label_result("no", "no")]),
    ]
    aggs = roll_up(rows, (first, second)).criterion_aggregates
    assert [a.description for a in aggs] == [CLASSIFY.description, "second skill"]
    assert aggs[0].metrics["accuracy"] == 0.5
    assert aggs[1].metrics["accuracy"] == 1.0
    assert aggs[1].details["labels"] == ["no"]
