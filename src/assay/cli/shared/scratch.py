"""A command's scratch folder: the temporary files and folders of one ``assay`` process (row
sandboxes, prompt files, jail homes and ``/etc`` files, the logs of remote rows, container
state, the bridge's socket, the viewer's scratch) lie in one folder of its own,
``$TMPDIR/assay-run-XXXXXXXX/``, removed when the command ends and, when the process was
killed (``kill -9``, the out-of-memory killer), by the next ``assay`` command on the machine,
as the control groups and containers of such a run are (:mod:`assay.sandbox.docker_sweep`);
a process still working in such a folder (a ``tempdir`` row's agent) is killed first.

Whether a folder's process is alive is an advisory lock (``flock(2)``) on its ``.lock`` file,
held for the process's life and released by the kernel however the process ends; a folder
whose lock can be taken belongs to no live process. The lock file is locked before it gets
its name, so a folder being made is never taken for an abandoned one; a folder without it,
or whose lock cannot be tried (another user's, a file system without locks), is left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

PREFIX = "assay-run-"
LOCK = ".lock"


@contextmanager
def process_scratch(*, base: Path | None = None) -> Iterator[Path | None]:
    """Make this process's scratch folder under ``base`` (default: the temporary directory),
    the default folder of :mod:`tempfile` while the block runs, after removing the folders
    that killed processes left (:func:`sweep`); removed with all it holds at the end.
    Yields the folder, or ``None`` when none can be made there (nothing changes then: what
    needs a temporary file reports its own error).

    Meant for the command line's entry point, which owns its process: a library caller's
    :mod:`tempfile` default is not changed by :func:`assay.run`.
    """
    base = Path(base if base is not None else tempfile.gettempdir())
    sweep(base)
    try:
        folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
    except OSError:
        yield None
        return
    held = _hold(folder)
    previous = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield folder
    finally:
        tempfile.tempdir = previous
        _remove(folder)
        if held is not None:
            held.close()


def sweep(base: Path) -> list[Path]:
    """Remove the scratch folders under ``base`` whose process is gone; returns them.

    What cannot be removed (files another user owns) stays, and is tried again next time.
    """
    removed = []
    for folder in sorted(base.glob(f"{PREFIX}*")):
        try:
            handle = (folder / LOCK).open("rb")
        except OSError:  # being made, not ours, or not a folder
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held: its process is alive (or locks do not work here)
                continue
            _end_processes_in(folder)
            _remove(folder)
            removed.append(folder)
    return removed


def _remove(folder: Path) -> None:
    """Remove a scratch folder: one that holds only its lock at once; else with
    :func:`~assay.sandbox.trees.remove_tree` (imported only then), which removes a tree the
    agents left at any depth (``shutil.rmtree`` recursed into ``RecursionError`` there)."""
    try:
        if set(os.listdir(folder)) <= {LOCK}:
            (folder / LOCK).unlink(missing_ok=True)
            folder.rmdir()
            return
    except OSError:
        pass
    from assay.sandbox.trees import remove_tree

    remove_tree(folder)


def _end_processes_in(folder: Path) -> None:
    """Kill the processes still working in ``folder`` (their working directory is in it: a
    ``tempdir`` row's agent whose ``assay`` was killed), so none goes on with its folder
    removed under it (and its side effects doubled by a resume); a process of another user
    is left alone (it cannot be signalled)."""
    root = os.path.realpath(folder)
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:  # gone, another user's, or no /proc
            continue
        if cwd == root or cwd.startswith(root + os.sep):
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(entry.name), signal.SIGKILL)


def _hold(folder: Path) -> IO[bytes] | None:
    """Lock ``folder``'s lock file for this process, then give it its name; ``None`` where
    locks do not work (the folder is then never swept, only removed at the end)."""
    unnamed = folder / f"{LOCK}.new"
    handle = unnamed.open("wb")  # not inherited by child processes (PEP 446)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.replace(unnamed, folder / LOCK)
    except OSError:
        handle.close()
        return None
    return handle
