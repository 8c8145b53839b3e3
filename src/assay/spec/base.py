"""The base of every user-written model, and the screen that runs before pydantic.

Every model that mirrors YAML a user writes derives from :class:`StrictModel`
(``extra="forbid"``). Two class attributes describe compatibility with Coder Eval's task
format (``reference/originals.md`` §1.7):

- ``coder_eval_only``: fields of Coder Eval's format that assay accepts but does not
  implement yet. :func:`screen` removes them and reports one warning each.
- ``writer_only``: fields that assay itself writes (``suite_id``, ``row_id``); a user who
  writes them gets an error.
- ``refused_fields``: fields of Coder Eval's format that this model refuses, with the reason
  (Coder Eval refuses them too, e.g. ``permission_mode`` on a ``codex`` agent).

:func:`screen` walks raw YAML data along the model tree before validation, so that an
unknown field is reported with its path and a "did you mean" suggestion drawn from the
fields valid at that place, and a discriminated union (criteria, agents, template sources)
is reported by its tag with the list of valid tags.
"""

from __future__ import annotations

import difflib
import functools
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, StrictStr

Loc = tuple[str | int, ...]


def check_base_url(value: str) -> str:
    """A model endpoint's ``base_url``: an ``http://`` or ``https://`` URL with a host.

    Raises:
        ValueError: it has no scheme or host (``127.0.0.1:8000/v1`` was sent and retried as
            an unreachable server).
    """
    scheme, sep, rest = value.strip().partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.split("/")[0]:
        raise ValueError(f"base_url {value!r} is not an http:// or https:// URL with a host; "
                         "write it as http://127.0.0.1:8000/v1")  # fmt: skip
    return value


BaseUrl = Annotated[StrictStr, AfterValidator(check_base_url)]
"""The type of every ``base_url`` field."""


def _schema_extra(schema: dict[str, Any], model: type[Any]) -> None:
    """A model's JSON Schema also accepts its Coder-Eval-only fields (marked deprecated,
    with what assay does instead), as :func:`screen` does."""
    notes: Mapping[str, str] = getattr(model, "coder_eval_only", {})
    properties = schema.setdefault("properties", {})
    for name, note in notes.items():
        properties.setdefault(name, {"deprecated": True, "description": "a Coder Eval field "
                                     f"that assay does not implement yet; {note}"})  # fmt: skip


class StrictModel(BaseModel):
    """A model of user-written YAML: unknown fields are errors (``extra="forbid"``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, json_schema_extra=_schema_extra)

    coder_eval_only: ClassVar[Mapping[str, str]] = {}
    writer_only: ClassVar[frozenset[str]] = frozenset()
    refused_fields: ClassVar[Mapping[str, str]] = {}
    moved_fields: ClassVar[Mapping[str, str]] = {}
    """Fields written here that belong elsewhere → where (an unknown field's hint)."""


def no_nul(value: Any, what: str) -> Any:
    """``value`` unchanged; a string (or the keys and values of a mapping, or the items of a
    list) holding a NUL character is refused: no program argument or environment variable
    can carry one.

    Raises:
        ValueError: naming ``what``.
    """
    texts: list[Any] = [value]
    if isinstance(value, dict):
        texts = [*value.keys(), *value.values()]
    elif isinstance(value, list):
        texts = value
    if any(isinstance(t, str) and "\0" in t for t in texts):
        raise ValueError(f"{what} contains a NUL character (\\0), which a program's "
                         "arguments and environment cannot carry")  # fmt: skip
    return value


@dataclass(frozen=True)
class UnionInfo:
    """Metadata on a discriminated union: its noun, Coder Eval tags not implemented yet (tag
    → why), and what to add to the hint for a tag it does not know (``unknown``)."""

    noun: str
    not_yet: Mapping[str, str] = field(default_factory=dict)
    unknown: str = ""
    note: str = ""
    """Added to every unknown tag's hint (an installed plugin that could not be loaded)."""


@dataclass(frozen=True)
class FieldProblem:
    """An unknown field, a bad union tag, or a writer-only field found by :func:`screen`."""

    loc: Loc
    message: str
    hint: str | None = None


@dataclass
class ScreenResult:
    """The data with Coder-Eval-only fields removed, and one warning per removed field."""

    data: Any
    warnings: list[tuple[Loc, str]]


class ScreenError(Exception):
    """Raised by :func:`screen`; carries the :class:`FieldProblem`."""

    def __init__(self, problem: FieldProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """Return ``"did you mean 'x'?"`` for the closest of ``choices``, or ``None``."""
    close = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


def screen(
    data: Any, model: type[StrictModel], loc: Loc = (), *, lenient_top: bool = False
) -> ScreenResult:
    """Check ``data`` (raw YAML) against ``model``'s fields, recursively.

    ``lenient_top``: an unknown top-level key that is no near miss of a field (``x-common``,
    a holder of YAML anchors) is left out with a warning, as Coder Eval warns about unknown
    top-level keys and runs the task (originals.md §1.7); a near miss (``sucess_criteria``)
    stays an error with its "did you mean".

    Returns:
        The data without Coder-Eval-only fields, and a warning ``(loc, text)`` for each.

    Raises:
        ScreenError: an unknown field, a writer-only field, or an unknown union tag.
    """
    warnings: list[tuple[Loc, str]] = []
    if lenient_top and isinstance(data, dict):
        data = _without_unknown_top(data, model, loc, warnings)
    cleaned = _screen_model(data, model, loc, warnings)
    return ScreenResult(cleaned, warnings)


def _without_unknown_top(
    data: dict[Any, Any], model: type[StrictModel], loc: Loc, warnings: list[tuple[Loc, str]]
) -> dict[Any, Any]:
    known = set(model.model_fields) | set(model.coder_eval_only) | set(model.writer_only)
    known |= set(model.refused_fields) | set(model.moved_fields)  # a limit written too high
    kept: dict[Any, Any] = {}
    for key, value in data.items():
        if key in known or did_you_mean(str(key), known) is not None:
            kept[key] = value
            continue
        warnings.append(((*loc, str(key)), "unknown top-level field, ignored (as Coder Eval "
                         "does): a holder of YAML anchors is fine; anything else here does "
                         "nothing"))  # fmt: skip
    return kept


def _screen_model(
    data: Any, model: type[StrictModel], loc: Loc, warnings: list[tuple[Loc, str]]
) -> Any:
    if not isinstance(data, dict):
        return data  # pydantic reports the type error
    fields = model.model_fields
    out: dict[str, Any] = {}
    for key, value in data.items():
        key_loc = (*loc, str(key))
        if key in model.writer_only:
            raise ScreenError(
                FieldProblem(key_loc, f"'{key}' is written by assay, not by users", "remove it")
            )
        if key in model.refused_fields:
            raise ScreenError(
                FieldProblem(
                    key_loc, f"field '{key}' is not accepted here", model.refused_fields[key]
                )
            )
        if key in model.coder_eval_only:
            if value is not None:
                note = model.coder_eval_only[key]
                warnings.append(
                    (key_loc, f"a Coder Eval field that assay does not implement yet; {note}")
                )
            continue
        if key not in fields:
            valid = sorted(set(fields) - model.writer_only)
            moved = model.moved_fields.get(str(key))
            hint = (f"it belongs in {moved}: move it there" if moved else None) or did_you_mean(
                str(key), set(valid) | set(model.coder_eval_only)
            ) or ("valid fields here: " + ", ".join(valid))  # fmt: skip
            raise ScreenError(FieldProblem(key_loc, f"unknown field '{key}'", hint))
        info = fields[key]
        out[key] = _screen_value(value, info.annotation, info.metadata, key_loc, warnings)
    return out


def _screen_value(
    value: Any, annotation: Any, metadata: list[Any], loc: Loc, warnings: list[tuple[Loc, str]]
) -> Any:
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        inner, *extra = get_args(annotation)
        return _screen_value(value, inner, [*metadata, *extra], loc, warnings)
    union_info = next((m for m in metadata if isinstance(m, UnionInfo)), None)
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if value is None:
            return value
        models = [m for m in members if _is_model(m)]
        if union_info is not None and models:
            return _screen_tagged(value, models, union_info, loc, warnings)
        if len(members) == 1:
            return _screen_value(value, members[0], [], loc, warnings)
        for member in members:
            if _is_model(member) and isinstance(value, dict):
                return _screen_model(value, member, loc, warnings)
            if get_origin(member) is list and isinstance(value, list):
                return _screen_value(value, member, [], loc, warnings)
        return value
    if origin is list and isinstance(value, list):
        (item_type,) = get_args(annotation) or (Any,)
        return [
            _screen_value(item, item_type, metadata, (*loc, i), warnings)
            for i, item in enumerate(value)
        ]
    if origin is dict and isinstance(value, dict):
        _key_type, item_type = get_args(annotation) or (Any, Any)
        return {key: _screen_value(item, item_type, [], (*loc, str(key)), warnings)
                for key, item in value.items()}  # fmt: skip
    if _is_model(annotation):
        return _screen_model(value, annotation, loc, warnings)
    if annotation in (int, float) and isinstance(value, bool | str):
        raise ScreenError(_not_a_number(value, loc, annotation))
    return value


def _not_a_number(value: bool | str, loc: Loc, annotation: type) -> FieldProblem:
    """A number field given a boolean or a text (pydantic would read ``true`` as 1 and
    ``"0.5"`` as 0.5, where the task file's JSON Schema refuses both)."""
    kind = "an integer" if annotation is int else "a number"
    if isinstance(value, bool):
        return FieldProblem(loc, f"expected {kind}, got {str(value).lower()}",
                            "write a number (true is not 1 here)")  # fmt: skip
    try:
        float(value)
        hint: str | None = "write the number without quotes"
    except ValueError:
        hint = ("a ${row.…} placeholder is text: a number field takes a number as written"
                if "${row." in value else None)  # fmt: skip
    return FieldProblem(loc, f"expected {kind}, got the text {value!r}", hint)


def _screen_tagged(
    value: Any,
    models: list[type[StrictModel]],
    info: UnionInfo,
    loc: Loc,
    warnings: list[tuple[Loc, str]],
) -> Any:
    if not isinstance(value, dict):
        return value
    tags = _tags(tuple(models))
    tag = value.get("type")
    if tag is None:
        raise ScreenError(
            FieldProblem(
                (*loc, "type"),
                f"{_article(info.noun)} {info.noun} needs a 'type'",
                "one of: " + ", ".join(sorted(tags)),
            )
        )
    if tag not in tags:
        if tag in info.not_yet:
            raise ScreenError(
                FieldProblem(
                    (*loc, "type"),
                    f"{info.noun} type '{tag}' (from Coder Eval) is not implemented in assay yet",
                    info.not_yet[tag],
                )
            )
        listed = "one of: " + ", ".join(sorted(tags))
        listed += f"; {info.unknown}" if info.unknown else ""
        hint = (did_you_mean(str(tag), tags) or listed) + info.note
        raise ScreenError(FieldProblem((*loc, "type"), f"unknown {info.noun} type '{tag}'", hint))
    return _screen_model(value, tags[tag], loc, warnings)


def _article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


@functools.cache
def _tags(models: tuple[type[StrictModel], ...]) -> dict[str, type[StrictModel]]:
    """Each model of a tagged union by its ``type`` tag (the same few unions are screened
    for every criterion of every task file: worked out once a process)."""
    return {_tag_of(m): m for m in models}


def _tag_of(model: type[StrictModel]) -> str:
    annotation = model.model_fields["type"].annotation
    if get_origin(annotation) is Literal:
        return str(get_args(annotation)[0])
    raise TypeError(f"{model.__name__}.type must be a Literal")  # pragma: no cover


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, StrictModel)


def check_variable_names(names: list[str]) -> list[str]:
    """Environment variable names: not empty, without ``=`` or a NUL character."""
    for name in names:
        if not name or "=" in name or "\0" in name:
            raise ValueError(f"{name!r} is not an environment variable name")
    return names
