"""Cluster-robust errors against statsmodels' ``cov_type='cluster'`` OLS on real grouped data
(CosmosQA questions grouped by their story), plus the edge cases."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.stats import beta

from assay.metrics.clustered import (
    CLUSTER_EXACT,
    CLUSTER_T,
    MIN_CLUSTERS,
    ClusterSums,
    cluster_totals,
    clustered_difference,
    clustered_mean,
)

DATA = Path(__file__).parent / "data" / "cosmosqa_valid_first300.csv"


def _rows() -> list[dict[str, str]]:
    with DATA.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _oracle(values: list[float], groups: list[str]) -> tuple[float, float, float, float]:
    codes = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    fit = sm.OLS(np.array(values), np.ones(len(values))).fit(
        cov_type="cluster", cov_kwds={"groups": np.array([codes[g] for g in groups])},
        use_t=True,
    )  # fmt: skip
    low, high = fit.conf_int(alpha=0.05)[0]
    return float(fit.params[0]), float(fit.bse[0]), float(low), float(high)


def _variables(row: dict[str, str]) -> dict[str, float]:
    return {
        "label_is_0": float(row["label"] == "0"),
        "question_words": float(len(row["question"].split())),
        "answer0_words": float(len(row["answer0"].split())),
    }


@pytest.mark.parametrize("name", ["label_is_0", "question_words", "answer0_words"])
@pytest.mark.parametrize("limit", [60, 300])
def test_mean_equals_statsmodels_cluster_ols_on_cosmosqa_stories(name: str, limit: int) -> None:
    rows = _rows()[:limit]
    values = [_variables(r)[name] for r in rows]
    groups = [r["context"] for r in rows]
    mean, se, low, high = _oracle(values, groups)
    found = clustered_mean(cluster_totals(zip(groups, values, strict=True)))
    assert found.clusters == len(set(groups)) and found.observations == limit
    assert found.value == pytest.approx(mean, rel=1e-12)
    assert found.se == pytest.approx(se, rel=1e-9)
    assert found.method == CLUSTER_T
    assert (found.low, found.high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))


def test_clustered_error_exceeds_the_naive_one_when_stories_share_an_outcome() -> None:
    # The story's length is the same for every question of a story: a cluster-level variable,
    # whose clustered SE must be larger than the iid one (a design effect above 1).
    rows = _rows()
    values = [float(len(r["context"].split())) for r in rows]
    groups = [r["context"] for r in rows]
    found = clustered_mean(cluster_totals(zip(groups, values, strict=True)))
    naive = float(np.std(values, ddof=1) / np.sqrt(len(values)))
    assert found.se is not None and found.se > 1.1 * naive
    assert found.se == pytest.approx(_oracle(values, groups)[1], rel=1e-9)


@pytest.mark.parametrize("name", ["label_is_0", "question_words"])
def test_paired_difference_equals_clustered_ols_of_the_row_differences(name: str) -> None:
    rows = _rows()
    a = [_variables(r)[name] for r in rows]
    b = [float(r["label"] == "1") if name == "label_is_0" else float(len(r["answer1"].split()))
         for r in rows]  # fmt: skip
    groups = [r["context"] for r in rows]
    diff, se, low, high = _oracle([y - x for x, y in zip(a, b, strict=True)], groups)
    found = clustered_difference(cluster_totals(zip(groups, a, strict=True)),
                                 cluster_totals(zip(groups, b, strict=True)))  # fmt: skip
    assert found.value == pytest.approx(diff, rel=1e-12, abs=1e-15)
    assert found.se == pytest.approx(se, rel=1e-9)
    assert (found.low, found.high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))


def test_replicates_of_a_row_are_one_cluster() -> None:
    # 40 rows, 3 replicates each: the replicates are the cluster, the oracle groups by row.
    rng = np.random.default_rng(7)
    rows = [f"r{i}" for i in range(40)]
    values, groups = [], []
    for row in rows:
        p = rng.uniform()
        for _ in range(3):
            values.append(float(rng.uniform() < p))
            groups.append(row)
    found = clustered_mean(cluster_totals(zip(groups, values, strict=True)), proportion=True)
    _, se, low, high = _oracle(values, groups)
    assert found.clusters == 40 >= MIN_CLUSTERS and found.observations == 120
    assert found.se == pytest.approx(se, rel=1e-9)
    assert found.low == pytest.approx(max(0.0, low)) and found.high == pytest.approx(min(1.0, high))


def test_hand_case() -> None:
    # clusters (y, n): (2, 2), (0, 1), (1, 3); m = 3/6 = 0.5
    # residual totals: 2-1=1, 0-0.5=-0.5, 1-1.5=-0.5 → Σ² = 1.5; V = 3/2 · 1.5 / 36 = 1/16
    found = clustered_mean({"a": [2, 2], "b": [0, 1], "c": [1, 3]})
    assert found.value == 0.5 and found.se == pytest.approx(0.25)
    from scipy.stats import t

    half = float(t.ppf(0.975, 2)) * 0.25
    assert (found.low, found.high) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))


def test_one_cluster_has_no_interval() -> None:
    found = clustered_mean({"only": [3.0, 5.0]}, proportion=True)
    assert found.value == 0.6 and found.low is None and found.high is None
    assert found.clusters == 1 and "at least 2 clusters" in (found.reason or "")
    diff = clustered_difference({"only": [1, 2]}, {"only": [2, 2]})
    assert diff.value == 0.5 and diff.low is None and "at least 2 clusters" in (diff.reason or "")


def test_empty_and_excluded_rows() -> None:
    empty = clustered_mean({})
    assert empty.value is None and empty.reason == "no graded rows" and empty.clusters == 0
    sums = ClusterSums()
    sums.add("errored", 0.0, 0.0)  # a row whose every replicate errored: outside everything
    sums.add("x", 1.0)
    sums.add("y", 0.0)
    found = sums.estimate()
    assert found.clusters == 2 and found.observations == 2 and found.value == 0.5
    assert clustered_difference({}, {"x": [1, 1]}).reason == "an arm has no graded rows"


def test_all_equal_values_of_a_mean_have_no_interval() -> None:
    found = clustered_mean({f"c{i}": [0.7 * 2, 2] for i in range(50)})
    assert found.value == pytest.approx(0.7) and found.se == 0.0
    assert found.low is None and "the same" in (found.reason or "")
    same = clustered_difference({f"c{i}": [0, 1] for i in range(9)},
                                {f"c{i}": [1, 1] for i in range(9)})  # fmt: skip
    assert same.value == 1.0 and same.low is None and "the same" in (same.reason or "")


def test_a_proportion_of_all_passes_keeps_an_exact_interval_on_its_clusters() -> None:
    found = clustered_mean({f"c{i}": [2, 2] for i in range(40)}, proportion=True)
    assert found.method == CLUSTER_EXACT and found.high == 1.0
    # Clopper–Pearson on G = 40 clusters, scaled by (t_{79}/t_{39})² for the degrees of freedom
    from scipy.stats import t

    effective = 40 * (t.ppf(0.975, 79) / t.ppf(0.975, 39)) ** 2
    assert found.low == pytest.approx(beta.ppf(0.025, effective, 1))
    assert 0.85 < (found.low or 0) < 1


@pytest.mark.parametrize("clusters", [3, 10, 29])
def test_few_clusters_use_the_korn_graubard_interval(clusters: int) -> None:
    rng = np.random.default_rng(clusters)
    totals = {f"c{i}": [float(rng.integers(0, 4)), 3.0] for i in range(clusters)}
    found = clustered_mean(totals, proportion=True)
    assert found.method == CLUSTER_EXACT and found.se is not None and found.value is not None
    m, n, g = found.value, 3.0 * clusters, clusters
    from scipy.stats import t

    eff = min(n, m * (1 - m) / found.se**2) * (t.ppf(0.975, n - 1) / t.ppf(0.975, g - 1)) ** 2
    x = m * eff
    assert found.low == pytest.approx(beta.ppf(0.025, x, eff - x + 1))
    assert found.high == pytest.approx(beta.ppf(0.975, x + 1, eff - x))
    assert 0.0 <= (found.low or 0) < m < (found.high or 0) <= 1.0


def test_bad_confidence_is_refused() -> None:
    with pytest.raises(ValueError, match="confidence"):
        clustered_mean({"a": [1, 1]}, confidence=1.0)


def test_a_mean_of_unit_scores_keeps_its_interval_inside_0_1() -> None:
    totals = {"a": [1.0, 1.0], "b": [1.0, 1.0], "c": [0.0, 1.0]}
    loose = clustered_mean(totals)
    bounded = clustered_mean(totals, unit=True)
    assert loose.low is not None and loose.high is not None and loose.high > 1.0
    assert (bounded.low, bounded.high) == (max(0.0, loose.low), 1.0)


def test_preload_loads_scipy_special_on_a_thread_of_its_own() -> None:
    # a real process: whether scipy.special is loaded is process-wide
    import subprocess
    import sys

    probe = (
        "import sys, threading\n"
        "from assay.metrics.clustered import preload\n"
        "assert 'scipy.special' not in sys.modules\n"
        "preload()\n"
        "[t.join() for t in threading.enumerate() if t.name == 'assay-preload']\n"
        "preload()  # loaded: no second thread\n"
        "print('scipy.special' in sys.modules,\n"
        "      [t.name for t in threading.enumerate() if t.name == 'assay-preload'])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.split() == ["True", "[]"], done.stderr
