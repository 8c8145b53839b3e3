"""Small helpers shared by tests."""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal


def write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (UTF-8), creating folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- processes: started with a known SIGINT disposition, watched by pid -------------------

SigintAtStart = Literal["default", "ignored"]

# A program started in the background by a non-interactive shell (`cmd &` in a script, CI)
# inherits SIGINT ignored; one started from a terminal has it at its default. The launcher
# sets the disposition asked for and execs the program, so a test behaves the same however
# pytest itself was started (an ignored SIGINT survives exec, a handler does not).
_LAUNCH = (
    "import os, signal, sys; "
    "signal.signal(signal.SIGINT, signal.SIG_IGN if sys.argv[1] == 'ignored' else signal.SIG_DFL); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def start(
    argv: list[str],
    *,
    cwd: Path,
    sigint: SigintAtStart = "default",
    env: dict[str, str] | None = None,
    output: bool = True,
) -> subprocess.Popen[str]:
    """Start ``argv`` (a path to the program first) with SIGINT at its default or ignored;
    stdout and stderr piped (``output``) or discarded."""
    stream = subprocess.PIPE if output else subprocess.DEVNULL
    return subprocess.Popen(
        [sys.executable, "-c", _LAUNCH, sigint, *argv],
        cwd=cwd, env=env, stdout=stream, stderr=stream, text=True,
    )  # fmt: skip


def start_assay(
    *args: str,
    cwd: Path,
    sigint: SigintAtStart = "default",
    env: dict[str, str] | None = None,
    output: bool = True,
) -> subprocess.Popen[str]:
    """``python -m assay ARGS`` in the background (see :func:`start`)."""
    argv = [sys.executable, "-m", "assay", *args]
    return start(argv, cwd=cwd, sigint=sigint, env=env, output=output)


def finish(process: subprocess.Popen[str], seconds: float = 60) -> tuple[str, str]:
    """Wait for ``process`` and return its output; kill it and fail if it is still running
    after ``seconds``."""
    try:
        out, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"still running after {seconds} s; stderr: {err}") from None
    return out or "", err or ""


def wait_for(predicate: Callable[[], bool], seconds: float = 60, what: str = "") -> None:
    """Poll ``predicate`` every 20 ms until it holds; fail after ``seconds`` (a bound for a
    loaded machine, not a measurement)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what or predicate}")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pids_in(path: Path) -> list[int]:
    """The pids a test's processes wrote to ``path``, one per line (none if it is missing)."""
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def wait_gone(pids: Iterable[int], seconds: float = 30) -> None:
    """Every pid ends (polled); fail naming the survivors after ``seconds``."""
    left = list(pids)
    wait_for(lambda: not [p for p in left if alive(p)], seconds,
             f"processes still running: {[p for p in left if alive(p)]}")  # fmt: skip


def kill_left(pids: Iterable[int]) -> None:
    """SIGKILL whatever a failed test left running of the processes it started."""
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def host_tcp_server(answer: bytes) -> Iterator[int]:
    """A server on the host's 127.0.0.1 (a free port, yielded) that answers ``answer`` to
    every connection, after reading what the client sent first (if anything)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = server.accept()
                client.settimeout(0.5)
                with contextlib.suppress(OSError):
                    client.recv(100)
                client.sendall(answer)
                client.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def selected_rows(run_dir: Path, task_id: str | None = None) -> dict[str, str]:
    """Row id → content hash of the rows a run selected, in its order, read from the run's
    ``selection.jsonl`` as plain JSON lines (of ``task_id`` only, when given)."""
    import json

    found: dict[str, str] = {}
    for line in (run_dir / "selection.jsonl").read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        if task_id is None or data["task_id"] == task_id:
            found[data["row_id"]] = data["row_hash"]
    return found


async def check_with(spec: Any, context: Any) -> Any:
    """Grade one row with ``spec``'s registered criterion class (``spec`` may be a config
    model built in the test)."""
    from assay.criteria import default_criteria

    return await default_criteria().bind(spec).check(context)


def aggregate_with(spec: Any, results: list[Any]) -> Any:
    """The suite aggregate of ``spec``'s registered criterion class over ``results``."""
    from assay.criteria import default_criteria

    return default_criteria().bind(spec).aggregate(results)


class QuietHTTPServer(http.server.ThreadingHTTPServer):
    """A test server whose handler errors are not printed: a client that gave up (a timeout
    test) makes a late reply fail in a thread that outlives the test, and its traceback would
    land on the standard error of whatever test the worker runs next (an in-process CLI run
    compares its stderr)."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """Say nothing (see the class docstring)."""
