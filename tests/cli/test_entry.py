"""The console-script entry: the command line runs with the collector set for a long run."""

from __future__ import annotations

import subprocess
import sys

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
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    assert done.stdout.split()[-3:] == ["0", "True", "True"], done.stderr
    assert "Usage: assay" in done.stdout


def test_python_dash_m_assay_uses_the_entry() -> None:
    done = subprocess.run([sys.executable, "-m", "assay", "--help"], capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0 and "Usage: " in done.stdout
