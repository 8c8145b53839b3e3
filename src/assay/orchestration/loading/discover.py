"""Find task files: named files, folders (searched recursively) and glob patterns.

In a folder, every ``*.yaml`` / ``*.yml`` is a task file except the other files assay reads
that live beside tasks: experiment files (``experiment_id`` or ``variants``), mock scripts
(``replies``), judge files (``rubric``), dataset schemas (``fields``, or JSON Schema's
``properties``) and price files (every value has ``input_per_mtok``). A file that is none of
these and has no ``task_id`` is loaded as a task, so a misspelt ``task_id`` is an error, not a
silently skipped file. Hidden folders, ``runs``, ``node_modules`` and virtual environments are
not searched. A named file or a glob match is always a task file. With no argument,
``tasks/`` is searched.
"""

from __future__ import annotations

import glob
from pathlib import Path

import yaml

from assay.errors import UsageError
from assay.spec.source import load_yaml

SKIP_DIRS = frozenset({"runs", "node_modules", "__pycache__", "venv", ".venv"})
SUFFIXES = (".yaml", ".yml")


def discover(arguments: list[str], *, cwd: Path | None = None) -> list[Path]:
    """The task files named by ``arguments``, in order, without duplicates.

    Raises:
        UsageError: an argument matches nothing, or no argument was given and there is no
            ``tasks/`` folder.
    """
    base = cwd or Path.cwd()
    if not arguments:
        default = base / "tasks"
        if not default.is_dir():
            raise UsageError(
                "no task files given and no tasks/ folder here",
                hint="pass task files, folders or globs, e.g. `assay run examples/sst2/task.yaml`",
            )
        arguments = [str(default)]
    found: list[Path] = []
    seen: set[Path] = set()
    for argument in arguments:
        for path in _expand(argument, cwd):
            try:
                key = path.resolve(strict=False)
            except (RuntimeError, OSError) as exc:  # a loop of links (RuntimeError before 3.13)
                raise UsageError(
                    f"{path}: cannot follow its links: {exc}",
                    hint="remove the link loop, or leave the file out",
                ) from None
            if key not in seen:
                seen.add(key)
                found.append(path)
    return found


def _expand(argument: str, cwd: Path | None) -> list[Path]:
    path = Path(argument) if cwd is None else cwd / argument
    if path.is_dir():
        files = [p for p in _walk(path) if _looks_like_task(p)]
        if not files:
            raise UsageError(f"no task files (*.yaml, *.yml) under {argument}")
        return files
    if path.exists():
        return [path]
    if glob.has_magic(argument):
        found = glob.glob(argument, root_dir=cwd, recursive=True)
        matches = sorted(Path(m) if cwd is None else cwd / m for m in found)
        files = [m for m in matches if m.is_file()]
        if not files:
            raise UsageError(f"the pattern '{argument}' matches no file")
        return files
    raise UsageError(f"task file not found: {argument}")


def _walk(folder: Path) -> list[Path]:
    out: list[Path] = []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir():
            if entry.name.startswith(".") or entry.name in SKIP_DIRS:
                continue
            out.extend(_walk(entry))
        elif entry.suffix.lower() in SUFFIXES:
            out.append(entry)
    return out


def _looks_like_task(path: Path) -> bool:
    """False only for another kind of assay file; unreadable files count as tasks."""
    try:
        data = load_yaml(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return True
    return not (isinstance(data, dict) and "task_id" not in data and _other_kind(data))


def _other_kind(data: dict[str, object]) -> bool:
    if {"experiment_id", "variants", "replies", "rubric", "fields", "properties"} & set(data):
        return True
    return bool(data) and all(isinstance(v, dict) and "input_per_mtok" in v for v in data.values())
