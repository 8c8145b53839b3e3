"""suite.md shows numbers as numbers: thresholds with the digits that matter, counts as
integers, a metrics hook's every output, a QA row's answer and the expected one, and a
criterion description as the rows read it."""

from __future__ import annotations

import json
from pathlib import Path

from assay.reports.markdown import render_suite
from assay.reports.qa import render_qa
from assay.results.status import FinalStatus
from assay.results.task_result import QaCriterionResult
from assay.spec.criteria import ResponseMatch
from tests.cli.test_run import assay, latest
from tests.helpers import write
from tests.reports.test_rollup import PREPARE, classify, graded, label_result, roll_up, row


def test_a_threshold_met_exactly_shows_three_digits_and_counts_are_integers() -> None:
    rows = [graded(0, "positive", "positive"), graded(1, "negative", "positive")]
    suite = roll_up(rows, (PREPARE, classify({"accuracy": 0.5, "count": 2})))
    text = render_suite(suite)
    assert "| `accuracy` | 0.500 | 0.500 | ✓ |" in text  # not 0.500000000
    assert "| `count` | 2 | 2 | ✓ |" in text
    assert "| `count` | 2 |" in text and "2.000" not in text


def test_a_threshold_missed_by_less_than_the_rounding_shows_more_digits() -> None:
    rows = [graded(i, "positive", "positive" if i else "negative") for i in range(3)]
    suite = roll_up(rows, (PREPARE, classify({"accuracy": 0.6667})))
    assert "| `accuracy` | 0.6667 | 0.6667 | ✗ |" not in render_suite(suite)
    assert "| `accuracy` | 0.666700 | 0.666667 | ✗ |" in render_suite(suite)


def test_every_output_of_a_metrics_hook_is_shown() -> None:
    per = [
        {"accuracy": 0.5, "correct": 1, "total": 2, "chosen_letter": {"A": 2, "B": 0},
         "note": "biased", "letters": ["A", "A"], "flag": True, "score": 0.25},
        {"accuracy": 1.0, "correct": 2, "total": 2, "chosen_letter": {"A": 1, "B": 1},
         "note": "fine", "letters": ["A", "B"], "flag": False, "score": 0.75},
    ]  # fmt: skip
    average = {"accuracy": 0.75, "chosen_letter": {"A": 1.5, "B": 0.5}, "score": 0.5}
    text = render_qa({"all_metrics": per, "avg_metrics": average, "judge": None})
    assert "| `chosen_letter.A` | 1.500 | 2.000, 1.000 |" in text
    assert "| `chosen_letter.B` | 0.500 | 0.000, 1.000 |" in text
    assert '| `note` | — | `"biased"`, `"fine"` |' in text
    assert '| `letters` | — | `["A", "A"]`, `["A", "B"]` |' in text
    assert "| `flag` | — | `true`, `false` |" in text
    assert "| `score` | 0.500 | 0.250, 0.750 |" in text


def test_a_failed_qa_row_shows_its_answer_and_the_expected_one() -> None:
    record = {"options": {"A": "Paris", "B": "Rome"}, "correct_letters": ["A"],
              "correct_answers": ["Paris"], "prompt_type": "mcq_single",
              "pred": {"content": "\\boxed{B}"}}  # fmt: skip
    grade = QaCriterionResult(
        criterion_type="qa", score=0.0, sample_id="s", prompt_type="mcq_single",
        is_correct=False, error_reason="wrong_answer", details="wrong_answer: chose B",
        sample_result={"extracted": ["B"]},
    )  # fmt: skip
    result = row(0, FinalStatus.FAILURE, [grade], score=0.0)
    result.qa_record = record
    spec = ResponseMatch(type="response_match", expected="x")
    text = render_suite(roll_up([result], (spec.model_copy(update={"type": "qa"}),)))
    assert "- answered: `B. Rome`" in text
    assert "- expected: `A. Paris`" in text


def test_a_criterion_description_reads_as_the_rows_do(tmp_path: Path) -> None:
    """``${row.id}`` in a description showed unsubstituted in the suite aggregate."""
    write(
        tmp_path / "t.yaml",
        """\
task_id: d
description: d
initial_prompt: "${row.x}"
agent: {type: command, command: 'echo yes'}
dataset: {rows: [{id: a, x: a, topic: maths}, {id: b, x: b, topic: maths}]}
success_criteria:
  - type: response_match
    expected: "yes"
    description: "says yes about ${row.topic}"
  - type: response_match
    expected: "yes"
    weight: 0
    description: "row ${row.id} says yes"
""",
    )
    assay("run", "t.yaml", "-q", cwd=tmp_path)
    suite = json.loads((latest(tmp_path) / "default/d/suite.json").read_text())
    first, second = suite["criterion_aggregates"]
    assert first["description"] == "says yes about maths"  # every row reads the same
    assert second["description"] == "row <id> says yes"  # rows differ: the field is named
    assert "${row" not in (latest(tmp_path) / "default/d/suite.md").read_text()


def test_label_results_keep_their_description() -> None:
    suite = roll_up([row(0, FinalStatus.SUCCESS, [label_result("a", "a")], score=1.0)],
                    (classify(None, ["a", "b"]),))  # fmt: skip
    assert suite.criterion_aggregates[0].description == "Sentiment label matches ground truth"
