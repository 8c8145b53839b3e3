"""Run a program in a sandbox: asyncio subprocess, its own process group, a hard timeout.

On timeout the whole process group is killed (``SIGKILL``), so a shell's children die with
it, and the output printed until then is kept. Output is decoded as UTF-8 with replacement
characters for invalid bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import warnings
from collections.abc import Callable
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
    # Output is collected into buffers by tasks that the timeout does not cancel, so what a
    # program printed before it was killed is kept (``communicate`` would lose it).
    out, err = bytearray(), bytearray()
    assert process.stdout is not None and process.stderr is not None
    tasks = {
        asyncio.ensure_future(_collect(process.stdout, out)),
        asyncio.ensure_future(_collect(process.stderr, err)),
        asyncio.ensure_future(process.wait()),
    }
    if stdin is not None and process.stdin is not None:
        tasks.add(asyncio.ensure_future(_feed(process.stdin, stdin.encode("utf-8"))))
    try:
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        if pending:
            _kill_group(process.pid)
            _, still = await asyncio.wait(pending, timeout=_DRAIN_SECONDS)
            for task in still:  # a pipe held open by a process that left the group
                task.cancel()
            await asyncio.gather(*still, return_exceptions=True)
            await process.wait()
            if still:  # stop reading those pipes; their file descriptors would leak
                _close(process)
        for task in tasks:
            if not task.cancelled():
                task.result()
    except BaseException:
        for task in tasks:
            task.cancel()
        _kill_group(process.pid)
        with contextlib.suppress(BaseException):
            await process.wait()
        _close(process)  # before the loop closes, or its finaliser complains at exit
        raise
    exit_code = None if pending else process.returncode
    return ProcessResult(
        exit_code, _text(out), _text(err), bool(pending), time.perf_counter() - started
    )


@dataclass(frozen=True)
class StreamResult:
    """How a streamed program ended: exit code (``None`` when killed), the tail of stderr,
    whether the timeout or the stop event killed it, seconds."""

    exit_code: int | None
    stderr: str
    timed_out: bool
    stopped: bool
    seconds: float


async def stream_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    on_line: Callable[[str], None],
    stdin: str | None = None,
    stop: asyncio.Event | None = None,
) -> StreamResult:
    """Run ``argv`` in its own process group and hand each line of its stdout to
    ``on_line`` as it arrives (a line may be any length); stderr is kept (its last 64 KiB).

    The whole process group is killed (``SIGKILL``) at ``timeout`` seconds or as soon as
    ``stop`` is set; the lines printed until then have been handed over.

    Raises:
        FileNotFoundError, PermissionError: the program cannot be started.
    """
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, start_new_session=True,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    err = bytearray()
    reading = {asyncio.ensure_future(_lines(process.stdout, on_line)),
               asyncio.ensure_future(_collect_tail(process.stderr, err))}  # fmt: skip
    if stdin is not None and process.stdin is not None:
        reading.add(asyncio.ensure_future(_feed(process.stdin, stdin.encode("utf-8"))))
    waiting = asyncio.ensure_future(process.wait())
    stopping = asyncio.ensure_future(stop.wait()) if stop is not None else None
    timed_out = stopped = False
    try:
        watched = {waiting, *([stopping] if stopping else [])}
        done, _ = await asyncio.wait(watched, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if waiting not in done:
            stopped = stopping is not None and stopping in done
            timed_out = not stopped
            _kill_group(process.pid)
            await waiting
        else:
            _kill_group(process.pid)  # what the program left running dies with it
        _, still = await asyncio.wait(reading, timeout=_DRAIN_SECONDS)
        for task in still:
            task.cancel()
        await asyncio.gather(*reading, return_exceptions=True)
        if still:
            _close(process)
    except BaseException:
        _kill_group(process.pid)
        waiting.cancel()
        for task in reading:
            task.cancel()
        with contextlib.suppress(BaseException):
            await process.wait()
        _close(process)
        raise
    finally:
        if stopping is not None:
            stopping.cancel()
    exit_code = None if (timed_out or stopped) else process.returncode
    return StreamResult(exit_code, _text(err), timed_out, stopped, time.perf_counter() - started)


async def _lines(stream: asyncio.StreamReader, on_line: Callable[[str], None]) -> None:
    pending = b""
    while chunk := await stream.read(65536):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            on_line(_text(line))
    if pending.strip():
        on_line(_text(pending))


async def _collect_tail(stream: asyncio.StreamReader, sink: bytearray, keep: int = 65536) -> None:
    while chunk := await stream.read(65536):
        sink.extend(chunk)
        if len(sink) > 2 * keep:
            del sink[:-keep]


_DRAIN_SECONDS = 5.0
"""After the kill, how long to wait for output still buffered in the pipes."""


async def _collect(stream: asyncio.StreamReader, sink: bytearray) -> None:
    while chunk := await stream.read(65536):
        sink.extend(chunk)


async def _feed(pipe: asyncio.StreamWriter, data: bytes) -> None:
    """Write ``data`` to standard input and close it; a program may exit without reading."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        pipe.write(data)
        await pipe.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        pipe.close()
        await pipe.wait_closed()


def _close(process: asyncio.subprocess.Process) -> None:
    transport = getattr(process, "_transport", None)
    if transport is not None:
        transport.close()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")


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
