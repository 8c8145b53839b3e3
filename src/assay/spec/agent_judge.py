"""The ``agent_judge`` criterion as users write it (Coder Eval's fields,
``reference/coder_eval_agents.md`` §2): a coding agent explores a copy of the row's sandbox
and submits its verdict through a tool.

Kept apart from :mod:`assay.spec.criteria` (the union of every criterion type), like the
other judge criteria (:mod:`assay.spec.judge_criteria`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, StrictBool, StrictStr, field_validator, model_validator

from assay.spec.agent_base import AgentSpec
from assay.spec.base import BaseUrl, StrictModel
from assay.spec.coding_agents import ClaudeCodeAgent, CodexAgent, CodingAgent
from assay.spec.criterion_base import CriterionSpec, check_relative_path
from assay.spec.price import ModelPrice

DEFAULT_MODEL = "anthropic/claude-sonnet-4-6"
"""Coder Eval's judge model (``claude-sonnet-4-6``)."""
DEFAULT_TOOLS = ("Bash", "Read", "Glob", "Grep")
DEFAULT_IGNORED = (".git", "node_modules", "__pycache__", ".venv", ".claude", ".mcp.json",
                   "_reference")  # fmt: skip
"""What the judge's copy of the sandbox leaves out (Coder Eval's list; ``_reference`` is
where the task's reference is put)."""


class JudgeAgent(StrictModel):
    """``agent_judge``'s ``agent:`` block: the coding agent that judges.

    ``type`` ``claude-code`` (default) or ``codex``; ``model`` the assay model that answers
    its calls through the model bridge (default ``anthropic/claude-sonnet-4-6``; Coder Eval's
    forms such as ``claude-sonnet-4-6`` are read as ``anthropic/…``; any assay model, a
    ``mock/`` script included, can judge); ``permission_mode`` (Claude Code, default
    ``bypassPermissions``) and ``allowed_tools`` (default ``Bash Read Glob Grep``; the
    verdict tool is always allowed); ``ignore_patterns`` (and Coder Eval's
    ``additional_ignore_patterns``): more names left out of the judge's copy, ``!name``
    keeps one of the defaults. ``cli_path``, ``cli_model``, ``system_prompt``, ``env``,
    ``base_url``, ``api_key_env``, ``request_timeout``, ``cache`` and ``price`` are those of
    the agent type's own block. The judge never loads the sandbox's settings
    (``setting_sources: []``) and always runs through the bridge.
    """

    type: Literal["claude-code", "codex"] = "claude-code"
    model: StrictStr = DEFAULT_MODEL
    cli_model: StrictStr | None = None
    cli_path: StrictStr | None = None
    system_prompt: StrictStr | None = None
    permission_mode: Literal["default", "acceptEdits", "plan", "bypassPermissions"] = (
        "bypassPermissions"
    )
    allowed_tools: list[StrictStr] = Field(default_factory=lambda: list(DEFAULT_TOOLS))
    disallowed_tools: list[StrictStr] | None = None
    ignore_patterns: list[StrictStr] = Field(default_factory=list)
    additional_ignore_patterns: list[StrictStr] = Field(default_factory=list)
    env: dict[str, StrictStr] = Field(default_factory=dict)
    base_url: BaseUrl | None = None
    api_key_env: StrictStr | None = None
    request_timeout: float = Field(default=600, gt=0)
    cache: bool = False
    price: ModelPrice | None = None

    def config(self) -> CodingAgent:
        """The agent type's own config (:class:`ClaudeCodeAgent` or :class:`CodexAgent`).

        Raises:
            pydantic.ValidationError: a value the agent type refuses.
        """
        shared: dict[str, Any] = {
            "model": self.model, "cli_model": self.cli_model, "cli_path": self.cli_path,
            "system_prompt": self.system_prompt, "env": self.env, "base_url": self.base_url,
            "api_key_env": self.api_key_env, "request_timeout": self.request_timeout,
            "cache": self.cache, "price": self.price, "route": "bridge",
        }  # fmt: skip
        if self.type == "codex":
            return CodexAgent.model_validate({"type": "codex", **shared})
        return ClaudeCodeAgent.model_validate({
            "type": "claude-code", **shared, "permission_mode": self.permission_mode,
            "allowed_tools": self.allowed_tools, "disallowed_tools": self.disallowed_tools,
            "setting_sources": [],
        })  # fmt: skip

    def ignored(self) -> frozenset[str]:
        """The names left out of the judge's copy: the defaults, plus ``ignore_patterns``,
        minus each ``!name``."""
        names = set(DEFAULT_IGNORED)
        for pattern in [*self.ignore_patterns, *self.additional_ignore_patterns]:
            if pattern.startswith("!"):
                names.discard(pattern[1:])
            else:
                names.add(pattern)
        return frozenset(names)

    def _is_default(self, name: str) -> bool:
        field = type(self).model_fields[name]
        return bool(getattr(self, name) == field.get_default(call_default_factory=True))

    @model_validator(mode="after")
    def _valid_for_its_type(self) -> JudgeAgent:
        if self.type == "codex":
            # a value that is the default says nothing (a resolved criterion, dumped whole, is
            # read again when its run is reported)
            written = {name for name in ("permission_mode", "allowed_tools", "disallowed_tools")
                       if name in self.model_fields_set and not self._is_default(name)}  # fmt: skip
            if written:
                raise ValueError(f"{', '.join(sorted(written))}: Claude Code settings; a codex "
                                 "judge runs its commands with full access inside its copy "
                                 "of the sandbox")  # fmt: skip
        self.config()
        return self


class AgentJudge(CriterionSpec):
    """``agent_judge``: a coding agent explores a copy of the row's sandbox (its writes are
    thrown away; the task's reference, if any, at ``_reference/``), within ``max_turns``
    model calls and ``turn_timeout`` seconds, and submits its verdict with the tool
    ``submit_verdict(score, rationale, findings)`` that assay serves it (an MCP server).

    ``prompt`` is the rubric; ``files`` names sandbox files it should read first;
    ``include_agent_output`` and ``include_tool_calls`` put the row's final response and
    the summary of its transcript into the judge's prompt. The score is the verdict's
    ``score`` (0 to 1); a judge that never submits, times out, crashes or submits no valid
    verdict leaves the criterion not graded (an error, counted apart, never a 0).
    ``enabled: false`` records it as skipped.
    """

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        **CriterionSpec.coder_eval_only,
        "include_dialog": "assay has no dialog mode",
        "max_dialog_chars": "assay has no dialog mode",
        "capture_transcript": "the judge's tool calls are kept in task.json's details",
        "model": "the judge's model is agent.model",
        "temperature": "the judge's CLI sets its own sampling",
        "max_tokens": "the judge's CLI sets its own output limit",
    }
    reads_sandbox: ClassVar[bool] = True

    type: Literal["agent_judge"]
    pass_threshold: float = Field(default=0.7, ge=0, le=1)
    prompt: StrictStr
    files: list[StrictStr] = Field(default_factory=list)
    include_reference: StrictBool = True
    include_agent_output: StrictBool = False
    include_tool_calls: StrictBool = False
    max_file_chars: int = Field(default=20000, ge=100)
    max_transcript_chars: int = Field(default=100000, ge=100)
    max_turns: int = Field(default=50, ge=1, le=1000)
    turn_timeout: float = Field(default=300, ge=10)
    enabled: StrictBool = True
    agent: JudgeAgent = Field(default_factory=JudgeAgent)

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("prompt (the rubric) is empty; say what the judge looks for")
        return value

    @field_validator("files")
    @classmethod
    def _inside(cls, value: list[str]) -> list[str]:
        for path in value:
            check_relative_path(path)
        return value

    @property
    def reads_response(self) -> bool:
        """The judge is shown the agent's final response (``include_agent_output``)."""
        return self.include_agent_output

    def graders(self) -> list[AgentSpec]:
        """The judge's agent config (none when ``enabled: false``)."""
        return [self.agent.config()] if self.enabled else []


__all__ = ["DEFAULT_IGNORED", "DEFAULT_MODEL", "AgentJudge", "JudgeAgent"]
