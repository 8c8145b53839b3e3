"""Criteria over the files and programs a coding task leaves: ``file_contains``,
``file_matches_regex``, ``json_check``, ``pytest`` (a real pytest) and ``run_command``'s
``score_from_stdout``, on real sandboxes; their load-time checks through ``load_task``."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from assay.criteria import default_criteria
from assay.criteria.base import CriterionError, EvidenceError, GradingContext
from assay.errors import TaskFileError
from assay.orchestration.loading.task_loader import load_task
from assay.orchestration.running.grading import grade as grade_row
from assay.results.task_result import CriterionResult
from assay.sandbox.tempdir import Sandbox
from assay.spec.task import SandboxConfig
from tests.helpers import write

CRITERION: TypeAdapter[Any] = TypeAdapter(default_criteria().union())
VENV_BIN = str(Path(sys.executable).parent)


@pytest.fixture
def box() -> Iterator[Sandbox]:
    sandbox = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    yield sandbox
    sandbox.remove()


def grade(
    box: Sandbox | None, response: str | None = None, env: dict[str, str] | None = None,
    **fields: Any,
) -> CriterionResult:  # fmt: skip
    spec = CRITERION.validate_python({"description": "d", **fields})
    context = GradingContext(sandbox=box, response=response,
                             env=env if env is not None else dict(os.environ))  # fmt: skip
    return asyncio.run(spec.check(context))


def put(box: Sandbox, name: str, text: str) -> None:
    write(box.root / name, text)


def loads(tmp_path: Path, criterion: str) -> TaskFileError:
    """The load error of a task file whose only criterion is ``criterion`` (YAML flow)."""
    path = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
                 f"success_criteria:\n  - {criterion}\n")  # fmt: skip
    with pytest.raises(TaskFileError) as error:
        load_task(path)
    return error.value


# --- file_contains -----------------------------------------------------------------------


def test_file_contains_scores_the_mean_of_includes_and_excludes(box: Sandbox) -> None:
    put(box, "app.py", "import os\ndef main(): pass\n")
    result = grade(box, type="file_contains", path="app.py", includes=["def main", "argparse"],
                   excludes=["import os", "eval("])  # fmt: skip
    assert result.score == pytest.approx(0.5)
    assert result.details == ("Includes: 1/2 found; missing 'argparse'; Excludes: 1/2 absent; "
                              "present 'import os'; Score: 0.50")  # fmt: skip


def test_file_contains_on_a_missing_file_and_on_the_response(box: Sandbox) -> None:
    missing = grade(box, type="file_contains", path="nope.py", includes=["x"])
    assert (missing.score, missing.details, missing.error) == (
        0.0, "File 'nope.py' does not exist", None)  # fmt: skip
    said = grade(None, "the answer is 42", type="file_contains", includes=["42"])
    assert said.score == 1.0


def test_file_contains_refuses_an_empty_string(tmp_path: Path) -> None:
    error = loads(tmp_path, "{type: file_contains, path: a.txt, includes: ['']}")
    assert error.field == "success_criteria[0]"
    assert "includes has an empty item" in error.message


# --- file_matches_regex ------------------------------------------------------------------


def test_file_matches_regex_quotes_the_match_and_honours_flags(box: Sandbox) -> None:
    put(box, "log.txt", "BEGIN\nall good\nEND\n")
    found = grade(box, type="file_matches_regex", path="log.txt", pattern="BEGIN.*END", flags=16)
    assert found.score == 1.0
    assert found.details == "Pattern 'BEGIN.*END' found in file (matched: 'BEGIN\nall good\nEND')"
    assert grade(box, type="file_matches_regex", path="log.txt", pattern="BEGIN.*END").score == 0
    caseless = grade(box, type="file_matches_regex", path="log.txt", pattern="all GOOD", flags=2)
    assert caseless.score == 1.0


def test_file_matches_regex_must_not_match(box: Sandbox) -> None:
    put(box, "out.txt", "password=hunter2\n")
    leak = grade(box, type="file_matches_regex", path="out.txt", pattern="password=\\S+",
                 must_match=False)  # fmt: skip
    assert (leak.score, leak.details) == (
        0.0, "Pattern 'password=\\S+' found but should not be present (matched: "
             "'password=hunter2')")  # fmt: skip
    clean = grade(box, type="file_matches_regex", path="out.txt", pattern="token",
                  must_match=False)  # fmt: skip
    assert (clean.score, clean.details) == (1.0, "Pattern 'token' correctly absent from file")


def test_file_matches_regex_long_matches_are_quoted_to_100_characters(box: Sandbox) -> None:
    put(box, "big.txt", "x" * 50 + " y" * 250)
    result = grade(box, type="file_matches_regex", path="big.txt", pattern="[xy ]+")
    assert result.details == (
        f"Pattern '[xy ]+' found in file (matched: '{'x' * 50}{' y' * 24} …')"
    )
    one_run = grade(box, type="file_matches_regex", path="big.txt", pattern="x+")
    assert one_run.details == f"Pattern 'x+' found in file (matched: '{'x' * 50}')"
    put(box, "key.txt", "k" * 500)  # never quoted in part: it could be a key
    key = grade(box, type="file_matches_regex", path="key.txt", pattern="k+")
    assert key.details == "Pattern 'k+' found in file (matched: '…')"


def test_an_invalid_regex_is_a_load_error_at_its_criterion(tmp_path: Path) -> None:
    error = loads(tmp_path, "{type: file_matches_regex, path: a.txt, pattern: 'a(b'}")
    assert (error.line, error.field) == (5, "success_criteria[0]")
    assert error.message.startswith("Invalid regex pattern: missing ), unterminated subpattern")


# --- json_check --------------------------------------------------------------------------

SCHEMA = (
    '{"type": "object", "required": ["city", "days"], "properties": {"city": '
    '{"type": "string"}, "days": {"type": "array", "items": {"type": "integer"}}}}'
)


def test_json_check_schema_and_assertions(box: Sandbox) -> None:
    put(box, "schema.json", SCHEMA)
    put(box, "f.json", '{"city": "Paris", "days": [1, 2, 3], "ok": true, "temp": 21.5}')
    result = grade(box, type="json_check", path="f.json", json_schema="schema.json", assertions=[
        {"expression": "city", "expected": "Paris"},
        {"expression": "length(days)", "operator": "gte", "expected": 3},
        {"expression": "ok", "operator": "type", "expected": "boolean"},
        {"expression": "ok", "operator": "type", "expected": "number"},
        {"expression": "temp", "operator": "lt", "expected": 20},
        {"expression": "city", "operator": "regex", "expected": "^P"},
        {"expression": "missing", "operator": "exists"},
        {"expression": "days", "operator": "contains", "expected": 2},
    ])  # fmt: skip
    assert result.score == pytest.approx((1.0 + 5 / 8) / 2)
    assert result.details == (
        "Schema: valid; Assertions: 5/8 passed ('ok' type: expected 'number', got True; "
        "'temp' lt: expected 20, got 21.5; 'missing' exists: nothing there (missing or null)); "
        "Score: 0.81"
    )


def test_json_check_a_failed_schema_skips_the_assertions(box: Sandbox) -> None:
    put(box, "schema.json", SCHEMA)
    put(box, "f.json", '{"city": "Paris", "days": ["mon"]}')
    result = grade(box, type="json_check", path="f.json", json_schema="schema.json",
                   assertions=[{"expression": "city", "expected": "Paris"}])  # fmt: skip
    assert result.score == 0.0
    assert result.details == ("Schema: invalid — 'mon' is not of type 'integer' (at /days/0); "
                              "Assertions: skipped (schema failed); Score: 0.00")  # fmt: skip


def test_json_check_valid_json_missing_file_and_bad_json(box: Sandbox) -> None:
    put(box, "ok.json", "[1, 2]")
    assert grade(box, type="json_check", path="ok.json").details == "'ok.json' is valid JSON"
    missing = grade(box, type="json_check", path="no.json")
    assert (missing.score, missing.details) == (0.0, "File 'no.json' does not exist")
    put(box, "bad.json", "{city: Paris}")
    bad = grade(box, type="json_check", path="bad.json")
    assert bad.score == 0.0
    assert bad.details.startswith("Invalid JSON in 'bad.json': Expecting property name")


def test_json_check_reads_a_fenced_response_and_an_inline_schema() -> None:
    response = 'Here it is:\n```json\n{"answer": 42}\n```'
    assert grade(None, response, type="json_check").score == 0.0  # prose around the fence
    fenced = '```json\n{"answer": 42}\n```\n'
    result = grade(None, fenced, type="json_check", json_schema={
        "type": "object", "properties": {"answer": {"const": 42}}}, assertions=[
        {"expression": "answer", "operator": "gt", "expected": 41}])  # fmt: skip
    assert (result.score, result.details) == (
        1.0, "Schema: valid; Assertions: 1/1 passed; Score: 1.00")  # fmt: skip


def test_json_check_a_missing_or_malformed_schema_file_is_an_error(box: Sandbox) -> None:
    put(box, "f.json", "{}")
    with pytest.raises(CriterionError, match=r"^Schema file 'schema\.json' not found$"):
        grade(box, type="json_check", path="f.json", json_schema="schema.json")
    put(box, "schema.json", '{"type": "objekt"}')
    with pytest.raises(CriterionError, match=r"^Schema: malformed schema — 'objekt' is not valid"):
        grade(box, type="json_check", path="f.json", json_schema="schema.json")


def test_json_check_load_errors(tmp_path: Path) -> None:
    expected = loads(tmp_path, "{type: json_check, path: f.json, assertions: [{expression: a, "
                     "operator: gt}]}")  # fmt: skip
    assert expected.message == "'expected' is required when operator is 'gt'"
    assert expected.field == "success_criteria[0].assertions[0]"
    brittle = loads(tmp_path, "{type: json_check, path: f.json, assertions: [{expression: a, "
                    "operator: contains, expected: scalat}]}")  # fmt: skip
    assert brittle.message.startswith("Brittle 'contains' assertion: expected literal 'scalat' "
                                      "has 6 non-whitespace characters")  # fmt: skip
    jmes = loads(tmp_path, "{type: json_check, path: f.json, assertions: [{expression: 'a[', "
                 "expected: 1}]}")  # fmt: skip
    assert jmes.message.startswith("expression 'a[' is not valid JMESPath:")
    assert jmes.field == "success_criteria[0].assertions[0]"
    schema = loads(tmp_path, "{type: json_check, path: f.json, json_schema: {type: 12}}")
    assert schema.message.startswith("json_schema is not a valid JSON Schema: 12 is not valid")
    kind = loads(tmp_path, "{type: json_check, path: f.json, assertions: [{expression: a, "
                 "operator: type, expected: integer}]}")  # fmt: skip
    assert kind.message == ("operator 'type' takes a JSON type name (string, number, boolean, "
                            "array, object, null), not 'integer'")  # fmt: skip


def test_json_check_null_counts_as_an_expected_value(box: Sandbox) -> None:
    put(box, "f.json", '{"a": null}')
    assert grade(box, type="json_check", path="f.json",
                 assertions=[{"expression": "a", "expected": None}]).score == 1.0  # fmt: skip


# --- pytest ------------------------------------------------------------------------------

PATH_WITH_PYTEST = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}


def test_pytest_scores_passed_over_collected_from_its_report(box: Sandbox) -> None:
    put(box, "tests/test_a.py", "import pytest\n"
        "def test_one(): pass\ndef test_two(): pass\ndef test_three(): assert False\n"
        "@pytest.mark.skip\ndef test_four(): pass\n")  # fmt: skip
    result = grade(box, env=PATH_WITH_PYTEST, type="pytest", path="tests")
    assert result.score == pytest.approx(0.5)
    assert result.details.startswith(
        "Exit code: 1, Pytest: 2 passed, 1 failed, 0 errors, 1 skipped out of 4 collected "
        "(score: 0.50)\nFAILED tests/test_a.py::test_three - assert False\n="
    )
    assert not (box.root / ".pytest_cache").exists()


SUB = (
    "def sub(a, b):\n    return a + b\n",
    "from calc import sub\n"
    "def test_one(): pass\ndef test_two(): pass\ndef test_three(): pass\n"
    "def test_sub1(): assert sub(3, 1) == 2\ndef test_sub2(): assert sub(5, 1) == 4\n",
)


@pytest.mark.parametrize("ini", [
    "[pytest]\naddopts = --deselect test_calc.py::test_sub1 --deselect test_calc.py::test_sub2\n",
    '[pytest]\naddopts = -k "not sub"\n', "[pytest]\naddopts = --maxfail=1\n"])  # fmt: skip
def test_pytest_ignores_the_addopts_an_agent_writes(box: Sandbox, ini: str) -> None:
    """A break-test turned FAILURE into SUCCESS with a two-line ``pytest.ini``."""
    put(box, "calc.py", SUB[0])
    put(box, "test_calc.py", SUB[1])
    put(box, "pytest.ini", ini)
    result = grade(box, env=PATH_WITH_PYTEST, type="pytest", path="test_calc.py")
    assert result.score == pytest.approx(0.6)
    assert "3 passed, 2 failed, 0 errors, 0 skipped out of 5 collected" in result.details


def test_pytest_counts_tests_a_conftest_deselects_as_failed(box: Sandbox) -> None:
    put(box, "calc.py", SUB[0])
    put(box, "test_calc.py", SUB[1])
    put(box, "conftest.py", "def pytest_collection_modifyitems(config, items):\n"
        "    kept = [i for i in items if 'sub' not in i.name]\n"
        "    config.hook.pytest_deselected(items=[i for i in items if i not in kept])\n"
        "    items[:] = kept\n")  # fmt: skip
    result = grade(box, env=PATH_WITH_PYTEST, type="pytest", path="test_calc.py")
    assert result.score == pytest.approx(0.6)
    assert result.details.startswith("Exit code: 0, Pytest: 3 passed, 2 failed (2 deselected by "
                                     "something other than the task's args: counted as "
                                     "failed), 0 errors, 0 skipped out of 5 collected")  # fmt: skip
    quiet = grade(box, env=PATH_WITH_PYTEST, type="pytest", path="test_calc.py", args=["-q"])
    assert quiet.score == pytest.approx(0.6)  # -q: the summary line has no rule around it
    assert "3 passed, 2 failed (2 deselected by something other" in quiet.details
    chosen = grade(
        box, env=PATH_WITH_PYTEST, type="pytest", path="test_calc.py", args=["-k", "not sub"]
    )  # the task's own choice: deselected are absent
    assert chosen.score == 1.0 and "3 passed, 0 failed," in chosen.details


def test_pytest_collection_errors_count_against_the_score(box: Sandbox) -> None:
    put(box, "test_ok.py", "def test_ok(): pass\n")
    put(box, "test_broken.py", "import not_a_module_anywhere\n")
    result = grade(box, env=PATH_WITH_PYTEST, type="pytest")
    assert result.score == 0.0  # pytest stops at a collection error: 0 of 1 ran
    assert "1 errors" in result.details and "Exit code: 2" in result.details
    # why: the collection error's line, which names no test
    assert "ERROR test_broken.py" in result.details
    assert "E   ModuleNotFoundError: No module named 'not_a_module_anywhere'" in result.details


def test_pytest_all_passing_and_no_tests(box: Sandbox) -> None:
    put(box, "test_ok.py", "def test_ok(): pass\n")
    assert grade(box, env=PATH_WITH_PYTEST, type="pytest").score == 1.0
    empty = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    try:
        none = grade(empty, env=PATH_WITH_PYTEST, type="pytest")
    finally:
        empty.remove()
    assert none.score == 0.0
    assert none.details.startswith("Exit code: 5, Pytest: No tests collected (score: 0.00)")


def test_pytest_that_is_not_installed_is_an_error_not_a_zero(box: Sandbox) -> None:
    put(box, "test_ok.py", "def test_ok(): pass\n")
    with pytest.raises(CriterionError, match=r"^pytest is not installed in the sandbox") as got:
        grade(box, env={"PATH": "/usr/bin:/bin"}, type="pytest")
    assert not isinstance(got.value, EvidenceError)  # the grader's lack, not the agent's doing


def test_tests_the_agent_deleted_score_zero_not_an_error(box: Sandbox) -> None:
    """Coder Eval's "nothing collected or run → 0.0": an agent that removes the tests (pytest
    exits 4, a usage error: no such file) fails its row; an error would leave the row out of
    every average and let a gate pass."""
    spec = CRITERION.validate_python({"type": "pytest", "path": "tests"})
    context = GradingContext(sandbox=box, response=None, env=PATH_WITH_PYTEST)
    [result] = asyncio.run(grade_row([spec], context, default_criteria()))
    assert (result.score, result.evaluation_status, result.error) == (0.0, "evaluated", None)
    assert result.details.startswith(
        "Exit code: 4, Pytest: stopped with a usage error, no test "
        "ran (score: 0.00)\nERROR: file or directory not found"
    )


def test_pytest_refuses_a_report_option_of_its_own(tmp_path: Path) -> None:
    error = loads(tmp_path, "{type: pytest, args: ['--junitxml=x.xml']}")
    assert error.message.startswith("args '--junitxml=x.xml': assay writes pytest's JUnit XML")


def test_pytest_a_hanging_test_scores_zero(box: Sandbox) -> None:
    put(box, "test_hang.py", "import time\ndef test_hang(): time.sleep(60)\n")
    result = grade(box, env=PATH_WITH_PYTEST, type="pytest", timeout=2)
    assert result.score == 0.0 and result.details.startswith("Timed out after 2 s")


# --- run_command score_from_stdout -------------------------------------------------------


def test_score_from_stdout_reads_the_first_line(box: Sandbox) -> None:
    result = grade(box, type="run_command", command="printf '0.75\\nrecall ok\\n'",
                   score_from_stdout=True)  # fmt: skip
    assert result.score == 0.75
    assert result.details == "Score: 0.750\nCommand: printf '0.75\\nrecall ok\\n'\nrecall ok"
    edge = grade(box, type="run_command", command="echo 1.0000000001", score_from_stdout=True)
    assert edge.score == 1.0  # a rounding error's worth past 1


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("echo 0.5; exit 2", "Command exited with code 2 (expected 0)"),
        ("true", "No output from command (empty stdout)"),
        ("echo good", "Could not parse score from first line: 'good'"),
        ("echo nan", "Invalid score value from stdout: 'nan'"),
        # a count where a share was meant (a break-test's "2" of 3 checks passed the row)
        (
            "echo 2",
            "Score 2 from stdout is outside [0, 1]: print a share (passed / total), not "
            "a count; a score out of range is refused, never clamped",
        ),
        (
            "echo -0.2",
            "Score -0.2 from stdout is outside [0, 1]: print a share (passed / total), "
            "not a count; a score out of range is refused, never clamped",
        ),
        (
            "printf '\\n0.9\\n'",
            "The first line of stdout is blank: score_from_stdout reads the "
            "score from the first line",
        ),
    ],
)
def test_score_from_stdout_without_a_score_scores_zero(
    box: Sandbox, command: str, message: str
) -> None:
    """Coder Eval: "non-zero exit or parse failure → 0"; a failing scorer is a 0.0 with the
    reason, not an error that would drop the row from the averages."""
    with pytest.raises(EvidenceError) as error:
        grade(box, type="run_command", command=command, score_from_stdout=True)
    assert str(error.value).splitlines()[0] == message
    spec = CRITERION.validate_python({"type": "run_command", "command": command,
                                      "score_from_stdout": True})  # fmt: skip
    context = GradingContext(sandbox=box, response=None, env=dict(os.environ))
    [result] = asyncio.run(grade_row([spec], context, default_criteria()))
    assert (result.score, result.evaluation_status, result.error) == (0.0, "evaluated", None)
    assert result.details.splitlines()[0] == message


def test_score_from_stdout_and_expected_stdout_exclude_each_other() -> None:
    with pytest.raises(ValidationError, match="'score_from_stdout' and 'expected_stdout' are "
                       "mutually exclusive"):  # fmt: skip
        CRITERION.validate_python({"type": "run_command", "command": "x",
                                   "score_from_stdout": True, "expected_stdout": "1"})  # fmt: skip


def test_pytest_that_writes_no_report_is_an_error(box: Sandbox, tmp_path: Path) -> None:
    fake = write(tmp_path / "bin" / "pytest", "#!/bin/sh\necho 'collected nothing'\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(EvidenceError, match=r"^Exit code: 1, Pytest: wrote no report, no test "
                       r"ran \(score: 0.00\)\ncollected nothing"):  # fmt: skip
        grade(box, env={"PATH": f"{fake.parent}:/usr/bin:/bin"}, type="pytest")


def test_pytest_a_report_that_is_not_junit_is_an_error(box: Sandbox, tmp_path: Path) -> None:
    fake = write(tmp_path / "bin" / "pytest", "#!/bin/sh\nfor a; do case $a in --junitxml=*) "
                 "echo '<html/>' > \"${a#--junitxml=}\";; esac; done\nexit 0\n")  # fmt: skip
    fake.chmod(0o755)
    with pytest.raises(CriterionError, match=r"^pytest's report is not JUnit XML \(root element"):
        grade(box, env={"PATH": f"{fake.parent}:/usr/bin:/bin"}, type="pytest")


def test_json_check_schema_files_that_cannot_grade(box: Sandbox) -> None:
    put(box, "f.json", "{}")
    put(box, "bad.json", "{not json")
    with pytest.raises(CriterionError, match=r"^Invalid JSON in schema file 'bad\.json': "):
        grade(box, type="json_check", path="f.json", json_schema="bad.json")
    put(box, "list.json", "[1]")
    with pytest.raises(CriterionError, match=r"^Schema: malformed schema — 'list\.json' is not"):
        grade(box, type="json_check", path="f.json", json_schema="list.json")
    put(box, "remote.json", '{"$ref": "https://example.com/schema.json"}')
    with pytest.raises(CriterionError, match=r"^Schema: malformed schema — cannot resolve"):
        grade(box, type="json_check", path="f.json", json_schema="remote.json")


def test_json_check_regex_assertions_are_checked_at_load(tmp_path: Path) -> None:
    number = loads(tmp_path, "{type: json_check, path: f.json, assertions: [{expression: a, "
                   "operator: regex, expected: 5}]}")  # fmt: skip
    assert number.message == "operator 'regex' needs a pattern (text), not 5"
    broken = loads(tmp_path, "{type: json_check, path: f.json, assertions: [{expression: a, "
                   "operator: regex, expected: '(a'}]}")  # fmt: skip
    assert broken.message.startswith("expected '(a' is not a valid regex: missing ),")


def test_json_check_ordered_assertions_are_checked_at_load(tmp_path: Path) -> None:
    quoted = loads(tmp_path, "{type: json_check, path: f.json, assertions: [{expression: a, "
                   "operator: gt, expected: '1'}]}")  # fmt: skip
    assert quoted.message == (
        "operator 'gt' has expected '1', a number written as text: write it without quotes "
        "(expected: 1) to compare with JSON numbers"
    )
    listed = loads(tmp_path, "{type: json_check, path: f.json, assertions: [{expression: a, "
                   "operator: lte, expected: [1]}]}")  # fmt: skip
    assert listed.message == "operator 'lte' compares with a number or a text, not [1]"


def test_json_check_compares_texts_in_code_point_order(box: Sandbox) -> None:
    put(box, "f.json", '{"day": "2026-12-01", "n": 3}')
    result = grade(box, type="json_check", path="f.json", assertions=[
        {"expression": "day", "operator": "gte", "expected": "2026-11-30"},
        {"expression": "n", "operator": "lt", "expected": 3.5}])  # fmt: skip
    assert result.score == 1.0


def test_json_check_functions_are_checked_at_load(tmp_path: Path) -> None:
    unknown = loads(tmp_path, "{type: json_check, path: f.json, assertions: [{expression: "
                    "'lenght(items)', operator: equals, expected: 2}]}")  # fmt: skip
    assert unknown.message.startswith(
        "expression 'lenght(items)' calls lenght(), which is not a JMESPath function (abs, avg,"
    )
    arity = loads(tmp_path, "{type: json_check, path: f.json, assertions: [{expression: "
                  "'a && length(a, b)', operator: exists}]}")  # fmt: skip
    assert arity.message == (
        "expression 'a && length(a, b)' calls length() with 2 argument(s); it takes 1"
    )
    few = loads(tmp_path, "{type: json_check, path: f.json, assertions: [{expression: "
                "'merge()', operator: exists}]}")  # fmt: skip
    assert (
        few.message == "expression 'merge()' calls merge() with 0 argument(s); it takes at least 1"
    )


def test_json_that_is_not_utf8_is_not_valid_json(box: Sandbox) -> None:
    """RFC 8259: JSON is UTF-8; a Latin-1 file was read leniently and passed "is valid JSON"
    (found by a break-test; Coder Eval fails it)."""
    (box.root / "latin.json").write_bytes('{"name": "café"}'.encode("latin-1"))
    spec = CRITERION.validate_python({"type": "json_check", "path": "latin.json"})
    context = GradingContext(sandbox=box, response=None, env=dict(os.environ))
    [result] = asyncio.run(grade_row([spec], context, default_criteria()))
    assert (result.score, result.error) == (0.0, None)
    assert result.details == "'latin.json' is not UTF-8 text (byte 0xe9 at offset 13)"
    (box.root / "utf8.json").write_text('{"name": "café"}', encoding="utf-8")
    assert grade(box, type="json_check", path="utf8.json").score == 1.0


# --- what the agent writes cannot stall the grader ---------------------------------------


def test_a_pattern_that_backtracks_without_end_scores_zero_in_bounded_time(box: Sandbox) -> None:
    """A break-test hung a run (and its signals) with ``^(a|aa)+$`` on the agent's file:
    the search is stopped after PATTERN_SECONDS and the criterion scores 0.0, saying why."""
    put(box, "out.txt", "a" * 40 + "!")
    with pytest.raises(EvidenceError, match=r"did not finish on this text in 2 s \(catastroph"):
        grade(box, type="file_matches_regex", path="out.txt", pattern="^(a|aa)+$")  # 0.0
    put(box, "out.txt", "a" * 40)  # the same pattern on a text it decides: as before
    assert grade(box, type="file_matches_regex", path="out.txt", pattern="^(a|aa)+$").score == 1


def test_json_nested_past_the_recursion_limit_scores_zero(box: Sandbox) -> None:
    put(box, "out.json", "[" * 100_000 + "]" * 100_000)
    result = grade(box, type="json_check", path="out.json")
    assert result.score == 0.0 and result.evaluation_status == "evaluated"
    assert (
        result.details == "'out.json' nests too deep to read or check (past Python's "
        "recursion limit)"
    )


def test_a_recorded_calls_flag_pattern_is_searched_in_bounded_time_too() -> None:
    from assay.criteria import patterns
    from assay.spec import cli_facets

    call = {"tool": "gh", "argv": ["pr", "create", "--title", "a" * 40 + "!"]}
    facets = {"tool": "gh", "verb": "pr create", "flags": {"title": {"matches_regex": "^(a|aa)+$"}}}
    with pytest.raises(EvidenceError, match="did not finish on this text in 2 s"):
        cli_facets.matches(call, facets, search=patterns.search)
    assert cli_facets.matches({**call, "argv": ["pr", "create", "--title", "aaaa"]}, facets,
                              search=patterns.search)  # fmt: skip
