"""``run_command``: real shell commands in a real sandbox."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from assay.criteria import default_criteria
from assay.criteria.base import CriterionError, GradingContext
from assay.criteria.commands import RunCommandCriterion, stdout_matches
from assay.results.task_result import CriterionResult
from assay.sandbox.tempdir import Sandbox
from assay.spec.criteria import RunCommand
from assay.spec.task import SandboxConfig
from tests.helpers import check_with, kill_left, pids_in, wait_gone, write


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    yield box
    box.remove()


def spec_of(**fields: Any) -> RunCommand:
    return RunCommand.model_validate({"type": "run_command", **fields})


def run(
    sandbox: Sandbox | None, env: dict[str, str] | None = None, **fields: Any
) -> CriterionResult:
    context = GradingContext(
        sandbox=sandbox, response=None, env=dict(os.environ) if env is None else env
    )
    return asyncio.run(check_with(spec_of(**fields), context))


# --- exit code ------------------------------------------------------------------------


def test_exit_code_zero_by_default(sandbox: Sandbox) -> None:
    result = run(sandbox, command="true", description="it runs")
    assert (result.score, result.error, result.criterion_type) == (1.0, None, "run_command")
    assert result.description == "it runs"
    assert result.details == (
        "Command: true\nExit code: 0 (expected: 0)\nStdout: (empty)\nStderr: (empty)"
    )


def test_exit_code_mismatch_scores_zero(sandbox: Sandbox) -> None:
    result = run(sandbox, command="echo boom >&2; exit 3")
    assert (result.score, result.error) == (0.0, None)
    assert result.details == (
        "Command: echo boom >&2; exit 3\nExit code: 3 (expected: 0)\nStdout: (empty)\nStderr: boom"
    )


def test_expected_nonzero_exit_code(sandbox: Sandbox) -> None:
    assert run(sandbox, command="exit 3", expected_exit_code=3).score == 1.0
    assert run(sandbox, command="exit 0", expected_exit_code=3).score == 0.0
    assert run(sandbox, command="grep -q x /dev/null", expected_exit_code=1).score == 1.0


def test_unknown_program_exits_127(sandbox: Sandbox) -> None:
    result = run(sandbox, command="assay-no-such-program-xyz")
    assert result.score == 0.0
    assert "Exit code: 127 (expected: 0)" in result.details
    assert run(sandbox, command="assay-no-such-program-xyz", expected_exit_code=127).score == 1.0


# --- stdout ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected", "score"),
    [
        ("echo hello", "hello", 1.0),
        ("printf '  hello \\n\\n'", "hello", 1.0),  # both sides stripped
        ("echo hello", "\nhello\n", 1.0),
        ("echo hello world", "hello", 0.0),  # exact is not a substring test
        ("echo Hello", "hello", 0.0),  # case-sensitive
        ("printf 'a\\nb\\n'", "a\nb", 1.0),
        ("printf 'a\\n b\\n'", "a\nb", 0.0),  # only the ends are stripped
        ("true", "", 1.0),
    ],
)
def test_stdout_exact(sandbox: Sandbox, command: str, expected: str, score: float) -> None:
    assert run(sandbox, command=command, expected_stdout=expected).score == score


@pytest.mark.parametrize(
    ("command", "expected", "score"),
    [
        ("echo say hello there", "hello", 1.0),
        ("echo say hello there", "bye", 0.0),
        ("echo say hello there", "HELLO", 0.0),
        ("printf hello", "hello\n", 1.0),  # a YAML block scalar's newline is stripped
        ("echo 'a  b'", " a  b ", 1.0),
        ("echo abc", "b c", 0.0),
    ],
)
def test_stdout_contains(sandbox: Sandbox, command: str, expected: str, score: float) -> None:
    result = run(sandbox, command=command, expected_stdout=expected, stdout_match="contains")
    assert result.score == score


@pytest.mark.parametrize(
    ("command", "pattern", "score"),
    [
        ("echo 42 items", r"^\d+ items$", 1.0),
        ("echo 42 items", r"\d{3}", 0.0),
        ("echo count: 42", r"\d+", 1.0),  # re.search, not fullmatch
        ("echo count: 42", r"^\d+", 0.0),
        ("echo Done", "done", 0.0),  # case-sensitive
        ("echo Done", "(?i)done", 1.0),
        ("printf 'one\\ntwo\\n'", "^two$", 0.0),  # no MULTILINE
        ("printf 'one\\ntwo\\n'", "(?m)^two$", 1.0),
    ],
)
def test_stdout_regex(sandbox: Sandbox, command: str, pattern: str, score: float) -> None:
    result = run(sandbox, command=command, expected_stdout=pattern, stdout_match="regex")
    assert result.score == score


def test_stdout_and_exit_code_must_both_match(sandbox: Sandbox) -> None:
    good = run(sandbox, command="echo ok", expected_stdout="ok")
    assert good.score == 1.0
    assert good.details == (
        "Command: echo ok\nExit code: 0 (expected: 0)\nStdout exact 'ok': matched\n"
        "Stdout: ok\nStderr: (empty)"
    )
    bad_exit = run(sandbox, command="echo ok; exit 1", expected_stdout="ok")
    assert bad_exit.score == 0.0
    assert "Stdout exact 'ok': matched" in bad_exit.details
    bad_stdout = run(sandbox, command="echo no", expected_stdout="ok", stdout_match="contains")
    assert bad_stdout.score == 0.0
    assert "Stdout contains 'ok': did not match" in bad_stdout.details


def test_long_output_is_cut_to_its_tail_in_details(sandbox: Sandbox) -> None:
    result = run(sandbox, command="printf 'x%.0s' $(seq 1 600); printf END")
    stdout_line = next(line for line in result.details.splitlines() if line.startswith("Stdout"))
    assert stdout_line == "Stdout: …" + "x" * 241 + "END"  # never starting inside a token


def test_stdout_matches_helper() -> None:
    assert stdout_matches(" a \n", "a", "exact")
    assert stdout_matches("xx a xx\n", " a \n", "contains")
    assert not stdout_matches("abc", "^b", "regex")
    assert stdout_matches(" abc", "^ a", "regex")  # the regex is used as written


# --- the spec -------------------------------------------------------------------------


def test_defaults() -> None:
    spec = spec_of(command="make test")
    assert (spec.timeout, spec.expected_exit_code, spec.expected_stdout, spec.stdout_match) == (
        30,
        0,
        None,
        "exact",
    )


def test_invalid_stdout_regex_is_refused_when_the_spec_is_loaded() -> None:
    with pytest.raises(ValidationError, match=r"expected_stdout '\(' is not a valid regex"):
        spec_of(command="echo", expected_stdout="(", stdout_match="regex")
    # Not a regex unless stdout_match says so; placeholders wait for the row.
    assert spec_of(command="echo", expected_stdout="(").expected_stdout == "("
    assert spec_of(command="echo", expected_stdout="${row.x}(", stdout_match="regex")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"command": "  "}, "command is empty"),
        ({"command": "x", "timeout": 0}, "greater than 0"),
        ({"command": "x", "stdout_match": "fuzzy"}, "'exact', 'contains' or 'regex'"),
    ],
)
def test_invalid_fields_are_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        spec_of(**fields)


# --- where and how it runs ------------------------------------------------------------


def test_runs_in_the_sandbox_directory(sandbox: Sandbox) -> None:
    write(sandbox.root / "given.txt", "from the agent")
    result = run(sandbox, command="pwd -P", expected_stdout=str(sandbox.root.resolve()))
    assert result.score == 1.0
    assert run(sandbox, command="cat given.txt", expected_stdout="from the agent").score == 1.0
    assert run(sandbox, command="touch made.txt").score == 1.0
    assert (sandbox.root / "made.txt").is_file()


def test_gets_the_environment_of_the_context(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_TEST_LEAK", "leaked")
    env = {"PATH": os.environ["PATH"], "ASSAY_ROW_ID": "row-7"}
    command = 'echo "$ASSAY_ROW_ID ${ASSAY_TEST_LEAK:-unset}"'
    assert run(sandbox, env=env, command=command, expected_stdout="row-7 unset").score == 1.0


def test_timeout_scores_zero_and_kills_the_process_group(sandbox: Sandbox) -> None:
    # The background child records its pid and the shell waits for it, so at the timeout
    # (3 s: ample for a shell on a loaded machine) the child certainly exists; it would live
    # 300 s, past the 30 s the test waits for it to be gone.
    pid = sandbox.root / "pid"
    command = (
        "sh -c 'echo $$ > pid; exec sleep 300' & while [ ! -s pid ]; do sleep 0.01; done; sleep 30"
    )
    try:
        result = run(sandbox, command=command, timeout=3)
        assert (result.score, result.error) == (0.0, None)
        assert result.details == f"Command: {command}\nTimed out after 3 s"
        assert pids_in(pid), "the background child never started: the test proved nothing"
        wait_gone(pids_in(pid))  # a background child outlived the timeout if this fails
    finally:
        kill_left(pids_in(pid))


def test_without_a_kept_sandbox_it_cannot_be_evaluated() -> None:
    with pytest.raises(CriterionError, match="sandbox was not kept"):
        run(None, command="true")


def test_registry_returns_this_checker() -> None:
    assert default_criteria().get("run_command") is RunCommandCriterion
