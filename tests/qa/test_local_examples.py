"""Every examples/qa task, really run on local/smollm2 (a few rows), and the local model as a
judge: the files each stage writes, and grades that come from the model's actual text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_run import EXAMPLES, assay, latest

pytestmark = pytest.mark.local_model

SUITES = {"cosmosqa": "cosmosqa-mc", "gsm8k": "gsm8k", "nq_open": "nq-open",
          "squad_v2": "squad-v2-sample"}  # fmt: skip


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_qa_example_on_a_few_real_rows(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "qa", tmp_path / "qa")
    done = assay("run", "qa", "--sample", "2", "--repeats", "1", "-j", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = latest(tmp_path)
    for folder, suite in SUITES.items():
        records = read_jsonl(run_dir / "default" / suite / "prediction.jsonl")
        assert len(records) == 2
        assert all(r["model"] == "local/smollm2" and r["error"] is None for r in records)
        document = json.loads((run_dir / "default" / suite / "metrics.json").read_text())
        (metrics,) = document["all_metrics"]
        assert (metrics["total"], metrics["graded"], metrics["judge_errors"]) == (2, 2, 0), folder
        for record, result in zip(records, metrics["per_sample_results"], strict=True):
            assert result["sample_id"] == record["sample_id"]
            assert result["graded_by"] == "rule"  # no example has a judge
        if folder == "cosmosqa":  # the 3-shot prompt gets a bare letter every time
            assert metrics["extraction_failed"] == 0
            assert all(r["extracted"] for r in metrics["per_sample_results"])


def test_local_model_as_judge(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "qa" / "nq_open", tmp_path / "nq")
    done = assay("run", "nq/task.yaml", "--sample", "2", "-D", "qa.judge.model=local/smollm2",
                 cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    # SmolLM2-135M accepts "Berlin" as the capital of France: the run says so
    assert "failed its sanity check" in " ".join(done.stderr.split())
    document = json.loads((latest(tmp_path) / "default/nq-open/metrics.json").read_text())
    assert document["judge"] == "local/smollm2"
    results = document["all_metrics"][0]["per_sample_results"]
    judged = [r for r in results if r["graded_by"] == "judge"]
    assert judged, "the model's answers should not match an alias exactly"
    assert all(r["is_correct"] is not None and r["judge_attempts"] >= 1 for r in judged)
