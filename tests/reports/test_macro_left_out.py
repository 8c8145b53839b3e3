"""A macro pass rate that left a suite out (it graded no row: every row errored) names it,
in ``run.json`` and ``run.md``."""

from __future__ import annotations

from pathlib import Path

import pytest

import assay
from tests.helpers import write

GOOD = """\
task_id: good
description: answers
agent: {type: llm, model: mock/echo}
initial_prompt: "say ${row.text}"
dataset: {rows: [{id: a, text: hi}, {id: b, text: yo}]}
success_criteria:
  - {type: response_match, expected: say, match: contains}
"""

BROKEN = """\
task_id: {name}
description: every row errors (the agent exits 3)
agent: {{type: command, command: "exit 3"}}
initial_prompt: "say"
{dataset}
success_criteria:
  - {{type: response_match, expected: say, match: contains}}
"""
ROWS = "dataset: {rows: [{id: a}, {id: b}]}"


@pytest.mark.parametrize(
    ("broken", "left_out"),
    [
        ({"bad": ROWS}, ["default/bad"]),
        ({"bad": ROWS, "worse": ROWS}, ["default/bad", "default/worse"]),
        ({"lonely": ""}, ["default/lonely"]),
    ],
    ids=["one-suite", "two-suites", "task-without-dataset"],
)
def test_the_macro_pass_rate_names_the_suites_it_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: dict[str, str], left_out: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    paths = [write(tmp_path / "good.yaml", GOOD)]
    for name, dataset in broken.items():
        paths.append(write(tmp_path / f"{name}.yaml", BROKEN.format(name=name, dataset=dataset)))
    result = assay.run(paths)
    summary = result.summary
    assert summary.tasks_error >= 1 and summary.pass_rate_macro == 1.0
    assert summary.pass_rate_macro_left_out == left_out
    shown = ", ".join(f"`{name}`" for name in left_out)
    text = (result.run_dir / "run.md").read_text()
    assert f"macro (mean of the suites' pass rates; left out, no graded row: {shown})" in text


def test_nothing_is_said_when_no_suite_was_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = assay.run([write(tmp_path / "good.yaml", GOOD)])
    assert result.summary.pass_rate_macro_left_out == []
    assert "macro (mean of the suites' pass rates)" in (result.run_dir / "run.md").read_text()


def test_the_command_lines_summary_names_them_too(tmp_path: Path) -> None:
    """Found by a break-test: the console said "0.500 macro" without what it left out."""
    from tests.cli.inproc import run_in_process

    write(tmp_path / "good.yaml", GOOD)
    write(tmp_path / "bad.yaml", BROKEN.format(name="bad", dataset=ROWS))
    done = run_in_process("run", "good.yaml", "bad.yaml", "-q", cwd=tmp_path)
    assert "pass rate 1.000 micro, 1.000 macro (leaves out default/bad: no graded row)" in (
        done.stdout)  # fmt: skip
