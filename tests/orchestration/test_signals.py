"""stop_on_signals in this process: the signal cancels the run's task, and afterwards every
signal is handled as before (a library's host keeps its own dispositions).

Each test sets SIGINT's disposition itself and restores pytest's afterwards, so the result
does not depend on how pytest was started."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.orchestration.running.signals import stop_on_signals
from tests.helpers import write
from tests.plugin_helpers import distribution, with_path


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


BLOCKING = """
import os, time
from typing import Literal
from assay.criteria import Criterion
from assay.criteria.base import basic_result

class Blocks(Criterion):
    type: Literal["blocks"]

    async def check(self, context):
        if context.row["id"] == "b":  # holds the event loop: no await
            open(os.environ["BLOCK_MARK"], "w").close()
            time.sleep(3600)
        return basic_result(self, 1.0, "")
"""


def test_sigterm_stops_a_run_whose_event_loop_a_criterion_blocks(tmp_path: Path) -> None:
    """A criterion of one's own that blocks the loop (``time.sleep`` in ``async def``): the
    loop cannot take SIGTERM, so after the grace the main thread is interrupted as by Ctrl-C;
    the run stops with 130 and keeps the finished row (it ran on until SIGKILL)."""
    distribution(tmp_path / "site", "blocking", "assay.criteria", {"blocks": "blocking:Blocks"},
                 BLOCKING)  # fmt: skip
    write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: '${row.id}'\n"
          "agent: {type: llm, model: mock/echo}\n"
          "dataset: {rows: [{id: a}, {id: b}]}\nsuccess_criteria: [{type: blocks}]\n")  # fmt: skip
    mark = tmp_path / "blocked"
    env = with_path(tmp_path / "site") | {"BLOCK_MARK": str(mark)}
    run = subprocess.Popen([sys.executable, "-m", "assay", "run", "t.yaml", "-j", "1", "-q"],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not mark.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.exists(), run.communicate(timeout=5)
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 130, out + err
    (folder,) = [p for p in (tmp_path / "runs").iterdir() if not p.is_symlink()]
    assert (folder / "default" / "t" / "a" / "00" / "task.json").exists()
    assert not (folder / "default" / "t" / "b" / "00" / "task.json").exists()


WAITS = """
import signal, sys, time
for name in sys.argv[1:]:
    signal.signal(getattr(signal, name), signal.SIG_IGN)  # as a background start, or nohup
from assay.interrupts import interrupting_signals
try:
    with interrupting_signals():
        print("ready", flush=True)
        time.sleep(30)
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.parametrize(("ignored", "sent", "stops"), [
    (["SIGINT"], signal.SIGINT, True),  # a background start: a CI's cancel
    ([], signal.SIGHUP, True),  # a closed terminal
    (["SIGHUP"], signal.SIGHUP, False),  # nohup: it goes on
    ([], signal.SIGTERM, True),
])  # fmt: skip
def test_a_command_is_interrupted_by_the_signals_that_stop_a_run(
    ignored: list[str], sent: signal.Signals, stops: bool
) -> None:
    """Before and after a run's rows (loading, the reports) a background SIGINT was dropped,
    and SIGHUP and SIGTERM killed the process without its clean-up (a platform engineer's
    break-test)."""
    process = subprocess.Popen([sys.executable, "-c", WAITS, *ignored], stdout=subprocess.PIPE,
                               text=True)  # fmt: skip
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    process.send_signal(sent)
    try:
        process.wait(5 if stops else 1)
    except subprocess.TimeoutExpired:
        process.terminate()
        process.wait(5)
        assert not stops, f"{sent!r} did not interrupt"
        return
    assert stops and process.returncode == 130
