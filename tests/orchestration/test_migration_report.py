"""A folder of Coder Eval task files: every file is judged before anything runs, and those
that cannot run are reported together with which others run as written or with warnings
(issue 29 item 4); one bad file alone keeps its own message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import assay
from assay.errors import TaskFileError, TaskFilesError
from tests.cli.inproc import run_in_process
from tests.helpers import write

HEAD = "description: d\nagent: {type: llm, model: mock/echo}\ninitial_prompt: hi\n"
GOOD = "success_criteria: [{type: response_match, expected: hi, description: d}]\n"


def _folder(root: Path) -> Path:
    write(root / "tasks" / "a.yaml", "task_id: a\n" + HEAD + GOOD)
    write(root / "tasks" / "b.yaml", "task_id: b\n" + HEAD
          + "success_criteria: [{type: quantum_grade, description: d}]\n")  # fmt: skip
    write(root / "tasks" / "c.yaml", "task_id: c\n" + HEAD + "expected_commands: [make]\n" + GOOD)
    write(root / "tasks" / "d.yaml", "task_id: d\n" + HEAD
          + "success_criteria: [{type: response_match, expectd: hi}]\n")  # fmt: skip
    return root / "tasks"


def test_every_file_is_judged_and_the_refused_are_reported_together(tmp_path: Path) -> None:
    with pytest.raises(TaskFilesError) as caught:
        assay.plan([str(_folder(tmp_path))])
    error = caught.value
    assert [e.file for e in error.refused] == [
        str(tmp_path / "tasks" / n) for n in ("b.yaml", "d.yaml")
    ]
    assert error.as_written == [str(tmp_path / "tasks" / "a.yaml")]
    assert list(error.warned) == [str(tmp_path / "tasks" / "c.yaml")]
    text = error.render()
    assert text.startswith("2 of 4 task files cannot run (1 run as written, 1 with warnings):")
    assert "unknown criterion type 'quantum_grade'" in text
    assert "success_criteria[0].expectd: unknown field" in text
    assert "runs with 1 warning(s):" in text and text.endswith("leave them out")


def test_one_refused_file_alone_keeps_its_own_error(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    with pytest.raises(TaskFileError) as caught:
        assay.plan([str(folder / "b.yaml")])
    assert not isinstance(caught.value, TaskFilesError)
    assert caught.value.field == "success_criteria[0].type"


def test_a_folder_that_all_loads_plans_as_before(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "b.yaml").unlink()
    (folder / "d.yaml").unlink()
    plan = assay.plan([str(folder)])
    assert sorted(t.loaded.definition.task_id for t in plan.tasks) == ["a", "c"]


MIXED = """\
task_id: mixed
description: one criterion assay has, one of a type it does not have
agent: {type: llm, model: mock/echo}
initial_prompt: hi
success_criteria:
  - {type: response_match, expected: hi, description: echoed}
  - {type: quantum_grade, description: typed, path: a}
"""


def test_skip_unsupported_runs_the_rest_and_names_what_it_left_out(workdir: Path) -> None:
    task = write(workdir / "mixed.yaml", MIXED)
    with pytest.raises(TaskFileError, match="--skip-unsupported runs the rest of the file"):
        assay.plan([str(task)])
    warnings: list[str] = []
    result = assay.run([str(task)], skip_unsupported=True, on_warning=warnings.append)
    (row,) = list(result.rows())
    assert [c.criterion_type for c in row.success_criteria_results] == ["response_match"]
    assert result.exit_code == 0
    # a CI that reads suite.json alone sees what was left out (with any gate it had)
    write(workdir / "mixed.yaml", MIXED + "dataset: {rows: [{id: a}]}\n")
    result = assay.run([str(task)], skip_unsupported=True)
    suite = json.loads((result.run_dir / "default" / "mixed" / "suite.json").read_text())
    assert [w for w in suite["warnings"] if "left out (--skip-unsupported)" in w] == [
        w for w in warnings if "left out (--skip-unsupported)" in w] != []  # fmt: skip
    left = [w for w in warnings if "left out (--skip-unsupported)" in w]
    assert [w.split(": ")[1] for w in left] == ["success_criteria[1]"]
    assert "criterion 'quantum_grade' left out" in left[0]
    again = assay.resume(result.run_dir)  # the recorded option is replayed, so the file loads
    assert again.exit_code == 0
    gated = write(workdir / "gated.yaml", MIXED.replace(
        "path: a}", "path: a, suite_thresholds: {mean: 0.9}}"))  # fmt: skip
    said = assay.plan([str(gated)], skip_unsupported=True).warnings
    assert next(w for w in said if "left out" in w).endswith(
        "criterion 'quantum_grade' left out (--skip-unsupported), and its suite_thresholds "
        "gate with it: assay does not have this type"
    )  # a gate gone is said (found by a helper)


def test_a_file_of_only_unsupported_criteria_is_still_refused(tmp_path: Path) -> None:
    task = write(tmp_path / "only.yaml", MIXED.replace(
        "  - {type: response_match, expected: hi, description: echoed}\n", ""))  # fmt: skip
    with pytest.raises(TaskFileError, match="nothing would grade its rows"):
        assay.plan([str(task)], skip_unsupported=True)


def test_an_error_after_a_left_out_criterion_names_its_own_line_and_index(
    tmp_path: Path,
) -> None:
    task = write(tmp_path / "t.yaml", MIXED + "  - type: response_match\n"
                 "    description: c\n    expectd: hi\n")  # fmt: skip
    with pytest.raises(TaskFileError) as caught:
        assay.plan([str(task)], skip_unsupported=True)
    assert (caught.value.line, caught.value.field) == (10, "success_criteria[2].expectd")


def test_every_task_is_checked_at_plan_and_each_missing_cli_or_key_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What only planning finds (a coding agent's CLI, a model's API key) is said for every
    task file it concerns, not for the first one alone."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no npm CLI on it
    monkeypatch.setenv("ASSAY_CLI_DIR", str(tmp_path / "no-clis"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    task = "description: d\ninitial_prompt: hi\n" + GOOD
    write(tmp_path / "t" / "a.yaml", "task_id: a\nagent: {type: codex, model: mock/echo}\n" + task)
    write(tmp_path / "t" / "b.yaml", "task_id: b\nagent: {type: pi, model: mock/echo}\n" + task)
    write(tmp_path / "t" / "c.yaml", "task_id: c\nagent: {type: llm, model: openai/gpt-4o}\n"
          + task)  # fmt: skip
    write(tmp_path / "t" / "d.yaml", "task_id: d\n" + HEAD + GOOD)
    with pytest.raises(TaskFilesError) as caught:
        assay.plan([str(tmp_path / "t")])
    error = caught.value
    assert [Path(e.file or "").name for e in error.refused] == ["a.yaml", "b.yaml", "c.yaml"]
    assert [e.field for e in error.refused] == ["agent.type", "agent.type", "agent.model"]
    assert "the codex CLI was not found" in error.refused[0].message
    assert "the pi CLI was not found" in error.refused[1].message
    assert "OPENAI_API_KEY" in error.refused[2].message
    assert error.as_written == [str(tmp_path / "t" / "d.yaml")]
    assert error.render().startswith("3 of 4 task files cannot run (1 run as written")
    # one task file alone keeps its own error
    with pytest.raises(TaskFileError) as alone:
        assay.plan([str(tmp_path / "t" / "b.yaml")])
    assert not isinstance(alone.value, TaskFilesError)
    assert "the pi CLI was not found" in alone.value.message


def test_load_errors_planning_errors_duplicates_and_datasets_are_listed_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("ASSAY_CLI_DIR", str(tmp_path / "no-clis"))
    task = "description: d\ninitial_prompt: hi\n" + GOOD
    write(tmp_path / "t" / "a.yaml", "task_id: a\n  description: [\n")  # does not load
    write(tmp_path / "t" / "b.yaml", "task_id: b\nagent: {type: pi, model: mock/echo}\n" + task)
    write(tmp_path / "t" / "c.yaml", "task_id: b\n" + HEAD + GOOD)  # b again
    write(tmp_path / "t" / "d.yaml", "task_id: d\ndataset: {paths: [missing.jsonl]}\n" + HEAD
          + GOOD)  # fmt: skip
    write(tmp_path / "t" / "e.yaml", "task_id: e\nskip: true\n" + HEAD + GOOD)
    write(tmp_path / "t" / "f.yaml", "task_id: f\n" + HEAD + GOOD)
    with pytest.raises(TaskFilesError) as caught:
        assay.plan([str(tmp_path / "t")])
    error = caught.value
    names = [Path(e.file or "").name for e in error.refused]
    assert names == ["a.yaml", "b.yaml", "c.yaml", "missing.jsonl"]  # the dataset's own file
    assert "invalid YAML" in error.refused[0].message
    assert "the pi CLI was not found" in error.refused[1].message
    assert "task_id 'b' is also defined in" in error.refused[2].message
    assert "listed in" in (error.refused[3].hint or "") and "d.yaml" in error.refused[3].hint
    assert error.as_written == [str(tmp_path / "t" / "f.yaml")]
    assert error.skipped == [str(tmp_path / "t" / "e.yaml")]
    assert error.render().startswith(
        "4 of 5 task files cannot run (1 run as written, 0 with warnings, 1 skipped):"
    )


def test_a_loop_of_links_among_task_files_is_named(tmp_path: Path) -> None:
    from assay.errors import UsageError

    (tmp_path / "one.yaml").symlink_to(tmp_path / "two.yaml")
    (tmp_path / "two.yaml").symlink_to(tmp_path / "one.yaml")
    with pytest.raises(UsageError, match="cannot follow its links"):
        assay.plan([str(tmp_path)])


def test_a_selection_that_fails_every_file_is_named_for_each(tmp_path: Path) -> None:
    write(tmp_path / "rows.jsonl", '{"id": "a", "text": "x", "part": "train"}\n')
    for name in ("a", "b"):
        write(tmp_path / f"{name}.yaml", f"task_id: {name}\n"
              "dataset: {paths: [rows.jsonl], split_field: part}\n" + HEAD + GOOD)  # fmt: skip
    with pytest.raises(TaskFilesError) as caught:
        assay.plan([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")], split="nosuch")
    assert [e.file for e in caught.value.refused] == [
        str(tmp_path / "a.yaml"),
        str(tmp_path / "b.yaml"),
    ]
    assert all("no rows in split 'nosuch'" in e.message for e in caught.value.refused)


def test_one_value_that_fails_every_file_is_one_entry_naming_each_file(tmp_path: Path) -> None:
    """``--model`` (or ``-D``) applies to every file: its one error is listed once with the
    files it fails, not repeated with its hint per file; other errors keep their own entry."""
    for name in ("a", "b", "c"):
        write(tmp_path / f"{name}.yaml", f"task_id: {name}\n" + HEAD + GOOD)
    write(tmp_path / "d.yaml", "task_id: d\n" + HEAD + "success_criteria: [{type: nope}]\n")
    with pytest.raises(TaskFilesError) as caught:
        assay.plan([str(tmp_path)], model="nosuch/x")
    assert len(caught.value.refused) == 4  # each file still counted and kept
    text = str(caught.value)
    assert text.count("unknown model provider 'nosuch'") == 1
    assert text.count("hint: set on the command line by --model nosuch/x") == 1
    files = ", ".join(f"{tmp_path / n}.yaml:3" for n in "abc")
    assert f"  {files}: agent.model: unknown model provider 'nosuch' in 'nosuch/x'" in text
    assert f"{tmp_path / 'd.yaml'}" in text.replace(files, "")


def _refused_under(tmp_path: Path, experiment: str, *names: str) -> TaskFilesError:
    """The plan's refusal of the task files ``names`` (in ``tmp_path``) under the experiment
    file whose text is ``experiment``."""
    write(tmp_path / "exp.yaml", experiment)
    with pytest.raises(TaskFilesError) as caught:
        assay.plan([str(tmp_path / f"{n}.yaml") for n in names],
                   experiment=str(tmp_path / "exp.yaml"))  # fmt: skip
    return caught.value


def test_every_variant_that_cannot_run_is_named_not_only_the_first(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "task_id: a\n" + HEAD + GOOD)
    write(tmp_path / "b.yaml", "task_id: b\n" + HEAD + GOOD)
    experiment = ("experiment_id: e\nvariants:\n"
                  "  - {variant_id: v1, agent: {type: llm, model: nosuch/a}}\n"
                  "  - {variant_id: ok, agent: {type: llm, model: mock/echo}}\n"
                  "  - {variant_id: v2, agent: {type: llm, model: other/b}}\n"
                  "  - {variant_id: v3, agent: {max_turns: abc}}\n")  # fmt: skip
    caught = _refused_under(tmp_path, experiment, "a", "b")
    text = str(caught)
    assert text.startswith("2 of 2 task files cannot run (0 run as written, 0 with warnings):")
    assert len(caught.refused) == 6  # three variants of each of the two files
    for says in ("provider 'nosuch'", "provider 'other'", "variant 'v3': expected an integer"):
        assert text.count(says) == 1, says  # one entry naming both files
    assert "(variant 'v1')" in text and "(variant 'v2')" in text
    alone = _refused_under(tmp_path, experiment, "a")  # one file: its three variants listed
    assert str(alone).startswith("1 of 1 task files cannot run")
    assert len(alone.refused) == 3


def test_a_variants_prompt_that_misses_a_row_key_is_listed_with_the_others(
    tmp_path: Path,
) -> None:
    """A variant's own prompt checked on the rows (a dataset error) does not hide the other
    variants' errors, and says which variant set it; an error that names no file (a
    variant's unknown field) is listed once, not once per task file."""
    rows = "dataset:\n  rows:\n    - {id: r1, text: hello}\ninitial_prompt: '${row.text}'\n"
    for name in ("a", "b"):
        write(tmp_path / f"{name}.yaml", f"task_id: {name}\ndescription: d\n"
              "agent: {type: llm, model: mock/echo}\n" + rows + GOOD)  # fmt: skip
    text = str(_refused_under(tmp_path, "experiment_id: e\nvariants:\n"
                              "  - {variant_id: p1, initial_prompt: '${row.zzz}'}\n"
                              "  - {variant_id: m1, agent: {model: nosuch/x}}\n"
                              "  - {variant_id: u1, agent: {modle: mock/echo}}\n",
                              "a", "b"))  # fmt: skip
    assert text.startswith("2 of 2 task files cannot run")
    assert text.count("${row.zzz}: key not found") == 1
    assert "set by the experiment's variant (variant 'p1')" in text
    assert text.count("provider 'nosuch'") == 1
    assert text.count("unknown field 'modle'") == 1


def test_a_value_a_variant_sets_is_named_at_its_line_in_the_experiment_file(
    tmp_path: Path,
) -> None:
    """The value to fix is in the experiment file: its line and its path there
    (``variants[1].agent.model``), listed once for every task file; a value ``-D`` sets
    stays the command line's."""
    for name in ("a", "b"):
        write(tmp_path / f"{name}.yaml", f"task_id: {name}\n" + HEAD + GOOD)
    experiment = write(tmp_path / "exp.yaml", "experiment_id: e\nvariants:\n"
                       "  - variant_id: ok\n"
                       "  - variant_id: m1\n    agent: {model: nosuch/x}\n"
                       "  - variant_id: t1\n    run_limits: {max_turns: abc}\n")  # fmt: skip
    tasks = [str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")]
    with pytest.raises(TaskFilesError) as caught:
        assay.plan(tasks, experiment=str(experiment))
    placed = {(e.file, e.line, e.field) for e in caught.value.refused}
    assert placed == {(str(experiment), 5, "variants[1].agent.model"),
                      (str(experiment), 7, "variants[2].run_limits.max_turns")}  # fmt: skip
    text = str(caught.value)
    assert text.count(f"{experiment}:5: variants[1].agent.model: unknown model provider") == 1
    with pytest.raises(TaskFilesError) as by_flag:
        assay.plan(tasks, experiment=str(experiment), overrides={"agent.model": "nosuch/y"})
    assert all(e.file != str(experiment) for e in by_flag.value.refused
               if e.field == "agent.model")  # fmt: skip


def test_a_default_the_task_file_overrides_is_not_blamed(tmp_path: Path) -> None:
    """The task file's value is above the experiment's defaults: its error stays the task
    file's; the same value set by the defaults alone is the defaults'."""
    head = HEAD.replace("model: mock/echo", "model: nosuch/x")
    task = write(tmp_path / "a.yaml", "task_id: a\n" + head + GOOD)
    experiment = write(tmp_path / "exp.yaml", "experiment_id: e\ndefaults:\n"
                       "  agent: {model: mock/echo}\nvariants:\n  - variant_id: v\n")  # fmt: skip
    with pytest.raises(TaskFileError) as caught:
        assay.plan(str(task), experiment=str(experiment))
    assert (caught.value.file, caught.value.field) == (str(task), "agent.model")


def test_a_files_plan_warnings_count_and_show_in_the_report_and_its_json(
    tmp_path: Path,
) -> None:
    """Found by a break-test: a file's plan-time warnings (here `max_turns` on a `command`
    agent) were left out of the folder's report ("runs as written"), counts were of its
    load warnings only, no warning's text was shown, and `assay plan --json` printed
    nothing."""
    folder = _folder(tmp_path)
    write(
        folder / "e.yaml",
        "task_id: e\ndescription: d\ninitial_prompt: hi\n"
        "agent: {type: command, command: echo hi}\nrun_limits: {max_turns: 3}\n" + GOOD,
    )
    alone = assay.plan([str(folder / "e.yaml")]).warnings
    assert alone and any("max_turns" in w for w in alone)
    with pytest.raises(TaskFilesError) as caught:
        assay.plan([str(folder)])
    error = caught.value
    assert error.warned[str(folder / "e.yaml")] == alone
    text = error.render()
    assert f"  runs with {len(alone)} warning(s): {folder / 'e.yaml'}" in text
    assert f"    warning: {alone[0]}" in text
    done = run_in_process("plan", str(folder), "--json", cwd=tmp_path)
    assert done.returncode == 2 and "cannot run" in done.stderr
    report = json.loads(done.stdout)
    assert [r["file"] for r in report["refused"]] == ["tasks/b.yaml", "tasks/d.yaml"]
    assert report["runs_as_written"] == ["tasks/a.yaml"]  # (as the command line names files)
    assert list(report["runs_with_warnings"]) == ["tasks/c.yaml", "tasks/e.yaml"]
    assert len(report["runs_with_warnings"]["tasks/e.yaml"]) == len(alone)
