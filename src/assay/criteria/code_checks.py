"""``import_check`` and ``pylint_score``: programs run in the row's sandbox over the Python
code the agent left; ``reference_comparison``: the agent's file against the task's reference
(``reference/coder_eval_agents.md`` §2).

``import_check`` reads the file's absolute imports with :mod:`ast` (``import a.b`` → ``a.b``;
``from a.b import c`` → ``a.b``; relative imports are the package's own and are left out)
and asks the sandbox's ``python3`` which of them ``importlib.util.find_spec`` resolves (a
dotted name imports its parents, as Python's own import would). Details: ``Checked: N,
resolved: k/N; Failed: a, b``.

``pylint_score`` runs ``python3 -m pylint --output-format=json2`` (pylint ≥ 3) and reads the
score from the report's ``statistics.score``. pylint's exit code is a bit field: a usage
error (32: the task's args or rcfile) is the criterion's error; fatal (1: the files named are
gone or unreadable, what the agent left) scores 0.0; the other bits only say which kinds of
message it found.
"""

from __future__ import annotations

import ast
import json
import shlex
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from assay.criteria.base import (
    Criterion,
    CriterionError,
    EvidenceError,
    GradingContext,
    ProgramCheck,
    Service,
    answering_program,
    basic_result,
    located,
    read_text,
    sandbox_of,
)
from assay.criteria.code_similarity import ComparisonError, similarity
from assay.results.task_result import CriterionResult
from assay.sandbox.process import ProcessResult, tail
from assay.spec.code_criteria import ImportCheck, PylintScore, ReferenceComparison

_FIND_SPECS = """\
import sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]  # the row's files never run here
import importlib.machinery, importlib.util, json, os
sys.path.insert(0, os.getcwd())  # ... but its modules resolve


def resolves(name):
    top, _, rest = name.partition(".")
    if not rest or top in sys.modules:
        return importlib.util.find_spec(name) is not None
    spec, qualified = importlib.util.find_spec(top), top  # found, not run
    for part in rest.split("."):
        if spec is None or spec.submodule_search_locations is None:
            return False
        qualified += "." + part
        spec = importlib.machinery.PathFinder.find_spec(
            qualified, list(spec.submodule_search_locations))
    return spec is not None


found = {}
for name in sys.argv[1:]:
    try:
        found[name] = resolves(name)
    except Exception:
        found[name] = False
print(json.dumps(found))
"""
"""The import check, run by the sandbox's ``python3`` in the row's folder: the checker's own
modules are imported before the row's folder is on ``sys.path`` (a ``json.py`` the agent
left must not answer for it), and a dotted name is resolved package by package without
running a package's ``__init__`` (``find_spec("a.b")`` imports ``a``: the agent's code would
print the verdict)."""
PYLINT_FATAL = 1
PYLINT_USAGE = 32
SHOWN_MESSAGES = 5


def absolute_imports(source: str) -> list[str]:
    """The modules ``source`` imports absolutely, in order, each once.

    Raises:
        SyntaxError: ``source`` is not valid Python.
    """
    names: dict[str, None] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names[node.module] = None
    return list(names)


class ImportCheckCriterion(ImportCheck, Criterion):
    """Grades ``import_check``; see the module docstring."""

    reads_sandbox: ClassVar[bool] = True
    check_seconds: ClassVar[float | None] = None  # its program has its own timeout

    async def check(self, context: GradingContext) -> CriterionResult:
        """Resolve the file's imports with the sandbox's interpreter."""
        text = read_text(self.path, context)
        if text.value is None:
            return basic_result(self, 0.0, f"File '{self.path}' does not exist")
        try:
            modules = absolute_imports(text.value)
        except SyntaxError as exc:
            return basic_result(self, 0.0, f"SyntaxError: {exc.msg} (line {exc.lineno})")
        if not modules:
            return basic_result(self, 1.0, "No imports to check")
        argv = ["python3", "-c", _FIND_SPECS, *modules]
        result = await sandbox_of(context).run(shlex.join(argv), env=context.env,
                                               timeout=self.timeout)  # fmt: skip
        found = _resolved(result, self.timeout)
        failed = [m for m in modules if not found.get(m)]
        resolved = len(modules) - len(failed)
        details = f"Checked: {len(modules)}, resolved: {resolved}/{len(modules)}"
        if failed:
            details += "; Failed: " + ", ".join(failed)
        return basic_result(self, resolved / len(modules), details)


def _resolved(result: ProcessResult, timeout: float) -> dict[str, bool]:
    if result.timed_out:
        raise CriterionError(f"the sandbox's python3 did not answer within {timeout:g} s")
    if result.exit_code != 0:
        why = tail(result.stderr.strip(), 300)
        raise CriterionError(f"the sandbox's python3 could not check the imports (exit code "
                             f"{result.exit_code}): {why}")  # fmt: skip
    try:
        found = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise CriterionError(f"unexpected output of the import check: "
                             f"{tail(result.shown_stdout.strip(), 200)!r}") from None  # fmt: skip
    return {str(k): bool(v) for k, v in found.items()}


class PylintScoreCriterion(PylintScore, Criterion):
    """Grades ``pylint_score``; see the module docstring."""

    reads_sandbox: ClassVar[bool] = True
    check_seconds: ClassVar[float | None] = None  # its program has its own timeout

    @classmethod
    def program_check(cls, path_variable: str) -> ProgramCheck:
        """``python3 -m pylint --version`` as a row runs it (the first ``python3`` on the
        rows' ``PATH``), run for real."""
        return answering_program(
            "python3 -m pylint", ["python3", "-m", "pylint", "--version"],
            path_variable=path_variable,
            fix="pip install 'pylint>=3' into the python3 the rows run (the first on their PATH)",
        )  # fmt: skip

    async def check(self, context: GradingContext) -> CriterionResult:
        """Run pylint in the sandbox and read its score."""
        sandbox = sandbox_of(context)
        target, _ = located(sandbox, self.path)
        if not target.exists():
            return basic_result(self, 0.0, f"'{self.path}' does not exist")
        argv = ["python3", "-m", "pylint", "--output-format=json2", *self.args]
        if self.rcfile is not None:
            argv.append(f"--rcfile={self.rcfile}")
        if self.fail_under is not None:
            argv.append(f"--fail-under={self.fail_under:g}")
        relative = target.relative_to(sandbox.root).as_posix()  # a glob's one match
        # PYTHONSAFEPATH (Python >= 3.11; older ones ignore it): the sandbox, the working
        # folder, is not put first on sys.path, so a ``pylint`` package the agent wrote
        # there is not the one that runs
        result = await sandbox.run(shlex.join([*argv, relative]),
                                   env={**context.env, "PYTHONSAFEPATH": "1"},
                                   timeout=self.timeout)  # fmt: skip
        report = _report(result, self.timeout)
        score = float(report["statistics"]["score"])
        messages = report.get("messages") or []
        return basic_result(self, max(0.0, score) / 10, _details(score, messages))


def _report(result: ProcessResult, timeout: float) -> dict[str, Any]:
    if result.timed_out:
        raise CriterionError(f"pylint did not finish within {timeout:g} s")
    error = tail(result.stderr.strip(), 300)
    if "No module named pylint" in result.stderr:
        raise CriterionError("pylint is not installed in the sandbox (python3 -m pylint: No "
                             "module named pylint): install it where the row runs")  # fmt: skip
    code = result.exit_code or 0
    shown = error or tail(result.shown_stdout.strip(), 300)
    if code & PYLINT_USAGE or code < 0:  # the task's args or rcfile
        raise CriterionError(f"pylint stopped with a usage error (exit code {code}): {shown}")
    if code & PYLINT_FATAL:  # the files it was given are gone or unreadable: the agent's
        raise EvidenceError(f"pylint stopped with a fatal error (exit code {code}), "
                            f"nothing scored: {shown}")  # fmt: skip
    try:
        report: dict[str, Any] = json.loads(result.stdout)
        float(report["statistics"]["score"])
    except (ValueError, KeyError, TypeError):
        raise CriterionError(f"pylint's report has no score (pylint 3 or later writes one): "
                             f"{tail(result.shown_stdout.strip(), 200)!r}") from None  # fmt: skip
    return report


def _details(score: float, messages: list[dict[str, Any]]) -> str:
    kinds = Counter(str(m.get("type", "message")) for m in messages)
    counted = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    lines = [f"Pylint score: {score:.2f}/10 ({len(messages)} messages"
             + (f": {counted})" if counted else ")")]  # fmt: skip
    for message in messages[:SHOWN_MESSAGES]:
        lines.append(f"{message.get('path')}:{message.get('line')}: "
                     f"{message.get('messageId')} {message.get('message')}")  # fmt: skip
    return "\n".join(lines)


REFERENCE_DIR: Service[Path] = Service("the task's reference folder")
"""The task's ``reference:`` folder (absolute), offered when the task has one."""


class ReferenceComparisonCriterion(ReferenceComparison, Criterion):
    """Grades ``reference_comparison``: the similarity of :mod:`.code_similarity`. An agent
    file that is missing or does not parse scores 0.0 (the agent's work); a reference that
    cannot be read is the criterion's error (the task's)."""

    graded_after_crash: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Compare the agent's file with the reference's."""
        folder = context.need(REFERENCE_DIR)
        if folder is None:
            raise CriterionError("No reference code provided (task.reference not set)")
        agent = read_text(self.agent_file, context)
        if agent.value is None:
            return basic_result(self, 0.0, f"Agent file not found: {self.agent_file}")
        reference = _reference_text(folder / self.reference_file)
        method = self.comparison_method
        try:
            score = similarity(agent.value, reference, method=method)
        except ComparisonError as exc:
            if exc.which == "reference":
                raise CriterionError(f"Comparison failed: {exc}") from None
            return basic_result(self, 0.0, f"Comparison failed: {exc}")
        return basic_result(self, score, f"{method} similarity {score:.3f} of '{self.agent_file}' "
                            f"to the reference's '{self.reference_file}' (threshold "
                            f"{self.similarity_threshold:g})")  # fmt: skip


def _reference_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise CriterionError(f"the reference file cannot be read: {exc}") from None
