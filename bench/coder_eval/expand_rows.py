"""Coder Eval's own dataset expansion, as its ``run`` does it before any row runs: the task
file loaded with ``load_task`` and fanned out with ``expand_dataset`` (Coder Eval 0.12.16).

``coder-eval plan`` validates the task file without expanding its dataset, so it is no anchor
for expansion; this script is. Run with Coder Eval's interpreter:
work/coder-eval-venv/bin/python coder_eval/expand_rows.py task.yaml
"""

import sys
from pathlib import Path

from coder_eval.orchestration.task_loader import expand_dataset, load_task

path = Path(sys.argv[1]).resolve()
task, _ = load_task(path)
expanded = expand_dataset(task, path.parent)
print(f"{len(expanded)} row-tasks")
