"""``response_match``: the final response (or a file) against expected text."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from assay.criteria import default_criteria
from assay.criteria.base import CriterionError, GradingContext
from assay.criteria.response import ResponseMatchCriterion, matches
from assay.results.task_result import CriterionResult
from assay.sandbox.tempdir import Sandbox
from assay.spec.criteria import ResponseMatch
from assay.spec.task import SandboxConfig
from tests.helpers import check_with, write


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    yield box
    box.remove()


def spec_of(**fields: Any) -> ResponseMatch:
    return ResponseMatch.model_validate({"type": "response_match", **fields})


def check(response: str | None, sandbox: Sandbox | None = None, **fields: Any) -> CriterionResult:
    context = GradingContext(sandbox=sandbox, response=response)
    return asyncio.run(check_with(spec_of(**fields), context))


def score(response: str | None, **fields: Any) -> float:
    return check(response, **fields).score


# --- exact ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "expected", "result"),
    [
        ("Paris", "Paris", 1.0),
        ("  Paris \n", "Paris", 1.0),  # the response is stripped
        ("Paris", "  Paris\n", 1.0),  # so is the expected text
        ("PARIS", "paris", 1.0),  # case-insensitive by default
        ("Straße", "STRASSE", 1.0),  # by Unicode case folding
        ("Paris, France", "Paris", 0.0),  # exact is not a substring test
        ("Par is", "Paris", 0.0),
        ("", "Paris", 0.0),
    ],
)
def test_exact(response: str, expected: str, result: float) -> None:
    assert score(response, expected=expected) == result


def test_exact_case_sensitive() -> None:
    assert score("Paris", expected="paris", case_sensitive=True) == 0.0
    assert score(" Paris\n", expected="Paris", case_sensitive=True) == 1.0


def test_exact_details() -> None:
    result = check(" paris ", expected="Paris", description="capital")
    assert (result.score, result.error, result.description) == (1.0, None, "capital")
    assert result.details == "the final response matched (exact) 'Paris'"
    result = check("Lyon", expected="Paris")
    assert (result.score, result.error) == (0.0, None)
    assert result.details == "the final response 'Lyon' does not match (exact) 'Paris'"
    assert not result.passed


# --- contains -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "expected", "case_sensitive", "result"),
    [
        ("The capital is Paris.", "paris", False, 1.0),
        ("The capital is Paris.", "paris", True, 0.0),
        ("The capital is Paris.", "Paris", True, 1.0),
        ("The capital is Paris.", "London", False, 0.0),
        ("The capital is Paris.", "is Paris", False, 1.0),
        ("The capital is Paris.", "isParis", False, 0.0),
    ],
)
def test_contains(response: str, expected: str, case_sensitive: bool, result: float) -> None:
    fields = {"expected": expected, "match": "contains", "case_sensitive": case_sensitive}
    assert score(response, **fields) == result


# --- regex ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "pattern", "case_sensitive", "result"),
    [
        ("It is PARIS.", r"\bparis\b", False, 1.0),  # IGNORECASE by default
        ("It is PARIS.", r"\bparis\b", True, 0.0),
        ("It is Paris.", r"\bParis\b", True, 1.0),
        ("answer: 42", r"\d+", False, 1.0),  # re.search, anywhere in the text
        ("answer: 42", r"^\d+$", False, 0.0),
        ("answer: 42", r"^answer: (\d+)$", False, 1.0),
        ("first\nsecond", r"^second$", False, 0.0),  # no MULTILINE
        ("first\nsecond", r"(?m)^second$", False, 1.0),
        (" 42 ", r"^42$", False, 0.0),  # a regex sees the text as it is
    ],
)
def test_regex(response: str, pattern: str, case_sensitive: bool, result: float) -> None:
    fields = {"expected": pattern, "match": "regex", "case_sensitive": case_sensitive}
    assert score(response, **fields) == result


def test_invalid_regex_is_refused_when_the_spec_is_loaded() -> None:
    with pytest.raises(ValidationError, match=r"expected '\(unclosed' is not a valid regex"):
        spec_of(expected="(unclosed", match="regex")
    with pytest.raises(ValidationError, match=r"expected '\[' is not a valid regex"):
        spec_of(expected=["ok", "["], match="regex")


def test_regex_characters_are_literal_outside_regex_mode() -> None:
    assert score("(a+b)", expected="(a+b)") == 1.0
    assert score("x (a+b) y", expected="(a+b)", match="contains") == 1.0
    assert score("aab", expected="a+b", match="contains") == 0.0


def test_placeholder_regex_waits_for_the_row() -> None:
    assert spec_of(expected="${row.answer}(", match="regex").expected == "${row.answer}("


# --- alternatives ---------------------------------------------------------------------


def test_any_alternative_may_match() -> None:
    result = check("lyon", expected=["Paris", "Lyon", "Marseille"])
    assert (result.score, result.details) == (1.0, "the final response matched (exact) 'Lyon'")
    assert score("I'd say Marseille", expected=["Paris", "marseille"], match="contains") == 1.0
    assert score("X-42", expected=[r"^Y", r"\d{2}$"], match="regex") == 1.0


def test_no_alternative_matches() -> None:
    result = check("Nice", expected=["Paris", "Lyon"])
    assert result.score == 0.0
    assert result.details == "the final response 'Nice' does not match (exact) 'Paris' or 'Lyon'"


def test_empty_list_of_alternatives_is_refused() -> None:
    with pytest.raises(ValidationError, match="expected is an empty list"):
        spec_of(expected=[])


# --- what it reads --------------------------------------------------------------------


def test_missing_response_scores_zero() -> None:
    result = check(None, expected="Paris")
    assert (result.score, result.error) == (0.0, None)
    assert result.details == "the final response is missing"


def test_long_response_is_shortened_in_details() -> None:
    response = "word " * 40
    result = check(response, expected="y")
    assert result.details == (
        "the final response '" + "word " * 15 + "word…' does not match (exact) 'y'"
    )
    one_token = check("x" * 200, expected="y")  # never cut inside a token (a key)
    assert one_token.details == "the final response '…' does not match (exact) 'y'"


def test_path_reads_a_file_instead_of_the_response(sandbox: Sandbox) -> None:
    write(sandbox.root / "answer.txt", "Paris\n")
    result = check("Lyon", sandbox, expected="paris", path="answer.txt")
    assert (result.score, result.details) == (1.0, "'answer.txt' matched (exact) 'paris'")


def test_path_to_a_missing_file_scores_zero(sandbox: Sandbox) -> None:
    result = check("Paris", sandbox, expected="Paris", path="answer.txt")
    assert (result.score, result.details) == (0.0, "'answer.txt' is missing")


def test_path_symlinked_out_of_the_sandbox_is_an_error(sandbox: Sandbox, tmp_path: Path) -> None:
    (sandbox.root / "answer.txt").symlink_to(write(tmp_path / "real", "Paris"))
    with pytest.raises(CriterionError, match=r"resolves outside the sandbox \(a symlink\)"):
        check(None, sandbox, expected="Paris", path="answer.txt")


def test_path_may_not_leave_the_sandbox() -> None:
    with pytest.raises(ValidationError, match="leaves the sandbox"):
        spec_of(expected="x", path="../answer.txt")


def test_matches_helper() -> None:
    assert matches(" A ", "a", "exact", case_sensitive=False)
    assert not matches(" A ", "a", "exact", case_sensitive=True)
    assert matches("xAx", "a", "contains", case_sensitive=False)
    assert matches("xAx", "a", "regex", case_sensitive=False)
    assert not matches("xAx", "a", "regex", case_sensitive=True)


def test_registry_returns_this_checker() -> None:
    assert default_criteria().get("response_match") is ResponseMatchCriterion
