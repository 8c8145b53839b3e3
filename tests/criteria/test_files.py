"""``file_exists`` and ``file_check`` on real sandboxes."""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from assay.criteria import default_criteria
from assay.criteria.base import CriterionError, EvidenceError, GradingContext
from assay.criteria.files import FileCheckCriterion, FileExistsCriterion
from assay.orchestration.running.grading import grade
from assay.results.task_result import BasicCriterionResult, CriterionResult
from assay.sandbox.tempdir import Sandbox, SandboxEscape
from assay.spec.criteria import FileCheck, FileExists, regex_flags
from assay.spec.task import SandboxConfig
from tests.helpers import check_with, write


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    yield box
    box.remove()


def ctx(sandbox: Sandbox | None, response: str | None = None) -> GradingContext:
    return GradingContext(sandbox=sandbox, response=response, env=dict(os.environ))


def exists(spec: dict[str, Any], context: GradingContext) -> CriterionResult:
    model = FileExists.model_validate({"type": "file_exists", **spec})
    return asyncio.run(check_with(model, context))


def file_check(spec: dict[str, Any], context: GradingContext) -> CriterionResult:
    model = FileCheck.model_validate({"type": "file_check", **spec})
    return asyncio.run(check_with(model, context))


# --- file_exists ----------------------------------------------------------------------


def test_file_exists_present(sandbox: Sandbox) -> None:
    write(sandbox.root / "out.txt", "x")
    result = exists({"path": "out.txt", "description": "made out.txt"}, ctx(sandbox))
    assert isinstance(result, BasicCriterionResult)
    assert (result.score, result.details, result.error) == (1.0, "'out.txt' exists", None)
    assert result.criterion_type == "file_exists"
    assert result.description == "made out.txt"
    assert result.evaluation_status == "evaluated"
    assert result.passed


def test_file_exists_absent(sandbox: Sandbox) -> None:
    result = exists({"path": "missing.txt"}, ctx(sandbox))
    assert (result.score, result.details, result.error) == (
        0.0,
        "'missing.txt' does not exist",
        None,
    )
    assert not result.passed


def test_file_exists_nested_path(sandbox: Sandbox) -> None:
    write(sandbox.root / "a" / "b" / "c.txt", "x")
    assert exists({"path": "a/b/c.txt"}, ctx(sandbox)).score == 1.0
    assert exists({"path": "a/b/d.txt"}, ctx(sandbox)).score == 0.0


def test_file_exists_counts_a_directory(sandbox: Sandbox) -> None:
    (sandbox.root / "build").mkdir()
    result = exists({"path": "build"}, ctx(sandbox))
    assert (result.score, result.details) == (1.0, "'build' exists")


def test_file_exists_through_a_symlink_inside(sandbox: Sandbox) -> None:
    write(sandbox.root / "real.txt", "x")
    (sandbox.root / "alias.txt").symlink_to("real.txt")
    (sandbox.root / "dangling.txt").symlink_to("nowhere.txt")
    assert exists({"path": "alias.txt"}, ctx(sandbox)).score == 1.0
    assert exists({"path": "dangling.txt"}, ctx(sandbox)).score == 0.0


def test_file_exists_symlink_out_of_the_sandbox_is_a_failing_zero(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """A link the agent made out of its sandbox is its doing: a failing 0.0 with the reason,
    not an error that would leave the row out of every average."""
    outside = write(tmp_path / "secret.txt", "secret")
    (sandbox.root / "leak.txt").symlink_to(outside)
    result = exists({"path": "leak.txt"}, ctx(sandbox))
    assert (result.score, result.error, result.evaluation_status) == (0.0, None, "evaluated")
    assert result.details == "path 'leak.txt' resolves outside the sandbox (a symlink)"
    assert not result.passed


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("../x.txt", "path '../x.txt' leaves the sandbox ('..')"),
        ("/etc/passwd", "path '/etc/passwd' is absolute; use a path inside the sandbox"),
    ],
)
def test_file_exists_escaping_path_reaching_the_checker_is_an_error_result(
    sandbox: Sandbox, path: str, error: str
) -> None:
    # The spec refuses these (below); a spec built without validation must still not crash.
    spec = FileExists.model_construct(type="file_exists", path=path)
    result = asyncio.run(check_with(spec, ctx(sandbox)))
    assert (result.score, result.error, result.evaluation_status) == (0.0, error, "error")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../x.txt", "path '../x.txt' leaves the sandbox ('..'); use a path inside it"),
        ("a/../../x.txt", "path 'a/../../x.txt' leaves the sandbox ('..'); use a path inside it"),
        ("/etc/passwd", "path '/etc/passwd' is absolute; use a path inside the sandbox"),
        ("C:\\x.txt", "path 'C:\\x.txt' is absolute; use a path inside the sandbox"),
        ("  ", "path is empty (a criterion without path reads the final response)"),
    ],
)
def test_escaping_paths_are_refused_when_the_spec_is_loaded(path: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        FileExists.model_validate({"type": "file_exists", "path": path})
    assert message in str(caught.value)
    with pytest.raises(ValidationError) as caught:
        FileCheck.model_validate({"type": "file_check", "path": path, "includes": ["x"]})
    assert message in str(caught.value)


def test_placeholder_paths_are_left_for_row_substitution() -> None:
    assert FileExists.model_validate({"type": "file_exists", "path": "${row.file}"}).path == (
        "${row.file}"
    )


def test_file_exists_without_a_kept_sandbox_cannot_be_evaluated() -> None:
    spec = FileExists.model_validate({"type": "file_exists", "path": "a.txt"})
    with pytest.raises(CriterionError, match="sandbox was not kept"):
        asyncio.run(check_with(spec, ctx(None)))


def test_result_carries_weight_threshold_and_gating(sandbox: Sandbox) -> None:
    result = exists({"path": "a.txt", "weight": 0, "pass_threshold": 0.5}, ctx(sandbox))
    assert (result.weight, result.pass_threshold, result.gating) == (0.0, 0.5, False)
    result = exists({"path": "a.txt", "weight": 2.5}, ctx(sandbox))
    assert (result.weight, result.pass_threshold, result.gating) == (2.5, 0.9, True)


def test_weight_zero_may_not_set_suite_thresholds() -> None:
    with pytest.raises(ValidationError, match="informational and may not set suite_thresholds"):
        FileExists.model_validate(
            {"type": "file_exists", "path": "a", "weight": 0, "suite_thresholds": {"mean": 1}}
        )


# --- file_check: scoring --------------------------------------------------------------

BODY = "alpha beta gamma\nsecond line\n"


@pytest.fixture
def body_file(sandbox: Sandbox) -> Sandbox:
    write(sandbox.root / "f.txt", BODY)
    return sandbox


def test_includes_and_excludes_score_the_mean_of_their_fractions(body_file: Sandbox) -> None:
    result = file_check(
        {
            "path": "f.txt",
            "includes": ["alpha", "beta", "delta"],  # 2 of 3 present
            "excludes": ["gamma", "omega"],  # 1 of 2 absent
        },
        ctx(body_file),
    )
    assert result.score == pytest.approx((2 / 3 + 1 / 2) / 2)  # 7/12
    assert result.details == "missing include 'delta'; found exclude 'gamma'"
    assert result.error is None


def test_three_categories_average_equally(body_file: Sandbox) -> None:
    result = file_check(
        {
            "path": "f.txt",
            "includes": ["alpha"],  # 1/1
            "excludes": ["zeta"],  # 1/1
            "patterns": [
                {"pattern": "^alpha"},  # matches: satisfied
                {"pattern": "gamma$", "must_match": False},  # no match without m: satisfied
                {"pattern": r"\d+"},  # no digits: not satisfied
                {"pattern": "second", "must_match": False},  # matches: not satisfied
            ],  # 2/4
        },
        ctx(body_file),
    )
    assert result.score == pytest.approx((1 + 1 + 2 / 4) / 3)  # 5/6
    assert result.details == r"pattern '\\d+' did not match; pattern 'second' matched"


@pytest.mark.parametrize(
    ("spec", "score"),
    [
        ({"includes": ["alpha", "nope", "nada"]}, 1 / 3),
        ({"excludes": ["alpha", "beta", "x", "y"]}, 2 / 4),
        ({"patterns": [{"pattern": "zzz"}, {"pattern": "beta"}, {"pattern": "q+"}]}, 1 / 3),
        ({"includes": ["alpha"], "patterns": [{"pattern": "zzz"}]}, (1 + 0) / 2),
        ({"excludes": ["alpha"], "patterns": [{"pattern": "beta"}]}, (0 + 1) / 2),
        ({"includes": ["a", "b", "c", "d"], "excludes": ["alpha", "beta", "w"]}, (1 + 1 / 3) / 2),
    ],
)
def test_category_fractions(body_file: Sandbox, spec: dict[str, Any], score: float) -> None:
    assert file_check({"path": "f.txt", **spec}, ctx(body_file)).score == pytest.approx(score)


def test_everything_satisfied_scores_one(body_file: Sandbox) -> None:
    result = file_check(
        {
            "path": "f.txt",
            "includes": ["alpha", "line"],
            "excludes": ["TODO"],
            "patterns": [{"pattern": "beta"}, {"pattern": "FIXME", "must_match": False}],
        },
        ctx(body_file),
    )
    assert (result.score, result.details) == (1.0, "all checks passed on 'f.txt'")
    assert result.passed


def test_nothing_satisfied_scores_zero(body_file: Sandbox) -> None:
    result = file_check(
        {"path": "f.txt", "includes": ["nope"], "excludes": ["alpha"]}, ctx(body_file)
    )
    assert result.score == 0.0
    assert not result.passed


def test_must_match_false(body_file: Sandbox) -> None:
    absent = {"patterns": [{"pattern": "secret", "must_match": False}]}
    present = {"patterns": [{"pattern": "beta", "must_match": False}]}
    assert file_check({"path": "f.txt", **absent}, ctx(body_file)).score == 1.0
    result = file_check({"path": "f.txt", **present}, ctx(body_file))
    assert (result.score, result.details) == (0.0, "pattern 'beta' matched")


def test_includes_are_case_sensitive_substrings(body_file: Sandbox) -> None:
    assert file_check({"path": "f.txt", "includes": ["ALPHA"]}, ctx(body_file)).score == 0.0
    assert file_check({"path": "f.txt", "includes": ["ha be"]}, ctx(body_file)).score == 1.0


# --- file_check: regex flags ----------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "flags", "score"),
    [
        ("^SECOND LINE$", None, 0.0),
        ("^SECOND LINE$", "im", 1.0),
        ("^SECOND LINE$", "i", 0.0),  # ^ needs MULTILINE: the line is not the first
        ("^SECOND LINE$", ["i", "m"], 1.0),
        ("^SECOND LINE$", ["IGNORECASE", "MULTILINE"], 1.0),
        ("^SECOND LINE$", ["re.IGNORECASE", "re.M"], 1.0),
        ("^SECOND LINE$", "IGNORECASE|MULTILINE", 1.0),
        ("^SECOND LINE$", "ignorecase, multiline", 1.0),
        ("^SECOND LINE$", 2 | 8, 1.0),  # Coder Eval's integer flags
        ("^SECOND LINE$", 2, 0.0),
        ("gamma.second", None, 0.0),
        ("gamma.second", "s", 1.0),
        ("gamma.second", "DOTALL", 1.0),
        ("gamma.second", 16, 1.0),
        ("al pha  # spaced out", "x", 1.0),
        ("al pha  # spaced out", None, 0.0),
        ("al pha  # spaced out", "VERBOSE", 1.0),
    ],
)
def test_pattern_flags(
    body_file: Sandbox, pattern: str, flags: str | list[str] | int | None, score: float
) -> None:
    spec = {"path": "f.txt", "patterns": [{"pattern": pattern, "flags": flags}]}
    assert file_check(spec, ctx(body_file)).score == score


@pytest.mark.parametrize(
    ("flags", "value"),
    [
        (None, 0),
        ("", 0),
        ([], 0),
        (0, 0),
        ("i", re.IGNORECASE),
        ("mi", re.IGNORECASE | re.MULTILINE),
        ("imsx", re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE),
        (["s", "x"], re.DOTALL | re.VERBOSE),
        ("I", re.IGNORECASE),
        ("re.S", re.DOTALL),
        (["Multiline"], re.MULTILINE),
        ("DOTALL + VERBOSE", re.DOTALL | re.VERBOSE),
        (18, re.IGNORECASE | re.DOTALL),
        (256, re.ASCII),
    ],
)
def test_regex_flags(flags: str | list[str] | int | None, value: int) -> None:
    assert regex_flags(flags) == value


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("q", "unknown regex flag 'q'; use i, m, s, x"),
        ("iq", "unknown regex flag 'iq'; use i, m, s, x"),
        (["i", "CASELESS"], "unknown regex flag 'CASELESS'; use i, m, s, x"),
        ("re.Q", "unknown regex flag 're.Q'; use i, m, s, x"),
        (4, "unknown regex flag 4; an integer combines re.IGNORECASE (2)"),  # LOCALE
        (128, "unknown regex flag 128"),  # DEBUG
        (-2, "unknown regex flag -2"),
    ],
)
def test_unknown_flag_is_refused_when_the_spec_is_loaded(
    flags: str | list[str] | int, message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        FileCheck.model_validate(
            {"type": "file_check", "path": "f", "patterns": [{"pattern": "a", "flags": flags}]}
        )
    assert message in str(caught.value)


def test_flags_may_not_be_a_boolean() -> None:
    with pytest.raises(ValidationError):
        FileCheck.model_validate(
            {"type": "file_check", "patterns": [{"pattern": "a", "flags": True}]}
        )


def test_invalid_pattern_is_refused_when_the_spec_is_loaded() -> None:
    with pytest.raises(ValidationError, match=r"pattern '\(unclosed' is not a valid regex"):
        FileCheck.model_validate({"type": "file_check", "patterns": [{"pattern": "(unclosed"}]})


def test_pattern_unknown_field_is_refused() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        FileCheck.model_validate(
            {"type": "file_check", "patterns": [{"pattern": "a", "mustmatch": False}]}
        )


# --- file_check: what it reads --------------------------------------------------------


def test_missing_file_scores_zero_with_details(sandbox: Sandbox) -> None:
    result = file_check({"path": "nope.txt", "includes": ["x"]}, ctx(sandbox))
    assert (result.score, result.details, result.error) == (0.0, "'nope.txt' does not exist", None)


def test_without_path_the_final_response_is_read(sandbox: Sandbox) -> None:
    write(sandbox.root / "answer.txt", "file text")
    spec = {"includes": ["response", "file"]}  # 1 of 2 in the response
    result = file_check(spec, ctx(sandbox, "the response text"))
    assert result.score == 0.5
    assert result.details == "missing include 'file'"
    result = file_check({"includes": ["response"]}, ctx(None, "the response text"))
    assert (result.score, result.details) == (1.0, "all checks passed on the final response")


def test_without_path_a_missing_response_scores_zero(sandbox: Sandbox) -> None:
    result = file_check({"includes": ["x"]}, ctx(sandbox, None))
    assert (result.score, result.details) == (0.0, "the final response does not exist")


def test_without_path_an_empty_response_is_checked(sandbox: Sandbox) -> None:
    result = file_check({"includes": ["x"], "excludes": ["y"]}, ctx(sandbox, ""))
    assert result.score == 0.5


def test_file_that_is_not_utf8_is_read_with_replacement_characters(sandbox: Sandbox) -> None:
    (sandbox.root / "latin1.txt").write_bytes("café ok\n".encode("latin-1") + b"\xff")
    result = file_check(
        {"path": "latin1.txt", "includes": ["ok", "caf\ufffd"], "excludes": ["café"]},
        ctx(sandbox),
    )
    assert (result.score, result.error) == (1.0, None)


def test_symlink_out_of_the_sandbox_cannot_be_read(sandbox: Sandbox, tmp_path: Path) -> None:
    outside = write(tmp_path / "secret.txt", "password")
    (sandbox.root / "leak.txt").symlink_to(outside)
    spec = {"path": "leak.txt", "includes": ["password"]}
    with pytest.raises(EvidenceError) as caught:
        file_check(spec, ctx(sandbox))
    assert str(caught.value) == "path 'leak.txt' resolves outside the sandbox (a symlink)"
    # As the grader records it: a failing 0.0 with the reason (a link the agent made is its
    # doing, not the grader's error), never the secret's content.
    model = FileCheck.model_validate({"type": "file_check", **spec})
    [result] = asyncio.run(grade([model], ctx(sandbox), default_criteria()))
    assert (result.score, result.evaluation_status, result.error) == (0.0, "evaluated", None)
    assert result.details == "path 'leak.txt' resolves outside the sandbox (a symlink)"


def test_directory_cannot_be_read(sandbox: Sandbox) -> None:
    (sandbox.root / "out").mkdir()
    with pytest.raises(EvidenceError, match=r"^'out' is a directory, not a file$"):
        file_check({"path": "out", "includes": ["x"]}, ctx(sandbox))


@pytest.mark.timeout(30)
def test_fifo_is_refused_instead_of_blocking(sandbox: Sandbox) -> None:
    os.mkfifo(sandbox.root / "pipe")
    outcome: list[BaseException | CriterionResult] = []

    def target() -> None:
        try:
            outcome.append(file_check({"path": "pipe", "includes": ["x"]}, ctx(sandbox)))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # unblock the reader so the thread can end
        with open(sandbox.root / "pipe", "wb"):
            pass
        thread.join(5)
        pytest.fail("reading a FIFO blocked the criterion")
    [error] = outcome
    assert isinstance(error, CriterionError)
    assert str(error) == "'pipe' is not a regular file"


def test_file_check_without_a_kept_sandbox_cannot_be_evaluated() -> None:
    with pytest.raises(CriterionError, match="sandbox was not kept"):
        file_check({"path": "f.txt", "includes": ["x"]}, ctx(None, "response"))


def test_file_check_without_categories_is_an_existence_check(sandbox: Sandbox) -> None:
    # Coder Eval's file_check with only `path` is a pure existence check.
    write(sandbox.root / "made.txt", "")
    result = file_check({"path": "made.txt"}, ctx(sandbox))
    assert (result.score, result.details) == (1.0, "'made.txt' exists")
    assert file_check({"path": "absent.txt"}, ctx(sandbox)).score == 0.0
    assert file_check({}, ctx(sandbox, "an answer")).score == 1.0
    assert file_check({}, ctx(sandbox, None)).score == 0.0


def test_registry_has_both_file_checkers() -> None:
    registry = default_criteria()
    assert registry.get("file_exists") is FileExistsCriterion
    assert registry.get("file_check") is FileCheckCriterion
    with pytest.raises(KeyError, match="did you mean 'file_check'"):
        registry.get("file_chek")


def test_a_path_that_does_not_exist_is_read_as_a_glob(sandbox: Sandbox, tmp_path: Path) -> None:
    """Coder Eval's rule: a glob is used when the literal path does not exist; matches are
    sorted and never inside ignored folders nor through a link that leads out; file_exists
    needs one match or more, a check of content exactly one (more is the criterion's error
    naming them); a glob cannot leave the sandbox."""
    for name in ("src/pkg/m.py", "src/other/m.py", "src/node_modules/x/m.py", "notes.txt"):
        write(sandbox.root / name, "hello\n")
    write(tmp_path / "outside" / "m.py", "hello\n")
    (sandbox.root / "src" / "link").symlink_to(tmp_path / "outside")
    context = ctx(sandbox)
    assert sandbox.matches("src/**/m.py") == ["src/other/m.py", "src/pkg/m.py"]
    assert sandbox.matches("notes.txt") == []  # no glob characters: the plain path's rule
    found = exists({"path": "src/**/m.py"}, context)
    assert (
        found.score == 1.0
        and found.details == "'src/**/m.py' matches 2: src/other/m.py, src/pkg/m.py"
    )
    assert exists({"path": "nothing/*.py"}, context).score == 0.0
    one = file_check({"path": "src/p*/m.py", "includes": ["hello"]}, context)
    assert one.score == 1.0 and one.error is None
    from assay.criteria.base import read_text

    assert (
        read_text("src/p*/m.py", context).source
        == "'src/pkg/m.py' (the one match of 'src/p*/m.py')"
    )
    with pytest.raises(CriterionError, match=r"'src/\*/m.py' matches 2 files \(src/other/m.py, "
                       r"src/pkg/m.py\); a check of a file's content needs"):  # fmt: skip
        file_check({"path": "src/*/m.py", "includes": ["hello"]}, context)
    with pytest.raises(ValidationError, match="leaves the sandbox"):  # as a plain path
        exists({"path": "../*"}, context)
    with pytest.raises(SandboxEscape):
        sandbox.matches("../*")
