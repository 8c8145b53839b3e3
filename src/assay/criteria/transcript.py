"""Criteria over what the agent did: ``command_executed``, ``tool_called``,
``commands_efficiency`` (scoring and messages from ``reference/coder_eval_agents.md`` §2).

Each reads the row's :class:`~assay.results.transcript.Transcript` through
:meth:`~assay.results.transcript.Transcript.tool_uses` (every tool call joined with its
result, exit code and denial). A "command" is one tool call, whatever the tool, as in Coder
Eval's telemetry. A row without a transcript (re-graded from a run without ``trace.json``)
cannot be graded: the criterion's error, never a 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, ClassVar

from assay.criteria import patterns
from assay.criteria.base import Criterion, CriterionError, GradingContext, basic_result
from assay.criteria.shell import shell_forms
from assay.results.secrets import clip_head
from assay.results.task_result import CriterionResult
from assay.results.transcript import SHELL_TOOLS, ToolUse, Transcript
from assay.spec.agent_criteria import CommandExecuted, CommandsEfficiency, ToolCalled

EXAMPLES = 3
EXAMPLE_CHARS = 120


def transcript_of(context: GradingContext) -> Transcript:
    """The row's transcript.

    Raises:
        CriterionError: the row has none.
    """
    if context.transcript is None:
        raise CriterionError(
            "no transcript: the row's agent recorded none (a row re-graded from a run "
            "folder without trace.json?), so what it did cannot be graded"
        )
    return context.transcript


def command_text(use: ToolUse) -> str:
    """What a pattern is matched against: a shell call's command, else the JSON of the
    call's arguments."""
    arguments = use.arguments
    if use.name in SHELL_TOOLS and isinstance(arguments, dict):
        for key in ("command", "cmd"):
            value = arguments.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                return " ".join(value)
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def succeeded(use: ToolUse) -> bool:
    """The call's result came back without an error (a denied or unanswered call did not)."""
    return (
        use.result is not None
        and not use.is_error
        and not use.denied
        and use.exit_code in (0, None)
    )


def searches(pattern: re.Pattern[str], forms: list[str]) -> bool:
    """``pattern`` finds a match in any of ``forms``."""
    return any(patterns.search(pattern.pattern, form, pattern.flags) for form in forms)


def _compiled(pattern: str | None, field: str) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern, re.DOTALL)
    except re.error as exc:  # a row's substituted value; the plain ones are checked at load
        raise CriterionError(f"Invalid {field} regex: {exc}") from None


class CommandExecutedCriterion(CommandExecuted, Criterion):
    """Counts matching tool calls; see :class:`assay.spec.agent_criteria.CommandExecuted`."""

    graded_after_crash: ClassVar[bool] = True
    reads_transcript: ClassVar[bool] = True

    def live_verdict(self, transcript: Transcript) -> bool | None:
        """Coder Eval's live verdict over the calls that ran so far: failed once the matches
        exceed ``max_count``; passed once they reach ``min_count`` (> 0) when ``max_count``
        is unset; else undecided."""
        try:
            count = len(self._matched(transcript.tool_uses()))
        except CriterionError:
            return None
        if self.max_count is not None:
            return False if count > self.max_count else None
        return True if self.min_count > 0 and count >= self.min_count else None

    def _matched(self, uses: list[ToolUse]) -> list[ToolUse]:
        pattern = _compiled(self.command_pattern, "command_pattern")
        exclude = _compiled(self.exclude_pattern, "exclude_pattern")
        return [u for u in uses if _matches(u, self, pattern, exclude)]

    async def check(self, context: GradingContext) -> CriterionResult:
        """Match every tool call of the transcript against the filters."""
        uses = transcript_of(context).tool_uses()
        matched = self._matched(uses)
        count = len(matched)
        if self.max_count is None:
            score = 1.0 if self.min_count == 0 else min(1.0, count / self.min_count)
            counted = f"{count}/{self.min_count} required"
        else:
            score = 1.0 if self.min_count <= count <= self.max_count else 0.0
            counted = f"{count} matches (allowed range {self.min_count}..{self.max_count})"
        details = f"Matched {counted} commands (filters: {_filters(self)})"
        unran = sum(1 for u in uses if not u.ran)
        if unran:
            details += f"; {unran} denied or never run, not counted"
        if matched:
            examples = [clip_head(_label(u), EXAMPLE_CHARS) for u in matched[:EXAMPLES]]
            details += f"\nExamples: {examples}"
        return basic_result(self, score, details)


def _matches(
    use: ToolUse,
    spec: CommandExecuted,
    pattern: re.Pattern[str] | None,
    exclude: re.Pattern[str] | None,
) -> bool:
    if spec.tool_name is not None and use.name != spec.tool_name:
        return False
    if not use.ran:  # a denied or never-answered call did not happen
        return False
    if spec.require_success and not succeeded(use):
        return False
    forms = shell_forms(command_text(use))
    if pattern is not None and not searches(pattern, forms):
        return False
    return exclude is None or not searches(exclude, forms)


def _filters(spec: CommandExecuted) -> str:
    filters = []
    if spec.tool_name is not None:
        filters.append(f"tool_name={spec.tool_name}")
    if spec.command_pattern is not None:
        filters.append(f"pattern=/{spec.command_pattern}/")
    if spec.require_success:
        filters.append("require_success=True")
    if spec.exclude_pattern is not None:
        filters.append(f"exclude=/{spec.exclude_pattern}/")
    return ", ".join(filters) or "none"


def _label(use: ToolUse) -> str:
    text = command_text(use)
    if use.name in SHELL_TOOLS:
        return text
    return f"{use.name}({clip_head(text, 80)})"


class ToolCalledCriterion(ToolCalled, Criterion):
    """Binary: the number of matching calls of one tool is within the bounds; see
    :class:`assay.spec.agent_criteria.ToolCalled`."""

    graded_after_crash: ClassVar[bool] = True
    reads_transcript: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Count the calls of ``tool`` whose arguments match."""
        uses = transcript_of(context).tool_uses()
        pattern = _compiled(self.arguments_pattern, "arguments_pattern")
        calls = [u for u in uses if u.name == self.tool]
        matched = [
            u for u in calls
            if u.ran
            and (not self.require_success or succeeded(u))
            and (pattern is None or searches(pattern, _argument_texts(u.arguments)))
        ]  # fmt: skip
        count = len(matched)
        upper = "∞" if self.max_count is None else str(self.max_count)
        inside = count >= self.min_count and (self.max_count is None or count <= self.max_count)
        unran = sum(1 for u in calls if not u.ran)
        details = (
            f"{self.tool} called {len(calls)} time(s); {count} counted"
            + (f" ({unran} denied or never run, not counted)" if unran else "")
            + (f" (arguments matching /{self.arguments_pattern}/)" if pattern else "")
            + (" (successful only)" if self.require_success else "")
            + f"; allowed {self.min_count}..{upper}"
        )
        if not calls:
            seen = sorted({u.name for u in uses})
            details += f"; tools called: {', '.join(seen) if seen else 'none'}"
        return basic_result(self, 1.0 if inside else 0.0, details)


def _argument_texts(arguments: Any) -> list[str]:
    """Every string argument (nested ones too) and the JSON of them all."""
    return [*_strings(arguments), json.dumps(arguments, ensure_ascii=False)]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class CommandsEfficiencyCriterion(CommandsEfficiency, Criterion):
    """``expected / max(actual, expected)`` over the tool calls; see
    :class:`assay.spec.agent_criteria.CommandsEfficiency`."""

    graded_after_crash: ClassVar[bool] = True
    reads_transcript: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Count the tool calls."""
        actual = len(transcript_of(context).tool_uses())
        expected = self.expected_commands
        if actual == 0:
            return basic_result(self, 0.0, "No commands recorded (agent may not have run)")
        score = expected / max(actual, expected)
        over = actual - expected
        note = f"{over} over budget" if over > 0 else "within budget"
        return basic_result(
            self,
            score,
            f"Commands: {actual}, expected: {expected}, efficiency: {score:.3f} ({note})",
        )


def strings_of(arguments: Any) -> list[str]:
    """Every string in a tool call's arguments, nested ones included."""
    return list(_strings(arguments))
