"""stop_on_signals in this process: the signal cancels the run's task, and afterwards every
signal is handled as before (a library's host keeps its own dispositions).

Each test sets SIGINT's disposition itself and restores pytest's afterwards, so the result
does not depend on how pytest was started."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import pytest

from assay.orchestration.running.signals import stop_on_signals


@pytest.fixture
def dispositions() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def cancelled_by(sig: signal.Signals, *, enabled: bool = True) -> bool:
    """Send ``sig`` to this process inside the block; True if it cancelled the task."""

    async def run() -> bool:
        with stop_on_signals(enabled=enabled):
            try:
                os.kill(os.getpid(), sig)
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                return True
        return False

    return asyncio.run(run())  # the 30 s sleep bounds a signal that never arrives


@pytest.mark.usefixtures("dispositions")
def test_sigint_ignored_at_start_cancels_the_run_and_is_ignored_again_after() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    assert cancelled_by(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


@pytest.mark.usefixtures("dispositions")
def test_sigterm_cancels_the_run_and_its_handler_is_restored_after() -> None:
    def host(signum: int, frame: object) -> None:  # a handler the host process had
        raise AssertionError("not while the run has SIGTERM")

    signal.signal(signal.SIGTERM, host)
    assert cancelled_by(signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is host


@pytest.mark.usefixtures("dispositions")
def test_a_sigint_handler_of_its_own_is_kept() -> None:
    """In a foreground start SIGINT has Python's handler; asyncio.run turns it into the
    cancellation (Ctrl-C), so stop_on_signals leaves SIGINT to it."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    assert cancelled_by(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("dispositions")
def test_disabled_or_outside_a_task_it_leaves_the_signals_alone() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    seen = []

    async def run() -> None:
        with stop_on_signals(enabled=False):
            seen.append((signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)))

    asyncio.run(run())
    with stop_on_signals():  # no event loop, no task
        seen.append((signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)))
    assert seen == [(signal.SIG_IGN, signal.SIG_DFL)] * 2
