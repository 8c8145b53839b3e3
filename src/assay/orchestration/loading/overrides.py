"""``-D path=value``: a command-line override of one task field, and the merge of layers.

An override behaves as if its value were written in the task file at ``path`` (relative file
paths start at the task file's folder), and it is the top layer: it wins over the task file,
the experiment's ``defaults`` and every variant. A path is dotted mapping keys; a number
addresses an existing list item (``success_criteria.0.weight=0``). Setting a ``type`` to
another value replaces the whole mapping (an agent, a criterion), whose other fields belonged
to the old type. Some fields are
alternatives of each other (:data:`ALTERNATIVES`): setting one removes the others from the
same mapping, so ``-D initial_prompt_file=p.txt`` replaces the task's ``initial_prompt``.

The value is parsed as YAML; text that YAML reads as a mapping of bare keys (the template
``{question}``) stays text.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from assay.errors import UsageError
from assay.results.secrets import Redactor

ALTERNATIVES: Mapping[tuple[str, ...], tuple[frozenset[str], ...]] = {
    (): (frozenset({"initial_prompt", "initial_prompt_file"}),),
    ("agent",): (
        frozenset({"system_prompt", "system_prompt_file"}),
        frozenset({"labels", "json_schema"}),
    ),
    ("dataset",): (frozenset({"rows", "paths", "store"}),),
}
"""Mapping path → groups of keys of which a task sets at most one."""
_DEFAULT_TYPE: Mapping[tuple[str, ...], str] = {("agent",): "llm"}


@dataclass(frozen=True)
class Override:
    """One ``-D path=value`` (``flag``: how the user gave it, when not as ``-D``, e.g.
    ``--model openai/x``; messages name it so)."""

    path: tuple[str, ...]
    value: Any
    flag: str | None = field(default=None, compare=False)
    where_taken: bool = False
    """Set only on a task whose block has the field (``--model``: the agents that take a
    model; a ``command`` or ``none`` agent of the same folder is left as written)."""

    @classmethod
    def parse(cls, text: str) -> Override:
        """Parse ``agent.temperature=0.7``.

        Raises:
            UsageError: no ``=`` or an empty path.
        """
        name, sep, raw = text.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"-D takes path=value, got '{text}'",
                             hint="e.g. -D agent.temperature=0.7")  # fmt: skip
        from assay.spec.source import load_yaml  # here: `assay --help` reads no YAML

        try:
            value = load_yaml(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        if isinstance(value, dict) and value and all(v is None for v in value.values()):
            value = raw  # "{question} …" is a template, not YAML's mapping {question: null}
        return cls(tuple(p for p in name.strip().split(".") if p), value)

    @property
    def dotted(self) -> str:
        """``agent.temperature``."""
        return ".".join(self.path)

    def render(self) -> str:
        """``-D agent.temperature=0.7`` (or the flag) as the user typed it, a secret in it
        redacted (``-D agent.env.MY_TOKEN=[redacted:MY_TOKEN]``, a URL's password): messages
        show it."""
        shown = self.flag or f"-D {self.dotted}={_yaml_text(self.value)}"
        redactor = Redactor()
        redactor.add_setting(self.path[-1] if self.path else "", self.value)
        return redactor.redact(shown)


def _yaml_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return (
        yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("\n...")
    )


def drop_alternatives(mapping: dict[str, Any], at: tuple[str, ...], key: str) -> list[str]:
    """Remove from ``mapping`` (found at path ``at``) the alternatives of ``key``; return the
    keys removed."""
    removed = []
    for group in ALTERNATIVES.get(tuple(p for p in at if not p.isdigit()), ()):
        if key in group:
            for other in sorted(group - {key}):
                if other in mapping:
                    del mapping[other]
                    removed.append(other)
    return removed


def apply_override(data: dict[str, Any], override: Override) -> dict[str, Any]:
    """A copy of ``data`` (raw task data) with ``override`` placed at its path.

    Mappings on the way are created when missing; a numeric part must address an existing
    list item. The value replaces what was there (a mapping value is merged key by key, as
    the experiment layers merge).

    Raises:
        UsageError: the path is empty, crosses a value that is neither a mapping nor a list,
            or indexes past the end of a list.
    """
    if not override.path:
        raise UsageError(f"{override.render()}: the path is empty")
    out = copy.deepcopy(data)
    node: Any = out
    walked: list[str] = []
    for position, part in enumerate(override.path[:-1]):
        node = _step(node, part, walked, override, list_next=override.path[position + 1].isdigit())
        walked.append(part)
    last = override.path[-1]
    if isinstance(node, list):
        index = _index(node, last, walked, override)
        node[index] = _merged(node[index], override.value)
        return out
    if not isinstance(node, dict):
        raise _crossing(override, walked)
    drop_alternatives(node, tuple(walked), last)
    if last == "type" and node.get("type", _DEFAULT_TYPE.get(tuple(walked))) != override.value:
        node.clear()  # the other fields belonged to the old type (as when a variant switches)
    node[last] = _merged(node.get(last), override.value)
    return out


def _merged(old: Any, new: Any) -> Any:
    if isinstance(old, dict) and isinstance(new, dict):
        merged = dict(old)
        for key, value in new.items():
            merged[key] = _merged(merged.get(key), value)
        return merged
    return copy.deepcopy(new)


def _step(node: Any, part: str, walked: list[str], override: Override, *, list_next: bool) -> Any:
    if isinstance(node, list):
        return node[_index(node, part, walked, override)]
    if not isinstance(node, dict):
        raise _crossing(override, walked)
    child = node.get(part)
    if child is None:
        where = ".".join([*walked, part])
        if list_next:
            raise UsageError(
                f"{override.render()}: the task file has no list {where} to take an item of",
                hint=f"set the whole list: -D {where}=[...]",
            )
        child = node[part] = {}
    return child


def _index(node: list[Any], part: str, walked: list[str], override: Override) -> int:
    where = ".".join(walked) or "the task"
    if not part.isdigit():
        raise UsageError(
            f"{override.render()}: {where} is a list; address an item by its number, "
            f"e.g. {where}.0",
        )
    index = int(part)
    if index >= len(node):
        raise UsageError(
            f"{override.render()}: {where} has {len(node)} item(s), so there is no item {index}",
            hint=f"items are numbered from 0; set the whole list with -D {where}=[...]",
        )
    return index


def _crossing(override: Override, walked: list[str]) -> UsageError:
    where = ".".join(walked)
    return UsageError(
        f"{override.render()}: {where} holds a single value, so it has no field "
        f"'{override.path[len(walked)]}'",
        hint=f"set {where} itself: -D {where}=...",
    )


def overridden(loc: tuple[str | int, ...], overrides: tuple[Override, ...]) -> Override | None:
    """The override that set the field at ``loc`` (or an ancestor or descendant of it)."""
    parts = tuple(str(p) for p in loc)
    if not parts:
        return None
    for override in reversed(overrides):
        size = min(len(parts), len(override.path))
        if parts[:size] == override.path[:size]:
            return override
    return None


__all__ = ["ALTERNATIVES", "Override", "apply_override", "drop_alternatives", "overridden"]
