"""The first program inside a bwrap sandbox: limits, user, forwarder, then the row's program.

Run by :mod:`assay.sandbox.bwrap` (and the docker driver, on the image's ``python3``) as
``python -I -S jail_init.py [OPTION…] -- ARGV…``, the options made by :func:`arguments`:

- ``--limit NAME=VALUE``: a resource limit (``RLIMIT_NPROC=1024``), set as both soft and hard
  limit (never above the hard limit the sandbox inherited); repeated for each limit;
- ``--user UID:GID``: the unprivileged user to become (when the sandbox was made by root;
  otherwise the user namespace already made the process unprivileged);
- ``--forward PORT SOCKET``: listen on ``127.0.0.1:PORT`` inside the sandbox's own network
  and copy every connection to and from the unix socket ``SOCKET`` (the model bridge's,
  bound into the sandbox), in a child process that lives until the sandbox ends;
- ``--own-output`` (with ``--user``, run as root): the program's standard output and error
  become pipes this process makes before it gives up root, so they are root's (mode
  ``0600``), and it copies them on to its own until the program ends (a docker
  container's exec pipes are given to the exec's user, who could reopen them through
  ``/proc/PID/fd/1``);
- ``--sealed`` (with ``--user``, run as root): the program becomes the user sealed
  (:func:`become`): not dumpable, so no process of its user can trace it, write its memory
  or take its descriptors. A coding agent's CLI and the commands it runs share a uid;
  through ``ptrace(2)``, ``/proc/PID/mem`` or ``pidfd_getfd(2)`` a command could write
  events into the stream assay reads as the transcript.

Then ``ARGV`` replaces this process (``execvp``), with the environment it was given.

It starts before every program of a row, so it imports only the interpreter's C modules on
the way to ``ARGV`` (``_socket`` rather than :mod:`socket`, whose enums and selectors double
the start, and no :mod:`json`): about 15 ms of a start where the full modules took 35. The
forwarder's child imports :mod:`socket` and :mod:`threading` after it has forked, beside the
row's program.
"""

from __future__ import annotations

import _socket
import errno
import os
import resource
import sys
import warnings  # noqa: F401 - os.execvp imports it on use: after setuid it may be unreadable

TYPE_CHECKING = False  # typing itself is 14 ms of a start; type checkers read the name
if TYPE_CHECKING:
    import socket

CHUNK = 65536


def arguments(
    *,
    limits: dict[str, int] | None = None,
    user: int | tuple[int, int] | None = None,
    forward: tuple[int, str] | None = None,
    own_output: bool = False,
    sealed: bool = False,
) -> list[str]:
    """The options before ``--`` for ``limits`` (``{"RLIMIT_NPROC": n}``), ``user`` (a uid,
    also the gid, or ``(uid, gid)``), ``forward`` (``(port, unix socket path)``),
    ``own_output`` and ``sealed``."""
    options: list[str] = []
    for name, value in (limits or {}).items():
        options += ["--limit", f"{name}={int(value)}"]
    if user is not None:
        uid, gid = user if isinstance(user, tuple) else (user, user)
        options += ["--user", f"{int(uid)}:{int(gid)}"]
    if forward is not None:
        options += ["--forward", str(int(forward[0])), str(forward[1])]
    return options + (["--own-output"] if own_output else []) + (["--sealed"] if sealed else [])


def main(argv: list[str]) -> None:
    """Apply the options of ``argv[1:]`` and run what follows ``--``.

    Exits 2 on an option it does not know or cannot read (a caller's mistake), 127 when the
    program is not found and 126 when it cannot be run. A file without ``#!`` that is not
    a binary runs under ``/bin/sh``, as the C library's ``execvp`` does."""
    split = argv.index("--") if "--" in argv else len(argv)
    own_output, sealed = "--own-output" in argv[1:split], "--sealed" in argv[1:split]
    try:
        flags = ("--own-output", "--sealed")
        options = [a for a in argv[1:split] if a not in flags] + argv[split:]
        limits, user, forward, command = parse(options)
        set_limits(limits)
    except ValueError as exc:
        sys.stderr.write(f"jail_init: {exc}\n")
        sys.exit(2)
    if own_output and user is not None and command:
        own_pipes()
    if user is not None:
        become(user, sealed=sealed)
    if forward is not None:
        start_forwarder(*forward)
    if command:
        run(command)


SEALED_GID = 65534
"""The real group of a sealed program (``nogroup``; ``65533`` when that is the user's own)."""


def become(user: tuple[int, int], *, sealed: bool = False) -> None:
    """Become ``user`` (uid, gid), with no supplementary groups. ``sealed``: the real group
    is another one (:data:`SEALED_GID`), the effective and saved groups the user's: a
    program run with real and effective groups apart is not dumpable (``execve(2)``), and
    ``ptrace(2)``'s access check wants all of them equal to the caller's, so the commands
    it runs (a shell makes them the real group's: bash and dash drop an effective group
    they were not started in) can neither trace it, nor read or write its memory
    (``/proc/PID/mem``), nor take its file descriptors (``/proc/PID/fd``,
    ``pidfd_getfd(2)``). The program keeps its files' access as the user."""
    uid, gid = user
    os.setgroups([])
    if sealed:
        os.setresgid(SEALED_GID if gid != SEALED_GID else SEALED_GID - 1, gid, gid)
    else:
        os.setgid(gid)
    os.setuid(uid)


def own_pipes() -> None:
    """Give the program (this process, from here on) standard output and error pipes made
    now, as root (see the module docstring); a parent process copies them to the real ones
    until the program ends, then exits with its exit code (``128 + N`` for signal ``N``)."""
    pipes = [os.pipe(), os.pipe()]
    child = os.fork()
    if child == 0:
        for fd, (read, write) in zip((1, 2), pipes, strict=True):
            os.dup2(write, fd)
            os.close(read)
            os.close(write)
        return
    for read, write in pipes:
        os.close(write)
        os.set_blocking(read, False)
    sys.exit(copy_until_exit(child, {pipes[0][0]: 1, pipes[1][0]: 2}))


def copy_until_exit(child: int, copies: dict[int, int]) -> int:
    """Copy each pipe of ``copies`` (read end, non-blocking → where to) until the process
    ``child`` has ended, then what its pipes still hold (up to :data:`DRAIN_CHUNKS` reads
    each: what it started may keep a pipe open and writing); ``child``'s exit code
    (``128 + N`` for signal ``N``)."""
    import select

    status = None
    while status is None:
        ready = select.select(list(copies), [], [], 0.2)[0] if copies else []
        for read in ready:
            if copy_once(read, copies[read]) == b"":  # its end: every writer closed it
                del copies[read]
        ended, found = os.waitpid(child, os.WNOHANG if copies else 0)
        status = found if ended else None
    for read, fd in copies.items():
        for _ in range(DRAIN_CHUNKS):
            if not copy_once(read, fd):  # empty for now, or its end
                break
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


DRAIN_CHUNKS = 1024
"""Reads of :data:`CHUNK` bytes of each pipe at most, once the program has ended."""


def copy_once(read: int, fd: int) -> bytes | None:
    """Copy one read of the pipe ``read`` to ``fd``: what was read (``b""`` at the pipe's
    end), ``None`` when it holds nothing for now."""
    try:
        data = os.read(read, CHUNK)
    except BlockingIOError:
        return None
    write_all(fd, data)
    return data


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (a reader gone: the rest is dropped)."""
    while data:
        try:
            data = data[os.write(fd, data) :]
        except BlockingIOError:
            import select

            select.select([], [fd], [])
        except OSError:
            return


def parse(
    options: list[str],
) -> tuple[dict[str, int], tuple[int, int] | None, tuple[int, str] | None, list[str]]:
    """``(limits, (uid, gid), (port, socket), command)`` of the options before ``--``.

    Raises:
        ValueError: an option unknown, incomplete, or not a number (a port) where one is
            needed.
    """
    limits: dict[str, int] = {}
    user: tuple[int, int] | None = None
    forward: tuple[int, str] | None = None
    rest = options
    while rest and rest[0] != "--":
        option, rest = rest[0], rest[1:]
        if option == "--limit" and rest and "=" in rest[0]:
            name, _, value = rest[0].partition("=")
            limits[name], rest = int(value), rest[1:]
        elif option == "--user" and rest:
            uid, _, gid = rest[0].partition(":")
            user, rest = (int(uid), int(gid or uid)), rest[1:]
        elif option == "--forward" and len(rest) >= 2 and 0 < int(rest[0]) < 65536:
            forward, rest = (int(rest[0]), rest[1]), rest[2:]
        else:
            raise ValueError(f"unknown or incomplete option {option!r}")
    return limits, user, forward, rest[1:]


def run(command: list[str]) -> None:
    """Become ``command`` (found on ``PATH``); exits 127 or 126 when it cannot."""
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        if exc.errno == errno.ENOEXEC:  # a script without #!, run by the shell
            try:  # noqa: SIM105 - contextlib is an import this start does without
                os.execv("/bin/sh", ["/bin/sh", found(command[0]), *command[1:]])
            except OSError:
                pass
        sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
        sys.exit(127 if isinstance(exc, FileNotFoundError) else 126)


def found(name: str) -> str:
    """``name``'s path on ``PATH`` (as ``execvp`` looks), or ``name`` itself."""
    if "/" in name:
        return name
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    return name


def set_limits(limits: dict[str, int]) -> None:
    """Lower each named limit to its value (soft and hard; CPU seconds' hard limit one
    second past the soft one, so a program past it gets ``SIGXCPU``, which names the limit,
    and ``SIGKILL`` only a second later: at equal limits the kernel kills at once).

    Raises:
        ValueError: a name that is not one of :mod:`resource`'s ``RLIMIT_*``.
    """
    for name, value in limits.items():
        kind = getattr(resource, name, None) if name.startswith("RLIMIT_") else None
        if kind is None:
            raise ValueError(f"no resource limit {name!r}")
        _, hard = resource.getrlimit(kind)
        top = value + 1 if name == "RLIMIT_CPU" else value
        if hard != resource.RLIM_INFINITY:
            value, top = min(value, hard), min(top, hard)
        resource.setrlimit(kind, (value, top))


def start_forwarder(port: int, path: str) -> None:
    """Listen on ``127.0.0.1:port`` now, and serve it from a child process."""
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork() == 0:
        import signal
        import socket

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the row's output pipes close when its program ends
            os.dup2(null, fd)
        serve(socket.socket(fileno=listener.detach()), path)
        os._exit(0)
    listener.close()


def serve(listener: socket.socket, path: str) -> None:
    """Accept forever; each connection is copied both ways by two threads."""
    import socket
    import threading

    while True:
        try:
            client, _ = listener.accept()
        except OSError:  # the listener was closed
            return
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        threading.Thread(target=relay, args=(client, upstream), daemon=True).start()


def relay(client: socket.socket, upstream: socket.socket) -> None:
    """Copy both ways until both directions end, then close both sockets."""
    import threading

    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until ``source`` ends or either side fails."""
    import contextlib
    import socket

    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                end.shutdown(how)


if __name__ == "__main__":
    main(sys.argv)
