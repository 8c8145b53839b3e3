"""Each variant of one task file resolved and checked at plan time: the experiment's layers
merged (:func:`~assay.orchestration.loading.experiment.resolve_variant`), its judges and
models resolved, its agent's preflight, the limits it cannot enforce, its graded rows.

Every variant is checked before an error is raised, so a plan names each variant that
cannot run (:class:`VariantErrors`), not only the first; each error says which layer set
its field (the command line's ``-D``, the experiment's variant or defaults).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from assay.agents.registry import AgentRegistry
from assay.errors import DatasetError, MissingKeyError, SelectionError, TaskFileError, UserError
from assay.judges.assets import JudgeResolver
from assay.orchestration.loading.agent_checks import check_agent, located
from assay.orchestration.loading.criterion_checks import criterion_agent_problems
from assay.orchestration.loading.experiment import (
    DEFAULT_VARIANT,
    Override,
    ResolvedVariant,
    resolve_variant,
)
from assay.orchestration.loading.qa_rows import judge_key
from assay.orchestration.loading.task_loader import LoadedTask
from assay.orchestration.planning.expand import Expansion, check_placeholders, check_qa_rows
from assay.orchestration.planning.judging import (
    check_graded_rows,
    resolve_definition,
    tie_warnings,
)
from assay.providers.pool import ModelKey, ProviderRegistry
from assay.providers.pricing import PriceTable
from assay.spec.experiment import Experiment
from assay.spec.simulation import SimulationConfig
from assay.spec.source import field_loc, field_path, read_yaml
from assay.spec.task import TaskDefinition

E = TypeVar("E", bound=UserError)


class VariantErrors(TaskFileError):
    """Several variants of one task file cannot run.

    Args:
        errors: each variant's error, in the experiment's order.
    """

    def __init__(self, errors: Sequence[UserError]) -> None:
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.message, file=first.file, line=first.line, field=first.field,
                         hint=first.hint)  # fmt: skip


@dataclass(frozen=True)
class VariantChecks:
    """What checking one task file's variants needs of the plan.

    Attributes:
        warnings: the plan's warnings, extended in place (a tie, a limit without effect).
        registry: the model providers (each model's preflight).
        resolver: the judge assets (``judge: NAME``).
        overrides: the command line's ``-D`` values.
        prices: the price table (a cost limit needs the model's price).
        agents: the agent types.
        experiment: the experiment whose variants run (``None``: the task as written).
        experiment_file: the experiment's file (its folder is where its own files are
            relative to, and an error a variant sets is placed at its line there).
    """

    warnings: list[str]
    registry: ProviderRegistry
    resolver: JudgeResolver
    overrides: Sequence[Override]
    prices: PriceTable
    agents: AgentRegistry
    experiment: Experiment | None
    experiment_file: Path | None

    @property
    def experiment_dir(self) -> Path | None:
        """The experiment file's folder."""
        return self.experiment_file.resolve().parent if self.experiment_file else None


def checked_variants(
    written: LoadedTask, loaded: LoadedTask, expansion: Expansion, checks: VariantChecks
) -> list[ResolvedVariant]:
    """The task as each variant runs it (``written``: the task file as loaded; ``loaded``:
    with its judges resolved), each one checked.

    Raises:
        TaskFileError, DatasetError, SelectionError: the one variant that cannot run (the
            task itself, without an experiment).
        VariantErrors: several variants cannot run.
    """
    ids = [v.variant_id for v in checks.experiment.variants] if checks.experiment else [
        DEFAULT_VARIANT]  # fmt: skip
    variants: list[ResolvedVariant] = []
    errors: list[UserError] = []
    for variant_id in ids:
        try:
            variants.append(_checked(variant_id, written, loaded, expansion, checks))
        except (TaskFileError, DatasetError, SelectionError) as exc:
            errors.append(_placed(exc, variant_id, checks, task=written))
    if len(errors) > 1:
        raise VariantErrors(errors)
    if errors:
        raise errors[0]
    return variants


def _placed(
    exc: UserError, variant_id: str, checks: VariantChecks, *, task: LoadedTask
) -> UserError:
    """``exc`` at the experiment file's line of its field when the experiment sets the
    value this variant runs with (the variant's own entry, or the defaults where the task
    file does not set the field) and ``-D`` does not: that is where the value to fix is, not
    the task file."""
    experiment, path = checks.experiment, checks.experiment_file
    if experiment is None or path is None or exc.located or not exc.field:
        return exc
    field = exc.field
    if any(field == o.dotted or field.startswith((o.dotted + ".", o.dotted + "["))
           for o in checks.overrides):  # fmt: skip
        return exc
    document = read_yaml(path, kind="experiment file")
    index = [v.variant_id for v in experiment.variants].index(variant_id)
    loc = field_loc(field)
    in_task = tuple(loc) in task.document.lines  # the task's own value is above the defaults
    for base in (("variants", index),) + ((("defaults",),) if not in_task else ()):
        full = (*base, *loc)
        if any(full[:end] in document.lines for end in range(len(base) + 1, len(full) + 1)):
            return type(exc)(exc.message, file=str(path), line=document.line_of(full),
                             field=field_path(full), row_id=exc.row_id, hint=exc.hint)  # fmt: skip
    return exc


def _checked(
    variant_id: str,
    written: LoadedTask,
    loaded: LoadedTask,
    expansion: Expansion,
    checks: VariantChecks,
) -> ResolvedVariant:
    """One variant resolved and checked (see :func:`checked_variants`)."""
    variant = resolve_variant(written, checks.experiment, variant_id,
                              overrides=list(checks.overrides),
                              experiment_dir=checks.experiment_dir)  # fmt: skip
    try:
        _check_rows(written, expansion, variant)
    except DatasetError as exc:  # the variant's own prompt or qa block on the rows
        prompt = variant.definition.initial_prompt != written.definition.initial_prompt
        raise _set_by(exc, variant, checks.overrides,
                      field="initial_prompt" if prompt else "qa") from None  # fmt: skip
    try:
        resolved = resolve_definition(variant.definition, loaded, checks.resolver)
        variant = replace(variant, definition=resolved)
        checks.warnings.extend(w for w in tie_warnings(loaded, resolved)
                               if w not in checks.warnings)  # fmt: skip
        _check_model(loaded, resolved, checks.registry, checks.prices, checks.agents)
    except TaskFileError as exc:
        raise _set_by(exc, variant, checks.overrides) from None
    for field, why in criterion_agent_problems(variant.definition):  # its agent may differ
        raise _set_by(TaskFileError(why, file=written.display, field=field), variant,
                      checks.overrides, field="agent.type") from None  # fmt: skip
    checks.warnings.extend(_unenforced_limits(loaded, variant))
    checks.warnings.extend(_free_budget(loaded, variant, checks.prices))
    try:
        check_graded_rows(expansion, variant.definition)
    except TaskFileError as exc:
        raise overridden(exc, checks.overrides, ("agent", "success_criteria", "dataset")) from None
    return variant


def _free_budget(loaded: LoadedTask, variant: ResolvedVariant, prices: PriceTable) -> list[str]:
    """``run_limits.max_usd`` on an agent whose model costs nothing (a ``mock/`` script, a
    price of 0): the budget is never reached, which is said (a paid model without a price
    is refused by the agent's own check)."""
    task = variant.definition
    model = getattr(task.agent, "model", None)
    if task.run_limits.max_usd is None or not isinstance(model, str):
        return []
    price = getattr(task.agent, "price", None) or prices.lookup(model)
    if price is None or price.input_per_mtok or price.output_per_mtok:
        return []
    line = loaded.document.line_of(("run_limits", "max_usd"))
    return [
        f"{loaded.display}:{line or '?'}: run_limits.max_usd: {model} costs nothing (its "
        "price is 0), so this budget is never reached; give agent.price to test it"
    ]


def _check_rows(loaded: LoadedTask, expansion: Expansion, variant: ResolvedVariant) -> None:
    """A variant's own prompt resolves on every row, and its own ``qa`` block fits them."""
    if expansion.rows is None:
        return
    prompt = variant.definition.initial_prompt
    if prompt != loaded.definition.initial_prompt:
        check_placeholders(expansion.rows, loaded, expansion.ids, prompt=prompt)
    qa = variant.definition.qa
    if qa is not None and qa != loaded.definition.qa:
        check_qa_rows(loaded, expansion.row_tasks, expansion.rows, variant.definition)


_SETTERS = {"cli": "-D on the command line", "variant": "the experiment's variant",
            "experiment-defaults": "the experiment's defaults"}  # fmt: skip


def _set_by(
    exc: E, variant: ResolvedVariant, overrides: Sequence[Override], *, field: str | None = None
) -> E:
    """``exc`` (a model or agent check's refusal, or a row check's) saying which layer set
    its field (``field``, else the error's own), when the command line or the experiment
    did: the file's line alone would point elsewhere."""
    field = field or exc.field or ""
    source = next((variant.provenance[p] for p in _prefixes(field) if p in variant.provenance),
                  "task")  # fmt: skip
    if source == "cli":
        by = next((o.render() for o in reversed(overrides)
                   if any(o.dotted == p for p in _prefixes(field))), "-D")  # fmt: skip
        where = f"set on the command line by {by}"
    elif source in _SETTERS:
        where = f"set by {_SETTERS[source]} (variant '{variant.variant_id}')"
    else:
        return exc
    exc.hint = f"{exc.hint}; {where}" if exc.hint else where
    return exc


def overridden(
    exc: TaskFileError, overrides: Sequence[Override], roots: tuple[str, ...] = ()
) -> TaskFileError:
    """``exc`` naming the ``-D`` that set its field (or a field inside it), or any field under
    ``roots`` (a refusal that several fields decide), if one did."""
    field = ".".join(_prefixes(exc.field or "")[:1])
    by = next((o.render() for o in reversed(overrides) if (field and (
        o.dotted == field or o.dotted.startswith(field + ".") or field.startswith(o.dotted + ".")
    )) or o.path[0] in roots), None)  # fmt: skip
    if by is not None:
        where = f"set on the command line by {by}"
        exc.hint = f"{exc.hint}; {where}" if exc.hint else where
    return exc


def _prefixes(field: str) -> list[str]:
    """``agent.plugins[0].path`` → itself and its ancestors, dotted (``agent.plugins``,
    ``agent``), longest first."""
    parts = field.replace("[", ".").replace("]", "").split(".")
    return [".".join(parts[:end]) for end in range(len(parts), 0, -1)]


def _unenforced_limits(loaded: LoadedTask, variant: ResolvedVariant) -> list[str]:
    """``run_limits.max_turns`` or ``max_tool_calls`` on an agent that takes no turns
    (``llm`` without tools, ``command``, ``none``) has no effect: a warning when the task file
    sets it (Coder Eval's files do), an error when ``-D`` or an experiment does. In dialog
    mode each of the agent's answers is a turn, so ``max_turns`` counts them.

    Raises:
        TaskFileError: the limit was set by ``-D`` or the experiment.
    """
    task = variant.definition
    if task.agent.takes_turns:
        return []
    warnings = []
    for name in ("max_turns", "max_tool_calls"):
        if getattr(task.run_limits, name) is None or (name == "max_turns" and task.dialog):
            continue
        why = (f"run_limits.{name} has no effect on agent type '{task.agent.type}', which "
               "takes no turns (it is enforced for the coding-agent CLIs, for an llm agent "
               "with tools, and for max_turns in dialog mode)")  # fmt: skip
        source = variant.provenance.get(f"run_limits.{name}", "task")
        if source in _SETTERS:
            raise TaskFileError(f"variant '{variant.variant_id}': {why}",
                                field=f"run_limits.{name}",
                                hint=f"set by {_SETTERS[source]}; remove it there")  # fmt: skip
        line = loaded.document.line_of(("run_limits", name))
        warnings.append(f"{loaded.display}:{line or '?'}: run_limits.{name}: {why}")
    return warnings + _unwatched_stops(loaded, variant)


def _unwatched_stops(loaded: LoadedTask, variant: ResolvedVariant) -> list[str]:
    """A criterion's ``stop_early`` on an agent without an event stream (it is checked only
    after the agent ends): one warning per criterion."""
    warnings = []
    for index, criterion in enumerate(variant.definition.success_criteria):
        if getattr(criterion, "stop_early", None) is None:
            continue
        line = loaded.document.line_of(("success_criteria", index, "stop_early"))
        warnings.append(
            f"{loaded.display}:{line or '?'}: success_criteria[{index}].stop_early: agent type "
            f"'{variant.definition.agent.type}' reports no tool calls while it runs, so the "
            "criterion is checked only after it ends (early stop needs a coding-agent CLI or "
            "an llm agent with tools)"
        )
    return warnings


def _check_judge(loaded: LoadedTask, task: TaskDefinition, registry: ProviderRegistry) -> None:
    """A ``qa.judge`` model's provider exists and can start (weights, API key, script)."""
    if task.qa is None or task.qa.judge is None:
        return
    try:
        registry.preflight(judge_key(task.qa.judge, loaded.base_dir))
    except UserError as exc:
        field = "judge" if task.qa.judge.judge is not None else "model"
        raise located(exc, loaded, ("qa", "judge", field)) from None


def simulator_key(config: SimulationConfig, base_dir: Path) -> ModelKey:
    """The pool key of the simulated user's model (``base_dir``: the task file's folder, where
    a ``mock/`` script is found)."""
    return ModelKey(name=config.simulator_model, base_dir=str(base_dir))


def _check_simulator(loaded: LoadedTask, task: TaskDefinition, registry: ProviderRegistry) -> None:
    """Dialog mode: the simulated user's model can start, as the agent's must (``assay plan``
    refuses what ``assay run`` would)."""
    if task.dialog is None:
        return
    try:
        registry.preflight(simulator_key(task.dialog, loaded.base_dir))
    except MissingKeyError as exc:  # its hint names fields the simulation block does not have
        keyless = UserError(exc.message, hint="export the variable where assay runs; the "
                            "simulated user takes a model name only")  # fmt: skip
        raise located(keyless, loaded, ("simulation", "model")) from None
    except UserError as exc:
        raise located(exc, loaded, ("simulation", "model")) from None


def _check_model(
    loaded: LoadedTask,
    task: TaskDefinition,
    registry: ProviderRegistry,
    prices: PriceTable,
    agents: AgentRegistry,
) -> None:
    """The judge's and the agent's models can start, and the agent's own preflight passes
    (:func:`check_agent`)."""
    _check_judge(loaded, task, registry)
    _check_simulator(loaded, task, registry)
    check_agent(loaded, task, agents=agents, providers=registry, prices=prices)
