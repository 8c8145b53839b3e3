"""Harness overhead: `agent: none`, one `run_command` criterion, 500 rows, -j 8.

Target (issue 2): at least 5x Coder Eval's rows/s, whole process, same task file.
Usage: python bench/overhead.py [ROWS] [REPEATS]
"""

from __future__ import annotations

import shutil
import sys

from common import ASSAY, BENCH, WORK, ce_command, median, save, timed, write_rows


def main(rows: int = 500, repeats: int = 3) -> dict[str, object]:
    folder = WORK / f"overhead-{rows}"
    folder.mkdir(parents=True, exist_ok=True)
    write_rows(folder / "rows.jsonl", rows)
    shutil.copy(BENCH / "coder_eval" / "overhead.yaml", folder / "task.yaml")
    env = {"TELEMETRY_ENABLED": "false"}
    commands = {
        "assay": [*ASSAY, "run", "task.yaml", "-j", "8", "--run-dir", "runs-assay", "-q"],
        "coder_eval": [*ce_command(), "run", "task.yaml", "-j", "8", "--run-dir", "runs-ce"],
    }
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            t = timed(command, cwd=folder, env=env)
            assert t.returncode == 0, f"{name} run failed ({t.returncode})"
            seconds[name].append(t.seconds)
        shutil.rmtree(folder / "runs-assay", ignore_errors=True)
        shutil.rmtree(folder / "runs-ce", ignore_errors=True)
    result: dict[str, object] = {"rows": rows, "jobs": 8, "repeats": repeats}
    for name, values in seconds.items():
        result[name] = {"seconds": median(values), "rows_per_s": rows / median(values)}
    result["speed_ratio"] = median(seconds["coder_eval"]) / median(seconds["assay"])
    save("overhead", result)
    return result


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print(main(*args))
