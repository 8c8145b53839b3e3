"""Memory of `assay run` against the number of rows (issue 19): peak resident memory of a
whole process on the overhead task (`agent: none`, one `run_command` per row, `-j 8`) at
1,000 and 100,000 rows, and of `assay report` on each finished run.

Target: the 100,000-row run's peak within 1.5x of the 1,000-row run's (local executor).
Usage: python bench/memory.py [SMALL] [LARGE]
"""

from __future__ import annotations

import shutil
import sys

from common import ASSAY, BENCH, WORK, save, timed, write_rows


def measure(rows: int) -> dict[str, float]:
    """Run and report ``rows`` rows; seconds and peak memory (MB) of each."""
    folder = WORK / f"memory-{rows}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    write_rows(folder / "rows.jsonl", rows)
    shutil.copy(BENCH / "coder_eval" / "overhead.yaml", folder / "task.yaml")
    run = timed([*ASSAY, "run", "task.yaml", "-j", "8", "--run-dir", "runs", "-q"], cwd=folder)
    assert run.returncode == 0, f"the {rows}-row run failed ({run.returncode})"
    report = timed([*ASSAY, "report", "runs/latest"], cwd=folder)
    shutil.rmtree(folder, ignore_errors=True)
    found = {
        "run_seconds": run.seconds,
        "run_peak_mb": run.peak_kb / 1024,
        "report_seconds": report.seconds,
        "report_peak_mb": report.peak_kb / 1024,
    }
    print(rows, found, flush=True)
    return found


def main(small: int = 1_000, large: int = 100_000) -> dict[str, object]:
    figures = {str(small): measure(small), str(large): measure(large)}
    result: dict[str, object] = {
        "rows": figures,
        "run_ratio": figures[str(large)]["run_peak_mb"] / figures[str(small)]["run_peak_mb"],
        "report_ratio": figures[str(large)]["report_peak_mb"]
        / figures[str(small)]["report_peak_mb"],
    }
    save("memory", result)
    return result


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print(main(*args))
