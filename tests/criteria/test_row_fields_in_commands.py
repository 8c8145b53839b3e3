"""A row's values reach a criterion's shell command whole as ``ASSAY_FIELD_<name>``; a
``${row.x}`` pasted into a shell command (Coder Eval's substitution, kept as it is) is
warned about at load, naming the variable to use instead. The agent never gets them."""

from __future__ import annotations

from pathlib import Path

import assay
from tests.helpers import write

ROWS = """\
dataset:
  rows:
    - {id: plain, answer: "42"}
    - {id: quoted, answer: "it's 42"}
    - {id: hostile, answer: "42'; touch PWNED; echo '42"}
"""


def test_a_commands_row_values_come_whole_from_the_environment(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", (
        "task_id: t\ndescription: d\ninitial_prompt: '${row.answer}'\n"
        "agent: {type: command, command: 'printenv | grep -c ^ASSAY_FIELD_ || true'}\n"
        + ROWS +
        "success_criteria:\n"
        "  - {type: run_command, command: 'printenv ASSAY_FIELD_answer > seen.txt'}\n"
        "  - {type: response_match, expected: '0'}\n"))  # fmt: skip
    assert assay.plan([str(task)]).warnings == []
    result = assay.run([str(task)], run_dir=str(tmp_path / "runs"), keep_sandboxes=True)
    answers = {"plain": "42", "quoted": "it's 42", "hostile": "42'; touch PWNED; echo '42"}
    for row in result.rows():  # the second criterion: the agent's environment has none
        assert row.final_status.value == "SUCCESS", row.success_criteria_results
        seen = result.run_dir / "default" / "t" / str(row.row_id) / "00" / "sandbox" / "seen.txt"
        assert seen.read_text() == answers[str(row.row_id)] + "\n"
    assert not list(tmp_path.rglob("PWNED"))


def test_a_placeholder_in_a_shell_command_is_warned_with_the_variable(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", (
        "task_id: t\ndescription: d\ninitial_prompt: '${row.answer}'\n"
        "agent: {type: command, command: 'echo hi'}\n" + ROWS +
        "success_criteria:\n"
        "  - {type: run_command,\n"
        "     command: \"grep -qF '${row.answer}' response.txt\"}\n"))  # fmt: skip
    (warning,) = assay.plan([str(task)]).warnings
    assert warning.endswith(
        "t.yaml:12: success_criteria[0].command: ${row.answer} is pasted into a shell command "
        "as it is: a value with a quote, $(...) or ; changes what runs; read it from the "
        'environment instead: "$ASSAY_FIELD_answer"'
    )


def test_which_row_fields_become_variables() -> None:
    """A scalar field of a name a shell can read, written as ``${row.x}`` writes it; not a
    list or a mapping, a name with a dot or hyphen, a value over 100,000 bytes (Linux refuses
    to start a program with a variable over 128 KiB) or one holding a NUL byte."""
    from assay.orchestration.running.environment import FIELD_BYTES, grading_env

    row = {"answer": "it's 42", "n": 3, "ok": True, "none": None, "items": [1], "map": {},
           "a-b": "x", "big": "x" * (FIELD_BYTES + 1), "edge": "é" * (FIELD_BYTES // 2),
           "nul": "a\0b"}  # fmt: skip
    env = grading_env({}, task_dir=None, reference=None, row=row)
    fields = {k.removeprefix("ASSAY_FIELD_"): v for k, v in env.items()}
    assert fields == {"answer": "it's 42", "n": "3", "ok": "True", "none": "",
                      "edge": "é" * (FIELD_BYTES // 2)}  # fmt: skip


def test_the_grace_after_a_timeout_is_as_long_as_it_within_15_and_60_seconds() -> None:
    from assay.orchestration.running.runner import grace_seconds

    assert [grace_seconds(t) for t in (0.5, 15, 30, 60, 600)] == [15, 15, 30, 60, 60]
