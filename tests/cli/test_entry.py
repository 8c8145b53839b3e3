"""The console-script entry: the command line runs with the collector set for a long run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import assay

PROBE = """
import gc, sys
sys.argv = ["assay", "--help"]
from assay.cli.entry import YOUNG_THRESHOLD, main
try:
    main()
except SystemExit as done:
    print(done.code, gc.get_threshold()[0] == YOUNG_THRESHOLD, gc.get_freeze_count() > 1000)
"""


def test_entry_runs_the_cli_with_the_young_threshold_and_frozen_imports() -> None:
    # a real process: the collector settings are process-wide, set once by the entry
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    assert done.stdout.split()[-3:] == ["0", "True", "True"], done.stderr
    assert "Usage: assay" in done.stdout


def test_python_dash_m_assay_uses_the_entry() -> None:
    # a real process: `python -m assay` itself
    done = subprocess.run([sys.executable, "-m", "assay", "--help"], capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0 and "Usage: " in done.stdout


def test_help_in_a_pipe_is_laid_out_wide_enough_to_keep_every_word() -> None:
    """Field report: ``assay run --help | less`` (or a CI log) cut long words at rich's 80
    columns (``dataset.stratify_fie…``). A real process: its output is a pipe."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    done = subprocess.run([sys.executable, "-m", "assay", "run", "--help"],
                          capture_output=True, text=True, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout and "(dataset.stratify_field)" in done.stdout
    narrow = subprocess.run([sys.executable, "-m", "assay", "run", "--help"], capture_output=True,
                            text=True, env={**env, "TERMINAL_WIDTH": "80"})  # fmt: skip
    assert max(map(len, narrow.stdout.splitlines())) == 80  # the user's own width stands


CRASH = """
import os, sys
import assay.cli.app as command_line

def crash():
    raise RuntimeError("bug while holding " + os.environ["GITHUB_TOKEN"])

command_line.app = crash  # a bug inside a command
sys.argv = ["assay", "plan", "t.yaml"]
from assay.cli.entry import main
main()
"""


def test_a_crash_prints_its_traceback_redacted_and_exits_1() -> None:
    # a real process: what an uncaught bug shows on a terminal and the exit status it leaves
    token = "ghp_Cr4shT0k3nV4lu3F0rEntryT3st9x"
    done = subprocess.run([sys.executable, "-c", CRASH], capture_output=True, text=True,
                          env={**os.environ, "GITHUB_TOKEN": token})  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("Traceback (most recent call last):"), done.stderr
    assert done.stderr.rstrip().endswith(
        "RuntimeError: bug while holding [redacted:GITHUB_TOKEN]"
    ), done.stderr
    assert token not in done.stderr + done.stdout


FROZEN_AT_EXIT = """
import gc, sys
import assay.cli.app as command_line

made = []

def command():
    made.append([])  # a container the command makes, alive when it ends
    raise SystemExit(3)

command_line.main = command
from assay.cli.entry import main
try:
    main()
except SystemExit as done:
    inner = made[0]
    print(done.code, any(o is inner for o in gc.get_objects()))
"""


def test_what_is_alive_when_the_command_ends_is_frozen_for_the_exit() -> None:
    # a real process: the exit then skips collecting it again (gc.get_objects() lists the
    # collector's generations; frozen objects are in none of them)
    done = subprocess.run([sys.executable, "-c", FROZEN_AT_EXIT], capture_output=True,
                          text=True)  # fmt: skip
    assert done.stdout.split() == ["3", "False"], done.stderr


def test_version_is_printed_for_a_bug_report(tmp_path: Path) -> None:
    """Found by a newcomer: `assay --version` was "No such option"."""
    from tests.cli.inproc import run_in_process

    done = run_in_process("--version", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, f"assay {assay.__version__}\n")
