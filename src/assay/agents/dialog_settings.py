"""The settings a coding agent's CLI reads from its workspace, held as they were when a
dialog began.

A CLI that reads settings from the folder it works in (Claude Code's project settings,
``.claude/settings.json`` and ``.claude/settings.local.json``; each CLI names its own,
:attr:`assay.agents.coding.CliAgent.project_settings`) would let the agent configure
its own next turn: a hook that runs commands no tool call shows, an ``env`` that moves the
CLI's model calls off the model bridge (and so off its budgets and counts), a plugin or
extension the CLI loads as code, a replaced system prompt. Before each later turn of a
dialog they are put back as they were at its first turn: a file (written anew, never
through a link the agent left; one it added is removed), a link the task gave (made again
as it was), a folder whose name ends with ``/`` (every file and link in it, at any depth).
What was put back is returned, so the dialog can say it (the agent's own edit of such a
file is undone).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from assay.errors import UserError
from assay.sandbox.trees import remove_tree, walk_tree


@dataclass(frozen=True)
class Link:
    """A symbolic link the task gave, kept as its target (never followed by assay)."""

    target: str


Entry = bytes | Link
"""A file's bytes, or a link."""
Kept = dict[str, "Entry | dict[str, Entry] | None"]
"""Each name (relative to the workspace) → a file's bytes or a link; for a folder (a name
ending with ``/``), its files and links by path within it; ``None`` when absent."""


def pin(kept: Kept | None, workspace: Path, names: Iterable[str]) -> tuple[Kept, list[str]]:
    """At a dialog's first turn (``kept`` is ``None``), keep ``names`` of ``workspace``;
    before a later one, put ``kept`` back. What is kept, and the names that had changed
    (``[]`` at the first turn).

    Raises:
        UserError: they cannot be put back (the turn does not run with the agent's).
    """
    if kept is None:
        return keep(workspace, names), []
    try:
        return kept, restore(workspace, kept)
    except OSError as exc:
        raise UserError(
            f"the project settings the agent changed cannot be put back: {exc}"
        ) from None


def keep(workspace: Path, names: Iterable[str]) -> Kept:
    """``names`` of ``workspace`` as they are: a file (a folder there counts as absent: the
    CLI would not read it as settings the task gave) or a link; a name ending with ``/``
    is a folder, kept whole (a file or link there counts as absent)."""
    kept: Kept = {}
    for name in names:
        path = workspace / name
        kept[name] = _folder(path) if name.endswith("/") else _entry(path)
    return kept


def restore(workspace: Path, kept: Kept) -> list[str]:
    """Put ``kept`` back in ``workspace`` (owned by the workspace's owner, as the agent
    made them); the names that had changed.

    Raises:
        OSError: a file cannot be removed or written.
    """
    owner = workspace.stat()
    changed = []
    for name, value in kept.items():
        path = workspace / name
        if _same(path, value):
            continue
        changed.append(name)
        _clear(path.parent, folder=True)
        _clear(path, folder=False)
        if isinstance(value, dict):
            _make_folder(path, value, owner)
        elif value is not None:
            _make(path, value, owner)
    return changed


def _entry(path: Path) -> Entry | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return Link(os.readlink(path))
    if not stat.S_ISREG(info.st_mode):
        return None
    return _read(path)


def _folder(path: Path) -> dict[str, Entry] | None:
    if path.is_symlink() or not path.is_dir():
        return None
    found = {name: _entry(path / name) for name in _files_in(path)}
    return {name: entry for name, entry in found.items() if entry is not None}


def _files_in(folder: Path) -> set[str]:
    """The paths (relative to ``folder``) of what it holds at any depth that is not a
    folder: files, links (a link to a folder too), others."""
    return {os.path.relpath(os.path.join(parent, name), folder)
            for parent, _, files in walk_tree(folder) for name in files}  # fmt: skip


def _same(path: Path, value: Entry | dict[str, Entry] | None) -> bool:
    """Whether ``path`` is as kept, reading no file whose size differs (the agent may have
    made one as large as its limits allow)."""
    if value is None:
        return not os.path.lexists(path)
    if isinstance(value, dict):
        if path.is_symlink() or not path.is_dir():
            return False
        return _files_in(path) == set(value) and all(
            _same(path / name, entry) for name, entry in value.items())  # fmt: skip
    try:
        info = path.lstat()
    except OSError:
        return False
    if isinstance(value, Link):
        return stat.S_ISLNK(info.st_mode) and os.readlink(path) == value.target
    if not stat.S_ISREG(info.st_mode) or info.st_size != len(value):
        return False
    return _read(path) == value


def _make_folder(path: Path, files: dict[str, Entry], owner: os.stat_result) -> None:
    _mkdir(path.parent, owner)
    _mkdir(path, owner)
    for name, entry in sorted(files.items()):
        target = path / name
        for parent in reversed(target.relative_to(path).parents[:-1]):
            _mkdir(path / parent, owner)
        _make(target, entry, owner)


def _make(path: Path, entry: Entry, owner: os.stat_result) -> None:
    _mkdir(path.parent, owner)
    if isinstance(entry, Link):
        os.symlink(entry.target, path)
    else:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(entry)
    os.lchown(path, owner.st_uid, owner.st_gid)


def _mkdir(path: Path, owner: os.stat_result) -> None:
    """A folder assay makes (never through a link: :func:`_clear` removed any)."""
    try:
        path.mkdir()
    except FileExistsError:
        return
    os.lchown(path, owner.st_uid, owner.st_gid)


def _read(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read()


def _clear(path: Path, *, folder: bool) -> None:
    """Remove what is at ``path`` unless it is what belongs there (a real folder, for
    ``folder``); a link is removed, never followed."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if folder and stat.S_ISDIR(info.st_mode):
        return
    if stat.S_ISDIR(info.st_mode):
        remove_tree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
