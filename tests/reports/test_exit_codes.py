"""The exit codes of docs/suites-and-gates.md, over every combination of gate and row outcomes.

The rule, restated here as the oracle: 0 when every suite with a gate passed it, every suite
without a gate and every task without a dataset had every row succeed, and no row errored or
refused unless its suite gates ``completion_rate`` itself (then that gate decides); 1
otherwise. A suite without ``suite_thresholds`` says "no gate", never "PASSED".
"""

from __future__ import annotations

import itertools
import json
from datetime import datetime
from pathlib import Path

import pytest

from assay.criteria.registry import default_criteria
from assay.reports.writer import RunMeta, decide_exit_code, write_reports
from assay.results.status import FinalStatus
from assay.spec.criteria import ResponseMatch
from tests.cli.test_run import assay
from tests.helpers import write
from tests.reports.test_rollup import SUITE, roll_up, row

OUTCOMES = {
    "pass": FinalStatus.SUCCESS,
    "fail": FinalStatus.FAILURE,
    "error": FinalStatus.ERROR,
    "refused": FinalStatus.REFUSED,
}
GATES = {
    "none": None,
    "mean": {"mean": 0.5},
    "mean+completion": {"mean": 0.5, "completion_rate": 0.5},
    "completion": {"completion_rate": 0.9},
}


def spec(gate: str) -> ResponseMatch:
    return ResponseMatch(type="response_match", expected="x", suite_thresholds=GATES[gate])


def results(outcomes: tuple[str, ...]):  # type: ignore[no-untyped-def]
    from tests.reports.test_rollup import command_result  # a graded, scored result

    made = []
    for index, outcome in enumerate(outcomes):
        status = OUTCOMES[outcome]
        graded = status in (FinalStatus.SUCCESS, FinalStatus.FAILURE)
        score = 1.0 if status is FinalStatus.SUCCESS else 0.0
        item = command_result(score).model_copy(update={
            "criterion_type": "response_match", "gating": True, "weight": 1.0,
            "evaluation_status": "evaluated" if graded else "refused"})  # fmt: skip
        items = [item] if status is not FinalStatus.ERROR else []
        made.append(row(index, status, items, score=score if graded else None))
    return made


def oracle(gate: str, outcomes: tuple[str, ...]) -> tuple[int, str]:
    """The exit code and the gate word, from the documented rule alone."""
    thresholds = GATES[gate]
    if thresholds is None:
        return (0 if all(o == "pass" for o in outcomes) else 1), "none"
    graded = [o for o in outcomes if o in ("pass", "fail")]
    mean = sum(o == "pass" for o in graded) / len(graded) if graded else None
    completion = len(graded) / len(outcomes)
    values = {"mean": mean, "completion_rate": completion}
    gate_ok = all(values[m] is not None and values[m] >= v for m, v in thresholds.items())  # type: ignore[operator]
    did_not_grade = any(o in ("error", "refused") for o in outcomes)
    green = gate_ok and (not did_not_grade or "completion_rate" in thresholds)
    return (0 if green else 1), ("passed" if gate_ok else "failed")


CASES = [
    (gate, outcomes)
    for gate in GATES
    for size in (1, 3)
    for outcomes in itertools.product(OUTCOMES, repeat=size)
]


@pytest.mark.parametrize(("gate", "outcomes"), CASES)
def test_exit_code_follows_the_design_rule(gate: str, outcomes: tuple[str, ...]) -> None:
    suite = roll_up(results(outcomes), (spec(gate),))
    meta = RunMeta(run_id="r", stage="run", start_time=datetime.now(), end_time=datetime.now(),
                   max_parallel=1)  # fmt: skip
    expected, word = oracle(gate, outcomes)
    assert suite.gate == word
    assert decide_exit_code([], [suite], meta) == expected
    assert suite.passed is (expected == 0)
    assert bool(suite.result_reasons) is (expected == 1)


def test_reports_say_no_gate_never_passed(tmp_path: Path) -> None:
    suite = roll_up(results(("fail", "error")), (spec("none"),))
    meta = RunMeta(run_id="r", stage="run", start_time=datetime.now(), end_time=datetime.now(),
                   max_parallel=1)  # fmt: skip
    rows = results(("fail", "error"))
    meta.criteria = {SUITE: [spec("none").model_dump(mode="json")]}
    reports = write_reports(tmp_path, rows, meta, default_criteria(),
                            junit_path=tmp_path / "junit.xml")  # fmt: skip
    assert reports.exit_code == 1 and suite.gate == "none"
    text = (tmp_path / "default" / SUITE / "suite.md").read_text()
    assert "**Suite gate**: no gate (no suite_thresholds: every row must succeed)" in text
    assert "**Result**: FAILED — no gate, and 1 failed, 1 errored (every row must succeed)" in text
    assert "PASSED" not in text
    junit = (tmp_path / "junit.xml").read_text()
    assert "suite gate" not in junit  # no gate, no gate test case: the rows decide


HALF = 'test "$ASSAY_ROW_ID" = a && exit 3; echo never'  # row a errors, row b passes
TASK = """\
task_id: t
description: d
initial_prompt: "${{row.x}}"
agent: {{type: command, command: {command}}}
dataset: {{rows: [{{id: a, x: one}}, {{id: b, x: two}}]}}
success_criteria:
  - type: response_match
    expected: never
{gate}"""


@pytest.mark.parametrize(
    ("command", "gate", "code", "says"),
    [
        ("cat", "", 1, "no gate · FAILED (no gate, and 2 failed (every row must succeed))"),
        ("exit 3", "", 1, "no gate · FAILED (no gate, and 2 errored (every row must succeed))"),
        ("exit 3", "    suite_thresholds: {mean: 0.0}\n", 1,
         "FAILED (gate failed: response_match.mean is undefined (no graded rows), needs 0"),
        ("exit 3", "    suite_thresholds: {completion_rate: 0.0}\n", 1,
         "gate FAILED (gate failed: no row was graded by this criterion"),  # an outage: never
        (HALF, "    suite_thresholds: {mean: 0.5}\n", 1,
         "gate PASSED · FAILED (1 row(s) errored, and the suite does not gate completion_rate)"),
        (HALF, "    suite_thresholds: {mean: 0.5, completion_rate: 0.5}\n", 0, "gate PASSED"),
    ],
)  # fmt: skip
def test_a_false_green_is_impossible_end_to_end(
    tmp_path: Path, command: str, gate: str, code: int, says: str
) -> None:
    """The issue's examples: every row failing or erroring without thresholds printed "gate
    PASSED" and exited 0. An outage passes only a suite that gates completion_rate at 0."""
    path = write(tmp_path / "t.yaml", TASK.format(command=json.dumps(command), gate=gate))
    done = assay("run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == code, done.stdout + done.stderr
    assert says in done.stdout
    if not gate:
        assert "PASSED" not in done.stdout


def test_a_qa_suite_without_thresholds_has_no_gate(tmp_path: Path) -> None:
    rows = [
        {
            "sample_id": f"q{i}",
            "story": "s",
            "question": "q",
            "meta": {},
            "answer": {"correct_answers": ["yes"], "wrong_answers": ["no"]},
        }
        for i in range(3)
    ]
    write(tmp_path / "qa.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    path = write(tmp_path / "t.yaml", "task_id: qa\ndescription: d\n"
                 "agent: {type: command, command: 'echo nothing'}\n"
                 "dataset: {paths: [qa.jsonl]}\nqa: {}\n")  # fmt: skip
    done = assay("run", str(path), "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "qa accuracy 0.000 · no gate · FAILED" in done.stdout
    assert "PASSED" not in done.stdout
