"""The first program inside a bwrap sandbox: limits, user, forwarder, then the row's program.

Run by :mod:`assay.sandbox.bwrap` as ``python -I -S jail_init.py CONFIG -- ARGV…`` (the
standard library only: it must start fast and import nothing of assay). ``CONFIG`` is a
JSON object:

- ``limits``: ``{"RLIMIT_NPROC": n, …}``, set as both soft and hard limit (never above the
  hard limit the sandbox inherited);
- ``uid`` / ``gid``: the unprivileged user to become (when the sandbox was made by root;
  otherwise the user namespace already made the process unprivileged);
- ``forward``: ``{"port": p, "socket": path}``: listen on ``127.0.0.1:p`` inside the
  sandbox's own network and copy every connection to and from the unix socket ``path``
  (the model bridge's, bound into the sandbox), in a child process that lives until the
  sandbox ends.

Then ``ARGV`` replaces this process (``execvp``), with the environment it was given.
"""

import contextlib
import json
import os
import resource
import signal
import socket
import sys
import threading

CHUNK = 65536


def main(argv: list[str]) -> None:
    """Apply ``argv[1]`` (the config) and run ``argv[3:]`` (after ``--``)."""
    config = json.loads(argv[1])
    command = argv[3:]
    set_limits(config.get("limits") or {})
    if config.get("uid") is not None:
        os.setgroups([])
        os.setgid(int(config["gid"]))
        os.setuid(int(config["uid"]))
    forward = config.get("forward")
    if forward:
        start_forwarder(int(forward["port"]), str(forward["socket"]))
    if not command:
        return
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
        sys.exit(127 if isinstance(exc, FileNotFoundError) else 126)


def set_limits(limits: dict[str, int]) -> None:
    """Lower each named limit to its value (soft and hard)."""
    for name, value in limits.items():
        kind = getattr(resource, name)
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, value))


def start_forwarder(port: int, path: str) -> None:
    """Listen on ``127.0.0.1:port`` now, and serve it from a child process."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork() == 0:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the row's output pipes close when its program ends
            os.dup2(null, fd)
        serve(listener, path)
        os._exit(0)
    listener.close()


def serve(listener: socket.socket, path: str) -> None:
    """Accept forever; each connection is copied both ways by two threads."""
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
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until ``source`` ends or either side fails."""
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
