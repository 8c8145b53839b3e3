"""Shared helpers for the benchmarks: timing whole processes, medians, anchor locations.

Every figure is a whole-process wall time (and peak memory from ``/usr/bin/time``), measured
in the same session as the anchor it is compared with, interleaved A B A B ..., and reported
as medians and ratios: absolute times on a shared 2-core machine say little on their own.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / "work"
ASSAY = [sys.executable, "-m", "assay"]
CE_PYTHON_VERSION = "3.13.0"
CE_VENV = WORK / "coder-eval-venv"
INSPECT_VENV = WORK / "inspect-venv"
SST2 = REPO / "examples" / "sst2" / "data" / "sst2_dev.jsonl"


@dataclass(frozen=True)
class Timing:
    """One whole-process measurement: seconds of wall time and peak resident memory."""

    seconds: float
    peak_kb: int
    returncode: int


def timed(command: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> Timing:
    """Run ``command`` under ``/usr/bin/time`` and return its wall time and peak memory."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        done = subprocess.run(
            ["/usr/bin/time", "-o", report.name, "-f", "%e %M", *command],
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        fields = Path(report.name).read_text().split()
    if done.returncode not in (0, 1) or "Traceback" in done.stderr:
        sys.stderr.write(done.stderr[-3000:])
        raise RuntimeError(f"{command[0]} failed with exit code {done.returncode}")
    return Timing(float(fields[-2]), int(fields[-1]), done.returncode)


def median(values: list[float]) -> float:
    """The median of ``values``."""
    return statistics.median(values)


def write_rows(path: Path, n: int) -> None:
    """``n`` rows ``{id, text, expected}`` cycled from the SST-2 dev rows in examples/."""
    source = [json.loads(line) for line in SST2.read_text(encoding="utf-8").splitlines()]
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            row = source[i % len(source)]
            handle.write(json.dumps({"id": f"r{i:06d}", "text": row["text"],
                                     "expected": row["label"]}) + "\n")  # fmt: skip


def ce_command() -> list[str]:
    """The Coder Eval 0.12.16 command (see setup_anchors.sh)."""
    return [str(CE_VENV / "bin" / "coder-eval")]


def save(name: str, data: dict[str, object]) -> None:
    """Write a benchmark's figures to ``bench/results/<name>.json``."""
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n")


def rates(seconds: dict[str, list[float]], rows: int) -> dict[str, object]:
    """Per client: median seconds, requests/s, and its share of the ``bare`` client's rate."""
    ceiling = rows / median(seconds["bare"])
    out: dict[str, object] = {}
    for name, values in seconds.items():
        if values:
            rate = rows / median(values)
            out[name] = {"seconds": median(values), "req_per_s": rate,
                         "share_of_ceiling": rate / ceiling, "all_seconds": values}  # fmt: skip
    return out
