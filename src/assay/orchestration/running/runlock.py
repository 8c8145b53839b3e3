"""One writer per run folder: an OS lock on ``RUN_DIR/.lock`` held while a command writes.

``assay run`` (new or ``--resume``), ``assay execute`` and ``assay evaluate`` hold the lock
from before they read the folder until their reports are written; with the Ray executor the
driver holds it. The lock is ``fcntl.flock`` on the file, so the kernel releases it when its
process ends, however it ends; the file also records the holder (pid, host, command, start
time, as JSON) so that a second writer is refused naming it. A lock file that still names a
holder when the lock is free was left by a process that died without releasing it (killed,
crashed): it is taken over with a warning.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO

from assay.errors import UsageError
from assay.orchestration.loading.secrets import command_line_writer
from assay.sandbox.process import stat_fields
from assay.spec.run_names import LOCK_FILE as LOCK_FILE  # re-exported


@dataclass
class RunLock:
    """The held lock of one run folder; :meth:`release` (or the end of the process) frees it.

    Attributes:
        path: the lock file, ``RUN_DIR/.lock``.
        handle: the open file holding the ``flock``.
    """

    path: Path
    handle: IO[str] | None

    def release(self) -> None:
        """Empty the lock file and free the lock; a second call does nothing."""
        if self.handle is None:
            return
        try:
            self.handle.seek(0)
            self.handle.truncate()
            self.handle.flush()
        except OSError:
            pass  # the lock is freed below all the same; the next holder overwrites it
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()
        self.handle = None

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_run_dir(
    run_dir: Path,
    *,
    command: list[str] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> RunLock:
    """Take the write lock of ``run_dir`` without waiting, and record this process in it.

    Args:
        run_dir: an existing run folder.
        command: the command line recorded for a later writer to see (default: ``sys.argv``).
        on_warning: told when a stale lock (its holder gone) is taken over.

    Returns:
        The held lock.

    Raises:
        UsageError: another process holds the lock (naming its pid, host, command and start
            time), or the lock file cannot be opened.
    """
    path = run_dir / LOCK_FILE
    try:
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release
    except OSError as exc:
        raise UsageError(f"cannot open the lock file {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(handle)
        handle.close()
        raise UsageError(
            f"run folder {run_dir} is in use by another assay process: {_describe(holder)}",
            file=path,
            hint="wait for it to finish (or stop it), then run the command again",
        ) from None
    previous = _read_holder(handle)
    if previous and on_warning is not None:
        on_warning(f"took over the stale lock of {run_dir} left by a process that is gone: "
                   f"{_describe(previous)}")  # fmt: skip
    _write_holder(handle, command if command is not None else sys.argv)
    return RunLock(path, handle)


def is_held(run_dir: Path) -> bool | None:
    """Whether a process holds ``run_dir``'s lock now, told without taking it (a reader
    never delays a writer): ``False`` when the lock file is empty (released) or names a
    process of this host that is gone (killed); ``True`` when it names a process of this
    host that is alive; ``None`` when it cannot be told (no lock file: a run written before
    the lock existed; another host; a lock file that cannot be read).

    A pid reused by an unrelated process after the holder died reads as held until that
    process ends too.
    """
    try:
        text = (run_dir / LOCK_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not text.strip():
        return False
    try:
        holder = json.loads(text)
    except ValueError:
        return None
    pid = holder.get("pid") if isinstance(holder, dict) else None
    if not isinstance(pid, int) or pid <= 0 or holder.get("host") != socket.gethostname():
        return None
    return _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A process that ended and waits for its parent to collect it (Linux ``/proc``)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] == "Z"


def _read_holder(handle: IO[str]) -> dict[str, object]:
    handle.seek(0)
    text = handle.read()
    if not text.strip():
        return {}
    try:
        holder = json.loads(text)
    except ValueError:
        return {"raw": text.strip()[:200]}
    return holder if isinstance(holder, dict) else {"raw": text.strip()[:200]}


def _write_holder(handle: IO[str], command: list[str]) -> None:
    # the command line can carry a --store URL's password or a -D secret: never written
    writer = command_line_writer(command, os.environ)
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
              "started": datetime.now().astimezone().isoformat(timespec="seconds")}  # fmt: skip
    handle.seek(0)
    handle.truncate()
    handle.write(writer.redact_json(json.dumps(holder, default=str) + "\n", compact=True))
    handle.flush()


def _describe(holder: dict[str, object]) -> str:
    if not holder:
        return "holder unknown (the lock file is empty)"
    if "raw" in holder:
        return f"lock file says {holder['raw']!r}"
    command = holder.get("command")
    shown = " ".join(str(part) for part in command) if isinstance(command, list) else command
    return (f"pid {holder.get('pid')} on host {holder.get('host')}, command {shown!r}, "
            f"started {holder.get('started')}")  # fmt: skip
