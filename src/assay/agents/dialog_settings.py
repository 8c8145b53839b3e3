"""The settings files a coding agent's CLI reads from its workspace, held as they were when a
dialog began.

A CLI that reads settings from the folder it works in (Claude Code's project settings,
``.claude/settings.json`` and ``.claude/settings.local.json``; each CLI names its own,
:attr:`assay.agents.coding.CliAgent.project_settings`) would let the agent configure
its own next turn: a hook that runs commands no tool call shows, an ``env`` that moves the
CLI's model calls off the model bridge (and so off its budgets and counts), wider
permissions. Before each later turn of a dialog the files are put back as they were at its
first turn (written anew, never through a link the agent left; one it added is removed).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from assay.agents.base import DialogState
from assay.errors import UserError
from assay.sandbox.trees import remove_tree

Kept = dict[str, bytes | None]
"""Each settings file (relative to the workspace) → its bytes, ``None`` when absent."""


def pin(dialog: DialogState, workspace: Path, names: Iterable[str]) -> None:
    """Keep the files ``names`` of ``workspace`` at a dialog's first turn (in ``dialog``);
    put them back before a later one.

    Raises:
        UserError: they cannot be put back (the turn does not run with the agent's).
    """
    if dialog.settings is None:
        dialog.settings = keep(workspace, names)
        return
    try:
        restore(workspace, dialog.settings)
    except OSError as exc:
        raise UserError(
            f"the project settings the agent changed cannot be put back: {exc}"
        ) from None


def keep(workspace: Path, names: Iterable[str]) -> Kept:
    """The files ``names`` of ``workspace`` as they are (a link or a folder counts as
    absent: the CLI would not read it as settings the task gave)."""
    return {name: _read(workspace / name) for name in names}


def restore(workspace: Path, kept: Kept) -> list[str]:
    """Put the files of ``kept`` back in ``workspace``; the names that had changed.

    Raises:
        OSError: a file cannot be removed or written.
    """
    changed = []
    for name, data in kept.items():
        path = workspace / name
        if _read(path) == data and not (data is None and os.path.lexists(path)):
            continue
        changed.append(name)
        _clear(path.parent, folder=True)
        _clear(path, folder=False)
        if data is not None:
            path.parent.mkdir(exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
    return changed


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
