"""The agent registry: every agent type assay knows, and the runner of an agent block.

A built-in agent type is registered by one line of :data:`BUILT_INS` (``module:Class``, an
:class:`~assay.agents.base.Agent` subclass, imported when a registry is made); a user's by
``assay.run(agents=[MyAgent])`` (:meth:`AgentRegistry.register`) or by an installed
package's entry point in the group ``assay.agents`` (loaded when a task file names a type
the registry does not have yet). The task file's union of agent blocks is derived from the
registered classes' config models. This is the only module that maps an agent block to its
class: everything else asks the block (:class:`~assay.spec.agent_base.AgentSpec`) or its
runner (:class:`~assay.agents.base.Agent`) what it can do.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Sequence
from typing import Annotated, Any, Union

from pydantic import Field

from assay.agents.base import Agent
from assay.errors import PluginError, UsageError
from assay.plugins import PluginGroup, Registry
from assay.spec.agent_base import AgentSpec
from assay.spec.base import UnionInfo
from assay.spec.task import AGENTS_NOT_YET

BUILT_INS = (
    "assay.agents.none:NoAgent",
    "assay.agents.command:CommandRunner",
    "assay.agents.llm:LlmRunner",
    "assay.agents.claude_code:ClaudeCodeRunner",
    "assay.agents.codex:CodexRunner",
    "assay.agents.gemini:GeminiRunner",
    "assay.agents.qwen:QwenCodeRunner",
    "assay.agents.opencode:OpenCodeRunner",
    "assay.agents.pi:PiRunner",
)
"""Every built-in agent type, one line each (``module:Class``)."""


def _type_name(cls: type) -> str:
    """The type an agent class registers under: its ``type_name``, which must be the
    ``Literal`` of its config model's ``type`` field.

    Raises:
        TypeError: the class or its config model is incomplete (what to add).
    """
    name = getattr(cls, "type_name", None)
    model = getattr(cls, "config_model", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__qualname__} has no type_name (set type_name = 'my-agent')")
    if not (isinstance(model, type) and issubclass(model, AgentSpec)):
        raise TypeError(
            f"{cls.__qualname__}.config_model is not an agent config model: set it to a "
            "subclass of assay.spec.task.AgentBase (or assay.spec.coding_agents.CodingAgent)"
        )
    field = model.model_fields.get("type")
    written = typing.get_args(field.annotation) if field is not None else ()
    if written != (name,):
        raise TypeError(
            f"{model.__qualname__} must declare type: Literal['{name}'] (the type_name of "
            f"{cls.__qualname__})"
        )
    if "env_passthrough" not in model.model_fields:
        raise TypeError(
            f"{model.__qualname__} has no env_passthrough field: derive it from "
            "assay.spec.task.AgentBase (or assay.spec.coding_agents.CodingAgent)"
        )
    return name


AGENTS = PluginGroup(group="assay.agents", noun="agent", base=Agent, name_of=_type_name,
                     awaited=("run",))  # fmt: skip
"""The entry-point group of agents and what its members are."""


UNKNOWN_AGENT = (
    "an agent of your own: give its class (agents=[MyAgent] to assay.run, plan or "
    "resume) or install the package that adds it"
)
"""The end of an unknown agent type's hint (the run may name a plugin not installed here)."""


class AgentRegistry(Registry[type[Agent[Any]]]):
    """Agent type → its :class:`~assay.agents.base.Agent` class; rejects duplicates, suggests
    on unknown names, and loads the ``assay.agents`` entry points the first time a name is
    not known.

    Args:
        entry_points: look up installed plugins for unknown names (off: only what is
            registered).
    """

    def __init__(self, *, entry_points: bool = True) -> None:
        super().__init__(AGENTS, BUILT_INS, entry_points=entry_points)

    def ensure(self, type_name: object) -> bool:
        """Load the installed plugin of ``type_name`` when it is not registered
        (:meth:`~assay.plugins.Registry.load_named`); ``True`` when that loaded some (the
        task model then changes)."""
        return self.load_named([type_name])

    def get(self, type_name: str) -> type[Agent[Any]]:
        """The class of ``type_name`` (looking in the installed plugins when needed).

        Raises:
            UsageError: unknown type, with a suggestion and what would add it.
        """
        self.ensure(type_name)
        found = self._classes.get(type_name)
        if found is None:
            close = difflib.get_close_matches(type_name, list(self._classes), n=1)
            suggestion = f"did you mean '{close[0]}'? " if close else ""
            raise UsageError(
                f"unknown agent type '{type_name}'",
                hint=f"{suggestion}pass the class that defines it (agents=[...], as given to "
                "assay.run), or install the package that adds it" + self.broken_note(),
            )
        return found

    def build(self, config: AgentSpec) -> Agent[Any]:
        """The runner of ``config`` (an agent block of a task file).

        Raises:
            UsageError: its type is not registered.
        """
        type_name = getattr(config, "type", None)
        cls = self.get(type_name if isinstance(type_name, str) else type(config).__name__)
        if not isinstance(config, cls.config_model):
            config = cls.config_model.model_validate(config.model_dump(exclude_unset=True))
        return cls(config)

    def union(self) -> Any:
        """The task file's agent block: a discriminated union of the registered config models
        on ``type``, with the names of Coder Eval's types assay does not have yet."""
        not_yet = {k: v for k, v in AGENTS_NOT_YET.items() if k not in self._classes}
        members = tuple(dict.fromkeys(cls.config_model for cls in self._classes.values()))
        return Annotated[Union[members],  # noqa: UP007 - a runtime tuple of classes
                         Field(discriminator="type"),
                         UnionInfo(noun="agent", not_yet=not_yet, unknown=UNKNOWN_AGENT,
                                   note=self.broken_note())]  # fmt: skip

    def with_classes(self, classes: Sequence[type[Agent[Any]]]) -> AgentRegistry:
        """This registry plus ``classes`` (``self`` when there are none).

        Raises:
            PluginError: a class is not an agent, or its type is taken.
        """
        if not classes:
            return self
        extended = AgentRegistry(entry_points=not self._plugins_loaded)
        self._copy_into(extended)
        for cls in classes:
            extended.register(cls)
        return extended


def default_agents(*, entry_points: bool = True) -> AgentRegistry:
    """A registry with every built-in agent type (and, for a name it does not know, the
    installed plugins).

    Raises:
        PluginError: a built-in registration is broken (a bug of assay).
    """
    registry = AgentRegistry(entry_points=entry_points)
    registry.add_built_ins()
    return registry


__all__ = ["AGENTS", "BUILT_INS", "AgentRegistry", "PluginError", "default_agents"]
