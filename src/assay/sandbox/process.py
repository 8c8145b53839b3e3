"""Run a program in a sandbox: asyncio subprocess, its own process group, a hard timeout.

On timeout the whole process group is killed (``SIGKILL``), so a shell's children die with
it, and the output printed until then is kept. A command (:func:`run_process`) has finished
when it has exited and its output pipes are closed; the children it leaves running are left
alone (``pre_run`` may start a server on purpose). A coding agent's CLI
(:func:`stream_process`) has finished when it exits: a child it left holding stdout does not
hold the row up, and the CLI's whole group is killed then. Output is decoded as UTF-8 with
replacement characters for invalid bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import re
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.results.io import PLAIN, REDACT_WINDOW, OutputLogs, StreamLog
from assay.results.secrets import clip_head, clip_tail, stream_cut, stream_start
from assay.sandbox.cgroups import thaw


class _ExitProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's subprocess protocol, plus a future resolved when the process exits.

    ``Process.wait()`` returns only once every pipe is closed too, so a child that keeps
    stdout open would hold it up long after the program itself ended; this future does not
    wait for the pipes.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=2**16, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


async def _spawn(
    command: str | list[str], stdin: str | None, **kwargs: Any
) -> tuple[asyncio.subprocess.Process, asyncio.Future[None]]:
    """Start ``command`` (a shell string, or argv without a shell) in a new session, with
    pipes for its output; return it with its exit future."""
    loop = asyncio.get_running_loop()
    made: list[_ExitProtocol] = []

    def factory() -> _ExitProtocol:
        made.append(_ExitProtocol(loop))
        return made[-1]

    kwargs.update(
        start_new_session=True,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    if isinstance(command, str):
        starting = loop.subprocess_shell(factory, command, **kwargs)
    else:
        starting = loop.subprocess_exec(factory, *command, **kwargs)
    # Shielded: a cancellation while the pipes are being connected would otherwise leave
    # the program's group running (asyncio then kills only the program itself, not what it
    # already started in the background).
    spawning = asyncio.ensure_future(starting)
    try:
        transport, _ = await asyncio.shield(spawning)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            transport, _ = await spawning
            _kill_group(transport.get_pid())
            await _outlast_cancels(made[0].exited, _DRAIN_SECONDS)
            transport.close()
        raise
    return asyncio.subprocess.Process(transport, made[0], loop), made[0].exited


MAX_OUTPUT_BYTES = 10 * 1024 * 1024
"""Bytes of each output stream of a command kept in memory (:func:`run_process`); the rest
is read and counted, never held in memory (written to the stream's log file when the caller
gives one), and the kept text ends with a note saying so."""


@dataclass(frozen=True)
class ProcessResult:
    """How a program ended: exit code (``None`` when killed at the timeout), output, seconds,
    ``dropped``: output bytes read past ``max_output_bytes`` per stream (of them only the
    last :data:`TAIL_BYTES` are kept), and ``logs``: the files a stream that passed it was
    written to whole (up to the logs' own cap). ``stdout`` is what the program wrote and
    assay kept (its start and, past the cap, its end: what is graded, parsed or matched);
    where it was cut, ``stdout_note`` is assay's line saying so, and :attr:`shown_stdout`
    the two (what a person or a model reads). ``stderr`` ends with its own note (it is
    only shown)."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    dropped: int = 0
    logs: tuple[Path, ...] = ()
    stdout_note: str = ""

    @property
    def shown_stdout(self) -> str:
        """``stdout`` with the note of its cut, if any."""
        return self.stdout + self.stdout_note


async def run_process(
    command: str | list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    stdin: str | None = None,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
    logs: OutputLogs | None = None,
) -> ProcessResult:
    """Run ``command`` (a shell string, or an argv list run without a shell).

    Args:
        command: what to run.
        cwd: the working directory (the sandbox).
        env: the complete environment of the program.
        timeout: seconds before the process group is killed.
        stdin: text fed to standard input (then closed); ``None`` gives an empty stdin.
        max_output_bytes: bytes of stdout and of stderr kept in memory; a longer stream is
            read to its end (so the program never blocks on a full pipe) with the rest
            counted and not kept, and its text ends with a note naming the cut.
        logs: where a stream that passes ``max_output_bytes`` is written whole as it is
            read (redacted, cut at the logs' own cap; :class:`~assay.results.io.StreamLog`),
            so nothing of it is held in memory but the kept start; ``None``: the rest is
            dropped.

    Raises:
        FileNotFoundError: an argv program does not exist.
        PermissionError: an argv program is not executable.
    """
    started = time.perf_counter()
    process, exited = await _spawn(command, stdin, cwd=cwd, env=env)
    # Output is collected into buffers by tasks that the timeout does not cancel, so what a
    # program printed before it was killed is kept (``communicate`` would lose it).
    out = _Sink(max_output_bytes, bytearray(), logs=logs, stream="stdout")
    err = _Sink(max_output_bytes, bytearray(), logs=logs, stream="stderr")
    reading = _readers(process, stdin, _collect(_pipe(process.stdout), out),
                       _collect(_pipe(process.stderr), err))  # fmt: skip
    try:
        # A command has finished when it has exited and its output pipes are closed (as a
        # shell's command substitution waits for them); a child it left holding a pipe
        # (``server & echo ready``) has LEFT_HOLDING seconds to let go, then its group is
        # ended, as the bwrap and docker drivers end what outlives a row's program.
        _, pending = await asyncio.wait({exited}, timeout=timeout)
        timed_out = bool(pending)
        if not timed_out:
            left = max(0.0, timeout - (time.perf_counter() - started))
            _, held = await asyncio.wait(reading, timeout=min(LEFT_HOLDING, left))
            timed_out = bool(held) and left <= LEFT_HOLDING
            await _drain(process, exited, reading, kill=bool(held))
        else:
            await _drain(process, exited, reading, kill=True)
    except BaseException:
        await _abandon(process, exited, reading)
        raise
    finally:
        out.close()
        err.close()
    exit_code = None if timed_out else process.returncode
    seconds = time.perf_counter() - started
    written = tuple(sink.log.path for sink in (out, err) if sink.log is not None)
    return ProcessResult(exit_code, out.kept_text(), err.text(), timed_out, seconds,
                         dropped=out.dropped + err.dropped, logs=written,
                         stdout_note=out.cut_note())  # fmt: skip


@dataclass(frozen=True)
class StreamResult:
    """How a streamed program ended: exit code (``None`` when killed), the tail of stderr,
    whether the timeout or the stop event killed it, seconds, and ``logs``: the file its
    stderr was written to whole when it passed :data:`STDERR_TAIL`."""

    exit_code: int | None
    stderr: str
    timed_out: bool
    stopped: bool
    seconds: float
    logs: tuple[Path, ...] = ()


STDERR_TAIL = 65536
"""Bytes of the end of a streamed program's stderr kept in memory (:func:`stream_process`)."""


async def stream_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    on_line: Callable[[str], None],
    stdin: str | None = None,
    stop: asyncio.Event | None = None,
    logs: OutputLogs | None = None,
) -> StreamResult:
    """Run ``argv`` in its own process group and hand each line of its stdout to
    ``on_line`` as it arrives (up to :data:`MAX_LINE` bytes of a line); stderr is kept (its
    last :data:`STDERR_TAIL` bytes), and written whole to ``logs`` (``<name>.stderr.log``,
    redacted, cut at the logs' cap) once it passes that, never held in memory.

    The whole process group is killed (``SIGKILL``) at ``timeout`` seconds or as soon as
    ``stop`` is set; the lines printed until then have been handed over.

    Raises:
        FileNotFoundError, PermissionError: the program cannot be started.
    """
    started = time.perf_counter()
    process, exited = await _spawn(argv, stdin, cwd=cwd, env=env)
    err = _Tail(STDERR_TAIL, bytearray(), logs)
    reading = _readers(process, stdin, _lines(_pipe(process.stdout), on_line),
                       _collect_tail(_pipe(process.stderr), err))  # fmt: skip
    stopping = asyncio.ensure_future(stop.wait()) if stop is not None else None
    try:
        watched: set[asyncio.Future[Any]] = {exited, *([stopping] if stopping else [])}
        done, _ = await asyncio.wait(watched, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        stopped = exited not in done and stopping is not None and stopping in done
        timed_out = exited not in done and not stopped
        await _drain(process, exited, reading, kill=True)
    except BaseException:
        await _abandon(process, exited, reading)
        raise
    finally:
        if stopping is not None:
            stopping.cancel()
        err.close()
    exit_code = None if (timed_out or stopped) else process.returncode
    written = (err.log.path,) if err.log is not None else ()
    return StreamResult(exit_code, err.text(), timed_out, stopped, time.perf_counter() - started,
                        logs=written)  # fmt: skip


def _pipe(stream: asyncio.StreamReader | None) -> asyncio.StreamReader:
    assert stream is not None  # both output streams are pipes (see _spawn)
    return stream


def _readers(
    process: asyncio.subprocess.Process, stdin: str | None, *readers: Any
) -> set[asyncio.Future[None]]:
    """Start reading the output (and feeding stdin) in tasks the timeout does not cancel."""
    tasks = {asyncio.ensure_future(reader) for reader in readers}
    if stdin is not None and process.stdin is not None:
        tasks.add(asyncio.ensure_future(_feed(process.stdin, stdin.encode("utf-8"))))
    return tasks


async def _drain(
    process: asyncio.subprocess.Process,
    exited: asyncio.Future[None],
    reading: set[asyncio.Future[None]],
    *,
    kill: bool,
) -> None:
    """After the exit or at a limit: kill the group when told (the program at a limit, or
    what an agent left running), wait a bounded time for the reaping and for the output
    still in the pipes, and stop reading a pipe that a process left running holds open."""
    if kill:
        _kill_group(process.pid)
    await asyncio.wait({exited}, timeout=_DRAIN_SECONDS)
    _, still = await asyncio.wait(reading, timeout=_DRAIN_SECONDS)
    for task in still:
        task.cancel()
    await asyncio.gather(*reading, return_exceptions=True)
    _close(process)


async def _abandon(
    process: asyncio.subprocess.Process,
    exited: asyncio.Future[None],
    reading: set[asyncio.Future[None]],
) -> None:
    """The caller was cancelled (Ctrl-C): kill the group, stop reading, reap what can be."""
    _kill_group(process.pid)
    for task in reading:
        task.cancel()
    cancelled = await _outlast_cancels(exited, _DRAIN_SECONDS)
    _close(process)
    if cancelled:
        raise asyncio.CancelledError


async def _outlast_cancels(exited: asyncio.Future[None], seconds: float) -> bool:
    """Wait up to ``seconds`` for the exit even when cancelled again meanwhile (asyncio's
    shutdown cancels every task once more); whether it was. Closing the transport before
    the child watcher has reaped the killed program would reap it there (``Popen.poll``),
    and the watcher would then log "exit status already read" for every row."""
    loop = asyncio.get_running_loop()
    deadline, cancelled = loop.time() + seconds, False
    while not exited.done() and (left := deadline - loop.time()) > 0:
        try:
            await asyncio.wait({exited}, timeout=left)
        except asyncio.CancelledError:
            cancelled = True
    return cancelled


MAX_LINE = 32 * 1024 * 1024
"""Bytes of one output line handed over; the rest of a longer line is dropped."""


async def _lines(stream: asyncio.StreamReader, on_line: Callable[[str], None]) -> None:
    """Hand over each line as it completes, in time linear in the output (each chunk is
    searched once; the parts of a long line are joined once, when it ends)."""
    parts: list[bytes] = []
    size = 0
    while chunk := await stream.read(65536):
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            parts.append(chunk[start:end])
            on_line(_text(b"".join(parts)[:MAX_LINE]))
            parts, size, start = [], 0, end + 1
        if size < MAX_LINE:
            parts.append(chunk[start:])
            size += len(chunk) - start
    rest = b"".join(parts)
    if rest.strip():
        on_line(_text(rest[:MAX_LINE]))


@dataclass
class _Tail:
    """The last ``keep`` bytes of a stream, and the log the whole stream goes to once it
    passes ``keep`` (opened then, from ``logs``, with everything read so far)."""

    keep: int
    kept: bytearray
    logs: OutputLogs | None = None
    log: StreamLog | None = None
    total: int = 0
    problem: str | None = None

    def take(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.kept.extend(chunk)
        if self.log is None and self.total > self.keep and self.logs is not None:
            if self.problem is None:
                try:
                    self.log = self.logs.open("stderr")
                except OSError as exc:
                    self.problem = exc.strerror or type(exc).__name__
                else:
                    self.log.write(bytes(self.kept))  # all of it: nothing was trimmed yet
        elif self.log is not None:
            self.log.write(chunk)
        _hold_end(self.kept, self.keep)

    def close(self) -> None:
        if self.log is not None:
            self.log.close()

    def text(self) -> str:
        """The kept end as text, with a last line naming the file that holds it all; it
        starts where no secret or token is split
        (:func:`~assay.results.secrets.stream_start`)."""
        end = self._end()
        log = self.log
        if log is None:
            return _text(end)
        held = ("the whole stream is in" if not log.dropped and log.error is None
                else f"{log.path.name} holds its first {log.written} bytes:")  # fmt: skip
        where = log.path.name if held.startswith("the") else (log.error or "max_log_mb")
        return _text(end) + (
            f"\n[assay: {self.total} bytes of stderr, its end kept here; {held} {where}]\n"
        )

    def _end(self) -> bytes:
        return _end_of(self.kept, self.keep, self.logs)


def _hold_end(buffer: bytearray, keep: int) -> None:
    """Trim ``buffer`` to its last ``keep`` bytes and the :data:`LOOK_AHEAD` before them
    (to look back for a secret the start would split), once it holds twice that."""
    if len(buffer) > 2 * (keep + LOOK_AHEAD):
        del buffer[: -(keep + LOOK_AHEAD)]


def _end_of(buffer: bytearray, keep: int, logs: OutputLogs | None) -> bytes:
    """The last ``keep`` bytes of ``buffer`` (:func:`_hold_end`), starting where no secret or
    token is split (:func:`~assay.results.secrets.stream_start`)."""
    if len(buffer) <= keep:
        return bytes(buffer)
    data = bytes(buffer)
    writer = logs.writer if logs is not None else PLAIN
    return data[stream_start(data, len(data) - keep, writer.spans(data)) :]


async def _collect_tail(stream: asyncio.StreamReader, sink: _Tail) -> None:
    while chunk := await stream.read(65536):
        sink.take(chunk)


LEFT_HOLDING = 2.0
"""Seconds a program's exit waits for children it left holding its output pipes before
their process group is ended (the command's result is the program's own)."""

_DRAIN_SECONDS = 5.0
"""After the exit or the kill, how long to wait for the reaping and for output still in the
pipes."""


TAIL_BYTES = 65536
"""Of a stream past its cap, the last bytes kept too (a test runner's verdict is its last
line): at most this much more than ``max_output_bytes`` is held in memory."""


@dataclass
class _Sink:
    """The first ``limit`` bytes of a stream and its last :data:`TAIL_BYTES` (its text is
    the two joined, then a line naming the cut), how many bytes between them were not kept,
    and the log the whole stream goes to once it passes ``limit`` (opened then, from
    ``logs``).

    The kept start ends where :func:`~assay.results.secrets.stream_cut` says, decided once
    :data:`LOOK_AHEAD` bytes past ``limit`` (or the stream's end) are read, and the kept end
    starts where :func:`~assay.results.secrets.stream_start` says, at least
    :data:`LOOK_AHEAD` bytes after the start's end (a shorter gap keeps no end): never inside
    a secret or token, which is left out rather than kept in part."""

    limit: int
    kept: bytearray
    dropped: int = 0
    logs: OutputLogs | None = None
    stream: str = "stdout"
    log: StreamLog | None = None
    problem: str | None = None
    ahead: bytearray | None = None
    after: bytearray = field(default_factory=bytearray)
    """The bytes past ``limit``, their end held (for the kept end)."""
    past: int = 0
    """How many bytes came past ``limit`` (``dropped`` less what the kept start gave back)."""
    end: bytes | None = None
    """The kept end, decided at :meth:`close`."""

    def take(self, chunk: bytes) -> None:
        """The next ``chunk``: kept while there is room, and written to the log from the
        moment the stream passes ``limit`` (with what was kept before it)."""
        room = self.limit - len(self.kept) if self.ahead is None and not self.dropped else 0
        if room >= len(chunk) and self.log is None:
            self.kept.extend(chunk)
            return
        if self.log is None and self.logs is not None and self.problem is None:
            try:
                self.log = self.logs.open(self.stream)
            except OSError as exc:
                self.problem = exc.strerror or type(exc).__name__
            else:
                self.log.write(bytes(self.kept))
        if room > 0:
            self.kept.extend(chunk[:room])
        if not self.dropped and self.ahead is None:
            self.ahead = bytearray()
        if self.ahead is not None:
            self.ahead.extend(chunk[max(room, 0) :][: LOOK_AHEAD - len(self.ahead)])
            if len(self.ahead) >= LOOK_AHEAD:
                self._decide()
        self.dropped += len(chunk) - max(room, 0)
        self.past += len(chunk) - max(room, 0)
        self.after.extend(chunk[max(room, 0) :])
        _hold_end(self.after, TAIL_BYTES)
        if self.log is not None:
            self.log.write(chunk)

    def _decide(self) -> None:
        """End the kept part where no secret or token is split (see the class)."""
        ahead, self.ahead = self.ahead, None
        if not ahead:
            return
        base = max(len(self.kept) - LOOK_AHEAD, 0)
        data = bytes(self.kept[base:]) + bytes(ahead)
        writer = self.logs.writer if self.logs is not None else PLAIN
        cut = base + stream_cut(data, len(self.kept) - base, writer.spans(data))
        self.dropped += len(self.kept) - cut
        del self.kept[cut:]

    def close(self) -> None:
        self._decide()
        self.end = self._end()
        if self.log is not None:
            self.log.close()

    def text(self) -> str:
        """The kept bytes as text, with a last line naming the cut where there was one (and
        the file that holds the whole stream); call it after :meth:`close`."""
        return self.kept_text() + self.cut_note()

    def kept_text(self) -> str:
        """The kept start and end as text, the program's bytes only, a line break between
        them (no pattern matches across the bytes left out; call it after :meth:`close`)."""
        return _text(self.kept + b"\n" + self.end if self.end else self.kept)

    def _end(self) -> bytes:
        """The kept end: the last :data:`TAIL_BYTES` past ``limit``, where the stream went
        on for :data:`LOOK_AHEAD` bytes more than that (else nothing: a secret the start's
        cut split could reach into it)."""
        if self.past <= TAIL_BYTES + LOOK_AHEAD:
            return b""
        return _end_of(self.after, TAIL_BYTES, self.logs)

    def cut_note(self) -> str:
        """The line naming the cut (and the file that holds the whole stream), or ``""``; it
        follows the kept end, and says how long that end is."""
        if not self.dropped:
            return ""
        end = len(self.end or b"")
        follows = f"; the last {end} bytes above are its end" if end else ""
        cut = (f"\n[assay: output cut after {len(self.kept)} bytes; {self.dropped - end} more "
               "bytes ")  # fmt: skip
        log = self.log
        if log is None:
            why = f" (its log could not be written: {self.problem})" if self.problem else ""
            return cut + f"dropped{why}{follows}]\n"
        if log.error is not None:
            where = f"; {log.path.name} holds what was written before: {log.error}"
        elif log.dropped:
            where = (f"; {log.path.name} holds its first {log.written} bytes "
                     "(sandbox.limits.max_log_mb)")  # fmt: skip
        else:
            where = f"; the whole stream is in {log.path.name}"
        return cut + f"not kept here{where}{follows}]\n"


LOOK_AHEAD = REDACT_WINDOW
"""Bytes of a stream read past a cut, and kept before it, to find a secret or token the cut
would split (one longer than this can be kept in part)."""


async def _collect(stream: asyncio.StreamReader, sink: _Sink) -> None:
    while chunk := await stream.read(65536):
        sink.take(chunk)


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
    return data.decode("utf-8", errors="replace")


def end_marked_processes(marker: str, *, inside: Path | None = None) -> list[int]:
    """SIGKILL every process of this user whose environment holds ``marker`` (a
    ``NAME=value`` that only one row's programs get, e.g. its ``ASSAY_SANDBOX``), or whose
    working directory is ``inside`` that folder (the row's sandbox): the processes a row
    started and left running, also those that left its process group (``setsid … &``,
    ``nohup … &``) and those that cleared their environment too (``env -i setsid … &``);
    one frozen in a cgroup v1 freezer group is thawed so the kill lands
    (:func:`assay.sandbox.cgroups.thaw`). Linux only (reads ``/proc``); elsewhere a no-op.

    Returns:
        The pids signalled.
    """
    wanted = marker.encode("utf-8")
    folder = os.path.realpath(inside) if inside is not None else None
    ended: list[int] = []
    if not os.path.isdir("/proc"):
        return ended
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        if _marked(name, wanted) or (folder is not None and _works_in(name, folder)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(name), signal.SIGKILL)
                ended.append(int(name))
            thaw(int(name))  # one stopped in a frozen freezer group acts on it once thawed
    return ended


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after ``pid (comm)`` (``proc(5)``: ``[0]`` the
    state, ``[1]`` the parent's pid, ``[19]`` the start time in clock ticks after boot);
    ``None`` when it is gone (or elsewhere than Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields if len(fields) > 19 else None


def _marked(pid: str, wanted: bytes) -> bool:
    """Process ``pid``'s environment holds ``wanted`` (``False``: gone, or another user's)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return wanted in handle.read().split(b"\0")
    except OSError:
        return False


def _works_in(pid: str, folder: str) -> bool:
    """Process ``pid``'s working directory is ``folder`` or below it."""
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return cwd == folder or cwd.startswith(folder + os.sep)


@contextlib.contextmanager
def pidfd_child_watcher() -> Iterator[None]:
    """On Python 3.11, reap children through pidfds instead of one thread per child, inside
    the block; the previous watcher is given back after it.

    Python 3.12 does this by default; 3.11's default ``ThreadedChildWatcher`` starts a thread
    for every subprocess, which costs more than the subprocess itself for short commands.
    Enter it inside the running event loop. The watcher is process-wide and tied to this
    loop, so leaving it installed would break subprocesses in any later event loop of the
    process (``asyncio.get_child_watcher() is not activated``). Runs at once share it: in one
    event loop (``asyncio.gather`` of two ``run_async``) the last one out gives it back; a
    run in another event loop (another thread) puts 3.11's threaded watcher in its place for
    every loop (the pidfd one keeps reaping the children it has until its own runs are out),
    since a pidfd watcher serves only its own loop.
    """
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        yield
        return
    loop = asyncio.get_running_loop()
    with _WATCHER_SWAP, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        current = asyncio.get_child_watcher()
        mine: _RunWatcher | None = None
        if isinstance(current, _RunWatcher) and current.loop is loop:
            current.users += 1
            mine = current
        elif isinstance(current, _RunWatcher):
            asyncio.set_child_watcher(asyncio.ThreadedChildWatcher())
        else:
            mine = _RunWatcher(previous=current, loop=loop)
            asyncio.set_child_watcher(mine)
    try:
        yield
    finally:
        if mine is not None:
            mine.release()


_WATCHER_SWAP = threading.Lock()
"""Held while the process-wide child watcher (asyncio's own global) is looked at and
replaced, so two runs starting in two threads at once do not both install one."""


class _RunWatcher(asyncio.PidfdChildWatcher):
    """The pidfd watcher of the runs of one event loop (``users``: how many are inside
    :func:`pidfd_child_watcher`), and the watcher it replaced."""

    def __init__(self, *, previous: asyncio.AbstractChildWatcher, loop: Any) -> None:
        super().__init__()
        self.previous, self.loop, self.users = previous, loop, 1
        self.attach_loop(loop)

    def close(self) -> None:
        """Closed once its last run is out: asyncio's ``set_child_watcher`` closes the
        watcher it replaces, which a run in another loop does while this loop's runs may
        still wait for their children (it would drop them: they would end at their
        timeout)."""
        if self.users == 0:
            super().close()

    def release(self) -> None:
        """One run is out; the last one gives the previous watcher back (unless another
        loop's run replaced this one) and closes this one."""
        with _WATCHER_SWAP, warnings.catch_warnings():
            self.users -= 1
            if self.users:
                return
            warnings.simplefilter("ignore", DeprecationWarning)
            if asyncio.get_child_watcher() is self:
                asyncio.set_child_watcher(self.previous)
            self.close()


def tail(text: str, limit: int = 2000) -> str:
    """The last ``limit`` characters of ``text``, marked when cut; the cut never splits a
    key or token (:func:`assay.results.secrets.clip_tail`), so redaction still sees it whole."""
    return clip_tail(text, limit)


STACK_FRAME = re.compile(r"\s+at\s.*(\)|:\d+)\s*$")
"""A stack frame's line: Node's and the JVM's (``    at f (file.js:1:2)``,
``\tat pkg.C.m(C.java:12)``, ``    at file.js:1:2``): indented ``at``, ending with a place."""
RUNTIME_FAILURE = re.compile(r"(panic|fatal error): ")
"""Go's run-time failure, whose message comes before its goroutines' stacks."""
CAUSE_SEARCH = 1 << 16
"""Characters at the end of a program's output searched for its error's own line."""


def error_tail(text: str, limit: int = 500) -> str:
    """:func:`tail` of a failed program's output (``text``, stripped), with its error's own
    line (:func:`error_line`) put in front when the cut dropped it: Node, the JVM and Go
    write the message before a stack that alone can fill ``limit``."""
    text = text.strip()
    shown = tail(text, limit)
    cause = error_line(text)
    if not cause or cause in shown:
        return shown
    return f"{clip_head(cause, limit // 2)} {shown}"


def error_line(text: str) -> str:
    """The line of ``text`` that states its error above a stack trace: the last one right
    above a frame (:data:`STACK_FRAME`: Node's ``Error: EFBIG: file too large, write``, the
    JVM's last ``Caused by: …``), else Go's last ``panic: …`` (:data:`RUNTIME_FAILURE`);
    ``""`` for none (Python writes its message last, after the stack)."""
    lines = text[-CAUSE_SEARCH:].splitlines()
    for above, below in zip(reversed(lines[:-1]), reversed(lines[1:]), strict=True):
        if STACK_FRAME.match(below) and above.strip() and not STACK_FRAME.match(above):
            return above.strip()
    return next((line.strip() for line in reversed(lines) if RUNTIME_FAILURE.match(line)), "")


LIMIT_SIGNALS = {
    signal.SIGXFSZ: "a file grew past sandbox.limits.max_file_size_mb",
    signal.SIGXCPU: "the CPU time passed sandbox.limits.cpu_seconds",
}


LIMIT_ERRORS = (
    (errno.EFBIG, "EFBIG: a file may not grow past sandbox.limits.max_file_size_mb"),
    (errno.EMFILE, "EMFILE: a process may not open more files than sandbox.limits.max_open_files"),
)
"""What a program that handles the error itself prints → the limit: the C library's text
(``File too large``, ``Too many open files``; Python ignores ``SIGXFSZ`` and raises
``OSError``), in any case (Node and Go write it in lower case), or the error's name."""


NOT_STARTED = "assay: the row's container did not start"
"""How :mod:`assay.sandbox.docker_exec` (standard library only, so it writes the words
itself) begins the message of a row's container that could not start; it exits 125."""


def container_not_started(code: int | None, stderr: str) -> str | None:
    """The message of a row's container that could not start (no program of the row ran),
    from a docker program's exit ``code`` and ``stderr``; ``None`` otherwise."""
    at = stderr.find(NOT_STARTED) if code == 125 else -1
    return None if at < 0 else tail(stderr[at + len("assay: ") :].strip(), 1000)


def exit_text(code: int | None, *, stderr: str = "", limits: bool = True) -> str:
    """``exited with code N``, naming the signal that ended the program when ``N`` says one
    did (``-N`` from the kernel, ``128 + N`` from a shell, the POSIX convention), and the
    ``sandbox.limits`` field behind ``SIGXFSZ`` and ``SIGXCPU`` or behind an error of
    :data:`LIMIT_ERRORS` that the last lines of the program's ``stderr`` show, when
    ``limits`` (the driver set them; ``tempdir`` does not: there the host's limit was met)."""
    text = f"exited with code {code}"
    if code is None or code == 0:
        return text
    number = -code if code < 0 else code - 128 if 128 < code < 128 + signal.NSIG else None
    if number is None:
        last = stderr[-2000:].lower() if limits else ""
        shown = [why for error, why in LIMIT_ERRORS if os.strerror(error).lower() in last
                 or re.search(rf"\b{errno.errorcode[error].lower()}\b", last)]  # fmt: skip
        return f"{text} ({'; '.join(shown)})" if shown else text
    try:
        name = signal.Signals(number)
    except ValueError:
        return text
    why = LIMIT_SIGNALS.get(name) if limits else None
    return f"{text} ({name.name}: {why})" if why else f"{text} ({name.name})"
