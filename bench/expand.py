"""`assay plan` vs Coder Eval's own expansion (load_task + expand_dataset) on a 100,000-row
file: rows/s and peak memory, whole process.

Target (issue 2): at least 20x Coder Eval's rows/s with at most 1/4 of its peak memory.
Usage: python bench/expand.py [ROWS] [REPEATS]
"""

from __future__ import annotations

import shutil
import sys

from common import ASSAY, BENCH, CE_VENV, WORK, median, save, timed, write_rows


def main(rows: int = 100_000, repeats: int = 3) -> dict[str, object]:
    folder = WORK / f"expand-{rows}"
    folder.mkdir(parents=True, exist_ok=True)
    write_rows(folder / "rows.jsonl", rows)
    shutil.copy(BENCH / "coder_eval" / "expand.yaml", folder / "task.yaml")
    env = {"TELEMETRY_ENABLED": "false"}
    # `coder-eval plan` validates the task file without expanding the dataset (about 1.3 s
    # here, whatever the rows); its expansion runs inside `coder-eval run`, so the anchor is
    # that code called directly (coder_eval/expand_rows.py).
    ce_expand = [str(CE_VENV / "bin" / "python"), str(BENCH / "coder_eval" / "expand_rows.py"),
                 "task.yaml"]  # fmt: skip
    runs: dict[str, list[tuple[float, int]]] = {"assay": [], "coder_eval": []}
    for _ in range(repeats):
        for name, command in (("assay", [*ASSAY, "plan", "task.yaml"]),
                              ("coder_eval", ce_expand)):  # fmt: skip
            t = timed(command, cwd=folder, env=env)
            assert t.returncode == 0, f"{name} failed"
            runs[name].append((t.seconds, t.peak_kb))
    result: dict[str, object] = {"rows": rows, "repeats": repeats}
    for name, values in runs.items():
        seconds = median([s for s, _ in values])
        peak = median([float(k) for _, k in values])
        result[name] = {"seconds": seconds, "rows_per_s": rows / seconds, "peak_mb": peak / 1024}
    a, c = result["assay"], result["coder_eval"]
    assert isinstance(a, dict) and isinstance(c, dict)
    result["speed_ratio"] = a["rows_per_s"] / c["rows_per_s"]
    result["memory_ratio"] = a["peak_mb"] / c["peak_mb"]
    save("expand", result)
    return result


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print(main(*args))
