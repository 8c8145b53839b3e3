"""The signals that interrupt a command-line process as Ctrl-C does (SIGTERM, SIGHUP, and
SIGINT when the process started with it ignored), from its first line on: before a run's rows
start (loading, planning) and after them (the reports), where
:func:`assay.orchestration.running.signals.stop_on_signals` does not hold them. A small module
of its own: the command line installs it before it knows which command runs."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


def interrupt(number: int, frame: FrameType | None) -> None:
    """A signal handler that interrupts the main thread where it is, as Ctrl-C does."""
    raise KeyboardInterrupt


@contextmanager
def interrupting_signals() -> Iterator[None]:
    """For a command-line process, while the block runs: SIGTERM, SIGHUP (a closed terminal,
    a dropped ssh session; not when ``nohup`` made the process ignore it) and SIGINT, when
    the process started with SIGINT ignored (a background start), interrupt the main thread
    as Ctrl-C does, wherever it is (loading, planning, writing the reports), so each ends
    the command with exit 130 and its ``finally`` blocks run (a run folder's lock is
    freed). While a run's rows run,
    :func:`~assay.orchestration.running.signals.stop_on_signals` takes them over (the rows are
    cancelled cleanly) and gives them back. Outside the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = [signal.SIGTERM]
    if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:  # nohup: it is to go on
        taken.append(signal.SIGHUP)
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        taken.append(signal.SIGINT)
    before = {sig: signal.getsignal(sig) for sig in taken}
    for sig in taken:
        signal.signal(sig, interrupt)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
