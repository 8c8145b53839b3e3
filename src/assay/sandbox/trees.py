"""Folder trees an agent made, removed and walked without recursion: Python 3.11's
``shutil.rmtree`` and ``os.walk`` recurse once per level, so a tree a thousand folders deep
(``mkdir d; cd d`` in a loop) raised ``RecursionError`` in a row's clean-up, and the folder it
left made every later assay command fail as it swept old scratch folders at start-up.

:func:`remove_tree` moves each sub-folder up to the top folder before reading it, so every
path it touches is two levels deep whatever the tree's depth (no recursion, no path near
``PATH_MAX``, no descriptor held per level). :func:`walk_tree` keeps its own stack; a folder
it cannot read (a path past ``PATH_MAX``, no permission) is passed over.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
from collections.abc import Iterator
from pathlib import Path


def remove_tree(path: Path | str, *, ignore_errors: bool = True) -> None:
    """Remove ``path`` and everything under it, links never followed (a link is removed,
    not its target); a file or link is unlinked; a path that does not exist is nothing to do.

    Raises:
        OSError: something could not be removed (unless ``ignore_errors``).
    """
    path = Path(path)
    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
            return
        _empty(path, itertools.count())
        path.rmdir()
    except OSError:
        if not ignore_errors:
            raise


def _empty(top: Path, names: Iterator[int]) -> None:
    """Empty ``top``: each pass empties its sub-folders (theirs moved up into ``top`` under
    fresh names, to be emptied by a later pass) and removes them.

    Raises:
        OSError: a pass that removed nothing left something that cannot be removed.
    """
    while True:
        entries = list(_entries(top))
        if not entries:
            return
        removed = 0
        for entry in entries:
            removed += _remove_entry(top, entry, names)
        if not removed:
            raise OSError(f"cannot remove what is left in {top}")


def _remove_entry(top: Path, entry: os.DirEntry[str], names: Iterator[int]) -> int:
    """Remove one entry of ``top`` (a folder: its sub-folders moved up, its files removed);
    1 when it is gone, 0 when it could not be (yet)."""
    with contextlib.suppress(OSError):
        if not entry.is_dir(follow_symlinks=False):
            os.unlink(entry.path)
            return 1
        folder = Path(entry.path)
        for child in _entries(folder):
            if child.is_dir(follow_symlinks=False):
                os.rename(child.path, top / f".assay-removing-{next(names)}")
            else:
                os.unlink(child.path)
        folder.rmdir()
        return 1
    return 0


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    """The entries of ``folder``; a folder that may not be read or written is made so
    first (the agent may have taken its own permissions away).

    Raises:
        OSError: it still cannot be read.
    """
    try:
        with os.scandir(folder) as found:
            listed = list(found)
    except PermissionError:
        os.chmod(folder, stat.S_IRWXU)
        with os.scandir(folder) as found:
            listed = list(found)
    if listed and not os.access(folder, os.W_OK | os.X_OK):
        with contextlib.suppress(OSError):
            os.chmod(folder, stat.S_IRWXU)
    return listed


def walk_tree(path: Path | str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(path)`` (top down, links not followed) with a stack of its own instead of
    recursion; a folder that cannot be read is passed over, and a link to a folder is
    listed with the files (it is not a folder to change or enter)."""
    stack = [str(path)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as found:
                entries = list(found)
        except OSError:
            continue
        dirs = [e.name for e in entries if _is_folder(e)]
        files = [e.name for e in entries if not _is_folder(e)]
        yield folder, dirs, files
        stack.extend(os.path.join(folder, name) for name in reversed(dirs))


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


__all__ = ["remove_tree", "walk_tree"]
