"""Memory of `assay run` against the number of rows (issue 19): peak resident memory of a
whole process on the overhead task (`agent: none`, one `run_command` per row, `-j 8`) at
1,000 and 100,000 rows, and of `assay report` on each finished run; and of `assay evaluate`
on a run of each size of a task whose criterion reads only the response.

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


GRADED = """\
task_id: graded
description: "Regrading: a scripted model's label against each row's, no sandbox"
agent: {type: llm, model: mock/replies.yaml, labels: [positive, negative]}
dataset: {paths: [rows.jsonl]}
initial_prompt: "${row.text}"
success_criteria:
  - type: classification_match
    expected_label: "${row.expected}"
    allowed_labels: [positive, negative]
"""


def measure_evaluate(rows: int) -> dict[str, float]:
    """``assay evaluate`` (every row graded again, then the reports) on a run of ``rows`` rows
    whose criterion reads only the response (a scripted ``mock`` model's label): seconds and
    peak memory (MB)."""
    folder = WORK / f"memory-evaluate-{rows}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    write_rows(folder / "rows.jsonl", rows)
    (folder / "task.yaml").write_text(GRADED, encoding="utf-8")
    (folder / "replies.yaml").write_text('replies: [{match: "good|great", reply: positive}]\n'
                                         "default: negative\n", encoding="utf-8")  # fmt: skip
    run = timed([*ASSAY, "run", "task.yaml", "-j", "8", "--run-dir", "runs", "-q"], cwd=folder)
    assert run.returncode in (0, 1), f"the {rows}-row run failed ({run.returncode})"
    evaluate = timed([*ASSAY, "evaluate", "runs/latest"], cwd=folder)
    assert evaluate.returncode in (0, 1), f"the {rows}-row evaluate failed"
    shutil.rmtree(folder, ignore_errors=True)
    found = {"evaluate_seconds": evaluate.seconds, "evaluate_peak_mb": evaluate.peak_kb / 1024}
    print(rows, found, flush=True)
    return found


def main(small: int = 1_000, large: int = 100_000) -> dict[str, object]:
    figures = {str(small): measure(small), str(large): measure(large)}
    for size in (small, large):
        figures[str(size)].update(measure_evaluate(size))
    result: dict[str, object] = {
        "rows": figures,
        "run_ratio": figures[str(large)]["run_peak_mb"] / figures[str(small)]["run_peak_mb"],
        "report_ratio": figures[str(large)]["report_peak_mb"]
        / figures[str(small)]["report_peak_mb"],
        "evaluate_ratio": figures[str(large)]["evaluate_peak_mb"]
        / figures[str(small)]["evaluate_peak_mb"],
    }
    save("memory", result)
    return result


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print(main(*args))
