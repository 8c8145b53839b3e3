"""The pytest plugin, run by pytest's own ``pytester`` on small task folders: passing,
failing, gate-failing and erroring rows, ``-k``, the options, when files are collected, and
the ``assay_run`` fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True, scope="module")
def _assay_loaded_once(tmp_path_factory: pytest.TempPathFactory) -> None:
    """pytester's in-process runs drop the modules they imported from ``sys.modules`` (a
    native one then cannot load again), while the ``assay`` package, loaded with the plugin
    before them, keeps its attributes (a later run would pair a new ``Agent`` class with an
    old registry). One run here, before the first, imports what a run needs, so the tests
    pass alone and in any order."""
    import assay

    folder = tmp_path_factory.mktemp("warm")
    task = folder / "t.yaml"
    task.write_text(TASK.format(b="down", extra=""), encoding="utf-8")
    assay.run([str(task)], run_dir=str(folder / "runs"), junit_xml=str(folder / "j.xml"))


TASK = """
task_id: echo
description: the command agent echoes its prompt
agent: {{type: command, command: cat}}
initial_prompt: "${{row.said}}"
dataset:
  rows:
    - {{id: row1, said: up, expected: up}}
    - {{id: row2, said: down, expected: {b}}}
    - {{id: row3, said: up, expected: up}}
success_criteria:
  - type: response_match
    expected: "${{row.expected}}"
{extra}
"""


def task_file(pytester: pytest.Pytester, *, b: str = "down", extra: str = "") -> Path:
    path = pytester.path / "tasks" / "echo.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(TASK.format(b=b, extra=extra), encoding="utf-8")
    return path


def finished_rows(pytester: pytest.Pytester) -> list[str]:
    found = pytester.path.glob("runs/*/default/echo/*/*/task.json")
    return sorted(p.parent.parent.name for p in found if "latest" not in p.parts)


def test_every_row_passes(pytester: pytest.Pytester) -> None:
    task_file(pytester)
    done = pytester.runpytest("tasks", "-v")
    done.assert_outcomes(passed=3)
    for row in ("row1", "row2", "row3"):  # in any order: pytest-randomly may shuffle items
        done.stdout.fnmatch_lines([f"*tasks/echo.yaml::{row} PASSED*"])
    assert finished_rows(pytester) == ["row1", "row2", "row3"]


def test_a_failed_row_shows_its_criteria_and_reasons(pytester: pytest.Pytester) -> None:
    task_file(pytester, b="maybe")
    done = pytester.runpytest("tasks")
    done.assert_outcomes(passed=2, failed=1)
    done.stdout.fnmatch_lines([
        "*echo/row2: FAILURE*",
        "*FAILED response_match: score 0.00 (threshold 0.9)*",
        "*task.json: runs/*/default/echo/row2/00/task.json*",
        "FAILED tasks/echo.yaml::row2*",
    ])  # fmt: skip
    assert done.ret == 1


def test_a_failed_gate_fails_and_its_rows_are_xfail(pytester: pytest.Pytester) -> None:
    gate = "    suite_thresholds: {mean: 0.9}"
    task_file(pytester, b="maybe", extra=gate)
    done = pytester.runpytest("tasks", "-rfx")
    done.assert_outcomes(passed=2, failed=1, xfailed=1)
    done.stdout.fnmatch_lines([
        "*suite echo: response_match mean = 0.667, below the gate 0.9*",
        "FAILED tasks/echo.yaml::gate[[]response_match.mean>=0.9[]]*",
        "XFAIL tasks/echo.yaml::row2 - echo/row2: FAILURE*",
    ])  # fmt: skip


def test_a_passed_gate_passes_with_its_failed_row_xfail(pytester: pytest.Pytester) -> None:
    task_file(pytester, b="maybe", extra="    suite_thresholds: {mean: 0.6}")
    done = pytester.runpytest("tasks")
    done.assert_outcomes(passed=3, xfailed=1)
    assert done.ret == 0


def test_an_errored_row_fails_with_its_error(pytester: pytest.Pytester) -> None:
    task_file(pytester, extra="pre_run:\n  - command: 'test \"$ASSAY_ROW_ID\" != row2'")
    done = pytester.runpytest("tasks")
    done.assert_outcomes(passed=2, failed=1)
    done.stdout.fnmatch_lines(["*echo/row2: ERROR (pre_run command*exited with code 1*"])


def test_an_errored_row_is_xfail_when_its_suite_gates_completion_rate(
    pytester: pytest.Pytester,
) -> None:
    pre_run = "pre_run:\n  - command: 'test \"$ASSAY_ROW_ID\" != row2'"
    task_file(pytester, extra="    suite_thresholds: {completion_rate: 0.6}\n" + pre_run)
    done = pytester.runpytest("tasks", "-rx")
    done.assert_outcomes(passed=3, xfailed=1)
    done.stdout.fnmatch_lines(["XFAIL tasks/echo.yaml::row2 - echo/row2: ERROR*"])


def test_an_invalid_task_file_is_a_collection_error_naming_file_line_field(
    pytester: pytest.Pytester,
) -> None:
    task_file(pytester).write_text("task_id: bad\ndescription: x\ninitial_promt: hi\n")
    done = pytester.runpytest("tasks")
    done.assert_outcomes(errors=1)
    done.stdout.fnmatch_lines(["*tasks/echo.yaml:3: initial_promt: unknown field*"])


def test_dash_k_runs_only_the_selected_rows(pytester: pytest.Pytester) -> None:
    task_file(pytester, extra="    suite_thresholds: {mean: 0.5}")
    done = pytester.runpytest("tasks", "-k", "row1 or row3")
    done.assert_outcomes(passed=2, deselected=2)
    assert finished_rows(pytester) == ["row1", "row3"]
    pytester.runpytest("tasks", "-k", "gate").assert_outcomes(passed=1, deselected=3)
    every = ["row1", "row1", "row2", "row3", "row3"]  # a gate needs every row of its suite
    assert finished_rows(pytester) == every


def test_sample_jobs_and_run_dir_options(pytester: pytest.Pytester) -> None:
    task_file(pytester)
    done = pytester.runpytest("tasks", "--assay-sample", "2", "--assay-jobs", "1",
                              "--assay-run-dir", "elsewhere")  # fmt: skip
    done.assert_outcomes(passed=2)
    assert len(list(pytester.path.glob("elsewhere/2*/default/echo/*/00/task.json"))) == 2


def test_model_option_sets_the_agent_model(pytester: pytest.Pytester) -> None:
    task = TASK.replace("{{type: command, command: cat}}", "{{type: llm, model: local/none}}")
    path = pytester.path / "tasks" / "echo.yaml"
    path.parent.mkdir()
    path.write_text(task.format(b="down", extra=""), encoding="utf-8")
    pytester.runpytest("tasks", "--assay-model", "mock/echo").assert_outcomes(passed=3)


def test_task_files_are_collected_only_when_named_or_asked_for(
    pytester: pytest.Pytester,
) -> None:
    task_file(pytester)
    (pytester.path / "tasks" / "other.yaml").write_text("replies: []\n")
    pytester.makeini("[pytest]\ntestpaths = tasks\n")
    pytester.runpytest().assert_outcomes()  # testpaths: not named on the command line
    pytester.runpytest("--assay").assert_outcomes(passed=3)
    pytester.makeini("[pytest]\nassay_collect = never\n")
    pytester.runpytest("tasks").assert_outcomes()
    pytester.makeini("[pytest]\ntestpaths = tasks\nassay_collect = always\n")
    pytester.runpytest().assert_outcomes(passed=3)


def test_the_assay_run_fixture(pytester: pytest.Pytester) -> None:
    task_file(pytester, b="maybe")
    pytester.makepyfile(
        test_plugin_fixture_use="""
        def test_mean(assay_run, tmp_path):
            result = assay_run("tasks/echo.yaml")
            suite = result.suite("echo")
            assert round(suite.metrics["mean"], 4) == 0.6667
            assert [r.row_id for r in suite.rows()] == ["row1", "row2", "row3"]
            assert result.run_dir.is_relative_to(tmp_path)
        """
    )
    pytester.runpytest("test_plugin_fixture_use.py").assert_outcomes(passed=1)
