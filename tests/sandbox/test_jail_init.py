"""The sandbox's first program (``assay.sandbox.jail_init``), run outside a sandbox so each of
its parts shows on its own: limits, the user it becomes, the forwarder to a unix socket, and
the program it becomes."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.sandbox import jail_init


def first(options: list[str], *argv: str) -> subprocess.CompletedProcess[str]:
    """Run the first program outside a sandbox, in a session of its own: the forwarder it
    leaves behind (in a sandbox, the PID namespace ends it) is killed with the session."""
    command = [sys.executable, "-I", "-S", jail_init.__file__, *options, "--", *argv]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)  # fmt: skip
    try:
        out, err = process.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return subprocess.CompletedProcess(command, process.returncode, out, err)


@contextlib.contextmanager
def unix_echo() -> Iterator[Path]:
    """A unix socket server that answers each connection with ``bridge:`` and what it read
    until the client stopped sending."""
    folder = Path(tempfile.mkdtemp(prefix="assay-echo-"))
    path = folder / "bridge.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = server.accept()
                received = b""
                while chunk := client.recv(65536):
                    received += chunk
                client.sendall(b"bridge:" + received)
                client.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield path
    finally:
        server.close()
        path.unlink(missing_ok=True)
        folder.rmdir()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


CLIENT = """\
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)
payload = b"x" * int(sys.argv[2])
s.sendall(payload)
s.shutdown(socket.SHUT_WR)
got = b""
while chunk := s.recv(65536):
    got += chunk
print(len(got), got[:12].decode())
"""


def test_the_forwarder_carries_a_large_exchange_both_ways() -> None:
    port = free_port()
    with unix_echo() as path:
        done = first(jail_init.arguments(forward=(port, str(path))),
                     sys.executable, "-c", CLIENT, str(port), str(3_000_000))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(3_000_007), "bridge:xxxxx"]


def test_the_relay_in_process_and_an_unreachable_bridge() -> None:
    with unix_echo() as path, socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        serving = threading.Thread(target=jail_init.serve, args=(listener, str(path)))
        serving.start()
        with socket.create_connection(listener.getsockname(), 5) as client:
            client.sendall(b"ping")
            client.shutdown(socket.SHUT_WR)
            assert client.recv(100) == b"bridge:ping"
        path.unlink()  # the bridge is gone: the client is closed, the relay goes on
        with socket.create_connection(listener.getsockname(), 5) as client:
            assert client.recv(100) == b""
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() the relay waits in
        serving.join(5)
    assert not serving.is_alive()


def test_limits_are_set_soft_and_hard() -> None:
    done = first(jail_init.arguments(limits={"RLIMIT_NOFILE": 64, "RLIMIT_FSIZE": 1 << 20}),
                 sys.executable,
                 "-c", "import resource as r; print(r.getrlimit(r.RLIMIT_NOFILE), "
                 "r.getrlimit(r.RLIMIT_FSIZE))")  # fmt: skip
    assert done.stdout.strip() == f"(64, 64) ({1 << 20}, {1 << 20})"


def test_it_becomes_the_rows_user() -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can become another user")
    done = first(jail_init.arguments(user=65534), "id")
    assert done.stdout.startswith("uid=65534") and "gid=65534" in done.stdout


def test_own_output_gives_the_program_root_owned_pipes_and_copies_them_whole() -> None:
    """A coding agent's commands share its CLI's uid: through ``/proc/PID/fd/1`` they wrote
    forged events into the stream assay reads (a break-test on docker). Pipes made by root
    before it becomes the row's user cannot be reopened by that user."""
    if os.geteuid() != 0:
        pytest.skip("only root can become another user")
    options = jail_init.arguments(user=(65534, 65534), own_output=True)
    program = (
        "id -u; stat -L -c %u /proc/self/fd/1 /proc/self/fd/2; echo to-err >&2; "
        "(sleep 300 &); head -c 1048576 /dev/zero | tr '\\0' x; exit 3"
    )
    done = first(options, "sh", "-c", program)  # 30 s at most: the sleep is not waited for
    lines = done.stdout.split("\n")
    assert lines[:3] == ["65534", "0", "0"], done.stderr  # the user; root's pipes
    assert lines[3] == "x" * 1048576  # copied whole, after the program ended
    assert (done.returncode, done.stderr) == (3, "to-err\n")
    killed = first(options, "sh", "-c", "kill -TERM $$")
    assert killed.returncode == 128 + signal.SIGTERM  # a shell's convention, as docker exec's


def test_a_sealed_program_is_not_dumpable_and_its_commands_lose_the_group_it_keeps() -> None:
    """A coding agent's commands traced their CLI, wrote its memory and took its output
    (``pidfd_getfd``) as the same user (a break-test). Sealed, the CLI's real group is
    another: after ``execve`` it is not dumpable, and a shell it starts drops to that group."""
    if os.geteuid() != 0:
        pytest.skip("only root can become another user")
    options = jail_init.arguments(user=(4242, 4242), sealed=True)
    probe = ("import ctypes, os, subprocess; libc = ctypes.CDLL(None); "
             "print(os.getresuid(), os.getresgid(), os.getgroups(), libc.prctl(3, 0, 0, 0, 0)); "
             "print(subprocess.run(['sh', '-c', 'id -g; id -G'], capture_output=True, "
             "text=True).stdout.split())")  # fmt: skip
    done = first(options, "/usr/bin/python3", "-I", "-c", probe)
    assert done.returncode == 0, done.stderr
    own, shell = done.stdout.splitlines()
    assert own == "(4242, 4242, 4242) (65534, 4242, 4242) [] 0"  # not dumpable (PR_GET_DUMPABLE)
    assert shell == "['65534', '65534']"  # what it runs has no way back to the user's group
    plain = first(jail_init.arguments(user=(4242, 4242)), "/usr/bin/python3", "-I", "-c", probe)
    assert plain.stdout.splitlines()[0] == "(4242, 4242, 4242) (4242, 4242, 4242) [] 1"


def test_a_program_that_does_not_exist_exits_127() -> None:
    done = first([], "no-such-program-anywhere")
    assert done.returncode == 127
    assert done.stderr.strip() == "no-such-program-anywhere: No such file or directory"


def test_an_unknown_or_incomplete_option_exits_2_and_runs_nothing() -> None:
    bad = (["--limits", "RLIMIT_NOFILE=64"], ["--forward", "8080"], ["--limit", "X"],
           ["--limit", "=abc"], ["--limit", "RLIMIT_NOPE=1"], ["--limit", "isatty=1"],
           ["--user", "root"], ["--forward", "http", "/s"],
           ["--forward", "70000", "/s"])  # fmt: skip
    for options in bad:
        done = first(options, "echo", "ran")
        assert done.returncode == 2, options
        assert done.stdout == "" and done.stderr.startswith("jail_init: "), done.stderr
        assert "Traceback" not in done.stderr


def test_a_script_without_a_shebang_runs_under_the_shell(tmp_path: Path) -> None:
    """As the C library's execvp (and so setpriv, the other first program) does."""
    script = tmp_path / "bin" / "greet"
    script.parent.mkdir()
    script.write_text('echo "hello $1"\n')
    script.chmod(0o755)
    for program in (str(script), "greet"):
        done = subprocess.run([sys.executable, "-I", "-S", jail_init.__file__, "--", program,
                               "row"], capture_output=True, text=True,
                              env={"PATH": f"{script.parent}:/usr/bin:/bin"})  # fmt: skip
        assert (done.returncode, done.stdout) == (0, "hello row\n"), done.stderr


def test_the_start_imports_only_small_modules() -> None:
    """What runs before every program of a row loads none of the modules that doubled its
    start (socket's enums and selectors, json's regular expressions, typing, threading)."""
    command = [sys.executable, "-I", "-S", "-X", "importtime", jail_init.__file__,
               *jail_init.arguments(limits={"RLIMIT_NOFILE": 64}, user=None), "--"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    loaded = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "resource" in loaded and "_socket" in loaded
    assert not loaded & {"socket", "json", "re", "enum", "typing", "threading", "contextlib"}
