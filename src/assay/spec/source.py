"""YAML documents with the line of every key, so errors can name file, line and field.

A task file is parsed once with PyYAML's safe loader (libyaml when available); the node tree
gives a ``{path: line}`` map where a path is a tuple of mapping keys and list indexes, e.g.
``("success_criteria", 0, "path")``. Duplicate keys in one mapping are an error (PyYAML
would silently keep the last).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from assay.errors import TaskFileError

Loc = tuple[str | int, ...]

_Loader: type[yaml.SafeLoader]
try:  # libyaml is ~10x faster; both give node marks
    _Loader = yaml.CSafeLoader  # type: ignore[assignment,unused-ignore]
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader


@dataclass(frozen=True)
class YamlDocument:
    """A parsed YAML document: its data, its text and the 1-based line of each path."""

    path: Path
    text: str
    data: Any
    lines: dict[Loc, int]
    octal: tuple[tuple[Loc, str], ...] = ()
    """Where an unquoted number not written in plain decimals was read as YAML 1.1 reads it
    (``012`` octal 10, ``0x1F`` 31, ``0b101`` 5, ``1:30`` base 60: 90), with its text: a zip
    code, an id or a time that lost its text, which a loader warns of."""

    def line_of(self, loc: Loc) -> int | None:
        """Return the line of ``loc`` or of its nearest ancestor that has one."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None


def field_path(loc: Loc) -> str:
    """Render ``("success_criteria", 0, "path")`` as ``success_criteria[0].path``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def field_loc(path: str) -> Loc:
    """The inverse of :func:`field_path`: ``success_criteria[0].path`` as
    ``("success_criteria", 0, "path")``."""
    loc: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        loc.append(int(index) if index else name)
    return tuple(loc)


def read_yaml(path: Path, *, kind: str = "task file") -> YamlDocument:
    """Read and parse one YAML file; ``kind`` names it in messages (``judge file``, …).

    Raises:
        TaskFileError: the file is missing, is a directory, is not UTF-8, or is not valid YAML
            (with the line PyYAML reports), or a mapping repeats a key.
    """
    if path.is_dir():
        hint = None
        if kind == "task file":
            hint = (f"pass the folder itself to `assay run` (it is searched recursively) "
                    f"or a glob such as '{path}/*.yaml'")  # fmt: skip
        raise TaskFileError(f"expected a YAML {kind} but got a directory", file=path, hint=hint)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise TaskFileError(f"{kind} not found", file=path) from None
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"{kind} is not UTF-8 text ({exc.reason})", file=path) from None
    return parse_yaml(text, path=path)


def _tab_hint(text: str, line: int | None, problem: str) -> str | None:
    """The fix when a tab in the indentation is what YAML stumbled on (it names a tab only
    sometimes: "found character that cannot start any token" is a tab too)."""
    lines = text.splitlines()
    at = lines[line] if line is not None and 0 <= line < len(lines) else ""
    indent = at[: len(at) - len(at.lstrip(" \t"))]
    if "tab character" in problem or "\t" in indent:
        return "YAML indents with spaces only: replace the tab with spaces"
    return None


def parse_yaml(text: str, *, path: Path) -> YamlDocument:
    """Parse YAML ``text`` that came from ``path`` (used only in messages)."""
    loader = _ValueChecking(text)
    lines: dict[Loc, int] = {}
    octal: list[tuple[Loc, str]] = []
    try:
        node = loader.get_single_node()
        if node is not None:  # before construction, which merges ``<<`` keys in place
            lines[()] = node.start_mark.line + 1
            _collect_lines(node, (), lines, path, [MAX_NODES], octal=octal)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        hint = _tab_hint(text, mark.line if mark is not None else None, problem) or (
            exc.note if isinstance(exc, _ValueError) else None)  # fmt: skip
        raise TaskFileError(f"invalid YAML: {problem}{context}", file=path, line=line,
                            hint=hint) from None  # fmt: skip
    except yaml.YAMLError as exc:
        raise TaskFileError(f"invalid YAML: {exc}", file=path) from None
    finally:
        loader.dispose()
    return YamlDocument(path=path, text=text, data=data, lines=lines, octal=tuple(octal))


class _ValueError(yaml.constructor.ConstructorError):
    """A scalar its tag cannot make (``2024-02-30``, ``!!int abc``), at its mark."""


class _ValueChecking(_Loader):  # type: ignore[misc,valid-type]
    """The loader, with a value its constructor cannot make an error at the value's line
    (PyYAML raises the constructor's own ``ValueError`` without one)."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, AttributeError, OverflowError) as exc:
            kind = str(node.tag).rsplit(":", 1)[-1].lstrip("!")
            shown = node.value if isinstance(node, yaml.ScalarNode) else "this value"
            reason = f" ({exc})" if isinstance(exc, ValueError | OverflowError) else ""
            raise _ValueError(None, None, f"{shown!r} is not a valid {kind}{reason}",
                              node.start_mark,
                              note=f"quote it ('{shown}') to keep it as text"
                              if isinstance(node, yaml.ScalarNode) else None) from None  # fmt: skip


_INT_TAG = "tag:yaml.org,2002:int"
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)")


def load_yaml(text: str) -> Any:
    """YAML ``text`` as data by the task files' rules (a quick look at a file, a ``-D``
    value): a value its tag cannot make (``2024-02-30``, ``!!int abc``) raises
    ``yaml.YAMLError`` with its mark, as a syntax error does, never the constructor's own
    ``ValueError``."""
    return yaml.load(text, Loader=_ValueChecking)


MAX_NODES = 1_000_000
"""The most values a task file may expand to; YAML aliases can make a small file expand
exponentially ("billion laughs"), which would exhaust memory long before an error."""


def _collect_lines(
    node: yaml.Node,
    loc: Loc,
    lines: dict[Loc, int],
    path: Path,
    budget: list[int],
    inside: frozenset[int] = frozenset(),
    *,
    octal: list[tuple[Loc, str]],
) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise TaskFileError(
            f"the file expands to more than {MAX_NODES:,} values (through YAML aliases?)",
            file=path,
            line=node.start_mark.line + 1,
        )
    if id(node) in inside:
        raise TaskFileError(
            "a YAML alias names a value that holds it (a value inside itself)",
            file=path, line=node.start_mark.line + 1, field=field_path(loc) or None,
            hint="an alias (*name) may only repeat a value defined outside it",
        )  # fmt: skip
    inside = inside | {id(node)}
    if isinstance(node, yaml.ScalarNode):
        if not node.style and node.tag == _INT_TAG and not _DECIMAL.fullmatch(str(node.value)):
            octal.append((loc, str(node.value)))
        return
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key_node.tag == "tag:yaml.org,2002:merge" or key == "<<":
                _collect_lines(value_node, loc, {}, path, budget, inside, octal=octal)
                continue
            if key in seen:
                raise TaskFileError(
                    f"key '{key}' appears twice in one mapping (first on line {seen[key]})",
                    file=path,
                    line=line,
                    field=field_path((*loc, key)),
                    hint="remove one of them; YAML would silently keep only the last",
                )
            seen[key] = line
            lines[(*loc, key)] = line
            _collect_lines(value_node, (*loc, key), lines, path, budget, inside, octal=octal)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*loc, index)] = item.start_mark.line + 1
            _collect_lines(item, (*loc, index), lines, path, budget, inside, octal=octal)
