"""The build context of a task's Dockerfile: its folder, less what assay itself keeps there
(``.assay/``, the store and cache; every run folder, the ``latest`` link to one, and a folder
holding only those), so a ``COPY . …`` never puts earlier rows' answers into the image the
next rows run in, and a new run does not change the context (its hash, and the engine's
cache: an unchanged folder builds the same image again).

A run folder is told by what assay writes into it first: ``plan.json`` beside ``.lock`` or
``run.json``. Everything else of the folder is the context, as the engine would send it
(its ``.dockerignore`` still applies to the build; the hash reads every file).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

ASSAY_FOLDER = ".assay"


def left_out(folder: str | Path, names: Iterable[str]) -> set[str]:
    """The entries of ``folder`` (``names``) the context leaves out (the signature of
    :func:`shutil.copytree`'s ``ignore``)."""
    return {name for name in names if _assays(Path(folder) / name)}


def _assays(path: Path) -> bool:
    """``.assay/``, a run folder, a ``latest`` link, or a folder of nothing but those (the
    runs root, and the folders above it that hold nothing else: each would be an empty
    folder in the context after a first run, and another image than the one built before)."""
    if path.name == ASSAY_FOLDER:
        return True
    if path.is_symlink():
        return path.name == "latest" or (path.is_dir() and is_run_folder(path))
    if not path.is_dir():
        return False
    if is_run_folder(path):
        return True
    try:
        entries = list(path.iterdir())
    except OSError:
        return False
    return bool(entries) and all(_assays(entry) for entry in entries)


def is_run_folder(path: Path) -> bool:
    """Whether ``path`` holds an assay run (its ``plan.json`` with ``.lock`` or ``run.json``)."""
    return (path / "plan.json").is_file() and (
        (path / ".lock").exists() or (path / "run.json").is_file()
    )


def context_hash(dockerfile: Path, *, flags: Iterable[str] = ()) -> str:
    """The hash (hex, 16 characters) of a Dockerfile and every file of its build context
    (names, modes and content, in a fixed order; :func:`left_out` left out; an empty folder
    by its name, as the engine copies it too), and the build's ``flags`` (its arguments), so
    a build that differs only in them is another image."""
    digest = hashlib.sha256()
    context = dockerfile.parent
    for folder, dirs, files in os.walk(context):
        dirs[:] = sorted(set(dirs) - left_out(folder, dirs))
        kept = sorted(set(files) - left_out(folder, files))
        if not dirs and not kept and Path(folder) != context:  # an empty folder is copied too
            digest.update(b"\0empty\0" + str(Path(folder).relative_to(context)).encode())
        for name in kept:
            path = Path(folder) / name
            digest.update(str(path.relative_to(context)).encode() + b"\0")
            try:
                digest.update(oct(path.lstat().st_mode).encode() + b"\0")
                if path.is_file() and not path.is_symlink():
                    digest.update(path.read_bytes())
                elif path.is_symlink():
                    digest.update(os.readlink(path).encode())
            except OSError:
                continue
    digest.update(b"\0dockerfile\0" + dockerfile.name.encode())
    for flag in flags:
        digest.update(b"\0flag\0" + flag.encode())
    return digest.hexdigest()[:16]


def needs_copy(context: Path) -> bool:
    """Whether the folder holds anything :func:`left_out` leaves out (then the build runs
    on a copy without it)."""
    return any(left_out(folder, [*dirs, *files]) for folder, dirs, files in os.walk(context))


def copy_context(context: Path, destination: Path) -> None:
    """The build context of ``context`` copied to ``destination`` (a new folder), links
    kept as links.

    Raises:
        OSError: a file cannot be read or written.
    """
    shutil.copytree(context, destination, symlinks=True, ignore=left_out)
