"""``assay plan --power DELTA``: rows per variant from stated assumptions or measured on an
earlier run, checked against statsmodels' power functions."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

import assay
from assay.errors import UsageError
from tests.cli.test_experiment_run import setup
from tests.cli.test_run import assay as run_cli
from tests.cli.test_run import latest


def rows_needed_line(stdout: str) -> int:
    found = re.search(r"rows needed per variant: (\d+)", stdout)
    assert found, stdout
    return int(found.group(1))


@pytest.mark.parametrize(("rate", "rho", "delta"), [(0.5, 0.0, 0.1), (0.7, 0.5, 0.1),
                                                     (0.3, 0.8, 0.05)])  # fmt: skip
def test_rows_needed_from_stated_assumptions(tmp_path: Path, rate: float, rho: float,
                                             delta: float) -> None:  # fmt: skip
    setup(tmp_path)
    done = run_cli("plan", "t.yaml", "--power", str(delta), "--baseline-rate", str(rate),
                   "--correlation", str(rho), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    sd = math.sqrt(2 * rate * (1 - rate) * (1 - rho))
    solved = TTestPower().solve_power(effect_size=delta / sd, alpha=0.05, power=0.8)
    assert rows_needed_line(done.stdout) == math.ceil(solved)
    planned_power = TTestPower().power(effect_size=delta / sd, nobs=12, alpha=0.05)
    assert f"as planned (12 rows per variant): power {planned_power:.3f}" in done.stdout


def test_rows_needed_measured_on_an_experiment_run(tmp_path: Path) -> None:
    setup(tmp_path)
    assert run_cli("run", "t.yaml", "-e", "optimism", cwd=tmp_path).returncode == 1
    run_dir = latest(tmp_path)
    done = run_cli("plan", "t.yaml", "--power", "0.2", "--baseline-run", str(run_dir),
                   cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((run_dir / "experiment.json").read_text())
    # per row: keyword passes the "good" rows (every third), optimist passes all
    a = np.array([1.0 if i % 3 == 0 else 0.0 for i in range(12)])
    b = np.ones(12)
    assert report["variants"][0]["metrics"]["pass_rate"]["value"] == pytest.approx(a.mean())
    sd = float(np.std(b - a, ddof=1))
    solved = TTestPower().solve_power(effect_size=0.2 / sd, alpha=0.05, power=0.8)
    assert rows_needed_line(done.stdout) == math.ceil(solved)
    assert "measured on" in done.stdout and "optimist vs keyword" in done.stdout
    found = assay.power(0.2, rows_planned=12, baseline_run=run_dir, target_power=0.9)
    assert found.rows_needed == math.ceil(
        TTestPower().solve_power(effect_size=0.2 / sd, alpha=0.05, power=0.9)
    )
    assert found.minimum_detectable == pytest.approx(
        TTestPower().solve_power(nobs=12, alpha=0.05, power=0.9) * sd, rel=1e-4
    )


def test_clusters_of_a_baseline_run_raise_the_rows_needed(tmp_path: Path) -> None:
    from tests.cli.test_clustered_run import task
    from tests.helpers import write

    counts = []
    for clustered in (True, False):
        folder = tmp_path / str(clustered)
        write(folder / "t.yaml", task("  cluster_field: story\n" if clustered else ""))
        run_cli("run", "t.yaml", cwd=folder)
        found = assay.power(0.1, baseline_run=latest(folder), correlation=0.5)
        counts.append((found.rows_needed, found.design.design_effect))
    (clustered_rows, deff), (plain_rows, plain_deff) = counts
    assert plain_deff == 1.0 and deff > 1.2
    assert clustered_rows is not None and plain_rows is not None
    assert clustered_rows > 1.2 * plain_rows


def test_a_baseline_is_required_and_one_variant_needs_a_correlation(tmp_path: Path) -> None:
    setup(tmp_path)
    done = run_cli("plan", "t.yaml", "--power", "0.1", cwd=tmp_path)
    assert done.returncode == 2
    assert "--power needs a baseline: --baseline-run RUN_DIR" in done.stderr
    run_cli("run", "t.yaml", cwd=tmp_path)
    done = run_cli("plan", "t.yaml", "--power", "0.1", "--baseline-run", str(latest(tmp_path)),
                   cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    assert "has one variant, so the pairing correlation cannot be measured" in done.stderr
    assert "give --correlation" in done.stderr
    bad = run_cli("plan", "t.yaml", "--power", "-0.1", "--baseline-rate", "0.5", cwd=tmp_path)
    assert bad.returncode == 2 and "--power must be a pass-rate difference" in bad.stderr


@pytest.mark.parametrize(("keywords", "says"), [
    ({"delta": 0.05, "baseline_rate": 0.7, "correlation": 1.0},
     "--correlation must be at least -0.429 and below 1 at a pass rate of 0.7, got 1"),
    ({"delta": 0.05, "baseline_rate": 0.7, "correlation": -1.0},
     "--correlation must be at least -0.429 and below 1 at a pass rate of 0.7, got -1"),
    ({"delta": 0.05, "baseline_rate": 1.0}, "--baseline-rate must be between 0 and 1, got 1"),
    ({"delta": 0.05, "baseline_rate": 0.0}, "--baseline-rate must be between 0 and 1, got 0"),
    ({"delta": 1.5, "baseline_rate": 0.5},
     "--power must be a pass-rate difference in (0, 1], got 1.5"),
])  # fmt: skip
def test_a_design_that_cannot_be_is_refused(keywords: dict[str, float], says: str) -> None:
    """It answered "2 rows, power 1.000" (a correlation of 1 leaves no variance; two 70%
    pass/fail outcomes cannot correlate below -0.43; a rate of 0 or 1 has no difference to
    find; a pass rate differs by 1 at most)."""
    with pytest.raises(UsageError) as caught:
        assay.power(**keywords)  # type: ignore[arg-type]
    assert caught.value.message == says
    assert assay.power(0.05, baseline_rate=0.7, correlation=-0.4).rows_needed is not None


REPLICATED = """\
task_id: rep
description: each replicate's outcome is written in the row
agent: {type: command, command: 'printf "%s" "$ASSAY_PROMPT" | cut -c$((ASSAY_REPLICATE + 1))'}
dataset: {paths: [data.jsonl]}
initial_prompt: "${row.A}"
success_criteria: [{type: response_match, expected: "P"}]
"""

ARMS = """\
experiment_id: arms
variants:
  - {variant_id: a, initial_prompt: "${row.A}"}
  - {variant_id: b, initial_prompt: "${row.B}"}
"""


def test_a_design_replanned_for_more_replicates_keeps_the_arms_covariance(tmp_path: Path) -> None:
    """Replanning a 2-replicate run for 4 replicates shrank each arm's deviation but kept the
    measured correlation, which changed the arms' covariance (it does not depend on R)."""
    from tests.helpers import write

    outcomes = [("PP", "PP"), ("PF", "PP"), ("FF", "PF"), ("PP", "FP"), ("FF", "FF"),
                ("PF", "PF"), ("FP", "PP"), ("PP", "PP"), ("FF", "FP"), ("FF", "PP"),
                ("PF", "FF"), ("PP", "PF")]  # fmt: skip
    rows = [{"id": f"r{i:02d}", "A": a, "B": b} for i, (a, b) in enumerate(outcomes)]
    write(tmp_path / "data.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    write(tmp_path / "t.yaml", REPLICATED)
    write(tmp_path / "arms.yaml", ARMS)
    run_cli("run", "t.yaml", "-e", "arms.yaml", "--repeats", "2", cwd=tmp_path)
    found = assay.power(0.1, baseline_run=latest(tmp_path), replicates=4)
    passes = np.array([[[c == "P" for c in arm] for arm in pair] for pair in outcomes], float)
    xa, xb = passes[:, 0].mean(axis=1), passes[:, 1].mean(axis=1)
    within = passes.var(axis=2, ddof=1).mean()  # every row has 2 replicates in both arms
    sd_a2 = np.var(xa, ddof=1) - within / 2 + within / 4
    sd_b2 = np.var(xb, ddof=1) - within / 2 + within / 4
    sd_d = math.sqrt(sd_a2 + sd_b2 - 2 * np.cov(xa, xb, ddof=1)[0, 1])
    assert found.design.sd_a == pytest.approx(math.sqrt(sd_a2))
    solved = TTestPower().solve_power(effect_size=0.1 / sd_d, alpha=0.05, power=0.8)
    assert found.rows_needed == math.ceil(solved)


def test_suite_md_says_why_the_pass_rate_and_pass_at_1_differ(tmp_path: Path) -> None:
    """Replicates lost unevenly to errors weigh rows unevenly in the pooled pass rate, and
    nothing said why it differed from pass@1 (a statistician's break-test: 0.478 and 0.524)."""
    from tests.helpers import write

    outcomes = ["PPPP", "PFFF", "FFFF", "PPEE", "PFEE", "EEEE", "PPFE", "FFFP"]
    write(tmp_path / "data.jsonl", "".join(json.dumps({"id": f"r{i}", "A": o}) + "\n"
                                           for i, o in enumerate(outcomes)))  # fmt: skip
    write(
        tmp_path / "t.yaml",
        REPLICATED.replace(
            "cut -c$((ASSAY_REPLICATE + 1))'", "cut -c$((ASSAY_REPLICATE + 1)) | grep -v E'"
        ),
    )
    run_cli("run", "t.yaml", "--repeats", "4", cwd=tmp_path)
    suite = json.loads((latest(tmp_path) / "default/rep/suite.json").read_text())
    graded = [o.replace("E", "") for o in outcomes if o.replace("E", "")]
    pooled = sum(o.count("P") for o in graded) / sum(len(o) for o in graded)
    per_row = sum(o.count("P") / len(o) for o in graded) / len(graded)
    assert suite["pass_rate"] == pytest.approx(pooled)  # 11 / 24
    assert suite["pass_k"]["1"]["pass_at_k"] == pytest.approx(per_row)
    markdown = (latest(tmp_path) / "default/rep/suite.md").read_text()
    assert (
        f"The pass rate ({pooled:.3f}) pools every graded replicate, so a row with more "
        f"graded replicates weighs more; pass@1 ({per_row:.3f}) is the mean"
    ) in markdown
