"""``cli_called``: count the calls ``sandbox.record_cli``'s shims logged that have every
facet (:mod:`assay.spec.cli_facets`); binary on ``min_count ≤ matches ≤ max_count``.

What keeps the log from being evidence scores 0.0 with Coder Eval's words (its "Scored 0.0
with errors …"), never an error that would drop the row from the averages: a missing log,
records that are not ``{argv: [...]}`` objects, records the recorder could not write, calls
it answered without its matcher.
"""

from __future__ import annotations

import shlex
from typing import ClassVar

from assay.criteria import patterns
from assay.criteria.base import (
    Criterion,
    CriterionError,
    EvidenceError,
    GradingContext,
    basic_result,
    sandbox_of,
)
from assay.results.task_result import CriterionResult
from assay.sandbox.cli_shims import CallLog, read_log
from assay.sandbox.tempdir import LinkEscape, SandboxEscape
from assay.spec import cli_facets
from assay.spec.cli_criteria import CliCalled

SHOWN_CALLS = 3


class CliCalledCriterion(CliCalled, Criterion):
    """Grades ``cli_called``; see the module docstring."""

    graded_after_crash: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Read the shims' log and count the matching calls."""
        log = _read(self, context)
        facets = self.facets()
        matched = [c for c in log.calls if cli_facets.matches(c, facets, search=patterns.search)]
        count = len(matched)
        upper = self.max_count
        passed = self.min_count <= count and (upper is None or count <= upper)
        allowed = f"{self.min_count}..{upper if upper is not None else 'any'}"
        shown = [shlex.join([str(c.get("tool") or "?"), *c["argv"]]) for c in matched[:SHOWN_CALLS]]
        details = (f"Matched {count} of {len(log.calls)} recorded call(s) (allowed {allowed}; "
                   f"facets: {_describe(facets)})")  # fmt: skip
        if shown:
            details += "; e.g. " + "; ".join(shown)
        return basic_result(self, 1.0 if passed else 0.0, details)


def _read(spec: CliCalled, context: GradingContext) -> CallLog:
    sandbox = sandbox_of(context)
    try:
        path = sandbox.resolve(spec.log)
    except LinkEscape as exc:  # a link the agent made
        raise EvidenceError(str(exc)) from None
    except SandboxEscape as exc:  # the log's path as the task wrote it
        raise CriterionError(str(exc)) from None
    try:
        log = read_log(path)
    except FileNotFoundError:
        raise EvidenceError(f"Invocation log '{spec.log}' does not exist (sandbox.record_cli "
                            "writes an empty one as the row starts: the agent removed it, or "
                            "log names a file the recorder does not write)") from None  # fmt: skip
    except (OSError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"Invocation log '{spec.log}' cannot be read: {exc}") from None
    if log.dropped:
        raise EvidenceError(f"Recorder could not write to '{spec.log}' ({log.dropped} dropped "
                            "record(s)); the counts would be too low")  # fmt: skip
    if log.unusable:
        raise EvidenceError(f"Invocation log '{spec.log}' has {len(log.unusable)} unusable "
                            f"record(s): {'; '.join(log.unusable[:3])}")  # fmt: skip
    if log.import_failures:
        raise EvidenceError(f"Recorder could not import its matcher module on "
                             f"{log.import_failures} invocation(s), so those calls got the "
                             "default answer")  # fmt: skip
    return log


def _describe(facets: dict[str, object]) -> str:
    shown = {k: v for k, v in facets.items() if k not in ("value_flags", "ignore_flags")}
    return ", ".join(f"{k}={v!r}" for k, v in shown.items()) or "any call"
