"""``uipath_eval``: UiPath's own evaluation of the UiPath project the agent left, graded
against the task's minimums (``reference/coder_eval_agents.md`` §2; Coder Eval's checker).

It runs ``uipath eval AGENT EVAL_SET --no-report --output-file F`` (PyPI ``uipath``) in the
row's sandbox, inside its jail: the ``uipath`` on the row's ``PATH``, else the one ``make
install-dev`` put in the clone assay runs from (never one the agent could write: a project's
own ``.venv`` is not used), with UiPath's telemetry off
(``UIPATH_TELEMETRY_ENABLED=false``). The eval set is found, checked and copied in by
:mod:`assay.criteria.uipath_sets`; the copy and the output are removed afterwards. The
metrics and the score are :mod:`assay.criteria.uipath_metrics`'.

What did not grade is the criterion's error, never a 0: the CLI missing or not running, a
timeout, an output that is not the report, an eval set that is wrong or missing, or an
evaluator whose score a threshold needs that raised instead of scoring. A project ``uipath``
cannot evaluate (no ``uipath.json``, no such entrypoint) is the agent's work and scores 0,
with the CLI's message, as in Coder Eval. The agent's code runs in the same process that
reads the eval set, so it could read the expected outputs: as in Coder Eval, ``uipath_eval``
grades code that is not trying to cheat.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import uuid
from pathlib import Path
from typing import Any, ClassVar

from assay.criteria.base import (
    Criterion,
    CriterionError,
    GradingContext,
    ProgramCheck,
    answering_program,
    basic_result,
    sandbox_of,
)
from assay.criteria.uipath_metrics import ANSI, details, metrics_of, threshold_score
from assay.criteria.uipath_sets import prepare_eval_set
from assay.install import project_tools
from assay.results.task_result import CriterionResult
from assay.sandbox.process import ProcessResult, tail
from assay.sandbox.tempdir import Sandbox
from assay.spec.code_criteria import UipathEval

NOT_FOUND, NOT_EXECUTABLE = 127, 126


class UipathEvalCriterion(UipathEval, Criterion):
    """Grades ``uipath_eval``; see the module docstring."""

    check_seconds: ClassVar[float | None] = None  # its program has its own timeout

    reads_sandbox: ClassVar[bool] = True

    @classmethod
    def program_check(cls, path_variable: str) -> ProgramCheck:
        """``uipath --version`` as a row finds it (:func:`uipath_path`: the rows' ``PATH``,
        else the clone's ``make install-dev`` copy), run for real."""
        fix = ("make install-dev (in a clone of assay: a pinned uipath in .tools/uipath), or "
               "pip install uipath where the rows run")  # fmt: skip
        return answering_program("uipath", ["uipath", "--version"],
                                 path_variable=uipath_path(path_variable), fix=fix)  # fmt: skip

    async def check(self, context: GradingContext) -> CriterionResult:
        """Run ``uipath eval`` in the sandbox and compare its metrics to the thresholds."""
        sandbox = sandbox_of(context)
        scratch = sandbox.root / f".assay-uipath-eval-{uuid.uuid4().hex[:8]}"
        try:
            eval_set = prepare_eval_set(self.eval_set, task_dir=context.env.get("ASSAY_TASK_DIR"),
                                        root=sandbox.root, scratch=scratch,
                                        thresholds=self.thresholds)  # fmt: skip
            result = await _run(self, sandbox, eval_set, scratch, context.env)
            if result.exit_code != 0:
                return basic_result(self, 0.0, f"uipath eval could not evaluate the project "
                                    f"(exit code {result.exit_code}): {_said(result)}")  # fmt: skip
            report = _report(scratch / "output.json")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        metrics = metrics_of(report, needed=set(self.thresholds))
        score, failed = threshold_score(metrics.values, self.thresholds)
        return basic_result(self, score, details(metrics, failed))


async def _run(spec: UipathEval, sandbox: Sandbox, eval_set: str, scratch: Path,
               env: dict[str, str]) -> ProcessResult:  # fmt: skip
    scratch.mkdir(exist_ok=True)
    output = (scratch / "output.json").relative_to(sandbox.root).as_posix()
    argv = ["uipath", "eval", spec.agent_name, eval_set, "--no-report", "--output-file", output]
    path = uipath_path(env.get("PATH", ""))
    tools = project_tools("uipath")  # the jail shows its environment when PATH names it
    shown = (tools,) if tools is not None and path != env.get("PATH", "") else ()
    result = await sandbox.run(shlex.join(argv), timeout=spec.timeout, log_name="uipath-eval",
                               env={**env, "UIPATH_TELEMETRY_ENABLED": "false", "PATH": path},
                               readable=shown, writable=(scratch,))  # fmt: skip
    if result.timed_out:
        raise CriterionError(f"uipath eval did not finish within {spec.timeout:g} s")
    if result.exit_code in (NOT_FOUND, NOT_EXECUTABLE) or (result.exit_code or 0) < 0:
        raise CriterionError(
            f"the uipath CLI could not run in the row's sandbox (exit code {result.exit_code}: "
            f"{_said(result)}): install PyPI's uipath where the row runs (on its PATH)"
        )
    return result


def uipath_path(path: str) -> str:
    """The rows' ``PATH``, with the clone's ``.tools/uipath/bin`` (``make install-dev``'s
    pinned ``uipath``) last when it holds no ``uipath``: last, so that folder's ``python3``
    never shadows the rows' own."""
    tools = project_tools("uipath", "bin")
    if shutil.which("uipath", path=path) is not None or tools is None:
        return path
    return os.pathsep.join(p for p in (path, str(tools)) if p)


def _said(result: ProcessResult) -> str:
    text = ANSI.sub("", (result.stderr.strip() or result.shown_stdout.strip()))
    lines = [line for line in text.splitlines() if line.strip()]
    return tail(" ".join(lines[-3:]), 400) or "no output"


def _report(path: Path) -> dict[str, Any]:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CriterionError(f"uipath eval wrote no readable report ({exc})") from None
    if not isinstance(report, dict):
        raise CriterionError(f"uipath eval's report is a JSON {type(report).__name__}, not "
                             "an object")  # fmt: skip
    return report
