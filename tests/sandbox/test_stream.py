"""stream_process: a coding agent's CLI, its output read line by line as it comes."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from assay.sandbox import process
from assay.sandbox.process import StreamResult, stream_process


def stream(argv: list[str], cwd: Path, *, timeout: float = 30,
           stop_after: float | None = None) -> tuple[StreamResult, list[str]]:  # fmt: skip
    lines: list[str] = []

    async def main() -> StreamResult:
        stop = asyncio.Event()
        if stop_after is not None:
            asyncio.get_running_loop().call_later(stop_after, stop.set)
        return await stream_process(
            argv,
            cwd=cwd,
            env={"PATH": "/usr/bin:/bin"},
            timeout=timeout,
            on_line=lines.append,
            stop=stop,
        )

    return asyncio.run(main()), lines


DAEMON = "import os, sys, time\nprint('{\"answer\": 1}', flush=True)\nif os.fork() == 0:\n" \
         "    os.setsid()\n    time.sleep(30)\n"  # fmt: skip


def test_a_cli_that_leaves_a_daemon_on_stdout_ends_when_it_exits(tmp_path: Path) -> None:
    # The daemon left its session, so the group kill cannot reach it, and it holds stdout:
    # the CLI still ends (exit 0, its answer kept) after the bounded drain, not at the
    # timeout (it used to wait for the pipe: a lost answer and a TIMEOUT).
    result, lines = stream([sys.executable, "-c", DAEMON], tmp_path, timeout=60)
    assert (result.exit_code, result.timed_out, result.stopped) == (0, False, False)
    assert lines == ['{"answer": 1}']
    assert result.seconds < 60


def test_the_timeout_and_the_stop_event_kill_the_group(tmp_path: Path) -> None:
    timed, _ = stream(["sh", "-c", "echo started; sleep 60"], tmp_path, timeout=1)
    assert (timed.exit_code, timed.timed_out, timed.stopped) == (None, True, False)
    stopped, lines = stream(["sh", "-c", "echo started; sleep 60"], tmp_path, stop_after=0.5)
    assert (stopped.exit_code, stopped.timed_out, stopped.stopped) == (None, False, True)
    assert lines == ["started"]


def test_lines_of_any_length_arrive_whole_and_a_last_line_without_newline_too(
    tmp_path: Path,
) -> None:
    script = "import sys\nsys.stdout.write('a' * 3_000_000 + '\\n' + 'b\\n' * 5 + 'tail')\n"
    result, lines = stream([sys.executable, "-c", script], tmp_path)
    assert result.exit_code == 0
    assert [len(x) for x in lines] == [3_000_000, 1, 1, 1, 1, 1, 4] and lines[-1] == "tail"


def test_a_line_longer_than_the_limit_is_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "MAX_LINE", 100_000)
    script = "import sys\nsys.stdout.write('x' * 1_000_000 + '\\nnext\\n')\n"
    _, lines = stream([sys.executable, "-c", script], tmp_path)
    assert [len(x) for x in lines] == [100_000, 4]
