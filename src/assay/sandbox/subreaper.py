"""Run one program as a child subreaper and record the orphans it adopts (Linux).

Run by path, standalone (no assay import, so it starts in about 20 ms):
``python -I -S subreaper.py RECORD -- PROGRAM [ARGS...]``. It marks itself a child subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``, Linux ≥ 3.4: a process that the program's descendants
leave behind when their parent exits is re-parented to it instead of to init), starts the
program with the same standard streams, and while the program runs it keeps the file
``RECORD`` up to date (every 0.1 s, and when a child exits) with the program, the
program's children and the processes it adopted, one ``PID START_TIME`` line each
(``START_TIME``: field 22 of ``/proc/PID/stat``, clock ticks after boot, so a reused pid is
not mistaken for it). When the program exits it records them
once more and exits as the program did (the same code, or the same signal). The row's end
(:class:`assay.sandbox.reaper.RowReaper`) kills what the records name and what descends from
it: so a process that left the row's environment, folder and process group is still found.

A program that cannot be started ends with exit code 127 (``assay: NAME: command not
found``, as the row's cgroup entry says it) or 126 (not executable), as a shell would.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36
POLL_SECONDS = 0.1


def start(argv: list[str]) -> int:
    """Fork and exec ``argv`` with default signal dispositions; the child's pid."""
    pid = os.fork()
    if pid:
        return pid
    for number in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)  # Python ignores the first two
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:  # worded as the row's cgroup entry words it (assay.sandbox.cgroups)
        missing = exc.errno == errno.ENOENT
        os.write(2, f"assay: {argv[0]}: {'command not found' if missing else exc.strerror}\n"
                 .encode())  # fmt: skip
        os._exit(127 if missing else 126)
    os._exit(126)


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (none when it is gone)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []


def watched(main: int) -> list[str]:
    """``PID START_TIME`` of what a kill at the row's timeout would miss: the program, its
    children (one may have made a session of its own: the group kill misses it) and this
    process's other children (the orphans it adopted)."""
    pids = [main, *_children(main), *(p for p in _children(os.getpid()) if p != main)]
    lines = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        lines.append(f"{pid} {fields[19]}")  # field 22: after "pid (comm)", the 20th
    return lines


def record(path: str, lines: list[str], last: list[str]) -> list[str]:
    """Write ``lines`` to ``path`` (atomically) when they differ from ``last``; the lines
    written (``last`` when the record cannot be written: the program runs on regardless)."""
    if lines == last:
        return last
    part = f"{path}.part"
    try:
        with open(part, "w") as handle:
            handle.write("".join(line + "\n" for line in lines))
        os.replace(part, path)
    except OSError:
        return last
    return lines


def wait(main: int, path: str) -> int:
    """Reap children until ``main`` exits, recording :func:`watched`; its wait status."""
    last: list[str] = []
    while True:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 0
            if pid == main:
                record(path, watched(main), last)
                return status
            if pid == 0:
                break
        last = record(path, watched(main), last)
        signal.sigtimedwait([signal.SIGCHLD], POLL_SECONDS)


def main(args: list[str]) -> None:
    if len(args) < 3 or args[1] != "--":
        os.write(2, b"usage: subreaper.py RECORD -- PROGRAM [ARGS...]\n")
        os._exit(2)
    path, argv = args[0], args[2:]
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    child = start(argv)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the program's pipes close when it and its children close them
        os.dup2(null, fd)
    status = wait(child, path)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # those cannot be handled
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
