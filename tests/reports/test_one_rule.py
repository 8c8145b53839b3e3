"""One rule for what did not grade, in every report: generated rows, real runs, oracles.

Rows are generated with every outcome a row can have (graded right or wrong, a refusal, an
agent error, a folder left where a criterion reads a file: a failing 0.0, not an error; a
judge that cannot give a verdict is tests/criteria/test_judge.py's) and run for real (a
command agent, the real criteria, the real writers). Every average and rate of every report
(``suite.json``, ``suite.md``, ``run.json``, JUnit, ``experiment.json``, ``assay compare``) is
then checked against an oracle computed here from the generated rows alone: what did not
grade is outside every denominator and average, and counted apart.
"""

from __future__ import annotations

import json
import random
import statistics
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import accuracy_score

from tests.cli.test_run import assay, latest
from tests.helpers import write

LABELS = ("positive", "negative")
REFUSAL = "I'm sorry, but I can't help with that."
KINDS = ("ok", "ok", "ok", "ref", "err", "dir")
AGENT = r"""
set -e
kind="${ASSAY_PROMPT%%|*}"; rest="${ASSAY_PROMPT#*|}"; answer="${rest%%|*}"; file="${rest#*|}"
case "$kind" in
  err) echo "agent broke" >&2; exit 3;;
  dir) mkdir answer.txt; echo "$answer";;
  ref) printf '%s' "$file" > answer.txt; echo "I'm sorry, but I can't help with that.";;
  *) printf '%s' "$file" > answer.txt; echo "$answer";;
esac
"""
TASK = """\
task_id: {suite}
description: generated outcomes
initial_prompt: "${{row.kind}}|${{row.answer}}|${{row.file}}"
agent: {{type: command, command: {command}}}
dataset:
  paths: [{suite}.jsonl]
success_criteria:
  - type: classification_match
    expected_label: "${{row.label}}"
    allowed_labels: [positive, negative]
{gate}  - type: file_check
    path: answer.txt
    includes: ["${{row.label}}"]
    weight: 0.5
"""


@dataclass(frozen=True)
class Row:
    row_id: str
    kind: str
    label: str
    answer: str
    file: str

    @property
    def status(self) -> str:
        if self.kind == "err":
            return "ERROR"  # the agent failed
        if self.kind == "dir":  # a folder where the file should be: what the agent left,
            return "FAILURE"  # a failing 0.0, never an error that leaves the averages
        if self.kind == "ref":
            return "REFUSED"
        return "SUCCESS" if self.answer == self.label and self.label in self.file else "FAILURE"

    @property
    def label_score(self) -> float | None:
        """classification_match's score when it graded (it reads the response)."""
        return None if self.kind in ("err", "ref") else float(self.answer == self.label)

    @property
    def file_score(self) -> float | None:
        """file_check's score when it graded (it reads answer.txt)."""
        if self.kind == "dir":
            return 0.0
        return None if self.kind == "err" else float(self.label in self.file)


def generate(seed: int, size: int) -> list[Row]:
    rng = random.Random(seed)
    rows = []
    for index in range(size):
        label = rng.choice(LABELS)
        rows.append(Row(f"r{index:03d}", rng.choice(KINDS), label, rng.choice(LABELS),
                        rng.choice([label, "other", f"{label} and more"])))  # fmt: skip
    return rows


class Oracle:
    """Every number of one suite, computed from the generated rows alone."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows
        statuses = [r.status for r in rows]
        self.passed = statuses.count("SUCCESS")
        self.failed = statuses.count("FAILURE")
        self.error = statuses.count("ERROR")
        self.refused = statuses.count("REFUSED")
        self.graded = self.passed + self.failed
        self.pass_rate = self.passed / self.graded if self.graded else None
        answered = self.graded + self.refused
        self.refusal_rate = self.refused / answered if answered else None
        scores = [((r.label_score or 0) * 1 + (r.file_score or 0) * 0.5) / 1.5
                  for r in rows if r.status in ("SUCCESS", "FAILURE")]  # fmt: skip
        self.average_weighted_score = statistics.fmean(scores) if scores else None
        self.label_scores = [r.label_score for r in rows if r.label_score is not None]
        self.file_scores = [r.file_score for r in rows if r.file_score is not None]
        pairs = [(r.label, r.answer) for r in rows if r.label_score is not None]
        self.accuracy = accuracy_score([e for e, _ in pairs], [o for _, o in pairs])


def write_suite(folder: Path, suite: str, rows: list[Row], *, gate: str = "") -> Path:
    write(folder / f"{suite}.jsonl", "".join(
        json.dumps({"id": r.row_id, "kind": r.kind, "label": r.label, "answer": r.answer,
                    "file": r.file}) + "\n" for r in rows))  # fmt: skip
    return write(folder / f"{suite}.yaml",
                 TASK.format(suite=suite, command=json.dumps(AGENT), gate=gate))  # fmt: skip


def approx(value: float | None) -> Any:
    return None if value is None else pytest.approx(value)


def check_suite_json(suite: dict[str, Any], oracle: Oracle) -> None:
    counts = (suite["rows_passed"], suite["rows_failed"], suite["rows_error"],
              suite["rows_refused"], suite["rows_graded"], suite["rows_total"])  # fmt: skip
    assert counts == (oracle.passed, oracle.failed, oracle.error, oracle.refused, oracle.graded,
                      len(oracle.rows))  # fmt: skip
    assert suite["pass_rate"] == approx(oracle.pass_rate)
    assert suite["refusal_rate"] == approx(oracle.refusal_rate)
    assert suite["average_weighted_score"] == approx(oracle.average_weighted_score)
    stats = {s["criterion_type"]: s for s in suite["criterion_stats"]}
    label, file = stats["classification_match"], stats["file_check"]
    assert label["rows_evaluated"] == len(oracle.label_scores)
    assert label["average_score"] == approx(statistics.fmean(oracle.label_scores))
    assert (label["error_count"], label["refused_count"]) == (0, oracle.refused)
    assert file["rows_evaluated"] == len(oracle.file_scores)
    assert file["average_score"] == approx(statistics.fmean(oracle.file_scores))
    assert (file["error_count"], file["refused_count"]) == (0, 0)
    classify, check = suite["criterion_aggregates"]
    assert classify["metrics"]["accuracy"] == approx(oracle.accuracy)
    assert classify["metrics"]["mean"] == approx(statistics.fmean(oracle.label_scores))
    assert classify["metrics"]["completion_rate"] == approx(
        len(oracle.label_scores) / len(oracle.rows)
    )
    assert classify["details"].get("refused", 0) == oracle.refused
    assert check["metrics"]["mean"] == approx(statistics.fmean(oracle.file_scores))
    assert check["details"].get("criterion_errors", 0) == 0


def check_suite_md(text: str, oracle: Oracle) -> None:
    assert (f"**Pass rate**: {100 * oracle.passed / oracle.graded:.1f}% "
            f"({oracle.passed}/{oracle.graded})") in text  # fmt: skip
    assert f"**Average weighted score**: {oracle.average_weighted_score:.3f}" in text
    answered = oracle.graded + oracle.refused
    assert (f"**Refusal rate**: {100 * oracle.refused / answered:.1f}% "
            f"({oracle.refused}/{answered})") in text  # fmt: skip
    assert (
        f"| `classification_match` | {len(oracle.label_scores)} | "
        f"{statistics.fmean(oracle.label_scores):.3f} | 0 | {oracle.refused} |"
    ) in text


def check_junit(path: Path, oracles: dict[str, Oracle]) -> None:
    root = ET.parse(path).getroot()
    for suite in root.iter("testsuite"):
        oracle = oracles[suite.get("name", "")]
        assert int(suite.get("failures", -1)) == oracle.failed
        assert int(suite.get("errors", -1)) == oracle.error + oracle.refused
        refused = [
            c
            for c in suite.iter("testcase")
            if (e := c.find("error")) is not None and e.get("type") == "REFUSED"
        ]
        assert len(refused) == oracle.refused


SEEDS = [1, 2, 3]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_report_counts_what_did_not_grade_apart(tmp_path: Path, seed: int) -> None:
    oracles = {}
    for offset, suite in enumerate(("alpha", "beta")):
        rows = generate(seed * 10 + offset, 24 + 6 * offset)
        write_suite(tmp_path, suite, rows)
        oracles[suite] = Oracle(rows)
    done = assay("run", "alpha.yaml", "beta.yaml", "--junit-xml", "junit.xml", "-q",
                 cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stderr  # no gate, and rows did not succeed
    run_dir = latest(tmp_path)
    for suite, oracle in oracles.items():
        check_suite_json(json.loads((run_dir / "default" / suite / "suite.json").read_text()),
                         oracle)  # fmt: skip
        check_suite_md((run_dir / "default" / suite / "suite.md").read_text(), oracle)
        statuses = {r.row_id: r.status for r in oracle.rows}
        for row_id, status in statuses.items():
            task = json.loads((run_dir / "default" / suite / row_id / "00/task.json").read_text())
            assert task["final_status"] == status, row_id
            if status in ("ERROR", "REFUSED"):
                assert task["weighted_score"] is None  # never a 0 averaged in
    run = json.loads((run_dir / "run.json").read_text())
    passed = sum(o.passed for o in oracles.values())
    graded = sum(o.graded for o in oracles.values())
    assert run["pass_rate"] == approx(passed / graded)
    assert run["pass_rate_macro"] == approx(
        statistics.fmean(o.pass_rate for o in oracles.values() if o.pass_rate is not None)
    )
    assert run["tasks_refused"] == sum(o.refused for o in oracles.values())
    assert run["tasks_error"] == sum(o.error for o in oracles.values())
    run_md = (run_dir / "run.md").read_text()
    assert f"**Pass rate**: {passed / graded:.3f} micro" in run_md
    check_junit(tmp_path / "junit.xml", oracles)

    # experiments and comparisons estimate from the same rows, by the same rule
    write(tmp_path / "twins.yaml", "experiment_id: twins\nvariants:\n  - variant_id: a\n"
          "  - variant_id: b\n")  # fmt: skip
    assay("run", "alpha.yaml", "-e", "twins.yaml", "-q", "--run-dir", "exp", cwd=tmp_path)
    report = json.loads((tmp_path / "exp" / "latest" / "experiment.json").read_text())
    alpha = oracles["alpha"]
    for variant in report["variants"]:
        assert variant["metrics"]["pass_rate"]["value"] == approx(alpha.pass_rate)
        assert variant["metrics"]["classification_match.accuracy"]["value"] == approx(
            alpha.accuracy
        )
        assert variant["metrics"]["file_check.mean"]["value"] == approx(
            statistics.fmean(alpha.file_scores)
        )
    (pair,) = report["comparisons"]
    assert pair["metrics"]["pass_rate"]["a"] == approx(alpha.pass_rate)
    compared = assay("compare", "runs/latest", "exp/latest", "--variant-b", "a", "-o", "cmp",
                     cwd=tmp_path)  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    comparison = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    alpha_pair = next(c for c in comparison["comparisons"] if c["suite_id"] == "alpha")
    assert alpha_pair["metrics"]["pass_rate"]["a"] == approx(alpha.pass_rate)
    assert alpha_pair["metrics"]["pass_rate"]["b"] == approx(alpha.pass_rate)
