"""``dataset.cluster_field`` end to end: checked when the rows are read, and every suite
interval (pass rate, a criterion's mean and accuracy) clustered by it in ``suite.json``,
``suite.md`` and ``experiment.json``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm

from tests.cli.test_run import assay, latest
from tests.helpers import write

# 36 rows in 12 stories of 3; the keyword agent passes a row when its text holds "good".
STORIES = 12
ROWS = [(f"r{i:02d}", f"s{i // 3}", "good" if (i // 3) % 2 == 0 or i % 3 == 0 else "bad")
        for i in range(STORIES * 3)]  # fmt: skip


def task(cluster_line: str, rows: list[tuple[str, str, str]] = ROWS) -> str:
    lines = "".join(f"    - {{id: {r}, story: {s}, text: '{t} {r}', label: positive}}\n"
                    for r, s, t in rows)  # fmt: skip
    return f"""\
task_id: toy
description: a keyword classifier on rows grouped by story
initial_prompt: "${{row.text}}"
agent:
  type: command
  command: 'case "$ASSAY_PROMPT" in *good*) echo positive;; *) echo negative;; esac'
dataset:
{cluster_line}  rows:
{lines}success_criteria:
  - type: classification_match
    expected_label: "${{row.label}}"
    allowed_labels: [positive, negative]
"""


def oracle(passed: list[float], groups: list[str]) -> float:
    codes = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    fit = sm.OLS(np.array(passed), np.ones(len(passed))).fit(
        cov_type="cluster", cov_kwds={"groups": np.array([codes[g] for g in groups])}
    )
    return float(fit.bse[0])


@pytest.mark.parametrize("clustered", [True, False])
def test_suite_intervals_are_clustered_by_the_field(tmp_path: Path, clustered: bool) -> None:
    write(tmp_path / "t.yaml", task("  cluster_field: story\n" if clustered else ""))
    done = assay("run", "t.yaml", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # no gate, and rows fail
    suite = json.loads((latest(tmp_path) / "default" / "toy" / "suite.json").read_text())
    passed = [1.0 if t == "good" else 0.0 for _, _, t in ROWS]
    groups = [s for _, s, _ in ROWS] if clustered else [r for r, _, _ in ROWS]
    found = suite["intervals"]["pass_rate"]
    assert found["value"] == pytest.approx(sum(passed) / len(passed))
    assert found["se"] == pytest.approx(oracle(passed, groups))
    assert found["clusters"] == (STORIES if clustered else len(ROWS))
    assert found["method"] == ("cluster exact" if clustered else "cluster t")
    assert suite["cluster_field"] == ("story" if clustered else None)
    accuracy = suite["criterion_aggregates"][0]["intervals"]["accuracy"]
    assert (
        accuracy["se"] == pytest.approx(found["se"]) and accuracy["clusters"] == found["clusters"]
    )
    markdown = (latest(tmp_path) / "default" / "toy" / "suite.md").read_text()
    assert "**Pass rate 95% CI**: [" in markdown
    assert ("rows clustered by `story`" in markdown) == clustered


def test_clustered_se_is_larger_than_the_row_one_on_grouped_outcomes(tmp_path: Path) -> None:
    ses = []
    for clustered in (True, False):
        folder = tmp_path / str(clustered)
        write(folder / "t.yaml", task("  cluster_field: story\n" if clustered else ""))
        assay("run", "t.yaml", cwd=folder)
        suite = json.loads((latest(folder) / "default" / "toy" / "suite.json").read_text())
        ses.append(suite["intervals"]["pass_rate"]["se"])
    assert ses[0] > 1.2 * ses[1]  # stories that pass or fail together


@pytest.mark.parametrize(
    ("story", "what"),
    [
        ("", "has '' for"),
        ("null", "has no"),
        ("[a, b]", "has a list for"),
        ("'  '", "has '  ' for"),
        ("true", "has True for"),
    ],
)
def test_a_row_without_its_cluster_value_is_refused_at_load(
    tmp_path: Path, story: str, what: str
) -> None:
    old = "story: s1, text: 'bad r04'"
    text = task("  cluster_field: story\n").replace(old, f"story: {story}, text: 'bad r04'")
    if story == "":
        text = text.replace("story: , text: 'bad r04'", "text: 'bad r04'")
        what = "has no"
    write(tmp_path / "t.yaml", text)
    done = assay("run", "t.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert f"Dataset row 4 for task 'toy' {what} dataset.cluster_field 'story'" in done.stderr
    assert "r04" in done.stderr and "t.yaml" in done.stderr
    assert "give every row a text or number 'story'" in done.stderr


def test_an_empty_cluster_field_name_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", task("  cluster_field: ''\n"))
    done = assay("run", "t.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "cluster_field" in done.stderr
