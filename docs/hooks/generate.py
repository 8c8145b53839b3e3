"""MkDocs hook: the pages' generated parts, written from the code at build time.

A page holds a marker line, and the build replaces it:

- ``<!-- generated: task-fields -->``: a table per model of the task file's pydantic schema
  (:class:`assay.spec.task.TaskDefinition` and every model its fields reach: agents,
  sandbox, dataset, each criterion type), field by field with type, default and the
  Coder Eval fields accepted with a warning;
- ``<!-- generated: cli -->``: every command of the typer app with its usage line, help text,
  arguments and options, as ``assay COMMAND --help`` prints them.

The same functions are imported by ``tests/docs`` to check what the pages say.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

SRC = Path(__file__).resolve().parents[2] / "src"
if str(SRC) not in sys.path:  # the clone's own code, whatever the environment installed
    sys.path.insert(0, str(SRC))

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace each ``<!-- generated: NAME -->`` line of a page with its generated text."""
    return MARKER.sub(lambda match: GENERATORS[match.group(1)](), markdown)


# --- the task file ------------------------------------------------------------------------


def models_of(annotation: Any) -> Iterator[type[BaseModel]]:
    """Every pydantic model named inside a type annotation (unions, lists, dicts, Annotated)."""
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for argument in typing.get_args(annotation):
        yield from models_of(argument)


def reachable_models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """``root`` and every model its fields reach, in the order they are first met."""
    seen: list[type[BaseModel]] = [root]
    index = 0
    while index < len(seen):
        for field in seen[index].model_fields.values():
            for model in models_of(field.annotation):
                if model not in seen:
                    seen.append(model)
        index += 1
    return seen


def type_text(annotation: Any) -> str:
    """A short, readable spelling of a field's type (``str``, ``list[str]``, ``a | b``)."""
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(arguments[0])
    if origin is typing.Literal:
        return " \\| ".join(f"`{value}`" if isinstance(value, str) else str(value)
                            for value in arguments)  # fmt: skip
    if origin in (typing.Union, types.UnionType):
        parts = [type_text(a) for a in arguments if a is not type(None)]
        text = " \\| ".join(dict.fromkeys(parts))
        return f"{text} \\| null" if type(None) in arguments else text
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(type_text(a) for a in arguments)}]"
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{anchor(annotation)})"
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation)).removeprefix("Strict").lower()


def default_text(field: Any) -> str:
    """The field's default as YAML would write it; ``required`` when it has none."""
    if field.is_required():
        return "**required**"
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:  # a factory that needs the validated data
            return "(computed)"
    else:
        value = field.default
    if value is PydanticUndefined:
        return ""
    if value is None:
        return "null"
    if isinstance(value, BaseModel):
        return "(its defaults)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"`{value}`" if value not in ([], {}, "") else f"`{value!r}`".replace("'", '"')


def anchor(model: type[BaseModel]) -> str:
    """The heading anchor of a model's table."""
    return model.__name__.lower()


def summary(model: type[BaseModel]) -> str:
    """The first paragraph of the model's docstring, on one line."""
    doc = inspect.getdoc(model) or ""
    if doc.startswith(f"{model.__name__}(") or not doc:
        return ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def constraints(field: Any) -> str:
    """Bounds such as ``≥ 1`` or ``≤ 2`` that pydantic checks on a field."""
    marks = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}
    lengths = {"min_length": "≥", "max_length": "≤"}
    found = []
    for item in field.metadata:
        for key, sign in marks.items():
            if (value := getattr(item, key, None)) is not None:
                found.append(f"{sign} {value}")
        for key, sign in lengths.items():
            if (value := getattr(item, key, None)) is not None:
                found.append(f"length {sign} {value}")
    return ", ".join(found)


def model_table(model: type[BaseModel]) -> str:
    """One model's heading, summary and fields table."""
    lines = [f"### {model.__name__} {{#{anchor(model)}}}", ""]
    if text := summary(model):
        lines += [text, ""]
    writer_only = getattr(model, "writer_only", frozenset())
    lines += ["| field | type | default | checked |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        if name in writer_only:
            continue
        key = field.alias or name
        lines.append(f"| `{key}` | {type_text(field.annotation)} | {default_text(field)} | "
                     f"{constraints(field)} |")  # fmt: skip
    warned = getattr(model, "coder_eval_only", {})
    if warned:
        listed = ", ".join(f"`{name}` ({why})" for name, why in warned.items())
        lines += ["", f"Coder Eval fields accepted with a warning (no effect): {listed}."]
    return "\n".join(lines) + "\n"


def task_fields() -> str:
    """The whole field reference of the task file, from its pydantic models (the task model
    with every built-in criterion class in ``success_criteria``)."""
    from assay.criteria.registry import default_criteria

    task_model = default_criteria(entry_points=False).task_model()
    return "\n".join(model_table(model) for model in reachable_models(task_model))


# --- the command line ---------------------------------------------------------------------


Walked = tuple[list[str], Any, Any]


def walk_commands(command: Any, path: list[str], context: Any) -> Iterator[Walked]:
    """``(words, command, context)`` for ``command`` and every command under it, depth first."""
    yield path, command, context
    lister = getattr(command, "list_commands", None)
    if lister is None:
        return
    for name in lister(context):
        sub = command.get_command(context, name)
        child = type(context)(sub, info_name=name, parent=context)
        yield from walk_commands(sub, [*path, name], child)


def parameter_row(parameter: Any) -> str:
    """One argument or option as a table row: its names, what it takes, default, help."""
    names = ", ".join(f"`{n}`" for n in [*parameter.opts, *parameter.secondary_opts])
    if parameter.param_type_name == "argument":
        names = f"`{parameter.metavar or (parameter.name or '').upper()}`"
    help_text = " ".join((getattr(parameter, "help", None) or "").split()).replace("|", "\\|")
    default = parameter.default
    shown = "" if default in (None, False, (), []) or callable(default) else f"`{default}`"
    if parameter.required:
        shown = "**required**"
    return f"| {names} | {help_text} | {shown} |"


def cli_reference() -> str:
    """Every command's usage, help and parameters, from the typer app itself."""
    import typer

    from assay.cli.app import app

    root = typer.main.get_command(app)
    context = type(root.context_class(root))(root, info_name="assay")
    sections = []
    for words, command, ctx in walk_commands(root, ["assay"], context):
        if len(words) == 1:
            continue
        name = " ".join(words)
        usage = " ".join(command.collect_usage_pieces(ctx))
        text = inspect.cleandoc(command.help or "").replace("\b\n", "")
        part = [f"### `{name}`", "", f"```text\n{name} {usage}\n```", "", text, ""]
        rows = [parameter_row(p) for p in command.params if p.name != "help"]
        if rows and not hasattr(command, "list_commands"):
            part += ["| parameter | what it does | default |", "|---|---|---|", *rows, ""]
        sections.append("\n".join(part))
    return "\n".join(sections)


GENERATORS = {"task-fields": task_fields, "cli": cli_reference}
