"""Which signals stop a run: Ctrl-C (SIGINT), SIGTERM and SIGHUP, however the process was
started.

A run stops cleanly on any of them (SIGHUP unless ``nohup`` made the process ignore it): the
run's main task is cancelled, rows in flight are cancelled
and their processes killed, finished rows are kept, the reports are written and the exit code
is 130 (:mod:`assay.orchestration.running.runner`, :mod:`assay.reports.writer`).

Python turns SIGINT into ``KeyboardInterrupt``, and ``asyncio.run`` into a cancellation of
the main task, only when SIGINT had its default action when the process started. A process
started in the background by a non-interactive shell (``assay run … &`` in a script, a CI
step, ``setsid``/``nohup`` from a script) inherits SIGINT *ignored* (POSIX, "Asynchronous
Lists"), so an explicit ``kill -INT`` would be dropped silently while the rows ran on. A run
is a job someone may stop at any time, and a CI runner may cancel a step with SIGINT before
SIGTERM (GitHub Actions sends SIGTERM 7.5 s later), so a run takes SIGINT as it takes
SIGTERM in that case too. Where SIGINT has a handler already (``asyncio.run``'s, in a
foreground start), that handler is kept: a second Ctrl-C still interrupts at once.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from assay.interrupts import interrupt

GRACE_SECONDS = 5.0
"""How long the run's event loop has to take a signal before the main thread is interrupted
where it is (a criterion or agent of one's own that blocks the loop: ``time.sleep`` in an
``async def``)."""


@contextmanager
def stop_on_signals(*, enabled: bool = True) -> Iterator[None]:
    """While the block runs, cancel the current task (the run) on SIGTERM and SIGHUP, and on
    SIGINT when the process started with SIGINT ignored (or :func:`interrupting_signals`
    took it); afterwards each signal is handled as before.
    When the event loop does not take the signal within :data:`GRACE_SECONDS` (code that
    blocks it), the main thread is interrupted as by Ctrl-C (``KeyboardInterrupt``), which
    stops the run the same way.

    Use inside the running event loop, in the main thread; elsewhere (only the main thread
    receives signals) or with ``enabled=False`` (a library leaves its process's signals
    alone) it does nothing.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no event loop
        enabled = False
    task = asyncio.current_task() if enabled else None
    if task is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = [signal.SIGTERM]
    if signal.getsignal(signal.SIGHUP) in (signal.SIG_DFL, interrupt):  # not under nohup
        taken.append(signal.SIGHUP)
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, interrupt):  # a background start
        taken.append(signal.SIGINT)
    before = {sig: signal.getsignal(sig) for sig in taken}
    stopper = _Stopper(loop, task)
    for sig in taken:
        signal.signal(sig, stopper.on_signal)
    try:
        yield
    finally:
        stopper.close()
        for sig, handler in before.items():
            signal.signal(sig, handler)


class _Stopper:
    """Cancels the run through its event loop, and interrupts the main thread where the
    loop does not answer (see :func:`stop_on_signals`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self.loop, self.task = loop, task
        self.heard = threading.Event()
        self.timer: threading.Timer | None = None

    def on_signal(self, number: int, frame: FrameType | None) -> None:
        """Python runs it in the main thread, between two bytecodes (a blocking call is
        interrupted for it)."""
        if self.timer is None:
            self.loop.call_soon_threadsafe(self._cancel)
            self.timer = threading.Timer(GRACE_SECONDS, self._again, args=(number,))
            self.timer.daemon = True
            self.timer.start()
        elif not self.heard.is_set():  # the loop is held: stop the code that holds it
            raise KeyboardInterrupt

    def _cancel(self) -> None:
        self.heard.set()
        self.task.cancel()

    def _again(self, number: int) -> None:
        main = threading.main_thread().ident
        if not self.heard.is_set() and main is not None:
            signal.pthread_kill(main, number)

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
