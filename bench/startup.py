"""CPU time of a start: ``python -m assay --help`` (and a command's ``--help``), this tree's
code against an older commit's, interleaved A B A B ..., the median of each.

The CPU time (user + system seconds of the whole process, from the kernel's accounting
of the finished child) is what the start costs whoever runs it, on a busy machine too;
compile the sources first (``make install`` does) so that neither side pays for bytecode.

Usage: python bench/startup.py [--before REF] [--runs N]   (writes results/startup.json)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from common import BENCH, REPO

COMMANDS = (["--help"], ["run", "--help"], ["dataset", "--help"], ["qa", "convert", "--help"])


def cpu_seconds(arguments: list[str], *, src: Path) -> float:
    """User + system CPU seconds of one ``python -m assay ARGUMENTS`` run on ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "100"}
    child = subprocess.Popen([sys.executable, "-m", "assay", *arguments], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"assay {' '.join(arguments)} exited {child.returncode} on {src}")
    return usage.ru_utime + usage.ru_stime


def checkout(ref: str, into: Path) -> Path:
    """``src/`` of commit ``ref``, extracted into ``into`` and compiled; its path."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "src"],
                             check=True, capture_output=True).stdout  # fmt: skip
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into / "src")], check=True)
    return into / "src"


def main(before: str, runs: int) -> dict[str, object]:
    """Measure every command ``runs`` times on both sides; the medians and their ratio."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src")], check=True)
    with tempfile.TemporaryDirectory() as folder:
        old = checkout(before, Path(folder))
        figures: dict[str, object] = {}
        for arguments in COMMANDS:
            sides: dict[str, list[float]] = {"before": [], "after": []}
            for _ in range(runs + 1):  # the first pair warms the page cache, uncounted
                sides["before"].append(cpu_seconds(arguments, src=old))
                sides["after"].append(cpu_seconds(arguments, src=REPO / "src"))
            medians = {side: statistics.median(values[1:]) for side, values in sides.items()}
            figures["assay " + " ".join(arguments)] = {
                "cpu_s_median_before": round(medians["before"], 3),
                "cpu_s_median_after": round(medians["after"], 3),
                "after_over_before": round(medians["after"] / medians["before"], 3),
                "cpu_s_before": [round(v, 3) for v in sides["before"][1:]],
                "cpu_s_after": [round(v, 3) for v in sides["after"][1:]],
            }
    return {"before": before, "runs": runs, "python": sys.version.split()[0], **figures}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="0f91c03", help="the commit to compare with")
    parser.add_argument("--runs", type=int, default=10, help="counted runs of each side")
    options = parser.parse_args()
    result = main(options.before, options.runs)
    (BENCH / "results" / "startup.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
