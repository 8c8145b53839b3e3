"""Which signals stop a run: Ctrl-C (SIGINT) and SIGTERM, however the process was started.

A run stops cleanly on either: the run's main task is cancelled, rows in flight are cancelled
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


@contextmanager
def stop_on_signals(*, enabled: bool = True) -> Iterator[None]:
    """While the block runs, cancel the current task (the run) on SIGTERM, and on SIGINT when
    the process started with SIGINT ignored; afterwards each signal is handled as before.

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
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        taken.append(signal.SIGINT)
    before = {sig: signal.getsignal(sig) for sig in taken}
    for sig in taken:
        loop.add_signal_handler(sig, task.cancel)
    try:
        yield
    finally:
        for sig, handler in before.items():
            loop.remove_signal_handler(sig)  # sets SIGINT's Python handler, SIGTERM's default
            signal.signal(sig, handler)
