"""``run_process``: real subprocesses, their output, stdin, environment and the hard timeout."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from assay.sandbox.process import (
    TAIL_BYTES,
    ProcessResult,
    error_tail,
    exit_text,
    pidfd_child_watcher,
    run_process,
    tail,
)
from tests.helpers import alive, kill_left, pids_in, wait_gone


def run(
    command: str | list[str],
    cwd: Path,
    *,
    env: dict[str, str] | None = None,
    timeout: float = 20,
    stdin: str | None = None,
) -> ProcessResult:
    return asyncio.run(
        run_process(
            command,
            cwd=cwd,
            env=dict(os.environ) if env is None else env,
            timeout=timeout,
            stdin=stdin,
        )
    )


def appears(path: Path, within: float = 10) -> bool:
    """True once ``path`` exists (polled), False if it never shows up within ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return path.exists()


def test_stdout_stderr_and_exit_code_are_captured(tmp_path: Path) -> None:
    result = run("echo out; echo err >&2; exit 3", tmp_path)
    assert result == ProcessResult(3, "out\n", "err\n", False, result.seconds)
    assert result.seconds >= 0


def test_success_has_exit_code_zero(tmp_path: Path) -> None:
    result = run(["true"], tmp_path)
    assert (result.exit_code, result.stdout, result.stderr, result.timed_out) == (0, "", "", False)


def test_stdin_text_is_fed_and_closed(tmp_path: Path) -> None:
    result = run(["cat"], tmp_path, stdin="héllo\nworld")
    assert result.stdout == "héllo\nworld"
    # UTF-8 on the wire: "héllo\n" is 7 bytes.
    assert run("head -n 1 | wc -c", tmp_path, stdin="héllo\nworld").stdout.strip() == "7"


def test_no_stdin_reads_as_empty_instead_of_waiting(tmp_path: Path) -> None:
    result = run(["cat"], tmp_path, timeout=10)
    assert (result.exit_code, result.stdout, result.timed_out) == (0, "", False)


def test_stdin_a_program_never_reads_is_not_an_error(tmp_path: Path) -> None:
    result = run(["true"], tmp_path, stdin="x" * 1_000_000)
    assert (result.exit_code, result.timed_out) == (0, False)


def test_large_stdin_and_output_do_not_deadlock(tmp_path: Path) -> None:
    script = "import sys; data = sys.stdin.read(); sys.stdout.write(data); sys.stderr.write(data)"
    payload = "0123456789" * 200_000  # 2 MB: far beyond a pipe's buffer
    result = run([sys.executable, "-c", script], tmp_path, stdin=payload)
    assert result.exit_code == 0
    assert result.stdout == payload
    assert result.stderr == payload


def test_argv_list_is_not_interpreted_by_a_shell(tmp_path: Path) -> None:
    env = {**os.environ, "GREETING": "hi"}
    result = run(["printf", "%s|%s", "$GREETING", "a;  b"], tmp_path, env=env)
    assert result.stdout == "$GREETING|a;  b"


def test_shell_string_is_interpreted_by_the_shell(tmp_path: Path) -> None:
    env = {**os.environ, "GREETING": "hi"}
    result = run("printf '%s|' $GREETING; echo a;  echo   b", tmp_path, env=env)
    assert result.stdout == "hi|a\nb\n"


def test_missing_program_in_argv_mode_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run(["assay-no-such-program-xyz"], tmp_path)


def test_missing_program_in_a_shell_string_is_exit_127(tmp_path: Path) -> None:
    result = run("assay-no-such-program-xyz", tmp_path)
    assert result.exit_code == 127
    assert "not found" in result.stderr


def test_runs_in_the_given_directory(tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("x", encoding="utf-8")
    assert run(["pwd", "-P"], tmp_path).stdout.strip() == str(tmp_path.resolve())
    assert run(["ls"], tmp_path).stdout.split() == ["here.txt"]


def test_environment_is_exactly_the_one_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_TEST_LEAK", "leaked")
    env = {"PATH": os.environ["PATH"], "ONLY_THIS": "1"}
    lines = run(["env"], tmp_path, env=env).stdout.splitlines()
    assert "ONLY_THIS=1" in lines
    assert not any(line.startswith("ASSAY_TEST_LEAK=") for line in lines)
    assert not any(line.startswith("HOME=") for line in lines)


def test_invalid_utf8_output_is_decoded_with_replacement_characters(tmp_path: Path) -> None:
    script = (
        "import sys; sys.stdout.buffer.write(b'ok\\xff\\xfeend'); "
        "sys.stderr.buffer.write(b'\\xc3(')"
    )
    result = run([sys.executable, "-c", script], tmp_path)
    assert result.stdout == "ok\ufffd\ufffdend"
    assert result.stderr == "\ufffd("


def test_timeout_returns_timed_out_without_exit_code(tmp_path: Path) -> None:
    result = run("sleep 30; echo late", tmp_path, timeout=0.3)
    assert result.timed_out is True
    assert result.exit_code is None
    assert result.stdout == ""  # killed, not waited for: "late" never came


def test_timeout_keeps_output_printed_before_the_kill(tmp_path: Path) -> None:
    # 3 s: time enough for a shell on a loaded machine to print two lines before the kill
    result = run("echo started; echo warming >&2; sleep 30", tmp_path, timeout=3)
    assert result.timed_out is True
    assert result.stdout == "started\n"
    assert result.stderr == "warming\n"


def test_background_child_outlives_a_finished_command(tmp_path: Path) -> None:
    # The control for the tests below: without a timeout, a detached child keeps running
    # and writes its marker, so the marker check can detect a child that survived.
    marker = tmp_path / "control"
    result = run(f"(sleep 0.3; touch '{marker}') >/dev/null 2>&1 &", tmp_path)
    assert (result.exit_code, result.timed_out) == (0, False)
    assert appears(marker)


# A background child records its pid, then waits; the shell waits until the pid is written,
# so when the timeout strikes the child certainly exists. 3 s is time enough for that on a
# loaded machine; a child that never started fails the test instead of passing it. The
# child would live 300 s, far past the 30 s the test waits for it to be gone.
CHILD = "sh -c 'echo $$ > {pid}; exec sleep 300'"
UNTIL_STARTED = "while [ ! -s {pid} ]; do sleep 0.01; done"


@pytest.mark.parametrize(
    "command",
    [
        f"{CHILD} & {UNTIL_STARTED}; sleep 30",
        f"{CHILD} >/dev/null 2>&1 </dev/null & {UNTIL_STARTED}; sleep 30",
        f"{CHILD} & {UNTIL_STARTED}; exec sleep 30",
    ],
)
def test_timeout_kills_the_whole_process_group(tmp_path: Path, command: str) -> None:
    pid = tmp_path / "pid"
    try:
        result = run(command.format(pid=pid), tmp_path, timeout=3)
        assert result.timed_out is True
        assert pids_in(pid), "the background child never started: the test proved nothing"
        wait_gone(pids_in(pid))  # a background child survived the timeout if this fails
    finally:
        kill_left(pids_in(pid))


def test_timeout_kills_an_argv_program_group(tmp_path: Path) -> None:
    pid = tmp_path / "pid"
    command = ["sh", "-c", f"{CHILD} & {UNTIL_STARTED}; sleep 30".format(pid=pid)]
    try:
        assert run(command, tmp_path, timeout=3).timed_out is True
        assert pids_in(pid), "the background child never started: the test proved nothing"
        wait_gone(pids_in(pid))
    finally:
        kill_left(pids_in(pid))


def test_a_child_holding_the_pipe_open_is_killed_at_the_timeout(tmp_path: Path) -> None:
    # The shell exits at once, but its background child still holds stdout: the command
    # is not finished until the pipe closes, so the timeout ends it and keeps the output.
    result = run("sleep 30 & echo hi", tmp_path, timeout=0.5)
    assert (result.timed_out, result.exit_code, result.stdout) == (True, None, "hi\n")


def test_a_child_left_holding_the_pipe_is_ended_once_the_program_exits(tmp_path: Path) -> None:
    """A break-test's row (``server & echo 'answer: 42'`` on tempdir) ran into its whole
    task_timeout: what a program leaves holding its output is ended shortly after it exits,
    as the bwrap and docker drivers end it, and the result is the program's own."""
    pid = tmp_path / "pid"
    try:
        result = run(f"{CHILD} & {UNTIL_STARTED}; echo hi".format(pid=pid), tmp_path, timeout=120)
        assert (result.timed_out, result.exit_code, result.stdout) == (False, 0, "hi\n")
        assert pids_in(pid), "the background child never started: the test proved nothing"
        wait_gone(pids_in(pid))
    finally:
        kill_left(pids_in(pid))


def test_a_pipe_held_by_a_process_that_left_the_group_does_not_hang(tmp_path: Path) -> None:
    # A daemon (new session) survives the group kill and keeps stdout open: the output
    # read so far is returned once the drain gives up, and nothing raises. The daemon
    # outlives the timeout and the drain whatever the machine's load; the test ends it.
    pid = tmp_path / "pid"
    script = (
        "import os, pathlib, time\n"
        "print('hi', flush=True)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    pathlib.Path({str(pid)!r}).write_text(str(os.getpid()))\n"
        "    time.sleep(120)\n"
    )
    try:
        result = run([sys.executable, "-c", script], tmp_path, timeout=30)
        assert (result.timed_out, result.exit_code, result.stdout) == (False, 0, "hi\n")
        assert [p for p in pids_in(pid) if alive(p)], "the daemon should still hold the pipe"
    finally:
        for daemon in pids_in(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(daemon, signal.SIGKILL)


def test_cancellation_kills_the_process_group(tmp_path: Path) -> None:
    pid = tmp_path / "pid"

    async def cancel_once_started() -> None:
        task = asyncio.ensure_future(
            run_process(
                f"{CHILD} & sleep 30".format(pid=pid),
                cwd=tmp_path,
                env=dict(os.environ),
                timeout=60,
            )
        )
        while not pids_in(pid):  # cancelled only once the background child exists
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(asyncio.wait_for(cancel_once_started(), timeout=60))
        wait_gone(pids_in(pid))
    finally:
        kill_left(pids_in(pid))


def test_tail_keeps_the_end_and_marks_the_cut() -> None:
    assert tail("abc", 5) == "abc"
    assert tail("abcde", 5) == "abcde"
    assert tail("one two three", 9) == "…two three"


def test_tail_never_splits_a_key_at_the_cut() -> None:
    assert tail("one two three", 7) == "… three"  # 'o three' would start inside a word
    text = "refused key sk-proj-Ab12Cd34Ef56 for user x"
    cut = tail(text, len(text) - len("refused key sk-pro"))
    assert cut == "… for user x"
    assert tail("x" * 600, 500) == "…" + "x" * 244  # at most 256 characters more are dropped


def test_the_child_watcher_is_given_back_after_the_block() -> None:
    """A run installs a pidfd child watcher tied to its event loop (Python 3.11); left
    installed, every later event loop of the process failed to start a subprocess
    ("asyncio.get_child_watcher() is not activated"), as the browser tests did after an
    in-process assay.run."""

    async def spawn() -> int:
        process = await asyncio.create_subprocess_exec("true")
        return await process.wait()

    async def inside() -> int:
        with pidfd_child_watcher():
            return await spawn()

    assert asyncio.run(inside()) == 0
    loop = asyncio.new_event_loop()  # a loop of its own, never the policy's (as Playwright's)
    try:
        assert loop.run_until_complete(spawn()) == 0
    finally:
        loop.close()


def test_exit_text_names_the_signal_and_the_limit_behind_it() -> None:
    assert exit_text(1) == "exited with code 1"
    assert exit_text(None) == "exited with code None"
    assert exit_text(-9) == "exited with code -9 (SIGKILL)"
    assert exit_text(137) == "exited with code 137 (SIGKILL)"
    assert exit_text(152) == (
        "exited with code 152 (SIGXCPU: the CPU time passed sandbox.limits.cpu_seconds)"
    )
    assert exit_text(255) == "exited with code 255"  # 128 + 127: no such signal


def test_a_container_that_did_not_start_is_said_so_not_as_a_programs_exit() -> None:
    """A break-test: every row of an image without ``sleep`` said "the agent command exited
    with code 125", though no agent ran."""
    from assay.sandbox.process import container_not_started

    said = "noise\nassay: the row's container did not start (docker run, image i): no sleep\n"
    assert container_not_started(125, said) == (
        "the row's container did not start (docker run, image i): no sleep"
    )
    assert container_not_started(1, said) is None  # a program's own exit
    assert container_not_started(125, "docker: invalid reference format\n") is None


def test_exit_text_names_the_limit_behind_an_error_the_program_printed() -> None:
    """Python ignores SIGXFSZ: a write past max_file_size_mb is its ``OSError``, which named
    no limit (a break-test)."""
    efbig = "Traceback ...\nOSError: [Errno 27] File too large\n"
    assert exit_text(1, stderr=efbig) == (
        "exited with code 1 (EFBIG: a file may not grow past sandbox.limits.max_file_size_mb)"
    )
    emfile = "OSError: [Errno 24] Too many open files: '/dev/null'\n"
    assert exit_text(1, stderr=emfile).endswith(
        "(EMFILE: a process may not open more files than sandbox.limits.max_open_files)"
    )
    assert exit_text(1, stderr="File too large\n" + "x" * 5000) == "exited with code 1"
    node = "Error: EFBIG: file too large, write\n    at Object.writeSync (node:fs:927:3)\n"
    assert "max_file_size_mb" in exit_text(1, stderr=node)  # Node's and Go's: lower case
    assert "max_open_files" in exit_text(1, stderr="open x: too many open files\n")
    assert "max_open_files" in exit_text(1, stderr="Error: EMFILE, open 'f'\n")
    assert exit_text(1, stderr="EMFILES and EFBIGGER\n") == "exited with code 1"  # words only
    assert exit_text(1, stderr=efbig, limits=False) == "exited with code 1"  # tempdir sets none
    assert exit_text(153, limits=False) == "exited with code 153 (SIGXFSZ)"  # the host's limit
    assert exit_text(0, stderr=efbig) == "exited with code 0"  # a success names nothing
    assert exit_text(153, stderr=efbig) == (  # the signal, when one ended it
        "exited with code 153 (SIGXFSZ: a file grew past sandbox.limits.max_file_size_mb)"
    )


@pytest.mark.parametrize("ticks", range(8))
def test_a_cancellation_at_any_point_of_the_start_ends_the_group(
    tmp_path: Path, ticks: int
) -> None:
    """Cancelled after ``ticks`` turns of the event loop: also while the pipes are still being
    connected, what the program started in the background ends with it."""
    pid = tmp_path / "pid"

    async def cancel_after_ticks() -> None:
        task = asyncio.ensure_future(
            run_process(
                f"{CHILD} & sleep 30".format(pid=pid),
                cwd=tmp_path,
                env=dict(os.environ),
                timeout=60,
            )
        )
        for _ in range(ticks):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.3)  # a child the shell was still starting writes its pid

    try:
        asyncio.run(asyncio.wait_for(cancel_after_ticks(), timeout=60))
        wait_gone(pids_in(pid))
    finally:
        kill_left(pids_in(pid))


def test_past_the_cap_the_streams_end_is_kept_too_and_never_starts_inside_a_token(
    tmp_path: Path,
) -> None:
    """A break-test's test runner printed its verdict after 11 MB of log and scored 0.0: of
    a stream past the cap the last TAIL_BYTES are kept as well (what is graded is the start
    and the end; the note says how much between was not kept), and the end starts after a
    token shape it would split, as the start ends before one."""
    token = "ghp_" + "Ab3dE" * 8
    body = "x" * 1000 + "y" * 200_000 + " " + token + " " + "z" * (TAIL_BYTES - 20) + "VERDICT"
    (tmp_path / "out.txt").write_text(body)
    result = asyncio.run(run_process("cat out.txt", cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                                     timeout=30, max_output_bytes=1000))  # fmt: skip
    start, end = result.stdout[:1000], result.stdout[1001:]
    assert start == "x" * 1000 and result.stdout[1000] == "\n"  # a line break between them
    assert end == " " + "z" * (TAIL_BYTES - 20) + "VERDICT"  # after the token, not inside it
    assert result.stdout_note == (
        f"\n[assay: output cut after 1000 bytes; {len(body) - 1000 - len(end)} more bytes "
        f"dropped; the last {len(end)} bytes above are its end]\n"
    )
    assert result.dropped == len(body) - 1000
    short = "x" * 1000 + "y" * (TAIL_BYTES + 1000)  # too little past the cap to keep an end
    (tmp_path / "out.txt").write_text(short)
    result = asyncio.run(run_process("cat out.txt", cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
                                     timeout=30, max_output_bytes=1000))  # fmt: skip
    assert result.stdout == "x" * 1000 and "above are its end" not in result.stdout_note


NODE_FAILURE = (
    "node:fs:2380\n    return binding.writeFileUtf8(\n           ^\n\n"
    "Error: EFBIG: file too large, write\n"
    + "".join(f"    at frame{n} (node:internal/modules/cjs/loader:{n}:{n})\n" for n in range(12))
    + "  errno: -27,\n  code: 'EFBIG'\n}\n\nNode.js v20.20.2\n"
)


def test_an_errors_own_line_is_kept_in_front_of_a_stack_that_fills_the_tail() -> None:
    """Found in review: a Node program's 500-character error tail was its stack alone; the
    ``Error: …`` line above it (written first, as Node, the JVM and Go do) was cut away."""
    said = error_tail(NODE_FAILURE)
    assert said.startswith("Error: EFBIG: file too large, write …")
    assert said.endswith("Node.js v20.20.2") and len(said) < 600
    jvm = ("Exception in thread main java.lang.RuntimeException: outer\n\tat A.b(A.java:1)\n"
           "Caused by: java.io.IOException: No space left on device\n"
           + "\tat java.io.FileOutputStream.write(FileOutputStream.java:326)\n" * 12)  # fmt: skip
    assert error_tail(jvm).startswith("Caused by: java.io.IOException: No space left on device …")
    go = ("panic: open /x: too many open files\n\ngoroutine 1 [running]:\n"
          + "main.main()\n\t/src/main.go:12 +0x1d\n" * 20)  # fmt: skip
    assert error_tail(go).startswith("panic: open /x: too many open files …")


def test_an_error_tail_is_the_plain_tail_where_nothing_was_cut_away() -> None:
    python = "Traceback (most recent call last):\n" + '  File "x.py", line 1\n' * 40
    python += "OSError: [Errno 27] File too large"
    assert error_tail(python) == tail(python, 500)  # Python's message is last: kept already
    assert error_tail("  boom \n") == "boom"
    short = "Error: boom\n    at f (x.js:1:1)\n"
    assert error_tail(short) == short.strip()
    assert error_tail("x" * 2000) == tail("x" * 2000, 500)
    # a long error line is shortened, not dropped (findings K: a Go panic over 500)
    long_cause = "panic: " + "y " * 400 + "\n\ngoroutine 1 [running]:\n" + "main.f()\n" * 80
    said = error_tail(long_cause)
    assert said.startswith("panic: y y") and len(said) < 800 and said.endswith("main.f()")
    # an indented "at" that is prose, not a frame, names no error (findings K)
    prose = "   at startup we load config\nTraceback (most recent call last):\n" + python
    assert error_tail(prose) == tail(prose, 500)
