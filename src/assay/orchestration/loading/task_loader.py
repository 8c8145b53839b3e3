"""``load_task``: one YAML file → a validated :class:`TaskDefinition`, with warnings.

Order: parse YAML (lines kept) → screen fields (unknown: error with suggestion; Coder Eval
fields not implemented: one warning each) → inline ``initial_prompt_file`` and
``system_prompt_file`` (relative to the task file) → pydantic validation → suite threshold
names → placeholder lint. Every error is a :class:`TaskFileError` naming file, line, field.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.criteria.registry import CriterionRegistry, default_criteria
from assay.data.substitute import PLACEHOLDER, lookalikes, string_leaves
from assay.errors import TaskFileError, UsageError
from assay.orchestration.loading.criterion_checks import (
    agent_criteria_warnings,
    check_agent_criteria,
)
from assay.orchestration.loading.overrides import Override, apply_override, overridden
from assay.orchestration.loading.sandbox_checks import check_read_only
from assay.orchestration.loading.thresholds import check_threshold_names
from assay.qa import QaTemplates, load_metrics_hook
from assay.spec.base import ScreenError, screen
from assay.spec.qa import check_judge_template
from assay.spec.source import Loc, YamlDocument, field_path, read_yaml
from assay.spec.task import TaskDefinition, TemplateDir

SUBSTITUTED_FIELDS = ("initial_prompt", "success_criteria")


@dataclass(frozen=True)
class LoadedTask:
    """A validated task file.

    Attributes:
        definition: the task.
        path: the file as given.
        display: the file as messages name it (relative to the working directory).
        base_dir: the file's directory (relative paths in the file start here).
        document: the parsed YAML, for line numbers in later errors.
        warnings: load-time warnings, each naming the file and field.
        built: built in Python (:func:`assay.task`), with no file of its own; a run saves
            it in its run directory (so it can be resumed).
    """

    definition: TaskDefinition
    path: Path
    display: str
    base_dir: Path
    document: YamlDocument
    warnings: list[str] = field(default_factory=list)
    built: bool = False

    def located(self, loc: Loc) -> tuple[str, int | None]:
        """``(file, line)`` of a field path in this file."""
        return self.display, self.document.line_of(loc)


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it is inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def load_task(
    path: Path,
    *,
    base_dir: Path | None = None,
    overrides: Sequence[Override] = (),
    skip_unsupported: bool = False,
    criteria: CriterionRegistry | None = None,
) -> LoadedTask:
    """Read and validate one task file, with the command line's ``-D`` overrides placed in it
    (:mod:`assay.orchestration.loading.overrides`), so every field they set takes effect: the
    dataset and its selection, tags, ``skip``, criteria and the rest.

    Args:
        path: the YAML file.
        base_dir: where its relative paths start (default: the file's folder; a task built
            in Python and saved in its run directory keeps the folder it was built in).
        overrides: ``-D path=value`` overrides, placed as if written in the file.
        skip_unsupported: leave out each criterion of a type assay does not have (a newer
            Coder Eval's, a plugin not installed here) with a warning naming it, instead of
            refusing the file; a file left with no criterion is still refused.
        criteria: the criterion types the file may name (default: the built-ins, and the
            installed ``assay.criteria`` plugins when it names another).

    Raises:
        TaskFileError: unreadable file, invalid YAML, unknown field, invalid value,
            missing prompt file, unknown suite threshold name; a Coder Eval field that assay
            does not implement, when an override sets it (it would have no effect). An
            error caused by an override names it.
        PluginError: the file names a type assay does not have, and an installed criterion
            plugin cannot be loaded.
    """
    document = read_yaml(path)
    return load_document(document, display=display_path(path),
                         base_dir=base_dir or path.resolve().parent,
                         overrides=overrides, skip_unsupported=skip_unsupported,
                         criteria=criteria)  # fmt: skip


def load_document(
    document: YamlDocument,
    *,
    display: str,
    base_dir: Path,
    overrides: Sequence[Override] = (),
    skip_unsupported: bool = False,
    criteria: CriterionRegistry | None = None,
) -> LoadedTask:
    """Validate a parsed task (a file's, or one built in Python with no lines) exactly as
    :func:`load_task` does; ``display`` names it in messages.

    Raises:
        TaskFileError: as :func:`load_task`.
    """
    data = document.data
    if not isinstance(data, dict):
        raise TaskFileError(
            "a task file is a YAML mapping with task_id, description and success_criteria",
            file=display,
            line=document.line_of(()),
        )
    data, legacy = _legacy_criteria(_judge_by_name(data), display=display, document=document)
    registry = criteria or default_criteria()
    placed = tuple(o for o in overrides if not o.where_taken or _takes(data, o, registry))
    legacy += [f"{display}: {o.render()} is not for this task: its agent takes no "
               f"{o.path[-1]} (left as written)" for o in overrides if o not in placed]  # fmt: skip
    for override in placed:
        try:
            data = apply_override(data, override)
        except UsageError as exc:
            raise TaskFileError(exc.message, file=display, field=override.dotted,
                                hint=exc.hint) from None  # fmt: skip
    left_out: list[str] = legacy
    if skip_unsupported:
        data, left_out, kept = _without_unsupported(data, registry, display=display,
                                                    document=document)  # fmt: skip
        document = _renumbered(document, kept)
        try:
            return _validated(document, data, placed, registry, display=display,
                              base_dir=base_dir, warnings=left_out)  # fmt: skip
        except TaskFileError as exc:
            exc.field = _written_field(exc.field, kept)
            raise
    return _validated(document, data, placed, registry, display=display, base_dir=base_dir,
                      warnings=left_out)  # fmt: skip


def _takes(data: dict[str, Any], override: Override, registry: CriterionRegistry) -> bool:
    """Whether the task's agent has the field ``override`` sets (``agent.model``: an ``llm``
    or coding agent does, a ``command`` or ``none`` agent does not)."""
    if override.path[:1] != ("agent",) or len(override.path) != 2:
        return True
    agent = data.get("agent")
    kind = agent.get("type", "llm") if isinstance(agent, dict) else "llm"
    try:
        fields = registry.agents.get(str(kind)).config_model.model_fields
    except UsageError:
        return True  # an unknown type: its own error comes from validation
    return override.path[1] in fields


LEGACY_CRITERIA = {
    "command_not_executed": ("command_executed", {"min_count": 0, "max_count": 0}),
}
"""Criterion types an older Coder Eval wrote, read as the type it rewrites them to (with
these fields set), as Coder Eval's loader does."""


def _legacy_criteria(
    data: dict[str, Any], *, display: str, document: YamlDocument
) -> tuple[dict[str, Any], list[str]]:
    """``data`` with each legacy criterion (:data:`LEGACY_CRITERIA`) as its current type, and
    a warning for each."""
    criteria = data.get("success_criteria")
    if not isinstance(criteria, list):
        return data, []
    rewritten, warnings = [], []
    for index, entry in enumerate(criteria):
        legacy = LEGACY_CRITERIA.get(str(entry.get("type"))) if isinstance(entry, dict) else None
        if legacy is None:
            rewritten.append(entry)
            continue
        kind, fields = legacy
        rewritten.append({**entry, "type": kind, **fields})
        loc: Loc = ("success_criteria", index, "type")
        settings = ", ".join(f"{k}: {v}" for k, v in fields.items())
        warnings.append(f"{display}:{document.line_of(loc) or '?'}: {field_path(loc)}: "
                        f"'{entry['type']}' is a legacy type, read as {kind} with {settings} "
                        "(as Coder Eval reads it); write that instead")  # fmt: skip
    return {**data, "success_criteria": rewritten}, warnings


def _judge_by_name(data: dict[str, Any]) -> dict[str, Any]:
    """``qa: {judge: NAME}`` written out as ``qa: {judge: {judge: NAME}}``, so that a ``-D
    qa.judge.rules=false`` finds the mapping it sets a field of."""
    qa = data.get("qa")
    if not isinstance(qa, dict) or not isinstance(qa.get("judge"), str):
        return data
    return {**data, "qa": {**qa, "judge": {"judge": qa["judge"]}}}


def _validated(document: YamlDocument, data: dict[str, Any], placed: tuple[Override, ...],
               registry: CriterionRegistry, *, display: str, base_dir: Path,
               warnings: list[str]) -> LoadedTask:  # fmt: skip
    """The rest of :func:`load_document`, on the data as the overrides and
    ``--skip-unsupported`` left it."""
    path = document.path
    model = task_model(data, registry)
    try:
        screened = screen(data, model, lenient_top=True)
    except ScreenError as exc:
        problem = exc.problem
        line, hint = _origin(problem.loc, document, placed, problem.hint)
        raise TaskFileError(
            problem.message, file=display, line=line, field=field_path(problem.loc), hint=hint
        ) from None
    for loc, text in screened.warnings:
        by = overridden(loc, placed)
        if by is not None:
            raise TaskFileError(
                f"{text}, so {by.render()} would have no effect",
                file=display, field=field_path(loc), hint="remove the override",
            )  # fmt: skip
        warnings.append(f"{display}:{document.line_of(loc) or '?'}: {field_path(loc)}: {text}")
    raw = _inline_files(dict(screened.data), base_dir, display, document)
    definition = _validate(model, raw, display, document, placed)
    if definition.run_limits.stop_early is True:
        warnings.append(f"{display}:{document.line_of(('run_limits', 'stop_early')) or '?'}: "
                        "run_limits.stop_early: true has no effect: a criterion's own "
                        "stop_early arms it, and false disarms them all (Coder Eval's newest "
                        "refuses true)")  # fmt: skip
    check_threshold_names(definition, display=display, document=document)
    check_agent_criteria(definition, display=display, document=document)
    check_templates(definition, base_dir=base_dir, display=display, document=document)
    check_reference(definition, base_dir=base_dir, display=display, document=document)
    check_read_only(definition, base_dir=base_dir, display=display, document=document)
    check_qa(definition, base_dir=base_dir, display=display, document=document)
    warnings += [f"{display}:{document.line_of(loc) or '?'}: {field_path(loc)}: YAML reads "
                 f"the unquoted {text} as a number ({_reading(text)}); quote it to keep its text"
                 for loc, text in document.octal]  # fmt: skip
    warnings += lint_placeholders(data, definition, display=display, document=document)
    warnings += agent_criteria_warnings(definition, display=display, document=document)
    warnings += _isolation_unused(definition, display=display, document=document)
    warnings += _env_not_expanded(definition, display=display, document=document)
    warnings += _dialog_unused(definition, display=display, document=document)
    warnings += _passthrough_withheld(definition, display=display, document=document)
    return LoadedTask(definition, path, display, base_dir, document, warnings)


def _isolation_unused(
    definition: TaskDefinition, *, display: str, document: YamlDocument
) -> list[str]:
    """``sandbox.docker.agent_isolation: true`` beside an agent that takes no turns (a
    ``command`` or one-answer ``llm`` agent): it keeps only a coding agent apart from the
    task's folder and ``extra_mounts``, so here it does nothing."""
    docker = definition.sandbox.docker
    if docker is None or docker.agent_isolation is not True or definition.agent.takes_turns:
        return []
    loc: Loc = ("sandbox", "docker", "agent_isolation")
    return [
        _at(display, document, loc) + f"has no effect on a {definition.agent.type} agent "
        "(it keeps a coding agent apart from the task's folder and extra_mounts, in a "
        "container of its own); this agent runs in the row's sandbox and sees them"
    ]


def _at(display: str, document: YamlDocument, loc: Loc) -> str:
    """``file:line: field: `` of a load warning about the task file's field ``loc``."""
    return f"{display}:{document.line_of(loc) or '?'}: {field_path(loc)}: "


def _passthrough_withheld(
    definition: TaskDefinition, *, display: str, document: YamlDocument
) -> list[str]:
    """``agent.env_passthrough`` naming a variable the agent's program never gets (a coding
    agent's CLI gets none of the user's model accounts): said, not dropped silently."""
    withheld = definition.agent.withheld_passthrough
    if not withheld:
        return []
    return [_at(display, document, ("agent", "env_passthrough"))
            + f"{', '.join(withheld)} never reach(es) the {definition.agent.type} CLI nor the "
            "commands it runs (a coding agent gets no variable of the user's model accounts; "
            "the row's pre_run, post_run and criteria do get it)"]  # fmt: skip


def _dialog_unused(
    definition: TaskDefinition, *, display: str, document: YamlDocument
) -> list[str]:
    """A judge's ``include_dialog: true`` or ``${dialog}`` in its inline rubric on a task
    without dialog mode (no enabled ``simulation:`` block): there is no dialog to show."""
    if definition.dialog is not None:
        return []
    found = []
    for index, criterion in enumerate(definition.success_criteria):
        rubric = getattr(criterion, "prompt", "") or ""
        uses = {"include_dialog": getattr(criterion, "include_dialog", False) is True,
                "prompt": isinstance(rubric, str) and "${dialog}" in rubric}  # fmt: skip
        for name in (name for name, used in uses.items() if used):
            what = "include_dialog" if name == "include_dialog" else "${dialog}"
            found.append(_at(display, document, ("success_criteria", index, name))
                         + f"{what} has no effect: the task has no dialog (dialog mode is an "
                         "enabled simulation: block)")  # fmt: skip
    return found


def _env_not_expanded(
    definition: TaskDefinition, *, display: str, document: YamlDocument
) -> list[str]:
    """An ``agent.env`` value that names a host variable (``$VAR``, ``${VAR}``): it is passed
    as written, as in Coder Eval (template, plugin and Dockerfile paths expand variables), so
    the agent gets the text, not the variable's value."""
    found = []
    for name, value in definition.agent.program_env.items():
        if re.search(r"\$\{?[A-Za-z_]", value):
            loc: Loc = ("agent", "env", name)
            found.append(f"{display}:{document.line_of(loc) or '?'}: {field_path(loc)}: "
                         f"{value!r} is passed as written (agent.env values are not "
                         "expanded); to give the agent a host variable, name it in "
                         "agent.env_passthrough")  # fmt: skip
    return found


def _renumbered(document: YamlDocument, kept: list[int]) -> YamlDocument:
    """``document`` as if only the criteria ``kept`` (their indexes as written) were written:
    each one's lines under its new index, so a later message names its line."""
    lines: dict[Loc, int] = {}
    for loc, line in document.lines.items():
        if loc[:1] != ("success_criteria",) or len(loc) < 2:
            lines[loc] = line
        elif loc[1] in kept:
            lines[("success_criteria", kept.index(loc[1]), *loc[2:])] = line
    return YamlDocument(document.path, document.text, document.data, lines)


def _written_field(field: str | None, kept: list[int]) -> str | None:
    """A message's ``success_criteria[i]…`` (``i`` counted without the criteria left out)
    with the index as written in the file."""
    found = re.match(r"success_criteria\[(\d+)\]", field or "")
    if found is None or int(found.group(1)) >= len(kept):
        return field
    return f"success_criteria[{kept[int(found.group(1))]}]" + (field or "")[found.end() :]


def _without_unsupported(
    data: dict[str, Any], registry: CriterionRegistry, *, display: str, document: YamlDocument
) -> tuple[dict[str, Any], list[str], list[int]]:
    """``data`` without the criteria of a type neither ``registry`` nor an installed plugin
    has (a newer Coder Eval's, a plugin not installed here), a warning naming each one left
    out, and the indexes (as written) of those kept.

    Raises:
        TaskFileError: every criterion was left out.
    """
    criteria = data.get("success_criteria")
    if not isinstance(criteria, list):
        return data, [], []
    kinds = [c.get("type") if isinstance(c, dict) else None for c in criteria]
    registry.ensure(kinds)
    known = set(registry.types)
    kept: list[int] = []
    warnings: list[str] = []
    for index, kind in enumerate(kinds):
        if isinstance(kind, str) and kind not in known:
            loc: Loc = ("success_criteria", index)
            gated = isinstance(criteria[index], dict) and bool(
                criteria[index].get("suite_thresholds")
            )
            warnings.append(f"{display}:{document.line_of(loc) or '?'}: {field_path(loc)}: "
                            f"criterion '{kind}' left out (--skip-unsupported)"
                            + (", and its suite_thresholds gate with it" if gated else "")
                            + ": assay does not have this type")  # fmt: skip
        else:
            kept.append(index)
    if criteria and not kept:
        raise TaskFileError(
            "every criterion of this task is of a type assay does not have, so nothing "
            "would grade its rows",
            file=display, field="success_criteria",
            hint="keep the file out of the run, or add a criterion assay has",
        )  # fmt: skip
    return {**data, "success_criteria": [criteria[i] for i in kept]}, warnings, kept


def _one_of(
    block: dict[str, Any], loc: Loc, names: tuple[str, str], display: str, document: YamlDocument
) -> None:
    """Refuse a block that sets both a text and the file it may come from (Coder Eval: "Only
    one of 'initial_prompt' or 'initial_prompt_file' can be provided, not both")."""
    text, file = names
    if block.get(text) is not None and block.get(file) is not None:
        raise TaskFileError(
            f"set either '{text}' or '{file}', not both", file=display,
            line=document.line_of((*loc, file)), field=field_path((*loc, file)),
            hint=f"remove one of them: the file would replace the inline {text}",
        )  # fmt: skip


def _reading(text: str) -> str:
    """How YAML 1.1 reads an int not written in plain decimals."""
    bare = text.lstrip("+-").lower()
    if ":" in bare:
        return "base 60: 1:30 is 90"
    if bare.startswith("0x"):
        return "hexadecimal"
    if bare.startswith("0b"):
        return "binary"
    return "octal: 012 is 10"


def _inline_files(
    raw: dict[str, Any], base_dir: Path, display: str, document: YamlDocument
) -> dict[str, Any]:
    _one_of(raw, (), ("initial_prompt", "initial_prompt_file"), display, document)
    agent = raw.get("agent")
    if isinstance(agent, dict):
        _one_of(agent, ("agent",), ("system_prompt", "system_prompt_file"), display, document)
    if isinstance(raw.get("initial_prompt_file"), str):
        loc: Loc = ("initial_prompt_file",)
        raw["initial_prompt"] = _read_prompt(raw, loc, base_dir, display, document)
        del raw["initial_prompt_file"]
    agent = raw.get("agent")
    if isinstance(agent, dict) and isinstance(agent.get("system_prompt_file"), str):
        agent = dict(agent)
        agent["system_prompt"] = _read_prompt(
            agent, ("agent", "system_prompt_file"), base_dir, display, document
        )
        del agent["system_prompt_file"]
        raw["agent"] = agent
    return _inline_judge_prompt(raw, base_dir, display, document)


def _inline_judge_prompt(
    raw: dict[str, Any], base_dir: Path, display: str, document: YamlDocument
) -> dict[str, Any]:
    """``qa.judge.prompt_file`` read into ``qa.judge.prompt`` (both given: refused)."""
    qa = raw.get("qa")
    judge = qa.get("judge") if isinstance(qa, dict) else None
    if not isinstance(judge, dict) or not isinstance(judge.get("prompt_file"), str):
        return raw
    loc: Loc = ("qa", "judge", "prompt_file")
    if "prompt" in judge:
        raise TaskFileError(
            "set either 'prompt' or 'prompt_file' in qa.judge, not both",
            file=display, line=document.line_of(loc), field=field_path(loc),
        )  # fmt: skip
    judge = dict(judge)
    judge["prompt"] = _read_prompt(judge, loc, base_dir, display, document)
    try:  # checked here, where its file is known: qa.judge.prompt is not in the task file
        check_judge_template(judge["prompt"])
    except ValueError as exc:
        line = document.line_of(loc)
        raise TaskFileError(f"{judge['prompt_file']}: {exc}", file=display, line=line,
                            field=field_path(loc)) from None  # fmt: skip
    del judge["prompt_file"]
    assert isinstance(qa, dict)
    raw["qa"] = {**qa, "judge": judge}
    return raw


def _read_prompt(
    holder: dict[str, Any], loc: Loc, base_dir: Path, display: str, document: YamlDocument
) -> str:
    name = str(holder[str(loc[-1])])
    target = Path(name) if Path(name).is_absolute() else base_dir / name
    try:
        return target.read_text(encoding="utf-8-sig").strip()
    except UnicodeDecodeError as exc:
        raise TaskFileError(
            f"{name} is not UTF-8 text ({exc.reason} at byte {exc.start})",
            file=display, line=document.line_of(loc), field=field_path(loc),
        ) from None  # fmt: skip
    except OSError as exc:
        raise TaskFileError(
            f"cannot read {name}: {exc.strerror or exc}",
            file=display,
            line=document.line_of(loc),
            field=field_path(loc),
            hint="the path is relative to the task file's folder",
        ) from None


def _origin(
    loc: Loc, document: YamlDocument, overrides: tuple[Override, ...], hint: str | None
) -> tuple[int | None, str | None]:
    """The line of ``loc`` in the file, or no line and a hint naming the override that set it."""
    by = overridden(loc, overrides)
    if by is None:
        if overrides:  # a rule over several fields (a prompt for agent 'none', say)
            given = ", ".join(o.render() for o in overrides)
            hint = "; ".join(h for h in (hint, f"the command line also set {given}") if h)
        return document.line_of(loc), hint
    return None, "; ".join(h for h in (hint, f"set on the command line by {by.render()}") if h)


def task_model(data: dict[str, Any], criteria: CriterionRegistry | None) -> type[TaskDefinition]:
    """The task model whose criteria are ``criteria``'s (default: the built-ins), after
    loading the installed plugins when ``data`` names a type it does not have.

    Raises:
        PluginError: a plugin was needed and cannot be loaded.
    """
    return (criteria or default_criteria()).model_for(data)


def _validate(
    model: type[TaskDefinition],
    raw: dict[str, Any],
    display: str,
    document: YamlDocument,
    overrides: tuple[Override, ...] = (),
) -> TaskDefinition:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems: list[TaskFileError] = []
        for error in exc.errors():
            problem = _problem(error, raw, document, display, overrides)
            if all(p.field != problem.field for p in problems):
                problems.append(problem)
        problems.sort(key=lambda p: p.line or 0)
        first = problems[0]
        said = f"\n  hint: {first.hint}"  # the first problem's hint ends the message once
        rest = "".join(f"\n  also: {p.render().removesuffix(said)}" for p in problems[1:6])
        raise TaskFileError(
            first.message + rest, file=display, line=first.line, field=first.field,
            hint=first.hint,
        ) from None  # fmt: skip


def _problem(
    error: Any,
    raw: Any,
    document: YamlDocument,
    display: str,
    overrides: tuple[Override, ...] = (),
) -> TaskFileError:
    loc = data_loc(tuple(error["loc"]), raw)
    message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    hint = None
    if error["type"] == "missing":
        message = "required field is missing"
    elif error["type"] == "extra_forbidden":
        message = "unknown field"
    elif isinstance(error.get("input"), bool) and error["type"] in _TEXT_ERRORS:
        message = f"expected text but YAML read a boolean ({error['input']})"
        hint = "YAML reads yes/no/on/off/true/false unquoted as booleans; quote the value"
    elif isinstance(error.get("input"), int | float) and error["type"] == "string_type":
        message = f"expected text but YAML read a number ({error['input']})"
        hint = 'quote the value to keep it text ("1", not 1): YAML reads it as a number'
    line, hint = _origin(loc, document, overrides, hint)
    return TaskFileError(
        message, file=display, line=line, field=field_path(loc) or None, hint=hint,
    )  # fmt: skip


_TEXT_ERRORS = frozenset({"string_type", "list_type"})


def data_loc(loc: tuple[Any, ...], data: Any) -> Loc:
    """Drop the parts of a pydantic error location that are not in the data.

    A discriminated union adds its tag (the ``type`` value) to the location, and validators
    add names like ``function-after[...]``; a missing field's name is kept.
    """
    out: list[str | int] = []
    node = data
    tagged: Any = None
    for part in loc:
        if isinstance(node, dict) and node.get("type") == part and tagged is not node:
            tagged = node  # the union tag, once per mapping
            continue
        if (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and part < len(node)
        ):
            node = node[part]
            out.append(part)
        elif isinstance(node, dict) and isinstance(part, str) and "[" not in part:
            out.append(part)  # a missing field: name it
            node = None
    return tuple(out)


def check_templates(
    task: TaskDefinition, *, base_dir: Path, display: str, document: YamlDocument
) -> None:
    """Every ``template_dir`` and ``mock_path_dirs`` folder exists (relative to the task
    file, inside its folder) before any row runs.

    Raises:
        TaskFileError: naming ``sandbox.template_sources[i].path`` or
            ``sandbox.mock_path_dirs[i]`` and its line.
    """
    for index, name in enumerate(task.sandbox.mock_path_dirs or []):
        where: Loc = ("sandbox", "mock_path_dirs", index)
        if not (base_dir / name).is_dir() or ".." in Path(name).parts or Path(name).is_absolute():
            raise TaskFileError(f"mock_path_dirs: {name!r} is not a folder beside the task file",
                                file=display, line=document.line_of(where),
                                field=field_path(where),
                                hint="the folders of stand-in programs are relative to the task "
                                "file's folder, inside it")  # fmt: skip
    for index, source in enumerate(task.sandbox.template_sources or []):
        if not isinstance(source, TemplateDir):
            continue
        loc: Loc = ("sandbox", "template_sources", index, "path")
        try:
            folder = source.folder(base_dir)
        except ValueError as exc:
            raise TaskFileError(str(exc), file=display, line=document.line_of(loc),
                                field=field_path(loc),
                                hint="set it, or write the path") from None  # fmt: skip
        if not folder.is_dir():
            raise TaskFileError(
                f"template_dir not found: {folder}",
                file=display,
                line=document.line_of(loc),
                field=field_path(loc),
                hint="the path is relative to the task file's folder",
            )


def check_reference(
    task: TaskDefinition, *, base_dir: Path, display: str, document: YamlDocument
) -> None:
    """The ``reference.directory`` exists, and so does every ``reference_file`` a
    ``reference_comparison`` names (without ``${row.…}``), before any row runs.

    Raises:
        TaskFileError: naming the field and its line.
    """
    if task.reference is None:
        _no_reference_named(task, display=display, document=document)
        return
    folder = reference_dir(task, base_dir)
    assert folder is not None
    problems: list[tuple[Loc, str]] = []
    if not folder.is_dir():
        problems.append((("reference", "directory"), f"reference directory not found: {folder}"))
    for index, spec in enumerate(task.success_criteria):
        name = getattr(spec, "reference_file", None)
        if spec.type != "reference_comparison" or name is None or "${" in name:
            continue
        if folder.is_dir() and not (folder / name).is_file():
            problems.append((("success_criteria", index, "reference_file"),
                             f"reference file not found: {folder / name}"))  # fmt: skip
    if problems:
        loc, message = problems[0]
        raise TaskFileError(message, file=display, line=document.line_of(loc),
                            field=field_path(loc),
                            hint="reference.directory is relative to the task file's folder, "
                            "reference_file to reference.directory")  # fmt: skip


REFERENCE_VARIABLE = re.compile(r"\$(?:REFERENCE_DIR\b|\{REFERENCE_DIR\})")


def _no_reference_named(task: TaskDefinition, *, display: str, document: YamlDocument) -> None:
    """Refuse a criterion that names ``$REFERENCE_DIR`` in a task without ``reference:``
    (it would be empty: ``test -d "$REFERENCE_DIR/"`` tests ``/`` and passes; Coder Eval
    refuses it too)."""
    for index, spec in enumerate(task.success_criteria):
        for name, value in spec.model_dump(mode="json").items():
            if any(REFERENCE_VARIABLE.search(leaf) for leaf in string_leaves(value)):
                loc: Loc = ("success_criteria", index, name)
                raise TaskFileError(
                    f"{spec.type} uses $REFERENCE_DIR, but the task has no reference folder",
                    file=display, line=document.line_of(loc), field=field_path(loc),
                    hint="add reference: {directory: <path>} (relative to the task file)",
                )  # fmt: skip


def reference_dir(task: TaskDefinition, base_dir: Path) -> Path | None:
    """The task's reference folder as an absolute path (``None``: the task has none)."""
    if task.reference is None:
        return None
    folder = Path(task.reference.directory)
    return (folder if folder.is_absolute() else base_dir / folder).absolute()


def check_qa(task: TaskDefinition, *, base_dir: Path, display: str, document: YamlDocument) -> None:
    """A ``qa:`` block's templates are valid and its metrics hook imports, before any row.

    Raises:
        TaskFileError: naming ``qa.templates.<name>`` or ``qa.metrics_hook`` and its line.
    """
    if task.qa is None:
        return
    try:
        QaTemplates.from_mapping(task.qa.templates, file=display)
    except TaskFileError as exc:
        loc = tuple((exc.field or "qa.templates").split("."))
        raise TaskFileError(exc.message, file=display, line=document.line_of(loc),
                            field=exc.field, hint=exc.hint) from None  # fmt: skip
    if task.qa.metrics_hook is not None:
        path = Path(task.qa.metrics_hook)
        path = path if path.is_absolute() else base_dir / path
        try:
            load_metrics_hook(path)
        except TaskFileError as exc:
            loc, loc_name = ("qa", "metrics_hook"), "qa.metrics_hook"
            found = path.is_file()
            hint = exc.hint or (None if found else "the path is relative to the task file's folder")
            raise TaskFileError(
                exc.message, file=display, line=document.line_of(loc), field=loc_name, hint=hint
            ) from None


def lint_placeholders(
    data: dict[str, Any], task: TaskDefinition, *, display: str, document: YamlDocument
) -> list[str]:
    """Warnings for placeholders that will not do what they seem to.

    - a dataset task whose prompt has no ``${row.…}`` (every row gets the same prompt);
    - look-alikes (``{row.x}``, ``{{row.x}}``, ``$row.x``, …) in substituted fields;
    - ``${row.…}`` in a field that is never substituted, or in a task without a dataset.
    """
    out: list[str] = []

    def warn(loc: Loc, text: str) -> None:
        out.append(f"{display}:{document.line_of(loc) or '?'}: {field_path(loc)}: {text}")

    has_dataset = task.dataset is not None
    prompt = task.initial_prompt
    if has_dataset and prompt is not None and not PLACEHOLDER.search(prompt):
        where = "initial_prompt_file" if "initial_prompt_file" in data else "initial_prompt"
        warn((where,), "the task has a dataset but the prompt has no ${row.<field>} placeholder, "
             "so every row gets the same prompt")  # fmt: skip
    for key in SUBSTITUTED_FIELDS:
        texts = [prompt] if key == "initial_prompt" and prompt else []
        if key == "success_criteria":
            texts = string_leaves(data.get(key))
        for text in texts:
            for look in lookalikes(text):
                warn((key,), f"{look!r} looks like a placeholder but is not one; write "
                     "${row.<field>}, a field name of letters, digits and underscores "
                     "(nested values and names with dots or hyphens cannot be filled)")  # fmt: skip
            if not has_dataset and PLACEHOLDER.search(text):
                warn((key,), "${row.…} is only substituted in tasks with a dataset; "
                     "here it stays literal")  # fmt: skip
    for index, spec in enumerate(task.success_criteria if has_dataset else []):
        for name in sorted(type(spec).shell_fields):
            value = getattr(spec, name, None)
            found = PLACEHOLDER.search(value) if isinstance(value, str) else None
            if found is not None:
                field = found.group(1)
                warn(("success_criteria", index, name),
                     f"{found.group(0)} is pasted into a shell command as it is: a value with "
                     "a quote, $(...) or ; changes what runs; read it from the environment "
                     f'instead: "$ASSAY_FIELD_{field}"')  # fmt: skip
    for key, value in data.items():
        if key in SUBSTITUTED_FIELDS or key == "dataset":
            continue
        if any("${row." in leaf for leaf in string_leaves(value)):
            warn((key,), "${row.…} is substituted only in initial_prompt and success_criteria; "
                 "here it stays literal")  # fmt: skip
    return out
