"""Regressions from adversarial testing: warnings, errors and report text a user reads."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.cli.test_run import assay, latest
from tests.helpers import write

HEAD = "description: d\nagent: {type: llm, model: mock/echo}\n"


def task(tmp_path: Path, body: str, name: str = "t.yaml") -> Path:
    return write(tmp_path / name, f"task_id: t1\n{HEAD}{body}")


def test_expected_label_outside_allowed_labels_is_warned_at_load(tmp_path: Path) -> None:
    path = task(
        tmp_path,
        """\
dataset:
  rows: [{id: a, l: positive}, {id: b, l: neutral}]
initial_prompt: "${row.l}"
success_criteria:
  - {type: classification_match, expected_label: "${row.l}", allowed_labels: [positive, negative]}
""",
    )
    for command, code in (("plan", 0), ("run", 1)):  # no gate: row b fails the run
        done = assay(command, str(path), cwd=tmp_path)
        assert done.returncode == code, done.stderr
        assert "can never pass: b ('neutral')" in done.stderr, command


def test_placeholders_that_cannot_be_filled_are_warned_by_name(tmp_path: Path) -> None:
    path = task(
        tmp_path,
        """\
dataset:
  rows: [{id: a, my-field: V, answers: {text: T}, 1x: W}]
initial_prompt: "A=${row.my-field} B=${row.answers.text} C=${row.1x}"
success_criteria:
  - {type: response_match, expected: x}
""",
    )
    done = assay("plan", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name in ("${row.my-field}", "${row.answers.text}", "${row.1x}"):
        assert f"'{name}' looks like a placeholder but is not one" in done.stderr


def test_unquoted_boolean_in_an_inline_row_is_warned(tmp_path: Path) -> None:
    path = task(
        tmp_path,
        """\
dataset:
  rows: [{id: a, x: yes}]
initial_prompt: "${row.x}"
success_criteria:
  - {type: response_match, expected: "${row.x}"}
""",
    )
    done = assay("plan", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    message = " ".join(done.stderr.split())
    assert "dataset.rows[0].x holds a boolean (YAML reads unquoted" in message
    assert "booleans substitute as True/False" in message


def test_command_agent_without_command_names_the_field(tmp_path: Path) -> None:
    text = "task_id: t1\ndescription: d\ninitial_prompt: x\nagent: {type: command}\n"
    text += "success_criteria:\n  - {type: response_match, expected: x}\n"
    done = assay("plan", str(write(tmp_path / "t.yaml", text)), cwd=tmp_path)
    assert done.returncode == 2
    assert "t.yaml:4: agent.command: required field is missing" in done.stderr


def test_agent_without_type_says_it_needs_one(tmp_path: Path) -> None:
    text = "task_id: t1\ndescription: d\ninitial_prompt: x\nagent: {command: cat}\n"
    text += "success_criteria:\n  - {type: response_match, expected: x}\n"
    done = assay("plan", str(write(tmp_path / "t.yaml", text)), cwd=tmp_path)
    assert done.returncode == 2
    assert "an agent needs a 'type'" in done.stderr


def test_missing_dataset_file_hint_names_the_task_file_and_field(tmp_path: Path) -> None:
    body = "dataset: {paths: [nope.jsonl]}\ninitial_prompt: x\n"
    body += "success_criteria:\n  - {type: response_match, expected: x}\n"
    task(tmp_path, body, "sub/k.yaml")
    done = assay("run", "sub/k.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "Dataset file not found: sub/nope.jsonl" in done.stderr
    assert "sub/k.yaml:4 (dataset.paths[0])" in done.stderr


@pytest.mark.parametrize("field", ["rowid", "suiteid"])
def test_unknown_field_hints_do_not_offer_writer_only_fields(tmp_path: Path, field: str) -> None:
    body = "initial_prompt: x\nsuccess_criteria:\n  - {type: response_match, expected: x}\n"
    done = assay("plan", str(task(tmp_path, body + f"{field}: 3\n")), cwd=tmp_path)
    assert done.returncode == 2
    assert f"unknown field '{field}'" in done.stderr
    assert "row_id" not in done.stderr and "suite_id" not in done.stderr


def test_an_unknown_top_level_key_far_from_any_field_is_warned_and_ignored(
    tmp_path: Path,
) -> None:
    """As Coder Eval does (a warning, the task runs): the common holder of YAML anchors
    (``x-common: &c``) is fine; set on the command line, it is an error (it would do
    nothing); a near miss of a field stays an error (above)."""
    body = ("initial_prompt: x\nx-common: &c {expected: x}\n"
            "success_criteria:\n  - {<<: *c, type: response_match}\n")  # fmt: skip
    path = task(tmp_path, body)
    done = assay("plan", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "x-common: unknown top-level field, ignored (as Coder Eval does)" in done.stderr
    done = assay("plan", str(path), "-D", "zzzz=3", cwd=tmp_path)
    assert done.returncode == 2 and "zzzz" in done.stderr, done.stderr


def test_junit_says_a_gated_metric_was_not_produced(tmp_path: Path) -> None:
    path = task(
        tmp_path,
        """\
dataset:
  rows: [{id: a, x: negative, l: positive}, {id: b, x: negative, l: negative}]
initial_prompt: "${row.x}"
success_criteria:
  - type: classification_match
    expected_label: "${row.l}"
    allowed_labels: [positive, negative]
    suite_thresholds: {precision.positive: 0.5}
""",
    )
    done = assay("run", str(path), "--junit-xml", "j.xml", cwd=tmp_path)
    assert done.returncode == 1
    gate = next(
        c for c in ET.parse(tmp_path / "j.xml").iter("testcase") if c.get("name") == "suite gate"
    )
    failure = gate.find("failure")
    assert failure is not None
    assert failure.text == (
        "classification_match: precision.positive is undefined (0/0: label 'positive' was never "
        "predicted) (needs >= 0.5)"
    )


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_a_label_with_a_pipe_keeps_suite_md_tables_intact(tmp_path: Path) -> None:
    path = task(
        tmp_path,
        """\
dataset:
  rows: [{id: a, x: "a|b", l: "a|b"}, {id: b, x: c, l: c}, {id: c, x: c, l: "a|b"}]
initial_prompt: "${row.x}"
success_criteria:
  - {type: classification_match, expected_label: "${row.l}", allowed_labels: ["a|b", c]}
""",
    )
    assert assay("run", str(path), cwd=tmp_path).returncode == 1  # no gate; a row fails
    lines = (latest(tmp_path) / "default/t1/suite.md").read_text().splitlines()
    tables: list[list[str]] = []
    for previous, line in zip(["", *lines], lines, strict=False):
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
    assert len(tables) >= 4  # criterion stats, metrics, per-label, confusion matrix
    for table in tables:
        assert len({unescaped_pipes(row) for row in table}) == 1, table
    assert "| `a\\|b` | 1 | 1 |" in lines


def test_one_row_suite_summary_says_row_not_rows(tmp_path: Path) -> None:
    body = "dataset: {rows: [{id: a, x: x}]}\ninitial_prompt: ${row.x}\n"
    body += "success_criteria:\n  - {type: response_match, expected: x}\n"
    done = assay("run", str(task(tmp_path, body)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "t1 [default]: 1 row — 1 passed" in done.stdout
    assert "1 rows" not in done.stdout
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert run["tasks_run"] == 1


def test_more_load_time_messages(tmp_path: Path) -> None:
    rows = '[{id: a, l: positive, c: "x\\0y"}, {id: b, l: "", c: z}]'
    nul = task(tmp_path, f"""\
dataset:
  rows: {rows}
initial_prompt: "${{row.l}}"
success_criteria:
  - {{type: run_command, command: "echo ${{row.c}}"}}
""", "nul.yaml")  # fmt: skip
    done = assay("plan", str(nul), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "command contains a NUL character" in done.stderr and "row a" in done.stderr
    empty = task(tmp_path, """\
dataset:
  rows: [{id: a, l: positive}, {id: b, l: ""}, {id: c, l: null}]
initial_prompt: "${row.l}"
success_criteria:
  - {type: classification_match, expected_label: "${row.l}", allowed_labels: [positive]}
""", "empty.yaml")  # fmt: skip
    done = assay("plan", str(empty), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    message = " ".join(done.stderr.split())
    assert "2 row(s) have an empty or null expected label" in message and ": b, c" in message
    write(tmp_path / "m.yaml", "replies:\n  - {match: x, reply: yes}\ndefault: 'no'\n")
    body = "initial_prompt: x\nsuccess_criteria: [{type: file_exists, path: a}]\n"
    mock = task(tmp_path, body, "mock.yaml")
    write(mock, mock.read_text().replace("mock/echo", "mock/m.yaml"))
    done = assay("plan", "mock.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "m.yaml: replies[0].reply is a boolean" in done.stderr
    assert "used by mock.yaml:" in done.stderr


def test_replicates_are_counted_apart_from_rows_and_execute_has_no_gate(tmp_path: Path) -> None:
    body = "dataset: {rows: [{id: a, x: x}, {id: b, x: y}]}\ninitial_prompt: ${row.x}\n"
    body += "repeats: 3\nsuccess_criteria:\n  - {type: response_match, expected: x}\n"
    done = assay("run", str(task(tmp_path, body)), cwd=tmp_path)
    assert "t1 [default]: 2 rows × 3 replicates = 6 row-tasks — 3 passed, 3 failed" in done.stdout
    executed = assay("execute", str(task(tmp_path, body)), cwd=tmp_path)
    assert executed.returncode == 0, executed.stderr
    assert "· not graded" in executed.stdout and "FAILED" not in executed.stdout


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_unset_api_key_variable_is_named(tmp_path: Path, provider: str) -> None:
    text = (
        f"task_id: t1\ndescription: d\nagent: {{type: llm, model: {provider}/m, "
        "base_url: 'http://127.0.0.1:9/v1', api_key_env: ASSAY_TEST_UNSET_KEY}\n"
        "initial_prompt: hi\nsuccess_criteria:\n  - {type: response_match, expected: x}\n"
    )
    done = assay("run", str(write(tmp_path / "t.yaml", text)), cwd=tmp_path)
    assert done.returncode == 2
    assert (
        f"model '{provider}/m' needs an API key in the environment variable ASSAY_TEST_UNSET_KEY"
    ) in " ".join(done.stderr.split())
    # the block names its server and variable already: the hint does not ask for base_url
    assert "remove api_key_env for a server at base_url that needs no key" in (
        " ".join(done.stderr.split()))  # fmt: skip


def test_an_openai_base_url_from_the_environment_is_checked_as_one_written(
    tmp_path: Path,
) -> None:
    text = ("task_id: b\ndescription: d\ninitial_prompt: x\nagent: {type: llm, model: openai/m}\n"
            "success_criteria: [{type: response_match, expected: x}]\n")  # fmt: skip
    done = assay("plan", str(write(tmp_path / "t.yaml", text)), cwd=tmp_path,
                 env={"OPENAI_BASE_URL": "127.0.0.1:28002/v1",
                      "OPENAI_API_KEY": "k-0123456789ab"})  # fmt: skip
    assert done.returncode == 2
    assert "OPENAI_BASE_URL: base_url '127.0.0.1:28002/v1' is not an http" in done.stderr
