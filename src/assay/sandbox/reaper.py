"""A ``tempdir`` row's processes where the machine gives no control groups: each program runs
under a child subreaper (:mod:`assay.sandbox.subreaper`) that records the orphans it adopts,
and the row's end kills what the records name and everything below it.

This is the fallback of :class:`assay.sandbox.cgroups.RowGroups` (cgroup v2 only, or a user
who may not make groups): it has the same methods, :class:`RowProcesses`. Together with the
environment and working-folder scan (:func:`assay.sandbox.process.end_marked_processes`) it
finds a process that cleared its environment, left the sandbox folder and detached
(``cd / && env -i setsid … &``) while the program that started it ran; what detaches only after
that program ended, from a process already re-parented to init, is beyond it (the ``bwrap``
and ``docker`` drivers, or cgroups, contain that too). It limits nothing: memory, CPU and
process-count limits need cgroups.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from itertools import count
from pathlib import Path
from typing import Protocol

from assay.sandbox.limit_counts import NOTHING_COUNTED, LimitCounts
from assay.sandbox.process import stat_fields

SCRIPT = Path(__file__).with_name("subreaper.py")
STOP_PASSES = 50
"""At most this many passes stop the recorded trees (each pass stops what the one before found
forked), before every stopped process is killed."""


class RowProcesses(Protocol):
    """What holds a row's processes: :class:`~assay.sandbox.cgroups.RowGroups` or
    :class:`RowReaper`."""

    def enter(self, command: str | list[str]) -> list[str]:
        """``command`` (argv, or a shell string) wrapped so that its processes are the row's."""
        ...

    def counts(self) -> LimitCounts:
        """What the kernel has counted against the row's limits so far."""
        ...

    def limit_note(self, *, since: LimitCounts = NOTHING_COUNTED) -> str | None:
        """The row's error when it reached a limit after the counts were ``since``, else
        ``None``."""
        ...

    def close(self) -> list[int]:
        """End every process the row left running and release what held them; the pids
        signalled."""
        ...


def available() -> bool:
    """This machine lets a process be a child subreaper and list its children (Linux ≥ 3.4
    with ``/proc/PID/task/TID/children``)."""
    me = os.getpid()
    return sys.platform.startswith("linux") and os.path.exists(f"/proc/{me}/task/{me}/children")


class RowReaper:
    """One row's subreaper records (a fresh temporary folder, removed by :meth:`close`)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="assay-reaper-"))
        self._numbers = count()

    def enter(self, command: str | list[str]) -> list[str]:
        """``command`` (argv, or a shell string run by ``/bin/sh -c``) run under the
        subreaper, its adopted processes recorded in this row's folder."""
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else command
        record = self.folder / f"program-{next(self._numbers)}"
        return [sys.executable, "-I", "-S", str(SCRIPT), str(record), "--", *argv]

    def counts(self) -> LimitCounts:
        """Nothing: without cgroups no limit is counted."""
        return NOTHING_COUNTED

    def limit_note(self, *, since: LimitCounts = NOTHING_COUNTED) -> str | None:
        """``None``: without cgroups no limit is counted."""
        return None

    def close(self) -> list[int]:
        """Stop (``SIGSTOP``, pass after pass until the trees stop growing, so none forks in
        between) every recorded process that is still the one recorded (same start time)
        and every process below it, then ``SIGKILL`` them; remove the records. The pids
        killed."""
        roots = [pid for pid, started in self._records() if _start_time(pid) == started]
        stopped: dict[int, None] = {}  # in the order they were stopped
        for _ in range(STOP_PASSES):  # stopped, none can fork: the tree stops growing
            fresh = [pid for pid in _with_descendants(roots) if pid not in stopped]
            if not fresh:
                break
            stopped.update((pid, None) for pid in fresh if _signal(pid, signal.SIGSTOP))
        ended = [pid for pid in stopped if _signal(pid, signal.SIGKILL)]
        shutil.rmtree(self.folder, ignore_errors=True)
        return ended

    def _records(self) -> list[tuple[int, str]]:
        found = []
        for path in self.folder.glob("program-*"):
            if path.suffix == ".part":
                continue
            with contextlib.suppress(OSError, ValueError):
                for line in path.read_text().splitlines():
                    pid, started = line.split()
                    found.append((int(pid), started))
        return found


def _signal(pid: int, number: int) -> bool:
    """Send ``number`` to ``pid``; whether it was sent."""
    try:
        os.kill(pid, number)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _start_time(pid: int) -> str | None:
    fields = stat_fields(pid)
    return fields[19] if fields is not None else None


def _with_descendants(roots: list[int]) -> list[int]:
    """``roots`` and every process below them (by parent pid, read from ``/proc`` once)."""
    if not roots:
        return []
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        fields = stat_fields(int(name)) if name.isdigit() else None
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(name))
    found, queue = [], list(roots)
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, ()))
    return found
