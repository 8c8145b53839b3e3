"""The criterion registry: every criterion type assay knows, and what is derived from it.

A built-in criterion is registered by one line of :data:`BUILT_INS` (``module:Class``,
imported when a registry is made); a user's by ``assay.run(criteria=[MyCriterion])``
(:meth:`CriterionRegistry.register`) or by an installed package's entry point in the group
``assay.criteria`` (loaded when a task file names a type the registry does not have yet).
The task file's discriminated union of criteria, its JSON Schema, and every set of types
that share a capability are derived from the registered classes.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Union

from pydantic import Field, TypeAdapter, create_model

from assay.agents.base import Agent
from assay.agents.registry import AgentRegistry, default_agents
from assay.criteria.base import Criterion
from assay.errors import PluginError, UsageError
from assay.plugins import PluginGroup, Registry
from assay.spec.base import UnionInfo
from assay.spec.criterion_base import CriterionSpec
from assay.spec.task import LlmAgent, TaskDefinition

BUILT_INS = (
    "assay.criteria.files:FileExistsCriterion",
    "assay.criteria.files:FileCheckCriterion",
    "assay.criteria.file_text:FileContainsCriterion",
    "assay.criteria.file_text:FileMatchesRegexCriterion",
    "assay.criteria.json_check:JsonCheckCriterion",
    "assay.criteria.commands:RunCommandCriterion",
    "assay.criteria.pytest_check:PytestCheckCriterion",
    "assay.criteria.classification:ClassificationMatchCriterion",
    "assay.criteria.response:ResponseMatchCriterion",
    "assay.criteria.qa:QaRowCriterion",
    "assay.criteria.skills:SkillTriggeredCriterion",
    "assay.criteria.transcript:CommandExecutedCriterion",
    "assay.criteria.transcript:ToolCalledCriterion",
    "assay.criteria.transcript:CommandsEfficiencyCriterion",
    "assay.criteria.judge:LlmJudgeCriterion",
    "assay.criteria.judge:SystemOneJudgeCriterion",
    "assay.criteria.agent_judge:AgentJudgeCriterion",
    "assay.criteria.code_checks:ImportCheckCriterion",
    "assay.criteria.code_checks:PylintScoreCriterion",
    "assay.criteria.code_checks:ReferenceComparisonCriterion",
    "assay.criteria.uipath_eval:UipathEvalCriterion",
    "assay.criteria.cli_called:CliCalledCriterion",
)
"""Every built-in criterion, one line each (``module:Class``)."""


def _type_name(cls: type) -> str:
    if not issubclass(cls, Criterion):  # pragma: no cover - check_member tests the base first
        raise TypeError(f"{cls.__qualname__} is not a criterion")
    return cls.type_name()


CRITERIA = PluginGroup(group="assay.criteria", noun="criterion", base=Criterion,
                       name_of=_type_name, awaited=("check",))  # fmt: skip
"""The entry-point group of criteria and what its members are."""


class CriterionRegistry(Registry[type[Criterion]]):
    """Criterion type → its class; rejects duplicates, suggests on unknown names, and loads
    the ``assay.criteria`` entry points the first time a name is not known.

    Args:
        entry_points: look up installed plugins for unknown names (off: only what is
            registered).
        agents: the agent types task files may name (the task model's ``agent`` union);
            default: the built-in ones (and the installed plugins).
    """

    def __init__(self, *, entry_points: bool = True, agents: AgentRegistry | None = None) -> None:
        self._model: type[TaskDefinition] | None = None
        self._adapter: TypeAdapter[list[Criterion]] | None = None
        super().__init__(CRITERIA, BUILT_INS, entry_points=entry_points)
        self.agents = agents if agents is not None else default_agents(entry_points=entry_points)

    def _changed(self) -> None:
        """A class was registered: the task model and the criteria's adapter are made again."""
        self._model = None
        self._adapter = None

    def ensure(self, type_names: Iterable[object]) -> None:
        """Load the installed plugins of the ``type_names`` that are not registered
        (:meth:`~assay.plugins.Registry.load_named`)."""
        self.load_named(type_names)

    def require(self, type_names: Iterable[object]) -> None:
        """Refuse criterion types that neither the registry nor an installed plugin has: a
        run graded again (``evaluate``, ``report``) without the classes it ran with.

        Raises:
            UsageError: naming the type and what would add it.
        """
        names = [n for n in type_names if isinstance(n, str)]
        self.ensure(names)
        unknown = sorted({n for n in names if n not in self._classes})
        if unknown:
            raise UsageError(
                f"the run's tasks name criterion type '{unknown[0]}', which assay does not "
                "have here",
                hint="pass the class that defines it (criteria=[...], as given to "
                "assay.run), or install the package that adds it" + self.broken_note(),
            )

    def get(self, type_name: str) -> type[Criterion]:
        """The class of ``type_name`` (looking in the installed plugins when needed).

        Raises:
            KeyError: unknown type, with a suggestion.
        """
        self.ensure([type_name])
        found = self._classes.get(type_name)
        if found is None:
            close = difflib.get_close_matches(type_name, list(self._classes), n=1)
            suggestion = f"; did you mean '{close[0]}'?" if close else ""
            raise KeyError(f"unknown criterion type '{type_name}'{suggestion}")
        return found

    def bind(self, spec: CriterionSpec) -> Criterion:
        """``spec`` as an instance of its registered class (``spec`` itself when it is one;
        a config built elsewhere is copied field by field, without validating again).

        Raises:
            KeyError: its type is not registered.
        """
        cls = self.get(spec.type)
        if isinstance(spec, cls):
            return spec
        values = {name: getattr(spec, name) for name in type(spec).model_fields}
        return cls.model_construct(_fields_set=set(spec.model_fields_set), **values)

    def union(self) -> Any:
        """The task file's criterion: a discriminated union of the registered classes on
        ``type``; an unknown type's hint names ``--skip-unsupported``."""
        members = tuple(self._classes.values())
        unknown = (
            "a criterion of your own: give its class (criteria=[MyCriterion] to "
            "assay.run, plan or resume) or install its plugin; --skip-unsupported runs "
            "the rest of the file without it"
        )
        return Annotated[Union[members],  # noqa: UP007 - a runtime tuple of classes
                         Field(discriminator="type"),
                         UnionInfo(noun="criterion", unknown=unknown,
                                   note=self.broken_note())]  # fmt: skip

    def validate(self, raw: object) -> list[Criterion]:
        """A list of criteria as written (dicts) as instances of the registered classes.

        Raises:
            UsageError: a criterion's type is not registered (a run's own class not given).
            pydantic.ValidationError: a criterion is invalid.
        """
        if isinstance(raw, list):
            self.require(c.get("type") for c in raw if isinstance(c, dict))
        if self._adapter is None:
            self._adapter = TypeAdapter(_list_of(self.union()))
        return self._adapter.validate_python(raw)

    def model_for(self, data: object) -> type[TaskDefinition]:
        """:meth:`task_model`, after loading the installed plugins when the task ``data``
        (a task file's mapping) names a criterion type that is not registered.

        Raises:
            PluginError: a plugin was needed and cannot be loaded.
        """
        written = data.get("success_criteria") if isinstance(data, dict) else None
        if isinstance(written, list):
            self.ensure(c.get("type") for c in written if isinstance(c, dict))
        agent = data.get("agent") if isinstance(data, dict) else None
        if isinstance(agent, dict) and self.agents.ensure(agent.get("type")):
            self._model = None
        return self.task_model()

    def task_model(self) -> type[TaskDefinition]:
        """:class:`TaskDefinition` whose ``success_criteria`` take the registered types
        (made once per registry and kept until another class is registered)."""
        if self._model is None:
            base = TaskDefinition.model_fields["success_criteria"]
            agent = TaskDefinition.model_fields["agent"]
            self._model = create_model(
                "TaskDefinition",
                __base__=TaskDefinition,
                __module__=TaskDefinition.__module__,
                __doc__=TaskDefinition.__doc__,
                success_criteria=(
                    _list_of(self.union()),
                    Field(min_length=1, description=base.description),
                ),
                agent=(
                    self.agents.union(),
                    Field(default_factory=LlmAgent, description=agent.description),
                ),
            )
        return self._model

    def task_schema(self) -> dict[str, Any]:
        """The JSON Schema (draft 2020-12) of a task file whose criteria are the registered
        types: :meth:`task_model`'s, with each criterion chosen by its ``type`` (``if`` /
        ``then``), so a validator or an editor names the wrong field of the criterion
        written, and an unknown type with the list of known ones."""
        schema = self.task_model().model_json_schema()
        field = schema["properties"]["success_criteria"]
        mapping: dict[str, str] = field["items"]["discriminator"]["mapping"]
        field["items"] = {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"enum": sorted(mapping), "description": "the criterion"}},
            "allOf": [{"if": {"properties": {"type": {"const": name}}, "required": ["type"]},
                       "then": {"$ref": ref}} for name, ref in sorted(mapping.items())],
        }  # fmt: skip
        # a qa: task without success_criteria is graded by the qa criterion
        schema["required"] = [r for r in schema.get("required", []) if r != "success_criteria"]
        schema["anyOf"] = [{"required": ["success_criteria"]}, {"required": ["qa"]}]
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}

    def with_classes(self, classes: Sequence[type[Criterion]]) -> CriterionRegistry:
        """This registry plus ``classes`` (``self`` when there are none).

        Raises:
            PluginError: a class is not a criterion, or its type is taken.
        """
        if not classes:
            return self
        extended = CriterionRegistry(entry_points=not self._plugins_loaded, agents=self.agents)
        self._copy_into(extended)
        for cls in classes:
            extended.register(cls)
        return extended

    def with_agents(self, classes: Sequence[type[Agent[Any]]]) -> CriterionRegistry:
        """This registry whose task files may also name the agent types of ``classes``
        (``self`` when there are none).

        Raises:
            PluginError: a class is not an agent, or its type is taken.
        """
        if not classes:
            return self
        extended = CriterionRegistry(entry_points=not self._plugins_loaded,
                                     agents=self.agents.with_classes(classes))  # fmt: skip
        self._copy_into(extended)
        return extended


def _list_of(item: Any) -> Any:
    """``list[item]`` of a type made at run time."""
    generic: Any = list
    return generic[item]


def default_criteria(*, entry_points: bool = True) -> CriterionRegistry:
    """A registry with every built-in criterion (and, for a name it does not know, the
    installed plugins).

    Raises:
        PluginError: a built-in registration is broken (a bug of assay).
    """
    registry = CriterionRegistry(entry_points=entry_points,
                                 agents=default_agents(entry_points=entry_points))  # fmt: skip
    registry.add_built_ins()
    return registry


__all__ = ["BUILT_INS", "CRITERIA", "CriterionRegistry", "PluginError", "default_criteria"]
