"""``skill_triggered``: did the agent engage a skill? A yes/no classification per row.

Engaged (``reference/coder_eval_agents.md`` §2, Coder Eval's any-engagement rule): anywhere
in the run, a ``Skill`` tool call whose ``skill`` (Claude Code, Qwen Code) or ``name``
(OpenCode's ``skill``, Gemini CLI's ``activate_skill``) names it (the text after the last
``:``, so Claude Code's ``plugin:skill`` counts), or any tool call with a string argument holding
``skills/<name>/`` (either slash): Codex, which has no ``Skill`` tool, engages a skill by
reading ``$CODEX_HOME/skills/<name>/SKILL.md`` with a shell command. Observed ``yes`` when
engaged; expected ``yes`` when ``expected_skill == skill_name``; score 1.0 when they agree.

A row whose agent was not offered the skill (no plugin of ``agent.plugins`` holds it), or
whose CLI reported the skills it loaded without it, cannot be graded: the positive control
cannot run, so the criterion errs (the row is ``ERROR``), as in Coder Eval. The suite
aggregate is the classification overlay (:class:`ClassificationTally`).
"""

from __future__ import annotations

import re
from typing import ClassVar

from assay.criteria.base import Criterion, CriterionError, GradingContext, Tally
from assay.criteria.classification import ClassificationTally, labelled_metric_names
from assay.criteria.transcript import strings_of, transcript_of
from assay.results.task_result import ClassificationCriterionResult, CriterionResult
from assay.results.transcript import ToolUse, Transcript
from assay.spec.agent_criteria import SkillTriggered

YES, NO = "yes", "no"
SKILL_PATH = re.compile(r"(?=skills[\\/]+(\w[\w.-]*)[\\/]+)")
"""``skills/<name>/`` with either slash, repeated slashes (JSON-escaped backslashes) and
overlapping matches (``skills/skills/<name>/``)."""


def engaged_skills(use: ToolUse) -> set[str]:
    """The skills one tool call engages."""
    names: set[str] = set()
    arguments = use.arguments
    if use.name == "Skill" and isinstance(arguments, dict):
        skill = arguments.get("skill", arguments.get("name"))
        if isinstance(skill, str) and skill:  # "plugin:name" (Claude Code) counts for both
            names |= {skill, skill.rsplit(":", 1)[-1]}
    for text in strings_of(arguments):
        names.update(SKILL_PATH.findall(text))
    return names


def all_engaged(transcript: Transcript) -> set[str]:
    """Every skill engaged anywhere in the run (by a call that ran: a denied or
    never-answered call engaged nothing, nor a ``Skill`` call that failed: the CLI found
    no such skill)."""
    return {name for use in transcript.tool_uses()
            if use.ran and not (use.name == "Skill" and use.is_error)
            for name in engaged_skills(use)}  # fmt: skip


class SkillTriggeredCriterion(SkillTriggered, Criterion):
    """Grades ``skill_triggered``; see the module docstring."""

    graded_after_crash: ClassVar[bool] = True
    reads_transcript: ClassVar[bool] = True
    has_labels: ClassVar[bool] = True

    def tally(self) -> Tally:
        """The classification overlay over ``yes``/``no`` (:class:`ClassificationTally`)."""
        return ClassificationTally()

    def metric_names(self) -> set[str] | None:
        """The base metrics and the overlay's over the labels ``yes`` and ``no``."""
        return labelled_metric_names(super().metric_names() or set(), [YES, NO])

    def live_verdict(self, transcript: Transcript) -> bool | None:
        """Decided once the skill is engaged (a pass when it was expected, a fail when not);
        undecided before (it may still be engaged)."""
        if self.skill_name in all_engaged(transcript):
            return self.expected_skill == self.skill_name
        return None

    async def check(self, context: GradingContext) -> CriterionResult:
        """Observe whether the skill was engaged and compare with the expectation.

        Raises:
            CriterionError: no transcript, or the skill was not offered or not loaded.
        """
        transcript = transcript_of(context)
        check_offered(self.skill_name, transcript)
        triggered = self.skill_name in all_engaged(transcript)
        expected_yes = self.expected_skill == self.skill_name
        observed, expected = (YES if triggered else NO), (YES if expected_yes else NO)
        return ClassificationCriterionResult(
            criterion_type=self.type,
            description=self.description,
            score=1.0 if triggered == expected_yes else 0.0,
            details=f"observed={observed!r}, expected={expected!r} "
            f"(skill_name={self.skill_name!r})",
            pass_threshold=self.pass_threshold,
            gating=self.gating,
            weight=self.weight,
            observed_label=observed,
            expected_label=expected,
        )


def check_offered(name: str, transcript: Transcript) -> None:
    """The agent was offered skill ``name`` and, where its CLI says what it loaded, loaded it.

    Raises:
        CriterionError: Coder Eval's message for a skill not offered; a skill the CLI did not
            load names what it did load.
    """
    offered = transcript.skills_offered
    if name not in offered:
        raise CriterionError(
            f"skill_triggered names skill {name!r} but agent.plugins offered only "
            f"{sorted(offered)}: the positive control cannot run. Check the plugin path (a "
            "plugin root holds skills/<name>/SKILL.md) and the skill's name (the name in its "
            "SKILL.md front matter)."
        )
    loaded = transcript.skills_loaded
    if loaded is not None and name not in {*loaded, *(s.rsplit(":", 1)[-1] for s in loaded)}:
        raise CriterionError(
            f"skill_triggered names skill {name!r}, which agent.plugins offers, but the "
            f"{transcript.agent} CLI did not load it (it listed {sorted(loaded)}): the "
            "positive control cannot run. Check the skill's SKILL.md front matter (name, "
            "description)."
        )
