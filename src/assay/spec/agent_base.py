"""What every agent block of a task file is, and what it declares it can do.

An agent type's config model (its task-file fields) derives from :class:`AgentSpec` and
answers, by class attributes and properties, every question the rest of assay asks about
an agent before or while a row runs: may it act, does it answer, what transcript does it
record, does it need a directory, does it call models through the bridge, which variables
hold its credentials. Nothing outside the agent registry switches on the config's class
(``tests/agents/test_capabilities.py`` holds that). The runtime half of the protocol (model
keys, preflight, the folders the sandbox must give it) is :class:`assay.agents.base.Agent`.

Kept apart from :mod:`assay.spec.task` so that :mod:`assay.spec.coding_agents` can derive from
it without an import cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Literal

from assay.spec.base import StrictModel

TranscriptKind = Literal["none", "messages", "tool_calls"]
"""What an agent's transcript holds: nothing (``none``), the prompt and the answer
(``messages``), or every tool call and command too (``tool_calls``)."""


class AgentSpec(StrictModel):
    """What every agent type has, and its capabilities (read, never switched on by class).

    Every subclass has the field ``env_passthrough`` (:class:`assay.spec.task.AgentBase` and
    :class:`assay.spec.coding_agents.CodingAgent` give it): variables that hold secrets
    (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``, ``*SECRET*``, provider
    credentials) that the agent, ``pre_run``, ``post_run`` and command criteria receive
    anyway; every other secret variable of the host is withheld from them
    (``assay.sandbox.environment``). Their values are still redacted from everything assay
    writes.

    A subclass names its type as ``type: Literal["my-agent"]`` (what task files write).
    """

    moved_fields: ClassVar[Mapping[str, str]] = {
        "max_turns": "run_limits.max_turns", "max_tool_calls": "run_limits.max_tool_calls",
        "timeout": "run_limits.task_timeout", "task_timeout": "run_limits.task_timeout",
        "turn_timeout": "run_limits.turn_timeout",
    }  # fmt: skip
    answers: ClassVar[bool] = True
    """Capability: the agent takes the prompt and gives a final response (``none``: it runs
    nothing, so a task gives it no prompt and a stored trace may stand in for it)."""
    transcript: ClassVar[TranscriptKind] = "tool_calls"
    """Capability: what the agent's transcript records (criteria that read tool calls or
    commands are refused for ``none`` and warned about for ``messages``)."""
    prefixes_skills: ClassVar[bool] = False
    """Capability: the CLI names a plugin's skill ``plugin:name`` (Claude Code), so a
    ``skill_triggered`` name with a ``:`` is the plugin's prefix written by mistake; on the
    others a ``:`` is part of the name (Qwen Code loads ``team:notes``)."""
    takes_turns: ClassVar[bool] = False
    """Capability (turn boundary): the agent's model answers in turns (one per response,
    tool calls between), so ``run_limits.max_turns`` and ``max_tool_calls`` bound it; on
    any other agent they have no effect (a warning)."""
    isolated_from_project: ClassVar[bool] = False
    """Capability: the agent reads instruction files (``CLAUDE.md``, ``AGENTS.md``) from every
    folder above its working directory, so its sandbox is made in the temporary folder and
    copied into the run folder at the end, never placed under the user's project."""

    if TYPE_CHECKING:  # a field of each subclass, so each keeps its own order of fields
        env_passthrough: list[str]

    @property
    def may_act(self) -> bool:
        """Capability: an agent that writes files or runs commands on its own judgment (a
        coding agent's CLI); such a task's sandbox is ``bwrap`` by default, and ``tempdir``
        gets a warning. A ``command`` agent is the user's own program: ``False``."""
        return False

    @property
    def dialog_problem(self) -> str | None:
        """Capability (dialog mode): why this agent cannot hold a conversation with a simulated
        user (``simulation:``), or ``None`` when it can: it continues its own session (the
        message history, or its CLI's resume) from one turn to the next."""
        kind = getattr(self, "type", "?")
        return (f"agent type '{kind}' answers once and cannot continue a conversation; dialog "
                "mode runs llm agents and the coding-agent CLIs (claude-code, codex, gemini, "
                "qwen-code, opencode, pi), each continuing its own session")  # fmt: skip

    @property
    def dialog_problem_field(self) -> str:
        """Capability (dialog mode): the field of the agent's block that
        :attr:`dialog_problem` is about (where the task file's error points)."""
        return "type"

    @property
    def needs_directory(self) -> bool:
        """Capability: the agent itself needs the row's working directory (the row makes
        one anyway when templates, hooks or criteria use it)."""
        return True

    @property
    def uses_bridge(self) -> bool:
        """Capability (model route): the agent's program calls models through assay's model
        bridge, which the run then starts."""
        return False

    @property
    def route_model(self) -> str | None:
        """Capability (model route): the assay model (``provider/name``) that answers the
        agent, if it names one (``None``: no model, or the CLI's own choice)."""
        return None

    @property
    def route_base_url(self) -> str | None:
        """Capability (model route): the endpoint ``base_url`` the block sets for its model,
        if any (its password, if any, is redacted)."""
        return None

    @property
    def program_env(self) -> dict[str, str]:
        """Capability: the variables the block sets for its program (``env``); values that
        look secret are redacted from everything assay writes."""
        return {}

    @property
    def withheld_passthrough(self) -> list[str]:
        """Capability (credentials): the ``env_passthrough`` names the agent's own program
        never gets (a coding-agent CLI gets no variable of the user's model accounts)."""
        return []

    @property
    def credential_variables(self) -> frozenset[str]:
        """Capability (credentials): the environment variables the block names as model
        credentials (``api_key_env``): secrets whatever their names look like."""
        return frozenset()

    @property
    def program_variables(self) -> list[str]:
        """Capability: the variables the agent's own program gets besides the row's (its
        ``env`` and the prompt's variables), sorted; ``assay plan`` lists them."""
        return []

    def local_paths(self) -> list[str]:
        """Capability (containment): the files and folders the block names that a row reads,
        as written (``$VAR`` and ``~`` expanded; relative ones are relative to the task
        file), so a cluster ships them with the task."""
        return []


class ModelFieldsSpec(AgentSpec):
    """An agent block whose own fields name the model that answers it: ``model``,
    ``base_url`` and ``api_key_env`` (the ``llm`` agent and every coding agent), read as its
    model route and credentials."""

    if TYPE_CHECKING:  # fields of each subclass, in its own order
        model: str | None
        base_url: str | None
        api_key_env: str | None

    @property
    def credential_variables(self) -> frozenset[str]:
        """``api_key_env``, when set."""
        return frozenset([self.api_key_env]) if self.api_key_env else frozenset()

    @property
    def route_model(self) -> str | None:
        """``model``."""
        return self.model

    @property
    def route_base_url(self) -> str | None:
        """``base_url``."""
        return self.base_url


__all__ = ["AgentSpec", "ModelFieldsSpec", "TranscriptKind"]
