"""`assay run -e`, `assay plan -e` and `assay compare`, end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest

from assay.metrics.clustered import clustered_mean
from tests.cli.test_run import assay, finished, latest
from tests.helpers import write

TASK = """\
task_id: toy
description: a deterministic classifier per variant
initial_prompt: "${row.text}"
agent:
  type: command
  command: 'case "$ASSAY_PROMPT" in *good*) echo positive;; *) echo negative;; esac'

dataset:
  rows:
""" + "".join(
    f"    - {{id: r{i:02d}, text: '{'good' if i % 3 == 0 else 'bad'} {i}', label: positive}}\n"
    for i in range(12)
) + """\
success_criteria:
  - type: classification_match
    expected_label: "${row.label}"
    allowed_labels: [positive, negative]
"""  # fmt: skip

EXPERIMENT = """\
experiment_id: optimism
description: a classifier that always says positive against the keyword one
variants:
  - variant_id: keyword
  - variant_id: optimist
    agent: {command: "echo positive"}
"""


def setup(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", TASK)
    write(tmp_path / "experiments" / "optimism.yaml", EXPERIMENT)


def experiment(tmp_path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((latest(tmp_path) / "experiment.json").read_text())
    return data


def test_experiment_report_with_intervals_and_mcnemar(tmp_path: Path) -> None:
    setup(tmp_path)
    done = assay("run", "t.yaml", "-e", "optimism", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # no gate, and the keyword variant fails rows
    assert "toy [keyword]: 12 rows — 4 passed, 8 failed, 0 errored" in done.stdout
    assert "no gate · FAILED (no gate, and 8 failed (every row must succeed))" in done.stdout
    assert "toy [optimist]: 12 rows — 12 passed, 0 failed, 0 errored" in done.stdout
    assert "no gate · PASSED" in done.stdout
    report = experiment(tmp_path)
    assert report["variant_ids"] == ["keyword", "optimist"]
    assert report["row_ids"]["toy"] == [f"r{i:02d}" for i in range(12)]
    keyword, optimist = report["variants"]
    estimate = keyword["metrics"]["pass_rate"]
    assert estimate["value"] == pytest.approx(4 / 12)
    # 12 rows, each its own cluster (no cluster_field): fewer than 30, so the exact interval
    expected = clustered_mean({i: [1.0 if i < 4 else 0.0, 1.0] for i in range(12)},
                              proportion=True)  # fmt: skip
    assert (estimate["low"], estimate["high"]) == pytest.approx((expected.low, expected.high))
    assert estimate["method"] == "cluster exact" and estimate["clusters"] == 12
    assert estimate["se"] == pytest.approx(expected.se)
    assert optimist["metrics"]["pass_rate"]["value"] == 1.0
    comparison = report["comparisons"][0]
    assert comparison["mcnemar"]["a_only"] == 0 and comparison["mcnemar"]["b_only"] == 8
    assert comparison["mcnemar"]["p_value"] == pytest.approx(binomtest(0, 8, 0.5).pvalue)
    assert comparison["became_pass_total"] == 8
    first = comparison["became_pass"][0]
    assert first["row_id"] == "r01"
    assert (latest(tmp_path) / first["a_task_json"]).exists()
    difference = comparison["metrics"]["pass_rate"]
    assert difference["difference"] == pytest.approx(8 / 12)
    assert difference["low"] < difference["difference"] < difference["high"]
    markdown = (latest(tmp_path) / "experiment.md").read_text()
    assert "### `optimist` vs `keyword`" in markdown
    assert (latest(tmp_path) / "keyword" / "toy" / "suite.json").exists()
    assert (latest(tmp_path) / "optimist" / "toy" / "suite.json").exists()


def test_plan_shows_each_variant_and_where_values_came_from(tmp_path: Path) -> None:
    setup(tmp_path)
    done = assay("plan", "t.yaml", "-e", "optimism", "-D", "run_limits.task_timeout=9",
                 cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "variant optimist" in done.stdout
    assert 'agent.command = "echo positive"  (variant)' in done.stdout
    assert "run_limits.task_timeout = 9.0  (cli)" in done.stdout
    assert "Plan: 1 task file(s), 12 row-task(s), 2 variant(s), 24 work item(s)." in done.stdout
    assert "repeats = 1  (default)" in done.stdout
    done = assay("plan", "t.yaml", "-e", "optimism", "--repeats", "3", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    settings = [s for v in json.loads(done.stdout)["tasks"][0]["variants"] for s in v["settings"]
                if s["field"] == "repeats"]  # fmt: skip
    assert settings == [{"field": "repeats", "value": 3, "source": "cli"}] * 2
    done = assay("plan", "t.yaml", "-e", "optimism", "--repeats", "3", cwd=tmp_path)
    assert done.stdout.count("repeats = 3  (cli)") == 2, done.stdout  # each variant's


def test_replicates_give_pass_at_k(tmp_path: Path) -> None:
    setup(tmp_path)
    assert assay("run", "t.yaml", "--repeats", "3", cwd=tmp_path).returncode == 1  # no gate
    suite = json.loads((latest(tmp_path) / "default/toy/suite.json").read_text())
    assert suite["replicates"] == 3
    assert [r["replicate_index"] for r in suite["per_replicate"]] == [0, 1, 2]
    assert suite["pass_k"]["2"]["pass_at_k"] == pytest.approx(4 / 12)
    assert (latest(tmp_path) / "default/toy/r00/02/task.json").exists()
    markdown = (latest(tmp_path) / "default/toy/suite.md").read_text()
    assert "## Replicates (3)" in markdown and "| 02 | 4 / 12 | 0.333 |" in markdown
    assert "k=2: 0.333 / 0.333" in markdown


def test_compare_two_runs_and_refuse_different_rows(tmp_path: Path) -> None:
    setup(tmp_path)
    finished(assay("run", "t.yaml", "--run-dir", "a", cwd=tmp_path), tmp_path / "a/latest")
    done = assay("run", "t.yaml", "-D", "agent.command=echo positive", "--run-dir", "b",
                 cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr  # every row passes
    done = assay("compare", "a/latest", "b/latest", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "McNemar (exact, per-row pass/fail): 0 row(s)" in done.stdout
    data = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert data["comparisons"][0]["became_pass_total"] == 8
    done = assay("run", "t.yaml", "--sample", "5", "--run-dir", "c", cwd=tmp_path)
    finished(done, tmp_path / "c/latest")
    done = assay("compare", "a/latest", "c/latest", cwd=tmp_path)
    assert done.returncode == 2
    assert "suite 'toy' has different rows in the two runs" in done.stderr
    assert "only in A" in done.stderr


def test_compare_names_the_variant_flags_for_an_experiment_run(tmp_path: Path) -> None:
    setup(tmp_path)
    finished(assay("run", "t.yaml", "--run-dir", "a", cwd=tmp_path), tmp_path / "a/latest")
    done = assay("run", "t.yaml", "-e", "optimism", "--run-dir", "b", cwd=tmp_path)
    finished(done, tmp_path / "b/latest")
    done = assay("compare", "a/latest", "b/latest", cwd=tmp_path)
    assert done.returncode == 2
    assert "has variants ['keyword', 'optimist']; choose one with --variant-b NAME" in done.stderr
    chosen = assay("compare", "a/latest", "b/latest", "--variant-b", "optimist", cwd=tmp_path)
    assert chosen.returncode == 0, chosen.stderr


def test_a_misspelled_field_from_d_or_a_variant_gets_a_suggestion(tmp_path: Path) -> None:
    setup(tmp_path)
    done = assay("plan", "t.yaml", "-D", "agent.comand=echo x", cwd=tmp_path)
    assert done.returncode == 2
    assert "agent.comand: unknown field 'comand'" in done.stderr
    assert "did you mean 'command'?; set on the command line by -D agent.comand=echo x" in (
        done.stderr
    )
    write(tmp_path / "bad.yaml", "experiment_id: bad\nvariants:\n  - variant_id: v1\n"
          "    run_limits: {task_timout: 3}\n")  # fmt: skip
    done = assay("plan", "t.yaml", "-e", "bad.yaml", cwd=tmp_path)
    assert "unknown field 'task_timout'" in done.stderr
    assert "set by variant 'v1' of the experiment file" in done.stderr


def test_experiment_md_with_replicates_says_why_an_interval_is_missing(tmp_path: Path) -> None:
    setup(tmp_path)
    done = assay("run", "t.yaml", "-e", "optimism", "--repeats", "2", cwd=tmp_path)
    assert done.returncode == 1  # no gate, and rows failed
    markdown = (latest(tmp_path) / "experiment.md").read_text()
    assert ("| `classification_match.mean` | 0.333 [" in markdown
            and "| 1.000 (every resample gives the same value; no uncertainty can be "
            "estimated) |" in markdown)  # fmt: skip
    assert ("With replicates, a row passes when more than half of its graded replicates "
            "passed; the links go to its first replicate.") in markdown  # fmt: skip


LABELLED = """\
task_id: cx
description: each variant's answer is written in the row
agent: {type: command, command: 'printf "%s" "$ASSAY_PROMPT"'}
dataset: {paths: [data.jsonl]}
initial_prompt: "${row.A}"
success_criteria:
  - {type: classification_match, expected_label: "${row.expected}", allowed_labels: [a, b]}
"""


def test_a_paired_macro_f1_averages_both_arms_over_the_same_classes(tmp_path: Path) -> None:
    """One answer outside the labels added a class of F1 0 to that arm's average only, so
    an arm with fewer mistakes came out worse (a statistician's break-test: -0.170 where
    scikit-learn with one label set for both arms gives +0.144)."""
    from sklearn.metrics import f1_score

    truth = list("aaaaabbbbb")
    arm_a = list("aabaaabbbb")
    arm_b = [*"aaaaabbbb", "zzz"]
    write(tmp_path / "data.jsonl", "".join(
        json.dumps({"id": f"r{i:02d}", "expected": e, "A": a, "B": b}) + "\n"
        for i, (e, a, b) in enumerate(zip(truth, arm_a, arm_b, strict=True))))  # fmt: skip
    write(tmp_path / "t.yaml", LABELLED)
    write(tmp_path / "e.yaml", "experiment_id: cxab\nvariants:\n"
          '  - {variant_id: A, initial_prompt: "${row.A}"}\n'
          '  - {variant_id: B, initial_prompt: "${row.B}"}\n')  # fmt: skip
    assay("run", "t.yaml", "-e", "e.yaml", cwd=tmp_path)
    report = experiment(tmp_path)
    found = [v["metrics"]["classification_match.macro_f1"]["value"] for v in report["variants"]]
    expected = [f1_score(truth, arm, labels=["a", "b"], average="macro")
                for arm in (arm_a, [p if p in "ab" else "(other)" for p in arm_b])]  # fmt: skip
    assert found == pytest.approx(expected)  # 0.800 and 0.944
    (comparison,) = report["comparisons"]
    difference = comparison["metrics"]["classification_match.macro_f1"]
    assert difference["difference"] == pytest.approx(expected[1] - expected[0])  # +0.144
