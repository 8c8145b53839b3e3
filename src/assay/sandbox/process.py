"""Run a program in a sandbox: asyncio subprocess, its own process group, a hard timeout.

On timeout the whole process group is killed (``SIGKILL``), so a shell's children die with
it. Output is decoded as UTF-8 with replacement characters for invalid bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessResult:
    """How a program ended: exit code (``None`` when killed at the timeout), output, seconds."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


async def run_process(
    command: str | list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    stdin: str | None = None,
) -> ProcessResult:
    """Run ``command`` (a shell string, or an argv list run without a shell).

    Args:
        command: what to run.
        cwd: the working directory (the sandbox).
        env: the complete environment of the program.
        timeout: seconds before the process group is killed.
        stdin: text fed to standard input (then closed); ``None`` gives an empty stdin.

    Raises:
        FileNotFoundError: an argv program does not exist.
        PermissionError: an argv program is not executable.
    """
    started = time.perf_counter()
    kwargs = {
        "cwd": cwd,
        "env": env,
        "stdin": asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        "stdout": asyncio.subprocess.PIPE,
        "stderr": asyncio.subprocess.PIPE,
        "start_new_session": True,
    }
    if isinstance(command, str):
        process = await asyncio.create_subprocess_shell(command, **kwargs)  # type: ignore[arg-type]
    else:
        process = await asyncio.create_subprocess_exec(*command, **kwargs)  # type: ignore[arg-type]
    data = stdin.encode("utf-8") if stdin is not None else None
    try:
        out, err = await asyncio.wait_for(process.communicate(data), timeout)
    except TimeoutError:
        _kill_group(process.pid)
        out, err = await _drain(process)
        return ProcessResult(None, _text(out), _text(err), True, time.perf_counter() - started)
    except BaseException:
        _kill_group(process.pid)
        await process.wait()
        raise
    return ProcessResult(
        process.returncode, _text(out), _text(err), False, time.perf_counter() - started
    )


async def _drain(process: asyncio.subprocess.Process) -> tuple[bytes, bytes]:
    try:
        return await asyncio.wait_for(process.communicate(), 5)
    except (TimeoutError, ValueError):
        await process.wait()
        return b"", b""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _text(data: bytes | None) -> str:
    return data.decode("utf-8", errors="replace") if data else ""


def use_pidfd_child_watcher() -> None:
    """On Python 3.11, reap children through pidfds instead of one thread per child.

    Python 3.12 does this by default; 3.11's default ``ThreadedChildWatcher`` starts a thread
    for every subprocess, which costs more than the subprocess itself for short commands.
    Call it inside the running event loop.
    """
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        watcher = asyncio.PidfdChildWatcher()
        watcher.attach_loop(asyncio.get_running_loop())
        asyncio.set_child_watcher(watcher)


def tail(text: str, limit: int = 2000) -> str:
    """The last ``limit`` characters of ``text``, marked when cut."""
    return text if len(text) <= limit else "…" + text[-limit:]
