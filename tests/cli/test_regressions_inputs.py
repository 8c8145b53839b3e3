"""Regressions from adversarial testing: inputs refused at load (exit 2) or accepted as valid."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.test_run import assay, latest
from tests.helpers import write


def echo_task(tmp_path: Path, rows: str, criterion: str, prompt: str = "${row.x}") -> Path:
    text = f"""\
task_id: t1
description: d
initial_prompt: {json.dumps(prompt)}
agent: {{type: llm, model: mock/echo}}
dataset:
  rows: {rows}
success_criteria:
  - {criterion}
"""
    return write(tmp_path / "t.yaml", text)


def refused(tmp_path: Path, path: Path, *needles: str) -> None:
    """``plan`` and ``run`` both exit 2, name every needle, and no run folder is made."""
    for command in ("plan", "run"):
        done = assay(command, str(path), cwd=tmp_path)
        assert done.returncode == 2, (command, done.stderr)
        assert "Traceback" not in done.stderr
        for needle in needles:
            assert needle in done.stderr, (command, needle, done.stderr)
    assert not (tmp_path / "runs").exists()


def snapshot(folder: Path) -> dict[str, float]:
    return {str(p): p.lstat().st_mtime for p in folder.rglob("*")}


def two_runs(tmp_path: Path) -> list[str]:
    path = echo_task(tmp_path, "[{id: a, x: a}]", "{type: response_match, expected: a}")
    assert assay("run", str(path), "-q", cwd=tmp_path).returncode == 0
    first = latest(tmp_path).name
    while latest(tmp_path).name == first:  # run ids are timestamps to the second
        assert assay("run", str(path), "-q", cwd=tmp_path).returncode == 0
    return sorted(p.name for p in (tmp_path / "runs").iterdir() if p.name != "latest")


@pytest.mark.parametrize("command", ["report", "evaluate"])
def test_a_folder_of_runs_is_refused(tmp_path: Path, command: str) -> None:
    assert len(two_runs(tmp_path)) == 2
    before = snapshot(tmp_path / "runs")
    done = assay(command, "runs", cwd=tmp_path)
    assert done.returncode == 2
    assert "runs is a folder of 2 runs, not one run" in done.stderr  # not counting latest
    assert "runs/latest" in done.stderr
    assert snapshot(tmp_path / "runs") == before


@pytest.mark.parametrize("match", ["contains", "regex"])
@pytest.mark.parametrize("value", ['""', "null"])
def test_empty_expected_with_a_loose_match_is_a_load_error(
    tmp_path: Path, match: str, value: str
) -> None:
    rows = f"[{{id: a, x: Paris, ans: Paris}}, {{id: b, x: who, ans: {value}}}]"
    criterion = f'{{type: response_match, expected: "${{row.ans}}", match: {match}}}'
    refused(tmp_path, echo_task(tmp_path, rows, criterion), "row b", "expected is empty")


def test_empty_expected_with_exact_match_is_allowed(tmp_path: Path) -> None:
    rows = '[{id: a, x: "", ans: ""}, {id: b, x: "not empty", ans: ""}]'
    criterion = '{type: response_match, expected: "${row.ans}", match: exact, '
    criterion += "suite_thresholds: {mean: 0.5}}"
    done = assay("run", str(echo_task(tmp_path, rows, criterion)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    statuses = {row: json.loads((latest(tmp_path) / f"default/t1/{row}/00/task.json").read_text())
                ["final_status"] for row in ("a", "b")}  # fmt: skip
    assert statuses == {"a": "SUCCESS", "b": "FAILURE"}  # "" matches only the empty answer


def test_file_check_includes_with_an_empty_item_is_a_load_error(tmp_path: Path) -> None:
    rows = "[{id: a, x: hi, want: hi}, {id: b, x: hi, want: ''}]"
    criterion = '{type: file_check, path: out.txt, includes: ["${row.want}"]}'
    refused(tmp_path, echo_task(tmp_path, rows, criterion), "row b", "includes")


def test_misspelt_task_id_in_a_folder_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    good = "task_id: ta\ndescription: d\ninitial_prompt: x\nagent: {type: llm, model: mock/echo}\n"
    good += "success_criteria:\n  - {type: response_match, expected: x}\n"
    write(tmp_path / "tasks" / "a.yaml", good)
    write(tmp_path / "tasks" / "b.yaml", good.replace("task_id: ta", "taskid: tb"))
    done = assay("run", "tasks", cwd=tmp_path)
    assert done.returncode == 2
    assert "tasks/b.yaml" in done.stderr and "task_id" in done.stderr
    (tmp_path / "tasks" / "b.yaml").unlink()
    done = assay("run", "tasks", "--tags", "nosuchtag", cwd=tmp_path)
    assert done.returncode == 2
    assert "no task to run" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_lone_surrogate_in_jsonl_is_a_load_error_naming_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"id":"a","x":"ok"}\n{"id":"b","x":"bad \\ud800 z"}\n')
    text = """\
task_id: sur
description: d
initial_prompt: "${row.x}"
agent: {type: command, command: cat}
dataset: {paths: [d.jsonl]}
success_criteria:
  - {type: response_match, expected: "${row.x}"}
"""
    refused(tmp_path, write(tmp_path / "t.yaml", text), "d.jsonl", "line 2", "surrogate")


@pytest.mark.parametrize(
    "row_id",
    ["suite.json", "suite.md", "a" * 201, "a\n"],
    ids=["suite.json", "suite.md", "201-chars", "trailing-newline"],
)
def test_unusable_row_ids_are_load_errors(tmp_path: Path, row_id: str) -> None:
    (tmp_path / "d.jsonl").write_text(
        json.dumps({"id": row_id, "x": "1"}) + "\n" + json.dumps({"id": "b", "x": "1"}) + "\n"
    )
    text = """\
task_id: ids
description: d
initial_prompt: "${row.x}"
agent: {type: llm, model: mock/echo}
dataset: {paths: [d.jsonl]}
success_criteria:
  - {type: response_match, expected: "1"}
"""
    refused(tmp_path, write(tmp_path / "t.yaml", text), "d.jsonl:1")


def test_a_200_character_row_id_is_accepted(tmp_path: Path) -> None:
    path = echo_task(
        tmp_path, f"[{{id: {'a' * 200}, x: '1'}}]", '{type: response_match, expected: "1"}'
    )
    done = assay("run", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    task = json.loads((latest(tmp_path) / "default/t1" / ("a" * 200) / "00/task.json").read_text())
    assert (task["row_id"], task["final_status"]) == ("a" * 200, "SUCCESS")


def test_non_utf8_prompt_file_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_bytes(b"caf\xe9 ${row.x}")
    text = """\
task_id: p
description: d
initial_prompt_file: p.txt
agent: {type: llm, model: mock/echo}
dataset: {rows: [{id: a, x: X}]}
success_criteria:
  - {type: response_match, expected: x}
"""
    refused(tmp_path, write(tmp_path / "t.yaml", text), "p.txt", "UTF-8")


def test_non_utf8_mock_script_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_bytes(b'replies: []\ndefault: "caf\xe9"\n')
    text = """\
task_id: p
description: d
initial_prompt: hi
agent: {type: llm, model: mock/m.yaml}
success_criteria:
  - {type: response_match, expected: x}
"""
    refused(tmp_path, write(tmp_path / "t.yaml", text), "m.yaml")


def test_row_regex_for_run_command_that_does_not_compile_is_a_load_error(tmp_path: Path) -> None:
    text = """\
task_id: rc
description: d
initial_prompt: "x ${row.id}"
agent: {type: command, command: "echo hi > out.txt"}
dataset:
  rows: [{id: a, re: "h("}, {id: b, re: "h"}]
success_criteria:
  - type: run_command
    command: "cat out.txt"
    expected_stdout: "${row.re}"
    stdout_match: regex
"""
    refused(tmp_path, write(tmp_path / "rc.yaml", text), "row a")


@pytest.mark.parametrize(
    "model, needle",
    [
        ("mock/nonexist.yaml", "nonexist.yaml"),
        ("openai/x", "SOME_UNSET_VAR"),
        ("local/nonexistent", "nonexistent"),
    ],
)
def test_plan_refuses_the_models_run_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, needle: str
) -> None:
    monkeypatch.delenv("SOME_UNSET_VAR", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    text = f"""\
task_id: p
description: d
initial_prompt: x
agent: {{type: llm, model: "{model}", api_key_env: SOME_UNSET_VAR}}
success_criteria:
  - {{type: response_match, expected: x}}
"""
    if not model.startswith("openai/"):
        text = text.replace(", api_key_env: SOME_UNSET_VAR", "")
    refused(tmp_path, write(tmp_path / "t.yaml", text), needle)
    assert "SOME_UNSET_VAR" not in os.environ


def test_yaml_merge_key_override_is_not_a_duplicate_key(tmp_path: Path) -> None:
    text = """\
task_id: t1
description: d
initial_prompt: x
agent: {type: llm, model: mock/echo}
success_criteria:
  - &c {type: response_match, expected: x}
  - <<: *c
    expected: y
"""
    done = assay("plan", "--json", str(write(tmp_path / "t.yaml", text)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = assay("run", str(tmp_path / "t.yaml"), cwd=tmp_path)
    assert done.returncode == 1  # the second criterion expects y; mock/echo answers x
    task = json.loads((latest(tmp_path) / "default/t1/00/task.json").read_text())
    assert [r["score"] for r in task["success_criteria_results"]] == [1.0, 0.0]


def test_boolean_row_id_is_a_load_error(tmp_path: Path) -> None:
    path = echo_task(tmp_path, "[{id: on, x: a}]", "{type: response_match, expected: a}")
    refused(tmp_path, path)


def test_boolean_mock_reply_is_a_load_error_with_a_quoting_hint(tmp_path: Path) -> None:
    write(tmp_path / "m.yaml", "replies:\n  - {match: '.*', reply: yes}\n")
    text = """\
task_id: p
description: d
initial_prompt: hi
agent: {type: llm, model: mock/m.yaml}
success_criteria:
  - {type: response_match, expected: "yes"}
"""
    refused(tmp_path, write(tmp_path / "t.yaml", text), "replies[0].reply", "boolean", "quote it")


def test_boolean_threshold_is_a_load_error(tmp_path: Path) -> None:
    criterion = (
        '{type: classification_match, expected_label: "${row.x}", allowed_labels: [a, b], '
        "suite_thresholds: {accuracy: true}}"
    )
    refused(tmp_path, echo_task(tmp_path, "[{id: r, x: a}]", criterion), "accuracy")


def test_empty_expected_stdout_with_contains_is_a_load_error(tmp_path: Path) -> None:
    text = """\
task_id: rc2
description: d
initial_prompt: "x ${row.id}"
agent: {type: command, command: "echo hi"}
dataset:
  rows: [{id: a, want: bye}, {id: b, want: ""}]
success_criteria:
  - type: run_command
    command: echo hello
    expected_stdout: "${row.want}"
    stdout_match: contains
"""
    refused(tmp_path, write(tmp_path / "rc2.yaml", text), "row b")


@pytest.mark.parametrize("value", ["2024-02-30", "!!int abc", "!!timestamp nope"])
def test_a_folder_with_a_yaml_value_its_tag_cannot_make_is_refused_with_its_line(
    tmp_path: Path, value: str
) -> None:
    """A file's own load named it; the folder's quick look at each file was a traceback."""
    write(tmp_path / "tasks" / "orders.yaml", (
        "task_id: orders\ndescription: d\nagent: {type: llm, model: mock/echo}\n"
        f"dataset:\n  rows:\n    - {{id: o1, shipped: {value}}}\n"
        "initial_prompt: 's ${row.shipped}'\n"
        "success_criteria: [{type: response_match, expected: s, match: contains}]\n"))  # fmt: skip
    good = (
        "task_id: good\ndescription: d\nagent: {type: llm, model: mock/echo}\n"
        "initial_prompt: s\nsuccess_criteria: [{type: response_match, expected: s}]\n"
    )
    write(tmp_path / "tasks" / "good.yaml", good)
    for command in ("plan", "run"):
        done = assay(command, "tasks", cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "orders.yaml:6: invalid YAML:" in done.stderr
        assert "runs as written: tasks/good.yaml" in done.stderr
    override = assay("plan", "tasks/good.yaml", "-D", "agent.temperature=2024-02-30",
                     cwd=tmp_path)  # fmt: skip
    assert override.returncode == 2 and "expected a number" in override.stderr
