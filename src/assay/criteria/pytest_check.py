"""``pytest``: run the sandbox's tests; the score is ``passed / collected``, read from the
JUnit XML report pytest writes (its console text changes between versions and plugins).

``pytest <path> <args> --junitxml=<report> -p no:cacheprovider -o addopts=`` runs in the
sandbox (an ``addopts`` of the sandbox's ini files is cleared: the agent could write one that
deselects the failing tests or stops at the first failure) with
the row's environment (inside its bwrap sandbox with the ``bwrap`` driver; the report goes
to a folder of its own, never into the sandbox). Collected = the report's ``tests``;
passed = ``tests − failures − errors − skipped`` (a collection error is an error). Exit
codes (pytest's): 0, 1, 2 are scored from the report, capped at 0.99 when the exit code is
not 0 (Coder Eval's rule); 5 (no test collected), 3 (internal error), 4 (usage error: the
tests the path names are gone) and a missing report score 0.0 (Coder Eval's "nothing
collected or run → 0.0": an agent that deletes the tests fails, it is not left out of the
averages); only a pytest that is not installed cannot grade the row: the criterion's error.
A run killed at ``timeout`` scores 0.0 (the tests hang). Tests pytest reports as
deselected when the task's ``args`` select none (no ``-k``, ``-m``, ``--deselect``, …)
count as collected and failed (a ``conftest.py`` hook the agent wrote left them out).
"""

from __future__ import annotations

import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar
from xml.etree import ElementTree

from assay.criteria.base import (
    Criterion,
    CriterionError,
    EvidenceError,
    GradingContext,
    ProgramCheck,
    answering_program,
    basic_result,
    sandbox_of,
)
from assay.results.task_result import CriterionResult
from assay.sandbox.process import ProcessResult, tail
from assay.spec.file_criteria import PytestCheck

IMPERFECT_CAP = 0.99
SCORED_EXITS = (0, 1, 2)
NO_TESTS_EXIT = 5


@dataclass(frozen=True)
class Counts:
    """What a JUnit XML report counts, over all its test suites."""

    tests: int
    failures: int
    errors: int
    skipped: int

    @property
    def passed(self) -> int:
        """Tests that neither failed, erred nor were skipped."""
        return max(0, self.tests - self.failures - self.errors - self.skipped)


def read_report(path: Path) -> Counts:
    """Sum the ``testsuite`` counts of a JUnit XML report.

    Raises:
        CriterionError: the file is missing or is not such a report.
    """
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as exc:
        raise CriterionError(f"pytest's JUnit XML report cannot be read: {exc}") from None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if root.tag not in ("testsuite", "testsuites"):
        raise CriterionError(f"pytest's report is not JUnit XML (root element <{root.tag}>)")
    totals = [0, 0, 0, 0]
    for suite in suites:
        for index, name in enumerate(("tests", "failures", "errors", "skipped")):
            try:
                totals[index] += int(suite.get(name) or 0)
            except ValueError:
                raise CriterionError(f"pytest's report has a bad {name} count") from None
    return Counts(*totals)


class PytestCheckCriterion(PytestCheck, Criterion):
    """Grades ``pytest``; see the module docstring."""

    check_seconds: ClassVar[float | None] = None  # pytest has its own timeout

    reads_sandbox: ClassVar[bool] = True

    @classmethod
    def program_check(cls, path_variable: str) -> ProgramCheck:
        """``pytest --version`` on the rows' ``PATH``, run for real."""
        fix = "pip install pytest where the rows run (on their PATH)"
        return answering_program("pytest", ["pytest", "--version"],
                                 path_variable=path_variable, fix=fix)  # fmt: skip

    async def check(self, context: GradingContext) -> CriterionResult:
        """Run pytest and read its report."""
        sandbox = sandbox_of(context)
        folder = Path(tempfile.mkdtemp(prefix="assay-pytest-"))
        report = folder / "report.xml"
        argv = ["pytest", self.path, *self.args, f"--junitxml={report}", "-p", "no:cacheprovider",
                "-o", "addopts="]  # fmt: skip
        try:
            result = await sandbox.run(shlex.join(argv), env=context.env, timeout=self.timeout,
                                       writable=(folder,))  # fmt: skip
            if result.timed_out:
                return basic_result(self, 0.0, f"Timed out after {self.timeout:g} s\n"
                                    f"{_output(result)}")  # fmt: skip
            return _score(self, result, report)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _score(spec: PytestCheck, result: ProcessResult, report: Path) -> CriterionResult:
    code = result.exit_code
    output = tail((result.stderr or result.shown_stdout).strip(), 500)
    if code in (126, 127) and not report.exists():
        raise CriterionError(f"pytest is not installed in the sandbox (exit code {code}): "
                             f"{tail(result.stderr.strip(), 300)}; on bwrap and docker the "
                             "host's home folders are hidden, so a pytest under ~ (pyenv, a "
                             "virtualenv there) is not on the row's PATH: install it outside "
                             "home, in the image, or run the task on tempdir")  # fmt: skip
    if code not in (*SCORED_EXITS, NO_TESTS_EXIT):  # nothing ran: 0.0, as Coder Eval scores it
        kind = {3: "an internal error", 4: "a usage error"}.get(code or -1, "an unknown exit")
        raise EvidenceError(f"Exit code: {code}, Pytest: stopped with {kind}, no test ran "
                            f"(score: 0.00)\n{output}")  # fmt: skip
    if not report.exists():
        raise EvidenceError(f"Exit code: {code}, Pytest: wrote no report, no test ran "
                            f"(score: 0.00)\n{output}")  # fmt: skip
    counts = read_report(report)
    unselected = 0 if _selects(spec.args) else _deselected(result)
    counts = Counts(counts.tests + unselected, counts.failures + unselected, counts.errors,
                    counts.skipped)  # fmt: skip
    if counts.tests == 0:
        return basic_result(spec, 0.0, f"Exit code: {code}, Pytest: No tests collected "
                            f"(score: 0.00)\n{_summary(result)}")  # fmt: skip
    score = counts.passed / counts.tests
    if code != 0 and score == 1.0:
        score = IMPERFECT_CAP
    unrun = (f" ({unselected} deselected by something other than the task's args: counted "
             "as failed)") if unselected else ""  # fmt: skip
    details = (
        f"Exit code: {code}, Pytest: {counts.passed} passed, {counts.failures} failed{unrun}, "
        f"{counts.errors} errors, {counts.skipped} skipped out of {counts.tests} collected "
        f"(score: {score:.2f})\n{_summary(result)}"
    )
    return basic_result(spec, score, details)


_SELECTING = ("-k", "-m", "--deselect", "--ignore", "--ignore-glob", "--lf", "--last-failed")
_DESELECTED = re.compile(r"\b(\d+) deselected\b")


def _selects(args: list[str]) -> bool:
    """The task's own ``args`` choose which tests run (``-k``, ``-m``, ``--deselect``, …)."""
    return any(arg.split("=", 1)[0] in _SELECTING or (arg.startswith(("-k", "-m")) and
               len(arg) > 2 and not arg.startswith("--")) for arg in args)  # fmt: skip


def _deselected(result: ProcessResult) -> int:
    """The tests pytest collected and then left out, from its last summary line: with
    the sandbox's ``addopts`` cleared (``-o addopts=``), a ``conftest.py`` or ini option the
    agent wrote is what deselects them, so they count as failed, not as absent."""
    closing = _closing(result.stdout.splitlines())
    found = _DESELECTED.search(closing) if closing else None
    return int(found.group(1)) if found else 0


def _summary(result: ProcessResult) -> str:
    """pytest's last summary line (``=== 2 passed, 1 failed in 0.1s ===``), after the lines
    of its short summary that name what failed or erred and why (``ERROR tests/test_x.py -
    ModuleNotFoundError: No module named 'calc'``: a collection error names no test), at
    most :data:`SHORT_LINES` of them."""
    lines = result.stdout.splitlines()
    closing = _closing(lines)
    named = [line for line in lines if line.startswith(("ERROR ", "FAILED "))]
    named += list(dict.fromkeys(_error_lines(lines)))  # why a collection failed
    shown = named[:SHORT_LINES] + ([f"… and {len(named) - SHORT_LINES} more"]
                                   if len(named) > SHORT_LINES else [])  # fmt: skip
    last = closing or tail(result.shown_stdout.strip(), 300)
    return "\n".join([*shown, last])


_TALLY = re.compile(r"\b\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed)\b"
                    r".* in [\d.]+s")  # fmt: skip


def _closing(lines: list[str]) -> str | None:
    """pytest's last summary line: ``=== 2 passed, 1 failed in 0.1s ===``, or with ``-q``
    (no rule around it) ``2 passed, 1 failed in 0.1s``."""
    ruled = [line for line in lines if line.startswith("=")]
    if ruled:
        return ruled[-1]
    return next((line for line in reversed(lines) if _TALLY.search(line)), None)


def _error_lines(lines: list[str]) -> list[str]:
    """The ``E   …`` lines of pytest's ERRORS section (a test file that cannot be imported,
    a fixture that fails): what its short summary line does not say."""
    found, inside = [], False
    for line in lines:
        if line.startswith("="):
            inside = " ERRORS " in line
        elif inside and line.startswith("E   "):
            found.append(line)
    return found


SHORT_LINES = 10
"""Lines of pytest's short summary kept in a result's details."""


def _output(result: ProcessResult) -> str:
    return f"Stdout: {tail(result.shown_stdout.strip(), 500) or '(empty)'}"
