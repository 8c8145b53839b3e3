"""``file_exists`` and ``file_check``: what the agent left in the sandbox (or said)."""

from __future__ import annotations

import re

from assay.criteria.base import (
    GradingContext,
    ScoreAggregate,
    basic_result,
    read_text,
    sandbox_of,
)
from assay.results.task_result import CriterionResult
from assay.sandbox.tempdir import SandboxEscape
from assay.spec.criteria import FileCheck, FileExists, regex_flags


class FileExistsChecker(ScoreAggregate):
    """Score 1.0 when the file exists (a directory counts), else 0.0."""

    type_name = "file_exists"

    async def check(self, spec: FileExists, context: GradingContext) -> CriterionResult:
        """Look for ``spec.path`` in the sandbox."""
        try:
            target = sandbox_of(context).resolve(spec.path)
        except SandboxEscape as exc:
            return basic_result(spec, 0.0, "", error=str(exc))
        found = target.exists()
        return basic_result(
            spec, 1.0 if found else 0.0, f"'{spec.path}' {'exists' if found else 'does not exist'}"
        )


class FileCheckChecker(ScoreAggregate):
    """Includes, excludes and regex patterns; the score is the mean over active categories.

    Each category scores the fraction of its items satisfied: an ``includes`` string is
    present, an ``excludes`` string is absent, a pattern's ``re.search`` result equals
    ``must_match``. A missing file scores 0.0; with no category, an existing one scores 1.0.
    """

    type_name = "file_check"

    async def check(self, spec: FileCheck, context: GradingContext) -> CriterionResult:
        """Run every sub-check on the text."""
        text = read_text(spec.path, context)
        if text.value is None:
            return basic_result(spec, 0.0, f"{text.source} does not exist")
        body = text.value
        if not (spec.includes or spec.excludes or spec.patterns):
            return basic_result(spec, 1.0, f"{text.source} exists")
        scores: list[float] = []
        notes: list[str] = []
        if spec.includes:
            missing = [s for s in spec.includes if s not in body]
            scores.append(1 - len(missing) / len(spec.includes))
            notes += [f"missing include {s!r}" for s in missing]
        if spec.excludes:
            present = [s for s in spec.excludes if s in body]
            scores.append(1 - len(present) / len(spec.excludes))
            notes += [f"found exclude {s!r}" for s in present]
        if spec.patterns:
            wrong = [
                p
                for p in spec.patterns
                if bool(re.search(p.pattern, body, regex_flags(p.flags))) != p.must_match
            ]
            scores.append(1 - len(wrong) / len(spec.patterns))
            notes += [
                f"pattern {p.pattern!r} {'did not match' if p.must_match else 'matched'}"
                for p in wrong
            ]
        score = sum(scores) / len(scores)
        details = "; ".join(notes) if notes else f"all checks passed on {text.source}"
        return basic_result(spec, score, details)
