"""`assay plan` and task discovery: folders, globs, tags, skip, selection shown and recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.orchestration.loading.discover import discover
from assay.sandbox import cgroups
from tests.cli.test_run import assay
from tests.helpers import write


def task_text(task_id: str, *, tags: str = "[]", skip: str = "false", rows: int = 4) -> str:
    body = "".join(f"    - {{id: r{i}, text: t{i}, kind: k{i % 2}, split: s{i % 2}}}\n"
                   for i in range(rows))  # fmt: skip
    return (
        f"task_id: {task_id}\ndescription: d\ninitial_prompt: '${{row.text}}'\n"
        f"tags: {tags}\nskip: {skip}\nagent: {{type: command, command: cat}}\n"
        f"dataset:\n  stratify_field: kind\n  sample_seed: 3\n  rows:\n{body}"
        "success_criteria:\n  - {type: response_match, expected: t}\n"
    )


def test_discover_folder_recursively_skipping_non_tasks(tmp_path: Path) -> None:
    write(tmp_path / "tasks" / "b.yaml", task_text("b"))
    write(tmp_path / "tasks" / "sub" / "a.yml", task_text("a"))
    write(tmp_path / "tasks" / "sub" / "mock.yaml", "replies: []\ndefault: x\n")
    write(tmp_path / "tasks" / "judges" / "open.yaml", "model: mock/j.yaml\nrubric: ok?\n")
    write(tmp_path / "tasks" / ".hidden" / "c.yaml", task_text("c"))
    write(tmp_path / "tasks" / "runs" / "d.yaml", task_text("d"))
    found = [p.relative_to(tmp_path).as_posix() for p in discover(["tasks"], cwd=tmp_path)]
    assert found == ["tasks/b.yaml", "tasks/sub/a.yml"]


def test_discover_default_is_tasks_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="no task files given and no tasks/ folder here"):
        discover([])
    write(tmp_path / "tasks" / "a.yaml", task_text("a"))
    assert [p.name for p in discover([])] == ["a.yaml"]


def test_discover_glob_and_duplicates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "t" / "a.yaml", task_text("a"))
    write(tmp_path / "t" / "b.yaml", task_text("b"))
    found = discover(["t/*.yaml", "t/a.yaml"])
    assert [p.name for p in found] == ["a.yaml", "b.yaml"]
    with pytest.raises(UsageError, match=r"the pattern 't/\*\.yml' matches no file"):
        discover(["t/*.yml"])


def plan_json(tmp_path: Path, *args: str) -> dict[str, object]:
    done = assay("plan", *args, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = json.loads(done.stdout)
    return data


def test_plan_json_shows_selection(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", task_text("t", rows=10))
    data = plan_json(tmp_path, "t.yaml", "--sample", "3")
    task = data["tasks"][0]  # type: ignore[index]
    assert task["row_tasks"] == 3
    assert task["selection"]["applied"] == ["--sample 3"]
    assert task["selection"]["rows_in_dataset"] == 10
    assert len(task["task_ids"]) == 3 and task["task_ids"][0].startswith("t/")
    assert data["work_items"] == 3


def test_plan_shows_seeded_stratified_sample_and_split(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", task_text("t", rows=10))
    first = plan_json(tmp_path, "t.yaml", "--sample-per-stratum", "2")
    again = plan_json(tmp_path, "t.yaml", "--sample-per-stratum", "2")
    assert first["tasks"] == again["tasks"]  # sample_seed: 3 pins it
    selection = first["tasks"][0]["selection"]  # type: ignore[index]
    assert selection["applied"] == ["--sample-per-stratum 2"]
    assert selection["stratified_seed"] == 3 and not selection["seed_was_drawn"]
    split = plan_json(tmp_path, "t.yaml", "--split", "s1")
    assert split["tasks"][0]["selection"]["applied"] == ["--split s1"]  # type: ignore[index]


def test_plan_human_output(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", task_text("t", rows=8))
    done = assay("plan", "t.yaml", "--rows", "2", cwd=tmp_path)
    assert done.returncode == 0
    assert "rows: 8 of 8 rows selected (all rows)" in done.stdout
    assert "row-tasks: t/r0, t/r1 … and 6 more" in done.stdout
    assert "Plan: 1 task file(s), 8 row-task(s), 1 variant(s), 8 work item(s)." in done.stdout


def test_tags_and_skip(tmp_path: Path) -> None:
    write(tmp_path / "tasks" / "a.yaml", task_text("a", tags="[fast, nightly]"))
    write(tmp_path / "tasks" / "b.yaml", task_text("b", tags="[slow]"))
    write(tmp_path / "tasks" / "c.yaml", task_text("c", skip="true"))
    only = plan_json(tmp_path, "tasks", "--tags", "nightly,slow", "--exclude-tags", "slow")
    assert [t["task_id"] for t in only["tasks"]] == ["a"]  # type: ignore[union-attr]
    reasons = {s["path"]: s["reason"] for s in only["skipped"]}  # type: ignore[union-attr]
    assert reasons["tasks/b.yaml"] == "tag slow is in --exclude-tags"
    assert reasons["tasks/c.yaml"] == "skip: true (pass --include-skipped to run it)"
    everything = plan_json(tmp_path, "tasks", "--include-skipped")
    assert [t["task_id"] for t in everything["tasks"]] == ["a", "b", "c"]  # type: ignore[union-attr]


def test_duplicate_task_ids_across_files_exit_2(tmp_path: Path) -> None:
    write(tmp_path / "tasks" / "a.yaml", task_text("same"))
    write(tmp_path / "tasks" / "b.yaml", task_text("same"))
    done = assay("plan", "tasks", cwd=tmp_path)
    assert done.returncode == 2
    assert "task_id 'same' is also defined in tasks/a.yaml" in done.stderr


def test_plan_and_run_refuse_a_split_with_no_rows(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", task_text("t"))
    for command in ("plan", "run"):
        done = assay(command, "t.yaml", "--split", "nope", cwd=tmp_path)
        assert done.returncode == 2
        assert "has no rows in split 'nope' (split_field='split')" in done.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--sample", "0"], "Invalid value for '--sample': Input should be greater than or "
                            "equal to 1"),
        (["--sample-per-stratum", "-1"], "Invalid value for '--sample-per-stratum': Input "
                                         "should be greater than or equal to 1"),
        (["-j", "0"], "Invalid value for '--max-parallel' / '-j': Input should be greater than "
                      "or equal to 1"),
    ],
)  # fmt: skip
def test_flags_are_validated_alike_by_plan_and_run(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    write(tmp_path / "t.yaml", task_text("t"))
    for command in ("plan", "run"):
        done = assay(command, "t.yaml", *flags, cwd=tmp_path)
        assert done.returncode == 2, command
        text = " ".join(done.stderr.replace("│", " ").split())  # rich wraps it in a box
        assert message in text, (command, text)
    assert not (tmp_path / "runs").exists()


def test_plan_takes_a_runs_command_line(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", task_text("t"))
    done = assay("plan", "t.yaml", "-j", "8", "--sample", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_output_limits_under_tempdir_are_enforced_and_not_warned(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", "task_id: v\ndescription: v\ninitial_prompt: go\n"
          "agent: {type: command, command: 'yes hello | head -c 2000'}\n"
          "sandbox: {limits: {max_output_mb: 0.001}}\n"
          "success_criteria: [{type: response_match, expected: hello, match: contains}]\n",
          )  # fmt: skip
    planned = assay("plan", "t.yaml", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    pids = "max_pids 1024, " if isinstance(cgroups.find(), cgroups.Hierarchies) else ""
    assert f"limits (tempdir): {pids}max_output_mb 0.001, max_log_mb 256" in planned.stdout
    assert "warning" not in planned.stdout + planned.stderr
    done = assay("run", "t.yaml", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stdout + done.stderr
    row = (tmp_path / "runs" / "latest" / "default" / "v" / "00").resolve()
    agent = json.loads((row / "task.json").read_text())["agent"]
    assert agent["output_dropped_bytes"] > 0 and agent["output_logs"] == ["agent.stdout.log"]
    assert (row / "agent.stdout.log").read_text().startswith("hello\nhello")


def test_a_large_limit_is_shown_as_written(tmp_path: Path) -> None:
    """Found by a helper (findings I N8): ``max_memory_mb: 99999999`` was shown as ``1e+08``, and
    ``max_log_mb: 1048576`` as ``1.04858e+06``."""
    write(tmp_path / "t.yaml", "task_id: v\ndescription: v\ninitial_prompt: go\n"
          "agent: {type: command, command: 'true'}\n"
          "sandbox: {limits: {max_log_mb: 1048576, max_output_mb: 0.125}}\n"
          "success_criteria: [{type: response_match, expected: hello}]\n")  # fmt: skip
    planned = assay("plan", "t.yaml", cwd=tmp_path)
    assert "max_output_mb 0.125, max_log_mb 1048576" in planned.stdout, planned.stdout


def test_plan_says_how_a_dialog_runs(tmp_path: Path) -> None:
    """A task in dialog mode said nothing of its dialog in ``assay plan`` (who the simulated
    user is, how many exchanges, when the criteria run)."""
    write(tmp_path / "user.yaml", "replies: []\ndefault: more <<<END>>>\n")
    write(tmp_path / "t.yaml", "task_id: d\ndescription: d\ninitial_prompt: hi\n"
          "agent: {type: llm, model: mock/user.yaml}\n"
          "simulation: {enabled: true, goal: g, model: mock/user.yaml, max_turns: 3, "
          "check_criteria: every_turn, stop_on_criteria_pass: true, n_trials: 2}\n"
          "success_criteria: [{type: response_match, expected: x}]\n")  # fmt: skip
    done = assay("plan", "t.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ("  dialog: simulated user mock/user.yaml, up to 3 exchange(s), stop token "
            "'<<<END>>>', criteria checked every_turn, stops when they pass, 2 trials a "
            "row-task") in done.stdout  # fmt: skip
    data = plan_json(tmp_path, "t.yaml")
    dialog = data["tasks"][0]["dialog"]  # type: ignore[index]
    assert (dialog["model"], dialog["max_turns"], dialog["n_trials"]) == ("mock/user.yaml", 3, 2)
    write(tmp_path / "t.yaml", (tmp_path / "t.yaml").read_text().replace(
        "simulation: {enabled: true,", "simulation: {enabled: false,"))  # fmt: skip
    assert "dialog:" not in assay("plan", "t.yaml", cwd=tmp_path).stdout
    assert plan_json(tmp_path, "t.yaml")["tasks"][0]["dialog"] is None  # type: ignore[index]
