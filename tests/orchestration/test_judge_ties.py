"""A majority judge asked an even number of samples can tie (a judge_error): the plan warns,
naming the task file, line and criterion; odd samples, a scale verdict (a mean) and a
disabled criterion do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.orchestration.planning.plan import PlanOptions, build_plan
from tests.helpers import write

TASK = """\
task_id: t
description: d
agent: {{type: llm, model: mock/a.yaml}}
dataset: {{rows: [{{id: a, text: x}}]}}
initial_prompt: "${{row.text}}"
success_criteria:
  - {{type: file_exists, path: f.txt}}
  - {{type: llm_judge, prompt: "Is it right?", model: mock/j.yaml, samples: {samples},
     verdict: {verdict}, enabled: {enabled}}}
"""
JUDGE_FILE = """\
name: strict
rubric: "Is it right?"
model: mock/j.yaml
samples: {samples}
verdict: {verdict}
"""
BINARY = "{kind: binary}"
LABELS = "{kind: labels, labels: [good, bad, unsure], pass_labels: [good]}"
SCALE = "{kind: scale, min: 1, max: 5}"


def warnings_of(task: Path) -> list[str]:
    write(task.parent / "a.yaml", "default: ok\n")
    write(task.parent / "j.yaml", 'default: \'{"verdict": true, "reason": "r"}\'\n')
    return [w for w in build_plan([task], PlanOptions()).warnings if "can tie" in w]


@pytest.mark.parametrize("verdict", [BINARY, LABELS])
@pytest.mark.parametrize("samples", [2, 4])
def test_even_majority_samples_are_warned_at_their_criterion(
    tmp_path: Path, verdict: str, samples: int
) -> None:
    task = write(
        tmp_path / "task.yaml", TASK.format(samples=samples, verdict=verdict, enabled="true")
    )
    [warning] = warnings_of(task)
    assert warning.startswith(f"{task}:8: success_criteria[1]: this judge takes the majority ")
    assert f"majority of {samples} samples" in warning and "judge_error" in warning
    assert "odd samples" in warning
    kind = "binary" if verdict == BINARY else "labels"
    assert warning == (
        f"{task}:8: success_criteria[1]: this judge takes the majority of {samples} samples of "
        f"a {kind} verdict, and an even number can tie: a tied row is a judge_error (not "
        "graded, counted apart); use an odd samples (1, 3, 5, …): it cannot split evenly "
        "between two answers"
    )


@pytest.mark.parametrize(
    ("samples", "verdict", "enabled"),
    [(1, BINARY, "true"), (3, BINARY, "true"), (5, LABELS, "true"), (2, SCALE, "true"),
     (2, BINARY, "false")],
)  # fmt: skip
def test_odd_samples_a_mean_or_a_disabled_judge_are_not_warned(
    tmp_path: Path, samples: int, verdict: str, enabled: str
) -> None:
    task = write(
        tmp_path / "task.yaml", TASK.format(samples=samples, verdict=verdict, enabled=enabled)
    )
    assert warnings_of(task) == []


def test_a_judge_file_with_even_samples_is_warned_where_the_task_uses_it(tmp_path: Path) -> None:
    write(tmp_path / "judge.yaml", JUDGE_FILE.format(samples=2, verdict=BINARY))
    text = TASK.format(samples=1, verdict=BINARY, enabled="true").replace(
        '{type: llm_judge, prompt: "Is it right?", model: mock/j.yaml, samples: 1,\n'
        "     verdict: {kind: binary}, enabled: true}",
        "{type: llm_judge, judge: judge.yaml}",
    )
    task = write(tmp_path / "task.yaml", text)
    [warning] = warnings_of(task)
    assert "judge strict takes the majority of 2 samples of a binary verdict" in warning
    assert warning.startswith(f"{task}:8: success_criteria[1]: ")
