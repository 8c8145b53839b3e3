"""The viewer's 95% intervals, against independent oracles: scipy's Wilson interval, the
row-by-row bootstrap of ``assay.metrics.bootstrap`` (which ``experiment.json`` uses),
scikit-learn's macro-F1, and a hand-computed ratio-estimator interval."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.metrics import f1_score

from assay.metrics.bootstrap import bootstrap, bootstrap_grouped, macro_f1, ratio
from assay.results.run_folder import load_results
from assay.results.task_result import ClassificationCriterionResult
from assay.view.estimates import (
    GROUPED_LIMIT,
    _normal_ratio,
    criterion_estimates,
    label_estimates,
    pass_rate,
    resampled,
)
from assay.view.index import RowIndex
from tests.view.generate import SUITE, make_run


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RowIndex]:
    run = make_run(400, tmp_path_factory.mktemp("runs"), seed=11)
    index = RowIndex(run, tmp_path_factory.mktemp("scratch") / "index.sqlite")
    index.refresh()
    return run, index


def test_pass_rate_is_wilson_over_graded_rows(indexed: tuple[Path, RowIndex]) -> None:
    run, index = indexed
    results = load_results(run)
    graded = [r for r in results if r.final_status.category in ("passed", "failed")]
    passed = sum(1 for r in graded if r.final_status.category == "passed")
    with index.connect() as db:
        found = pass_rate(db, SUITE, "default", 1)
    oracle = binomtest(passed, len(graded)).proportion_ci(method="wilson")
    assert found.method == "wilson" and found.rows == len(graded) < 400  # errors are outside
    assert found.value == pytest.approx(passed / len(graded))
    assert (found.low, found.high) == (pytest.approx(oracle.low), pytest.approx(oracle.high))


def test_accuracy_mean_and_macro_f1_of_a_classification_criterion(
    indexed: tuple[Path, RowIndex],
) -> None:
    run, index = indexed
    items = [r.success_criteria_results[0] for r in load_results(run)
             if r.success_criteria_results]  # fmt: skip
    pairs = [(c.expected_label, c.observed_label) for c in items
             if isinstance(c, ClassificationCriterionResult)]  # fmt: skip
    with index.connect() as db:
        found = {e.metric: e for e in criterion_estimates(db, SUITE, "default", 0, 1)}
    correct = sum(1 for e, o in pairs if e == o)
    oracle = binomtest(correct, len(pairs)).proportion_ci(method="wilson")
    assert found["accuracy"].low == pytest.approx(oracle.low)
    assert found["mean"].value == pytest.approx(np.mean([c.score for c in items]))
    assert found["mean"].method == "bootstrap" and found["mean"].low < found["mean"].value
    expected, observed = zip(*pairs, strict=True)
    assert found["macro_f1"].value == pytest.approx(
        f1_score(expected, observed, average="macro", zero_division=0)
    )
    assert found["macro_f1"].low < found["macro_f1"].value < found["macro_f1"].high


def test_the_grouped_bootstrap_matches_the_row_bootstrap() -> None:
    rng = np.random.default_rng(5)
    rows = np.column_stack([rng.integers(0, 2, 3000), np.ones(3000)]).astype(float)
    by_rows = bootstrap(rows, ratio(0, 1))
    counts = Counter(tuple(r) for r in rows)
    grouped = bootstrap_grouped(np.array(list(counts)), np.array(list(counts.values())),
                                ratio(0, 1))  # fmt: skip
    assert grouped.value == pytest.approx(by_rows.value)
    assert grouped.low == pytest.approx(by_rows.low, abs=0.005)
    assert grouped.high == pytest.approx(by_rows.high, abs=0.005)
    labels = np.array([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 1], [0, 0, 0, 1, 0, 0],
                       [0, 0, 1, 0, 1, 0]] * 250, dtype=float)  # fmt: skip
    by_rows = bootstrap(labels, macro_f1(2))
    counts = Counter(tuple(r) for r in labels)
    grouped = bootstrap_grouped(np.array(list(counts)), np.array(list(counts.values())),
                                macro_f1(2))  # fmt: skip
    assert grouped.low == pytest.approx(by_rows.low, abs=0.01)


def test_replicates_are_resampled_with_their_row(tmp_path: Path) -> None:
    run = make_run(60, tmp_path / "runs", replicates=3, seed=2)
    index = RowIndex(run, tmp_path / "index.sqlite")
    index.refresh()
    by_row: dict[str, list[float]] = {}
    for result in load_results(run):
        if result.final_status.category in ("passed", "failed"):
            cell = by_row.setdefault(str(result.row_id), [0.0, 0.0])
            cell[0] += result.final_status.category == "passed"
            cell[1] += 1
    oracle = bootstrap(np.array(list(by_row.values())), ratio(0, 1))
    with index.connect() as db:
        found = pass_rate(db, SUITE, "default", 3)
    assert found.method == "bootstrap" and found.rows == 60
    assert found.value == pytest.approx(oracle.value)
    assert found.low == pytest.approx(oracle.low, abs=0.02)
    assert found.high == pytest.approx(oracle.high, abs=0.02)


def test_a_ratio_with_too_many_distinct_rows_gets_the_normal_interval() -> None:
    rng = np.random.default_rng(1)
    scores = rng.random(GROUPED_LIMIT + 50)
    vectors = Counter((float(s), 1.0) for s in scores)
    found = resampled("mean", vectors, ratio(0, 1))
    n = len(scores)
    half = 1.959963984540054 * np.sqrt(n / (n - 1) * np.sum((scores - scores.mean()) ** 2)) / n
    assert found.method == "normal (ratio estimator)"
    assert found.value == pytest.approx(scores.mean())
    assert (found.low, found.high) == (pytest.approx(scores.mean() - half),
                                       pytest.approx(scores.mean() + half))  # fmt: skip
    none = _normal_ratio("mean", np.array([[0.0, 0.0]]), np.array([1]))
    assert (none.value, none.reason) == (None, "no graded rows")


def test_label_precision_and_recall_use_their_own_denominators() -> None:
    cells = {("a", "a"): 8, ("a", "b"): 2, ("b", "a"): 4, ("b", "b"): 6}
    found = {e.metric: e for e in label_estimates(cells, ["a", "b"])}
    precision = binomtest(8, 12).proportion_ci(method="wilson")
    recall = binomtest(8, 10).proportion_ci(method="wilson")
    assert found["precision.a"].low == pytest.approx(precision.low)
    assert found["recall.a"].high == pytest.approx(recall.high)
    empty = {e.metric: e for e in label_estimates({("a", "a"): 3}, ["a", "b"])}
    assert (empty["precision.b"].value, empty["precision.b"].reason) == (None, "no graded rows")
