"""``file_exists`` and ``file_check``: what the agent left in the sandbox (or said)."""

from __future__ import annotations

from typing import ClassVar

from assay.criteria import patterns
from assay.criteria.base import (
    Criterion,
    GradingContext,
    basic_result,
    read_text,
    sandbox_of,
)
from assay.results.task_result import CriterionResult
from assay.sandbox.tempdir import LinkEscape, SandboxEscape
from assay.spec.criteria import FileCheck, FileExists, regex_flags


class FileExistsCriterion(FileExists, Criterion):
    """Score 1.0 when the file exists (a directory counts), else 0.0."""

    reads_sandbox: ClassVar[bool] = True
    graded_after_crash: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Look for ``path`` in the sandbox."""
        sandbox = sandbox_of(context)
        try:
            found = sandbox.resolve(self.path).exists()
            matched = [] if found else sandbox.matches(self.path)
        except LinkEscape as exc:  # a link the agent made: its doing, a failing 0.0
            return basic_result(self, 0.0, str(exc))
        except SandboxEscape as exc:
            return basic_result(self, 0.0, "", error=str(exc))
        if matched:  # a glob passes with one match or more (Coder Eval's rule)
            shown = ", ".join(matched[:10]) + (" …" if len(matched) > 10 else "")
            return basic_result(self, 1.0, f"'{self.path}' matches {len(matched)}: {shown}")
        return basic_result(
            self, 1.0 if found else 0.0, f"'{self.path}' {'exists' if found else 'does not exist'}"
        )


class FileCheckCriterion(FileCheck, Criterion):
    """Includes, excludes and regex patterns; the score is the mean over active categories.

    Each category scores the fraction of its items satisfied: an ``includes`` string is
    present, an ``excludes`` string is absent, a pattern's ``re.search`` result equals
    ``must_match``. A missing file scores 0.0; with no category, an existing one scores 1.0.
    """

    graded_after_crash: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Run every sub-check on the text."""
        text = read_text(self.path, context)
        if text.value is None:
            return basic_result(self, 0.0, f"{text.source} does not exist")
        body = text.value
        if not (self.includes or self.excludes or self.patterns):
            return basic_result(self, 1.0, f"{text.source} exists")
        scores: list[float] = []
        notes: list[str] = []
        if self.includes:
            missing = [s for s in self.includes if s not in body]
            scores.append(1 - len(missing) / len(self.includes))
            notes += [f"missing include {s!r}" for s in missing]
        if self.excludes:
            present = [s for s in self.excludes if s in body]
            scores.append(1 - len(present) / len(self.excludes))
            notes += [f"found exclude {s!r}" for s in present]
        if self.patterns:
            wrong = [
                p
                for p in self.patterns
                if bool(patterns.search(p.pattern, body, regex_flags(p.flags))) != p.must_match
            ]
            scores.append(1 - len(wrong) / len(self.patterns))
            notes += [
                f"pattern {p.pattern!r} {'did not match' if p.must_match else 'matched'}"
                for p in wrong
            ]
        score = sum(scores) / len(scores)
        details = "; ".join(notes) if notes else f"all checks passed on {text.source}"
        return basic_result(self, score, details)
