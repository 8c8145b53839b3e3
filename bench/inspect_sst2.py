"""The same benchmark as an Inspect AI task (the peer figure), built from the same task file.

Run by bench/throughput.py as:
  inspect eval bench/inspect_sst2.py --model openai-api-completions/xll/smollm2 ...
"""

import json
import sys
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bare_client import requests_for

TASK_FILE = Path(__file__).resolve().parent / "work" / "sst2_throughput.yaml"


@task
def sst2_throughput() -> Task:
    bodies = requests_for(TASK_FILE, "unused")
    rows = TASK_FILE.parent.joinpath("../../examples/sst2/data/sst2_dev.jsonl").read_text()
    labels = [json.loads(line)["label"] for line in rows.splitlines()]
    samples = [
        Sample(id=str(i), input=str(body["prompt"]), target=label)
        for i, (body, label) in enumerate(zip(bodies, labels, strict=True))
    ]
    return Task(dataset=MemoryDataset(samples, name="sst2_dev"), solver=generate(),
                scorer=includes())  # fmt: skip
