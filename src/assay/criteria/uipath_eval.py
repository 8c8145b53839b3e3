"""``uipath_eval``: UiPath's own evaluation of the UiPath project the agent left, graded
against the task's minimums (``reference/coder_eval_agents.md`` §2; Coder Eval's checker).

It runs ``uipath eval AGENT EVAL_SET --no-report --output-file F`` (PyPI ``uipath``) in the
row's sandbox, inside its jail: the project's own ``.venv/bin/uipath`` when it has one (what
Coder Eval's ``uv run`` would use), else the ``uipath`` on the row's ``PATH``, with UiPath's
telemetry off (``UIPATH_TELEMETRY_ENABLED=false``). An eval set in the task's folder is
copied into the sandbox for the run with the ``evaluators/`` folder ``uipath`` reads beside
it (``X/eval-sets/s.json`` → ``X/evaluators/``), so it is found on every driver; the copy and
the output are removed afterwards.

Metrics, from the output's ``evaluationSetResults[].evaluationRunResults[]``: per
``evaluatorId``, the mean of its ``result.score`` over the evaluations (a missing or
non-numeric score is 0, as when the agent's code failed), and ``*`` the mean of those means
(a macro average). An output without ``evaluationSetResults`` is read as flat metrics
(``{"name": value}``). Score = thresholds met / thresholds given (1.0 for none).

What did not grade is the criterion's error, never a 0: the CLI missing or not running, a
timeout, an output that is not the report, or an evaluator whose score a threshold needs
that raised instead of scoring (``uipath`` records its ``details`` as ``Exception thrown by
evaluator: …``: an LLM evaluator without UiPath's platform, offline). A project ``uipath``
cannot evaluate (no ``uipath.json``, no such entrypoint) is the agent's work and scores 0,
with the CLI's message, as in Coder Eval.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import uuid
from pathlib import Path
from typing import Any, ClassVar

from assay.criteria.base import Criterion, CriterionError, GradingContext, basic_result, sandbox_of
from assay.results.task_result import CriterionResult
from assay.sandbox.process import ProcessResult, tail
from assay.sandbox.tempdir import Sandbox
from assay.spec.code_criteria import UipathEval

MACRO = "*"
EVALUATOR_RAISED = "Exception thrown by evaluator:"
NOT_FOUND, NOT_EXECUTABLE = 127, 126
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class UipathEvalCriterion(UipathEval, Criterion):
    """Grades ``uipath_eval``; see the module docstring."""

    reads_sandbox: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Run ``uipath eval`` in the sandbox and compare its metrics to the thresholds."""
        sandbox = sandbox_of(context)
        scratch = sandbox.root / f".assay-uipath-eval-{uuid.uuid4().hex[:8]}"
        try:
            eval_set = _eval_set(self.eval_set, context.env.get("ASSAY_TASK_DIR"), scratch,
                                 sandbox.root)  # fmt: skip
            result = await _run(self, sandbox, eval_set, scratch, context.env)
            if result.exit_code != 0:
                return basic_result(self, 0.0, f"uipath eval could not evaluate the project "
                                    f"(exit code {result.exit_code}): {_said(result)}")  # fmt: skip
            report = _report(scratch / "output.json")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        metrics = metrics_of(report, needed=set(self.thresholds))
        score, failed = threshold_score(metrics, self.thresholds)
        return basic_result(self, score, _details(metrics, failed))


def _eval_set(name: str, task_dir: str | None, scratch: Path, root: Path) -> str:
    """The eval set as ``uipath`` is given it: a copy of the task folder's file in
    ``scratch`` (with its evaluators), else ``name`` as written (the sandbox's)."""
    source = Path(task_dir or ".") / name
    if not source.is_file():
        return name
    copy = scratch / "eval-sets" / source.name
    copy.parent.mkdir(parents=True)
    shutil.copyfile(source, copy)
    evaluators = source.resolve().parent.parent / "evaluators"
    if evaluators.is_dir():
        shutil.copytree(evaluators, scratch / "evaluators")
    return copy.relative_to(root).as_posix()


async def _run(spec: UipathEval, sandbox: Sandbox, eval_set: str, scratch: Path,
               env: dict[str, str]) -> ProcessResult:  # fmt: skip
    own = sandbox.root / ".venv" / "bin" / "uipath"
    program = ".venv/bin/uipath" if own.is_file() else "uipath"
    scratch.mkdir(exist_ok=True)
    output = (scratch / "output.json").relative_to(sandbox.root).as_posix()
    argv = [program, "eval", spec.agent_name, eval_set, "--no-report", "--output-file", output]
    result = await sandbox.run(shlex.join(argv), timeout=spec.timeout, log_name="uipath-eval",
                               env={**env, "UIPATH_TELEMETRY_ENABLED": "false"},
                               writable=(scratch,))  # fmt: skip
    if result.timed_out:
        raise CriterionError(f"uipath eval did not finish within {spec.timeout:g} s")
    if result.exit_code in (NOT_FOUND, NOT_EXECUTABLE) or (result.exit_code or 0) < 0:
        raise CriterionError(
            f"the uipath CLI could not run in the row's sandbox (exit code {result.exit_code}: "
            f"{_said(result)}): install PyPI's uipath where the row runs (on its PATH, or "
            "in the project's .venv)"
        )
    return result


def _said(result: ProcessResult) -> str:
    text = _ANSI.sub("", (result.stderr.strip() or result.stdout.strip()))
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


def metrics_of(report: dict[str, Any], *, needed: set[str]) -> dict[str, Any]:
    """The metrics of a ``uipath eval`` report (see the module docstring): evaluator id →
    mean score and ``*`` → their mean; a report without ``evaluationSetResults`` is its
    own flat metrics.

    Raises:
        CriterionError: an evaluator whose metric ``needed`` names (every one, for ``*``)
            raised instead of scoring.
    """
    evaluations = report.get("evaluationSetResults")
    if not evaluations:
        return dict(report)
    scores: dict[str, list[float]] = {}
    for evaluation in evaluations:
        for run in evaluation.get("evaluationRunResults") or []:
            evaluator = run.get("evaluatorId")
            if not evaluator:
                continue
            result = run.get("result") or {}
            _check_scored(result, evaluator, evaluation, needed)
            scores.setdefault(evaluator, []).append(_number(result.get("score")))
    means = {name: sum(values) / len(values) for name, values in scores.items()}
    return {**means, MACRO: sum(means.values()) / len(means) if means else 0.0}


def _number(score: object) -> float:
    """A score as a number; none, or not a number, is 0 (Coder Eval's rule)."""
    if isinstance(score, bool) or not isinstance(score, int | float):
        return 0.0
    return float(score)


def _check_scored(result: dict[str, Any], evaluator: str, evaluation: dict[str, Any],
                  needed: set[str]) -> None:  # fmt: skip
    details = result.get("details")
    if not (isinstance(details, str) and details.startswith(EVALUATOR_RAISED)):
        return
    if evaluator not in needed and MACRO not in needed:
        return
    why = _ANSI.sub("", details[len(EVALUATOR_RAISED) :]).strip().splitlines()
    raise CriterionError(
        f"evaluator '{evaluator}' could not score evaluation "
        f"'{evaluation.get('evaluationName', '?')}': {why[0] if why else 'no reason given'} "
        "(UiPath's LLM evaluators need its platform; offline, use deterministic ones such "
        "as uipath-exact-match or uipath-json-similarity)"
    )


def threshold_score(
    metrics: dict[str, Any], thresholds: dict[str, float]
) -> tuple[float, list[str]]:
    """The share of ``thresholds`` met (a metric passes at or above its minimum; 1.0 when
    there are none) and a line for each one not met."""
    failed = []
    for name, minimum in thresholds.items():
        value = metrics.get(name)
        if name not in metrics:
            failed.append(f"missing metric: {name}")
        elif not isinstance(value, (int, float)) or isinstance(value, bool):
            failed.append(f"{name}: {type(value).__name__} {value!r} is not a number")
        elif value < minimum:
            failed.append(f"{name}: {value:.3f} < {minimum:g}")
    if not thresholds:
        return 1.0, failed
    return (len(thresholds) - len(failed)) / len(thresholds), failed


def _details(metrics: dict[str, Any], failed: list[str]) -> str:
    names = sorted(metrics, key=lambda name: (name == MACRO, name))  # the macro mean last
    shown = ", ".join(f"{name} {value:.3f}" if isinstance(value, float) else f"{name} {value!r}"
                      for name, value in ((n, metrics[n]) for n in names))  # fmt: skip
    verdict = "All thresholds met" if not failed else "Not met: " + "; ".join(failed)
    return f"Metrics: {shown or 'none'}. {verdict}"
