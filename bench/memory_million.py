"""`assay report` and `assay evaluate` on a 1,000,000-row run (issue 19: they "work within
the same bound"): peak resident memory of each whole process, against the same commands on a
1,000-row run of the same task measured in the same session (the ratio is the figure).

Both runs are of memory.py's graded task (a scripted `mock` model's label against the row's;
no sandbox, so `evaluate` can grade every row again). The large run is made once and kept:
about 25 minutes and 11 GB here (six files and folders a row: give it a filesystem with the
inodes, e.g. `mkfs.ext4 -b 1024 -N 8000000 -O large_dir`); `report` and `evaluate` are then
measured on it as it is. The small run is made each time.

Usage: python bench/memory_million.py [ROWS] [LARGE_FOLDER]
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from common import ASSAY, WORK, save, timed, write_rows
from memory import GRADED

REPLIES = 'replies: [{match: "good|great", reply: positive}]\ndefault: negative\n'


def prepared(folder: Path, rows: int, *, fresh: bool) -> dict[str, float]:
    """A finished run of ``rows`` rows in ``folder`` (made unless one is there and not
    ``fresh``); its seconds and peak memory when made here."""
    if (folder / "runs" / "latest" / "run.json").is_file() and not fresh:
        return {}
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    write_rows(folder / "rows.jsonl", rows)
    (folder / "task.yaml").write_text(GRADED, encoding="utf-8")
    (folder / "replies.yaml").write_text(REPLIES, encoding="utf-8")
    run = timed([*ASSAY, "run", "task.yaml", "-j", "8", "--run-dir", "runs", "-q"], cwd=folder)
    return {"run_seconds": run.seconds, "run_peak_mb": run.peak_kb / 1024}


def measure(folder: Path, rows: int, *, fresh: bool) -> dict[str, float]:
    """``assay report`` then ``assay evaluate`` on the run in ``folder``."""
    found = prepared(folder, rows, fresh=fresh)
    report = timed([*ASSAY, "report", "runs/latest"], cwd=folder)
    evaluate = timed([*ASSAY, "evaluate", "runs/latest"], cwd=folder)
    found.update({"report_seconds": report.seconds, "report_peak_mb": report.peak_kb / 1024,
                  "evaluate_seconds": evaluate.seconds,
                  "evaluate_peak_mb": evaluate.peak_kb / 1024})  # fmt: skip
    print(rows, found, flush=True)
    return found


def main(rows: int = 1_000_000, large: Path | None = None) -> dict[str, object]:
    small = measure(WORK / "memory-million-1000", 1_000, fresh=True)
    big = measure(large or WORK / f"memory-million-{rows}", rows, fresh=False)
    result: dict[str, object] = {
        "rows": {"1000": small, str(rows): big},
        "report_ratio": big["report_peak_mb"] / small["report_peak_mb"],
        "evaluate_ratio": big["evaluate_peak_mb"] / small["evaluate_peak_mb"],
    }
    save("memory_million", result)
    return result


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    print(main(count, Path(sys.argv[2]) if len(sys.argv) > 2 else None))
