"""Variants: the layered merge of an experiment over a task, with where each value came from.

Layers, later wins (Coder Eval's order, ``reference/originals.md`` §1.8): the field's default
→ the experiment's ``defaults`` → the task file → the variant → the command line
(``-D path=value``, ``--model``). Scalars and lists are replaced; mappings are merged key by
key, except an ``agent`` whose ``type`` changes, which replaces the earlier agent whole.
``pre_run`` from the defaults runs before the task's, ``post_run`` after; a variant's
``template_sources`` come after the task's. Prompt mutations apply in order, the defaults'
before the variant's, to the prompt template (before ``${row.…}`` substitution, so a mutation
may itself use placeholders). Without an experiment the single variant is ``default``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.errors import TaskFileError
from assay.orchestration.loading.overrides import Override as Override  # re-exported for callers
from assay.orchestration.loading.overrides import apply_override, drop_alternatives
from assay.orchestration.loading.task_loader import LoadedTask, data_loc
from assay.spec.base import ScreenError, screen
from assay.spec.experiment import Experiment, PromptMutation
from assay.spec.run_names import CASE_CLASH_CONSEQUENCE, case_clash_text, case_clashes
from assay.spec.source import field_path, read_yaml
from assay.spec.task import TaskDefinition

DEFAULT_VARIANT = "default"
DEFAULT_AGENT = "llm"  # an agent block without a type is an llm agent
SOURCES = ("default", "experiment-defaults", "task", "variant", "cli")


@dataclass
class ResolvedVariant:
    """A task as one variant runs it, and the source of every value set in it."""

    variant_id: str
    definition: TaskDefinition
    provenance: dict[str, str] = field(default_factory=dict)
    description: str = ""


def load_experiment(argument: str) -> tuple[Experiment, Path, list[str]]:
    """Read ``-e FILE`` or ``-e NAME`` (``experiments/NAME.yaml``): the experiment, its path,
    and one warning per Coder Eval field it sets that assay does not implement yet.

    Raises:
        TaskFileError: missing file, invalid YAML, unknown field, invalid value.
    """
    path = Path(argument)
    if not path.exists() and not argument.endswith((".yaml", ".yml")):
        path = Path("experiments") / f"{argument}.yaml"
    if not path.is_file():
        raise TaskFileError(f"experiment file not found: {argument}",
                            hint="give a file, or NAME for experiments/NAME.yaml")  # fmt: skip
    document = read_yaml(path, kind="experiment file")
    if not isinstance(document.data, dict):
        raise TaskFileError("an experiment file is a YAML mapping", file=path, line=1)
    try:
        screened = screen(document.data, Experiment)
        warnings = [f"{path}:{document.line_of(loc) or '?'}: {field_path(loc)}: {text}"
                    for loc, text in screened.warnings]  # fmt: skip
        experiment = Experiment.model_validate(screened.data)
        clashes = case_clashes(v.variant_id for v in experiment.variants)
        if clashes:
            warnings.append(f"{path}: variant ids differ only in case "
                            f"({case_clash_text(clashes)}): {CASE_CLASH_CONSEQUENCE}")  # fmt: skip
        return experiment, path, warnings
    except ScreenError as exc:
        loc = exc.problem.loc
        raise TaskFileError(exc.problem.message, file=path, line=document.line_of(loc),
                            field=field_path(loc), hint=exc.problem.hint) from None  # fmt: skip
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = data_loc(tuple(error["loc"]), document.data)
        message = str(error["msg"]).removeprefix("Value error, ")
        raise TaskFileError(message, file=path, line=document.line_of(loc),
                            field=field_path(loc) or None) from None  # fmt: skip


def apply_mutations(prompt: str, mutations: list[PromptMutation]) -> str:
    """Apply prompt mutations in order."""
    for mutation in mutations:
        prompt = mutation.apply(prompt)
    return prompt


def _merge(
    base: dict[str, Any], over: dict[str, Any], source: str, where: dict[str, str], prefix: str
) -> dict[str, Any]:
    out = dict(base)
    at = tuple(p for p in prefix.split(".") if p)
    for key, value in over.items():
        path = f"{prefix}{key}"
        for other in drop_alternatives(out, at, key):  # initial_prompt replaces its _file
            for stale in [p for p in where if p == f"{prefix}{other}"
                          or p.startswith(f"{prefix}{other}.")]:  # fmt: skip
                del where[stale]
        old = out.get(key)
        agent_switch = key == "agent" and isinstance(old, dict) and isinstance(value, dict) and (
            "type" in value and value["type"] != old.get("type", DEFAULT_AGENT)
        )  # fmt: skip
        if isinstance(old, dict) and isinstance(value, dict) and not agent_switch:
            out[key] = _merge(old, value, source, where, path + ".")
        else:
            for stale in [p for p in where if p == path or p.startswith(path + ".")]:
                del where[stale]
            out[key] = copy.deepcopy(value)
            _mark(value, source, where, path)
    return out


def _mark(value: Any, source: str, where: dict[str, str], path: str) -> None:
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            _mark(inner, source, where, f"{path}.{key}")
    else:
        where[path] = source


def _nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {path[-1]: value}
    for part in reversed(path[:-1]):
        out = {part: out}
    return out


def resolve_variant(
    loaded: LoadedTask,
    experiment: Experiment | None,
    variant_id: str,
    *,
    overrides: list[Override],
    experiment_dir: Path | None = None,
) -> ResolvedVariant:
    """The task ``loaded`` as variant ``variant_id`` of ``experiment`` runs it.

    Raises:
        TaskFileError: the merged task is invalid (named by variant and field).
    """
    where: dict[str, str] = {}
    data: dict[str, Any] = {}
    variant = None
    if experiment is not None:
        variant = next(v for v in experiment.variants if v.variant_id == variant_id)
        data = _merge(
            data, _defaults_layer(experiment, experiment_dir), "experiment-defaults", where, ""
        )
    task_layer = loaded.definition.model_dump(mode="json", exclude_unset=True)
    task_layer.pop("dataset", None)
    data = _merge(data, task_layer, "task", where, "")
    if experiment is not None and variant is not None:
        data = _merge(data, _variant_layer(variant, experiment_dir), "variant", where, "")
        _join_lists(data, experiment, variant, loaded)
    data = _cli_layer(data, loaded, overrides, where)
    _mutate_prompt(data, experiment, variant, where)
    _screen_merged(data, variant_id, where, loaded)
    data["dataset"] = loaded.definition.dataset
    try:
        definition = type(loaded.definition).model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = field_path(data_loc(tuple(error["loc"]), data))
        source = _source_of(loc, where)
        raise TaskFileError(
            f"variant '{variant_id}': {str(error['msg']).removeprefix('Value error, ')}",
            file=loaded.display, field=loc or None,
            hint=f"set by {_origins(variant_id).get(source, source)}" if loc else None,
        ) from None  # fmt: skip
    if definition.initial_prompt is not None:
        where.setdefault("initial_prompt", "task")
    return ResolvedVariant(variant_id, definition, where, variant.description if variant else "")


JOINED = frozenset({"pre_run", "post_run", "sandbox"})
"""Top-level fields an experiment joins with the task's rather than replacing them: an
override of one of them is already in the task layer (the task file as loaded)."""
FILE_FIELDS = {"initial_prompt_file": "initial_prompt", "system_prompt_file": "system_prompt"}


def _cli_layer(
    data: dict[str, Any], loaded: LoadedTask, overrides: list[Override], where: dict[str, str]
) -> dict[str, Any]:
    """The command line's overrides, placed again above the variant (they are already in the
    task layer: :func:`~assay.orchestration.loading.task_loader.load_task` placed them). A file
    field is placed as the text the loader read from it; the dataset is not a variant's."""
    task = loaded.definition.model_dump(mode="json")
    agent_fields = type(loaded.definition.agent).model_fields
    for override in overrides:
        path = override.path
        if not path or path[0] in ("dataset", *JOINED):
            continue
        if override.where_taken and path[:1] == ("agent",) and path[-1] not in agent_fields:
            continue  # --model on a task whose agent takes none: the loader left it out too
        value = override.value
        if path[-1] in FILE_FIELDS:
            path = (*path[:-1], FILE_FIELDS[path[-1]])
            value = _value_at(task, path)
        if any(part.isdigit() for part in path):
            data = apply_override(data, Override(path, value))
            where[".".join(path)] = "cli"
        else:
            data = _merge(data, _nested(path, value), "cli", where, "")
    return data


def _value_at(data: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        data = data[int(part)] if isinstance(data, list) else data.get(part)
    return data


def _screen_merged(
    data: dict[str, Any], variant_id: str, where: dict[str, str], loaded: LoadedTask
) -> None:
    """An unknown field set by a variant, the defaults or ``-D`` gets the task file's error:
    its name, a "did you mean", and where it was set."""
    origin = _origins(variant_id)
    try:
        screened = screen(data, type(loaded.definition))
    except ScreenError as exc:
        loc = field_path(exc.problem.loc)
        source = _source_of(loc, where)
        hints = [exc.problem.hint, f"set by {origin.get(source, source)}"]  # fmt: skip
        raise TaskFileError(
            f"variant '{variant_id}': {exc.problem.message}",
            file=loaded.display if source == "task" else None,
            field=loc or None,
            hint="; ".join(h for h in hints if h),
        ) from None
    for warned, text in screened.warnings:  # accepted in a task file with a warning only
        loc = field_path(warned)
        source = _source_of(loc, where)
        if source in origin:
            raise TaskFileError(
                f"variant '{variant_id}': {text}, so setting it has no effect",
                field=loc,
                hint=f"set by {origin[source]}; remove it there",
            )


def _origins(variant_id: str) -> dict[str, str]:
    """The layers above the task file, as messages name them."""
    return {
        "cli": "-D on the command line",
        "variant": f"variant '{variant_id}' of the experiment file",
        "experiment-defaults": "the experiment file's defaults",
    }


def _source_of(loc: str, where: dict[str, str]) -> str:
    """Which layer set ``loc`` (or the nearest of its ancestors or descendants)."""
    if loc in where:
        return where[loc]
    path = loc
    while path:
        path = path.rpartition(".")[0]
        if path in where:
            return where[path]
    inner = sorted(p for p in where if p.startswith(loc + "."))
    return where[inner[0]] if inner else "the merge"


def _defaults_layer(experiment: Experiment, experiment_dir: Path | None) -> dict[str, Any]:
    defaults = experiment.defaults
    layer: dict[str, Any] = {}
    for name in ("agent", "run_limits", "repeats"):
        value = getattr(defaults, name)
        if value is not None:
            layer[name] = value
    return _inline_agent_files(layer, experiment_dir, "the experiment's defaults")


def _variant_layer(variant: Any, experiment_dir: Path | None) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for name in ("agent", "run_limits", "repeats", "initial_prompt", "simulation"):
        value = getattr(variant, name)
        if value is not None:
            layer[name] = value
    if variant.initial_prompt_file is not None:
        layer["initial_prompt"] = _read_file(
            variant.initial_prompt_file, experiment_dir, f"variant '{variant.variant_id}'",
            "initial_prompt_file",
        )  # fmt: skip
    if variant.driver is not None:
        layer["sandbox"] = {"driver": variant.driver}
    return _inline_agent_files(layer, experiment_dir, f"variant '{variant.variant_id}'")


def _inline_agent_files(layer: dict[str, Any], base: Path | None, who: str) -> dict[str, Any]:
    """An experiment's ``agent.system_prompt_file`` becomes ``agent.system_prompt`` (the
    file's text, relative to the experiment file's folder), as in a task file."""
    agent = layer.get("agent")
    if isinstance(agent, dict) and isinstance(agent.get("system_prompt_file"), str):
        agent = dict(agent)
        name = agent.pop("system_prompt_file")
        agent["system_prompt"] = _read_file(name, base, who, "agent.system_prompt_file")
        layer = {**layer, "agent": agent}
    return layer


def _read_file(name: str, base: Path | None, who: str, field: str) -> str:
    target = Path(name)
    target = target if target.is_absolute() else (base or Path.cwd()) / target
    try:
        return target.read_text(encoding="utf-8-sig").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text ({exc.reason})"
        raise TaskFileError(
            f"{who}: cannot read {field} {target}: {reason}",
            hint="the path is relative to the experiment file's folder",
        ) from None


def _join_lists(
    data: dict[str, Any], experiment: Experiment, variant: Any, loaded: LoadedTask
) -> None:
    defaults = experiment.defaults
    task = loaded.definition
    if defaults.pre_run:
        data["pre_run"] = [*defaults.pre_run, *(c.model_dump() for c in task.pre_run)]
    if defaults.post_run:
        data["post_run"] = [*(c.model_dump() for c in task.post_run), *defaults.post_run]
    if variant.template_sources:
        sandbox = dict(data.get("sandbox") or {})
        sandbox["template_sources"] = [*(sandbox.get("template_sources") or []),
                                       *variant.template_sources]  # fmt: skip
        data["sandbox"] = sandbox


def _mutate_prompt(
    data: dict[str, Any], experiment: Experiment | None, variant: Any, where: dict[str, str]
) -> None:
    """Apply the experiment's mutations to ``initial_prompt``; a ``qa:`` task builds its
    prompts per row, so its mutations join ``qa.prompt_mutations`` (applied to each)."""
    if experiment is None:
        return
    mutations = [*experiment.defaults.prompt_mutations, *(variant.prompt_mutations or [])]
    if not mutations:
        return
    if isinstance(data.get("qa"), dict):
        qa = data["qa"] = dict(data["qa"])
        qa["prompt_mutations"] = [*(qa.get("prompt_mutations") or []),
                                  *(m.model_dump(mode="json") for m in mutations)]  # fmt: skip
        where["qa.prompt_mutations"] = "variant" if variant.prompt_mutations else (
            "experiment-defaults")  # fmt: skip
    elif data.get("initial_prompt") is not None:
        data["initial_prompt"] = apply_mutations(data["initial_prompt"], mutations)
