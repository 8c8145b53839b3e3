"""Weight 0 is informational: a task with only weight-0 criteria is refused at load, and a
row never passes on weight-0 criteria alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import TaskFileError
from assay.orchestration.loading.task_loader import load_task
from assay.orchestration.running.grading import final_status, passed
from assay.results.status import FinalStatus
from assay.results.task_result import BasicCriterionResult
from tests.helpers import write

HEAD = """\
task_id: demo
description: a demo
initial_prompt: "say ${row.text}"
dataset:
  rows:
    - {id: a, text: hello}
success_criteria:
"""

ONE = "  - {type: response_match, expected: hello, weight: 0}\n"
TWO = ONE + "  - {type: response_match, expected: bye, match: contains, weight: 0.0}\n"
THREE = TWO + "  - {type: file_exists, path: out.txt, weight: 0}\n"


@pytest.mark.parametrize("criteria", [ONE, TWO, THREE], ids=["one", "two", "three"])
def test_a_task_whose_criteria_all_have_weight_0_is_refused_naming_file_line_field(
    tmp_path: Path, criteria: str
) -> None:
    with pytest.raises(TaskFileError) as caught:
        load_task(write(tmp_path / "task.yaml", HEAD + criteria))
    error = caught.value
    assert error.field == "success_criteria"
    assert error.line == 7
    assert "every criterion has weight 0" in str(error)
    assert "task.yaml:7" in str(error)
    assert "positive weight" in str(error)


def test_a_task_with_one_positive_weight_among_weight_0_criteria_loads(tmp_path: Path) -> None:
    text = HEAD + TWO + "  - {type: response_match, expected: hi, weight: 0.5}\n"
    loaded = load_task(write(tmp_path / "task.yaml", text))
    assert [c.weight for c in loaded.definition.success_criteria] == [0, 0, 0.5]


def result(*, weight: float, score: float) -> BasicCriterionResult:
    return BasicCriterionResult(
        criterion_type="response_match", score=score, weight=weight, gating=weight > 0
    )


@pytest.mark.parametrize(
    "results",
    [
        [result(weight=0, score=1.0)],
        [result(weight=0, score=1.0), result(weight=0, score=1.0)],
        [result(weight=0, score=0.0), result(weight=0, score=1.0)],
    ],
    ids=["one", "two-passing", "mixed-scores"],
)
def test_a_row_never_passes_on_weight_0_results_alone(results: list[BasicCriterionResult]) -> None:
    assert not passed(list(results))
    assert final_status("completed", list(results), graded=True) is FinalStatus.FAILURE


def test_a_row_with_a_mix_passes_only_on_its_positive_weight() -> None:
    informational = result(weight=0, score=1.0)
    assert passed([informational, result(weight=1, score=1.0)])
    assert not passed([informational, result(weight=1, score=0.0)])
