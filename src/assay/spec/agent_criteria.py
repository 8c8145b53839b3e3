"""Criteria over what the agent did (its transcript), as users write them.

Coder Eval's ``skill_triggered``, ``command_executed`` and ``commands_efficiency``
(``reference/coder_eval_agents.md`` §2, fields and defaults as there) and assay's
``tool_called``. They read :class:`assay.results.transcript.Transcript`, so an agent that
records none (``type: none``) refuses them when the task is loaded
(:func:`transcript_criteria`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, StrictStr, field_validator, model_validator

from assay.spec.base import StrictModel
from assay.spec.criterion_base import CriterionSpec

if TYPE_CHECKING:
    from assay.spec.agent_base import AgentSpec

_SKILL_NAME = re.compile(r"\w[\w.-]*")


def compile_search(pattern: str | None, field: str, flags: int = re.DOTALL) -> str | None:
    """Check that ``pattern`` compiles (with ``flags``), unless a ``${row.…}`` placeholder
    is still in it (then it is checked per row, after substitution).

    Raises:
        ValueError: ``<field> <pattern> is not a valid regex: <reason>``.
    """
    if pattern is None or "${" in pattern:
        return pattern
    try:
        re.compile(pattern, flags)
    except re.error as exc:
        raise ValueError(f"{field} {pattern!r} is not a valid regex: {exc}") from None
    return pattern


def check_count_bounds(min_count: int, max_count: int | None) -> None:
    """``max_count`` may not be below ``min_count`` (Coder Eval's message).

    Raises:
        ValueError: ``max_count (X) must be >= min_count (Y)``.
    """
    if max_count is not None and max_count < min_count:
        raise ValueError(f"max_count ({max_count}) must be >= min_count ({min_count})")


class StopEarly(StrictModel):
    """A criterion armed for live early stop (Coder Eval's ``stop_early`` block): while the
    agent runs, its verdict is checked after every tool call that ran; a decided failure
    ends the agent, a decided pass ends it only with ``on_pass: stop``; with
    ``decide_within`` the agent is ended when that many tool calls ran undecided."""

    on_pass: Literal["stop", "continue"] = "continue"
    decide_within: int | None = Field(default=None, gt=0)


_STOP_WHEN = {"pass": "stop", "decided": "stop", "auto": "stop", "fail": "continue"}


class LiveStop(CriterionSpec):
    """A criterion that may carry ``stop_early`` (or Coder Eval's older ``stop_when``)."""

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        k: v
        for k, v in CriterionSpec.coder_eval_only.items()
        if k not in ("stop_early", "stop_when")
    }
    stop_early: StopEarly | None = None
    stop_when: StrictStr | None = Field(default=None, exclude=True)
    """Coder Eval's older form (``pass|fail|decided|auto``), read into ``stop_early``."""

    @model_validator(mode="before")
    @classmethod
    def _stop_when(cls, data: Any) -> Any:
        """Coder Eval's older ``stop_when: pass|fail|decided|auto`` as a ``stop_early`` block."""
        if not isinstance(data, dict) or data.get("stop_when") is None:
            return data
        data = dict(data)
        value = data.pop("stop_when")
        if value not in _STOP_WHEN:
            raise ValueError(f"stop_when must be one of pass, fail, decided, auto; not {value!r}")
        if data.get("stop_early") is not None:
            raise ValueError("set either 'stop_early' or the older 'stop_when', not both")
        data["stop_early"] = {"on_pass": _STOP_WHEN[value]}
        return data

    @model_validator(mode="after")
    def _armed_gates(self) -> LiveStop:
        if self.stop_early is not None and self.weight == 0:
            raise ValueError("a criterion of weight 0 cannot carry stop_early (it gates nothing)")
        return self


class SkillTriggered(LiveStop):
    """Did the agent engage ``skill_name``? A binary classification: observed ``yes`` when
    the skill was engaged anywhere in the run (Claude Code's ``Skill`` tool call naming it,
    ``plugin:name`` included, or any tool call whose string argument holds
    ``skills/<name>/``: Codex reading the skill's files); expected ``yes`` when
    ``expected_skill`` equals ``skill_name`` (``""`` for a distractor row). A name with a
    ``:`` (``team:notes``, as Qwen Code loads it) is matched whole; on Claude Code, which
    names a plugin's skill ``plugin:name``, it is refused at load (:func:`plugin_prefix`).

    The suite aggregate adds the classification metrics over the labels ``yes`` / ``no``
    (``recall.yes``, ``precision.yes``, ``f1.yes``, ``macro_f1``, …).
    """

    type: Literal["skill_triggered"]
    skill_name: StrictStr
    expected_skill: StrictStr

    @field_validator("skill_name")
    @classmethod
    def _bare_name(cls, value: str) -> str:
        if "${" in value:
            return value
        if not all(_SKILL_NAME.fullmatch(part) for part in value.split(":")):
            raise ValueError(
                f"skill_name {value!r} is not a skill name (letters of any script, digits, "
                "'_', '-' and '.', not starting with '-' or '.'; ':' between such parts)"
            )
        return value

    def agent_problem(self, agent: AgentSpec) -> tuple[str, str] | None:
        """A name with a ``:`` on a CLI that names a plugin's skill ``plugin:name``."""
        why = plugin_prefix(self.skill_name) if agent.prefixes_skills else None
        return ("skill_name", why) if why else None


def plugin_prefix(skill_name: str) -> str | None:
    """Why ``skill_name`` cannot be checked on a CLI that names a plugin's skill
    ``plugin:name`` (the plugin's prefix written into it), or ``None``."""
    if ":" not in skill_name or "${" in skill_name:
        return None
    plugin, _, name = skill_name.rpartition(":")
    return (
        f"skill_name {skill_name!r} carries the plugin's name ({plugin!r}); write the "
        f"skill's own name, {name!r} (a Skill call of '{plugin}:{name}' counts for it)"
    )


class CommandExecuted(LiveStop):
    """Count the tool calls (commands) that match; Coder Eval's scoring.

    A call matches when its tool is ``tool_name`` (any tool when unset), it succeeded (with
    ``require_success``), ``command_pattern`` finds a match and ``exclude_pattern`` finds
    none. The text searched is a ``Bash`` call's command, else the JSON of the call's
    arguments; a pattern is tried on the raw text and on the shell-unwrapped form
    (``bash -lc '…'`` with its quoting resolved), a hit on either counts, with
    ``re.DOTALL``. Score: with ``max_count`` unset, ``min(1, matches / min_count)`` (1.0
    when ``min_count`` is 0); with ``max_count`` set, 1.0 when ``min_count ≤ matches ≤
    max_count`` else 0.0 (``min_count: 0, max_count: 0`` = "must not run").
    """

    type: Literal["command_executed"]
    tool_name: StrictStr | None = None
    command_pattern: StrictStr | None = None
    exclude_pattern: StrictStr | None = None
    min_count: int = Field(default=1, ge=0)
    max_count: int | None = Field(default=None, ge=0)
    require_success: bool = False

    @model_validator(mode="after")
    def _checks(self) -> CommandExecuted:
        check_count_bounds(self.min_count, self.max_count)
        compile_search(self.command_pattern, "command_pattern")
        compile_search(self.exclude_pattern, "exclude_pattern")
        return self


class ToolCalled(CriterionSpec):
    """assay's: was tool ``tool`` called between ``min_count`` and ``max_count`` times?

    ``tool`` is the tool's name as the transcript records it (``Write``, ``Bash``,
    ``Skill``, ``mcp__server__tool``; Codex's commands are ``Bash``, its file changes
    ``Write``). ``arguments_pattern`` (a regex, ``re.DOTALL``) keeps only the calls whose
    arguments match it: any string argument, or their JSON. ``require_success`` counts only
    calls whose result came back without an error (a denied call never counts). Binary: 1.0
    when the count is within the bounds (``max_count`` unset = no upper bound).
    """

    type: Literal["tool_called"]
    tool: StrictStr = Field(min_length=1)
    arguments_pattern: StrictStr | None = None
    min_count: int = Field(default=1, ge=0)
    max_count: int | None = Field(default=None, ge=0)
    require_success: bool = False

    @model_validator(mode="after")
    def _checks(self) -> ToolCalled:
        check_count_bounds(self.min_count, self.max_count)
        compile_search(self.arguments_pattern, "arguments_pattern")
        if self.min_count == 0 and self.max_count is None:
            raise ValueError(
                "tool_called with min_count: 0 and no max_count can never fail; set "
                'max_count: 0 for "must not be called", or raise min_count'
            )
        return self


class CommandsEfficiency(CriterionSpec):
    """``expected_commands / max(actual, expected_commands)``: 1.0 at or under the budget of
    tool calls, less above it; 0.0 when the agent made no tool call (Coder Eval's rule)."""

    type: Literal["commands_efficiency"]
    expected_commands: int = Field(ge=1)


def transcript_criteria(criteria: list[CriterionSpec]) -> list[int]:
    """The positions of the criteria that read the transcript (``reads_transcript``)."""
    return [i for i, c in enumerate(criteria) if c.reads_transcript]


__all__ = [
    "CommandExecuted",
    "CommandsEfficiency",
    "SkillTriggered",
    "ToolCalled",
    "transcript_criteria",
]
