"""Comparisons are like for like: each side's dataset is stated, and rows whose content differs
between the sides are flagged and left out of every paired statistic, never silently paired."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.reports.experiment import build_experiment
from assay.results.status import FinalStatus
from assay.store import Schema, open_store
from tests.cli.test_run import assay
from tests.helpers import write
from tests.reports.test_rollup import label_result, row

ROWS = [{"id": f"r{i}", "text": f"review {i}", "label": "positive" if i % 3 else "negative"}
        for i in range(9)]  # fmt: skip
TASK = """\
task_id: cmp
description: an agent that always says positive
initial_prompt: "${{row.text}}"
agent: {{type: command, command: 'echo positive'}}
dataset:
{dataset}
success_criteria:
  - type: classification_match
    expected_label: "${{row.label}}"
    allowed_labels: [positive, negative]
"""


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def report(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "compare.json").read_text())
    return data


def test_a_gold_label_edited_between_two_runs_is_not_paired(tmp_path: Path) -> None:
    """The issue's example: same row ids, one gold label changed; the comparison reported a
    paired difference, McNemar and "row became a failure" without a word."""
    write(tmp_path / "t.yaml", TASK.format(dataset="  paths: [rows.jsonl]"))
    write(tmp_path / "rows.jsonl", jsonl(ROWS))
    assay("run", "t.yaml", "-q", "--run-dir", "a", cwd=tmp_path)
    edited = [{**r, "label": "negative"} if r["id"] == "r1" else r for r in ROWS]
    write(tmp_path / "rows.jsonl", jsonl(edited))
    assay("run", "t.yaml", "-q", "--run-dir", "b", cwd=tmp_path)
    done = assay("compare", "a/latest", "b/latest", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = report(tmp_path / "out")
    assert data["excluded_rows"] == {"cmp": ["r1"]}
    (pair,) = data["comparisons"]
    assert pair["rows"] == len(ROWS) - 1
    assert pair["became_fail"] == [] and pair["mcnemar"]["a_only"] == 0  # r1 is not a flip
    assert pair["mcnemar"]["p_value"] == 1.0  # no discordant row
    (a, b) = data["datasets"]
    assert a["dataset"]["content_hash"] != b["dataset"]["content_hash"]
    text = done.stdout
    assert "**The arms read different datasets**" in text
    assert ("**1 row(s) left out of every metric and paired statistic**: their content "
            "differs between the arms (`r1`).") in text  # fmt: skip
    assert f"rows.jsonl (hash {a['dataset']['content_hash'][:12]})" in text
    for variant in data["variants"]:  # both arms' metrics are over the same 8 rows
        assert variant["rows"] == len(ROWS) - 1


def test_store_versions_are_stated_and_a_changed_example_is_left_out(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.create_dataset("reviews", Schema({"text": "string", "label": "string"}))
        store.add("reviews", ROWS)
        store.remove("reviews", ["r2"])
        store.add("reviews", [{"id": "r2", "text": "review 2", "label": "negative"}])
    for version, folder in ((1, "a"), (3, "b")):
        dataset = f"  store: reviews\n  version: {version}"
        write(tmp_path / "t.yaml", TASK.format(dataset=dataset))
        assay("run", "t.yaml", "-q", "--store", url, "--run-dir", folder, cwd=tmp_path)
    done = assay("compare", "a/latest", "b/latest", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "store reviews@1 (hash" in done.stdout and "store reviews@3 (hash" in done.stdout
    assert report(tmp_path / "out")["excluded_rows"] == {"cmp": ["r2"]}


def test_two_variants_of_one_run_are_labelled_by_variant(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", TASK.format(dataset="  paths: [rows.jsonl]"))
    write(tmp_path / "rows.jsonl", jsonl(ROWS))
    write(tmp_path / "e.yaml", "experiment_id: e\nvariants:\n  - variant_id: pos\n"
          "  - variant_id: neg\n    agent: {command: 'echo negative'}\n")  # fmt: skip
    assay("run", "t.yaml", "-e", "e.yaml", "-q", cwd=tmp_path)
    done = assay("compare", "runs/latest", "runs/latest", "--variant-a", "pos",
                 "--variant-b", "neg", "-o", "out", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = report(tmp_path / "out")["variant_ids"]
    run = (tmp_path / "runs" / "latest").resolve().name
    assert names == [f"A:{run}/pos", f"B:{run}/neg"]


def test_different_sample_sizes_are_named_as_the_cause(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", TASK.format(dataset="  paths: [rows.jsonl]"))
    write(tmp_path / "rows.jsonl", jsonl(ROWS))
    assay("run", "t.yaml", "--sample", "3", "-q", "--run-dir", "a", cwd=tmp_path)
    assay("run", "t.yaml", "--sample", "5", "-q", "--run-dir", "b", cwd=tmp_path)
    done = assay("compare", "a/latest", "b/latest", cwd=tmp_path)
    assert done.returncode == 2
    assert "the runs' selections differ in --sample: A 3, B 5" in done.stderr
    assert "seeded" not in done.stderr


def test_an_experiment_never_pairs_rows_whose_content_differs() -> None:
    a = [row(i, FinalStatus.SUCCESS, [label_result("x", "x")]) for i in range(3)]
    b = [row(i, FinalStatus.FAILURE, [label_result("x", "y")]) for i in range(3)]
    for result in a:
        result.row = {"id": result.row_id, "label": "x"}
    for result in b:
        result.row = {"id": result.row_id, "label": "x" if result.row_id != "r02" else "z"}
        result.variant_id = "v2"
    found = build_experiment([*a, *b], {}, experiment_id="e", description="",
                             variant_ids=["default", "v2"],
                             row_ids={a[0].suite_id or "": ["r01", "r02", "r03"]})  # fmt: skip
    suite = a[0].suite_id or ""
    assert found.excluded_rows == {suite: ["r02"]}
    (pair,) = found.comparisons
    assert pair.rows == 2 and pair.mcnemar.a_only == 2
    assert {f.row_id for f in pair.became_fail} == {"r01", "r03"}
