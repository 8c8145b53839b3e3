"""A resume runs with the run's own settings: an option given again with another value, or a
task file or experiment file edited since, is refused (exit 2) naming what differs; the same
value is allowed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay import api
from assay.errors import UsageError
from tests.helpers import write

TASK = """\
task_id: settled
description: graded deterministically
initial_prompt: "${{row.text}}"
agent:
  type: command
  command: 'echo yes >> {calls}; echo yes'
dataset:
  stratify_field: kind
  rows:
{rows}
success_criteria:
  - type: classification_match
    expected_label: "yes"
    allowed_labels: ["yes", "no"]
"""


def make_run(folder: Path, **options: Any) -> Path:
    """A finished run of 6 rows with ``options``; then its rows are deleted so a resume
    would run them again."""
    rows = "".join(f"    - {{id: r{i}, text: t{i}, kind: k{i % 2}, split: s{i % 2}}}\n"
                   for i in range(6))  # fmt: skip
    task = write(folder / "task.yaml", TASK.format(rows=rows, calls=folder / "calls.log"))
    result = api.run([str(task)], run_dir=str(folder / "runs"), **options)
    for path in result.run_dir.glob("default/settled/*/00/task.json"):
        path.unlink()
    return result.run_dir


@pytest.mark.parametrize(
    ("before", "given", "named"),
    [
        ({"sample": 4}, {"sample": 2}, "sample (--sample): the run used 4, given 2"),
        ({}, {"sample": 2}, "sample (--sample): the run used nothing, given 2"),
        ({}, {"sample_per_stratum": 1},
         "sample_per_stratum (--sample-per-stratum): the run used nothing, given 1"),
        ({"split": "s0"}, {"split": "s1"}, "split (--split): the run used 's0', given 's1'"),
        ({}, {"repeats": 2}, "repeats (--repeats): the run used nothing, given 2"),
        ({}, {"tags": ["x"]}, "tags (--tags): the run used nothing, given 'x'"),
        ({}, {"include_skipped": True},
         "include_skipped (--include-skipped): the run used False, given True"),
        ({}, {"overrides": ["agent.env.FOO=a"]}, "-D agent.env.FOO=a: the run used nothing"),
        ({"overrides": ["agent.env.FOO=a"]}, {"overrides": ["agent.env.FOO=b"]},
         "the run used 'a', given 'b'"),
        ({}, {"model": "mock/x"}, "--model mock/x: the run used nothing, given 'mock/x'"),
    ],
)  # fmt: skip
def test_a_changed_option_is_refused(tmp_path: Path, before: dict[str, Any],
                                     given: dict[str, Any], named: str) -> None:  # fmt: skip
    run_dir = make_run(tmp_path, **before)
    calls = (tmp_path / "calls.log").read_text()
    with pytest.raises(UsageError, match="runs with the run's own settings") as caught:
        api.resume(run_dir, **given)
    assert named in str(caught.value)
    assert "start a new run" in str(caught.value)
    assert (tmp_path / "calls.log").read_text() == calls  # nothing ran


def test_the_recorded_value_given_again_is_allowed(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, sample=4, overrides=["agent.env.FOO=a"])
    result = api.resume(run_dir, sample=4, overrides=["agent.env.FOO=a"])
    assert result.exit_code == 0
    assert len(list(run_dir.glob("default/settled/*/00/task.json"))) == 4


def test_an_edited_task_file_is_refused(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    task = tmp_path / "task.yaml"
    task.write_text(task.read_text().replace("echo yes'", "echo no'"))
    with pytest.raises(UsageError, match="edited since") as caught:
        api.resume(run_dir)
    assert str(task.resolve()) in str(caught.value)
    assert "restore the task file" in str(caught.value)
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["tasks"][0]["content_hash"]


def test_the_command_line_exits_2_naming_the_flag(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, sample=4)
    done = subprocess.run(
        [sys.executable, "-m", "assay", "run", "--resume", str(run_dir), "--sample", "3",
         "--model", "mock/y", "-D", "agent.env.FOO=z"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    for named in (
        "sample (--sample): the run used 4, given 3",
        "--model mock/y",
        "-D agent.env.FOO=z",
    ):
        assert named in done.stderr


EXPERIMENT = """\
experiment_id: ab
variants:
  - variant_id: a
  - variant_id: b
    agent: {{command: 'echo {answer} >> {calls}; echo {answer}'}}
stop: {{alpha: 0.05}}
"""


def make_experiment_run(folder: Path) -> tuple[Path, Path]:
    """A finished two-variant run with a stop rule, its rows then deleted (as in
    :func:`make_run`); the run folder and the experiment file."""
    rows = "".join(f"    - {{id: r{i}, text: t{i}, kind: k{i % 2}}}\n" for i in range(6))
    task = write(folder / "task.yaml", TASK.format(rows=rows, calls=folder / "calls.log"))
    experiment = write(folder / "e.yaml",
                       EXPERIMENT.format(answer="no", calls=folder / "calls.log"))  # fmt: skip
    result = api.run([str(task)], run_dir=str(folder / "runs"), experiment=str(experiment))
    for path in result.run_dir.glob("*/settled/*/00/task.json"):
        path.unlink()
    return result.run_dir, experiment


@pytest.mark.parametrize(
    ("old", "new"),
    [("echo no", "echo yes"),  # a variant's agent
     ("alpha: 0.05", "alpha: 0.5")],  # the stop rule, loosened after looking
)  # fmt: skip
def test_an_edited_experiment_file_is_refused(tmp_path: Path, old: str, new: str) -> None:
    run_dir, experiment = make_experiment_run(tmp_path)
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["options"]["experiment_hash"]
    experiment.write_text(experiment.read_text().replace(old, new))
    calls = (tmp_path / "calls.log").read_text()
    done = subprocess.run([sys.executable, "-m", "assay", "run", "--resume", str(run_dir)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert str(experiment.resolve()) in done.stderr
    assert "experiment ab has content hash" in done.stderr and "edited since" in done.stderr
    assert "restore the experiment file as it was, or start a new run" in done.stderr
    assert (tmp_path / "calls.log").read_text() == calls  # nothing ran
    experiment.write_text(experiment.read_text().replace(new, old))  # restored: it resumes
    assert api.resume(run_dir).exit_code in (0, 1)
    assert (tmp_path / "calls.log").read_text() != calls


def test_a_run_recorded_without_the_experiment_hash_still_resumes(tmp_path: Path) -> None:
    """A run started by an older assay has no ``experiment_hash``: nothing to compare."""
    run_dir, experiment = make_experiment_run(tmp_path)
    plan = json.loads((run_dir / "plan.json").read_text())
    del plan["options"]["experiment_hash"]
    (run_dir / "plan.json").write_text(json.dumps(plan))
    experiment.write_text(experiment.read_text().replace("echo no", "echo yes"))
    result = api.resume(run_dir)
    assert result.exit_code in (0, 1)
    assert len(list(run_dir.glob("*/settled/*/00/task.json"))) > 0
