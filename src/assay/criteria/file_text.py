"""``file_contains`` and ``file_matches_regex``: text the agent left (Coder Eval's scoring and
details, ``reference/coder_eval_agents.md`` §2).

Both read ``path`` in the sandbox, or the final response when ``path`` is omitted. A file
that does not exist scores 0.0 (the agent did not write it) with Coder Eval's text
``File '<path>' does not exist``; a path that leaves the sandbox or is not a regular file is
the criterion's error.
"""

from __future__ import annotations

from typing import ClassVar

from assay.criteria import patterns
from assay.criteria.base import Criterion, GradingContext, basic_result, read_text
from assay.results.secrets import clip_head
from assay.results.task_result import CriterionResult
from assay.spec.criteria import regex_flags
from assay.spec.file_criteria import FileContains, FileMatchesRegex

QUOTED = 100


def missing(source: str) -> str:
    """Coder Eval's text for a file that is not there (or a response that is absent)."""
    if source.startswith("'"):
        return f"File {source} does not exist"
    return f"{source[0].upper()}{source[1:]} is absent"


class FileContainsCriterion(FileContains, Criterion):
    """Mean of ``includes`` found / all and ``excludes`` absent / all."""

    graded_after_crash: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Look for every string."""
        text = read_text(self.path, context)
        if text.value is None:
            return basic_result(self, 0.0, missing(text.source))
        body = text.value
        parts: list[float] = []
        notes: list[str] = []
        if self.includes:
            found = [s for s in self.includes if s in body]
            parts.append(len(found) / len(self.includes))
            notes.append(f"Includes: {len(found)}/{len(self.includes)} found")
            notes += [f"missing {s!r}" for s in self.includes if s not in body]
        if self.excludes:
            absent = [s for s in self.excludes if s not in body]
            parts.append(len(absent) / len(self.excludes))
            notes.append(f"Excludes: {len(absent)}/{len(self.excludes)} absent")
            notes += [f"present {s!r}" for s in self.excludes if s in body]
        score = sum(parts) / len(parts) if parts else 1.0
        notes.append(f"Score: {score:.2f}")
        return basic_result(self, score, "; ".join(notes))


class FileMatchesRegexCriterion(FileMatchesRegex, Criterion):
    """Binary on ``re.search``, inverted by ``must_match: false``."""

    graded_after_crash: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Search the text once."""
        text = read_text(self.path, context)
        if text.value is None:
            return basic_result(self, 0.0, missing(text.source))
        match = patterns.search(self.pattern, text.value, regex_flags(self.flags))
        where = "the response" if self.path is None else "file"
        if self.must_match:
            if match is None:
                return basic_result(self, 0.0, f"Pattern '{self.pattern}' not found in {where}")
            quoted = clip_head(match.group(), QUOTED)
            return basic_result(
                self, 1.0, f"Pattern '{self.pattern}' found in {where} (matched: '{quoted}')"
            )
        if match is None:
            absent = f"Pattern '{self.pattern}' correctly absent from {where}"
            return basic_result(self, 1.0, absent)
        quoted = clip_head(match.group(), QUOTED)
        return basic_result(
            self, 0.0,
            f"Pattern '{self.pattern}' found but should not be present (matched: '{quoted}')",
        )  # fmt: skip
