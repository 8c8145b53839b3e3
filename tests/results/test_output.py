"""What assay prints is redacted: streams wrapped for a block, joined by inner blocks (so a
stream kept from before a run redacts the run's values), a crash's traceback included."""

from __future__ import annotations

import io
import os
import subprocess
import sys

from assay.results.io import Writer
from assay.results.output import RedactingStream, redacted_output
from assay.results.secrets import Redactor


def redactor_of(name: str, value: str) -> Redactor:
    redactor = Redactor()
    redactor.add(name, value)
    return redactor


def test_a_stream_kept_from_before_the_run_redacts_the_run_values() -> None:
    sink = io.StringIO()
    outer = redactor_of("OPENAI_API_KEY", "outer-secret-value")
    saved = sys.stderr
    sys.stderr = sink
    try:
        with redacted_output(Writer(outer)):
            kept = sys.stderr  # a progress display made before the run keeps this
            with redacted_output(Writer(redactor_of("MY_LLM", "inner-secret-value"))):
                print("a outer-secret-value b inner-secret-value", file=kept)
            print("after inner-secret-value outer-secret-value", file=kept)
        assert sys.stderr is sink
    finally:
        sys.stderr = saved
    assert sink.getvalue().splitlines() == [
        "a [redacted:OPENAI_API_KEY] b [redacted:MY_LLM]",
        "after inner-secret-value [redacted:OPENAI_API_KEY]",
    ]


def test_the_stream_passes_everything_else_through() -> None:
    sink = io.StringIO()
    stream = RedactingStream(sink, redactor_of("GH_TOKEN", "ghp-value-123"))
    assert stream.write("x ghp-value-123") == len("x ghp-value-123")
    stream.writelines(["\n", "y"])
    assert sink.getvalue() == "x [redacted:GH_TOKEN]\ny"
    assert stream.isatty() is False and stream.getvalue() == sink.getvalue()


CRASH = """
import os, sys
from assay.cli import app as cli

@cli.app.command("boom")
def boom() -> None:
    raise RuntimeError("crashed holding " + os.environ["OPENAI_API_KEY"])

sys.argv = ["assay", "boom"]
cli.main()
"""


def test_a_crash_traceback_is_printed_redacted_and_exits_1() -> None:
    key = "sk-proj-CrashKey1234567890abcdef"
    done = subprocess.run([sys.executable, "-c", CRASH], capture_output=True, text=True,
                          env={**os.environ, "OPENAI_API_KEY": key})  # fmt: skip
    assert done.returncode == 1
    assert "RuntimeError: crashed holding [redacted:OPENAI_API_KEY]" in done.stderr
    assert key not in done.stderr + done.stdout
