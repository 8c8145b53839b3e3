"""What redacting well-known token shapes at write time costs (issue 28 item 1).

A 10,000-row run (an ``llm`` agent on ``mock/echo``, so each row writes its ``task.json``,
``response.txt``, ``trace.json`` and ``task.log`` without a subprocess) whose prompts carry
ordinary content that holds some of the shapes' literal prefixes (a URL with a query, a
sha256, a UUID, base64 of data). Then, in one process, every file of the finished run is
passed through the writer's redaction (:func:`assay.results.io.redact_json` for JSON, else
:meth:`Redactor.redact`) with token shapes and without, and the markers counted.

Figures: the shapes' CPU seconds (their redaction minus the values-only one) as a share of
the run's wall time, and the markers written into the run (0: no ordinary content was taken
for a token). No target; a figure.
Usage: python bench/token_shapes.py [ROWS] [REPEATS]
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
import uuid
from base64 import b64encode
from pathlib import Path

from common import ASSAY, WORK, median, save, timed

from assay.results.io import redact_json
from assay.results.secrets import Redactor

TASK = """\
task_id: shapes
description: ordinary content that holds the shapes' literal prefixes
agent: {type: llm, model: mock/echo}
dataset: {paths: [rows.jsonl]}
initial_prompt: >-
  ${row.text} see https://example.com/r/${row.id}?page=2&sort=asc ${row.hash} ${row.blob}
success_criteria:
  - {type: response_match, expected: "page=2", match: contains}
"""


def write_rows(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            digest = hashlib.sha256(str(i).encode()).digest()
            handle.write(json.dumps({
                "id": str(uuid.UUID(bytes=digest[:16])), "text": f"row {i} of the run",
                "hash": digest.hex(), "blob": b64encode(digest * 3).decode(),
            }) + "\n")  # fmt: skip


def redaction_seconds(files: list[tuple[bool, str]], redactor: Redactor) -> float:
    """CPU seconds the writer's redaction of ``files`` takes (JSON as data, text as text)."""
    started = time.process_time()
    for is_json, text in files:
        if is_json:
            redact_json(text, redactor, compact="\n" in text.rstrip("\n"))
        else:
            redactor.redact(text)
    return time.process_time() - started


def main(rows: int, repeats: int) -> None:
    folder = WORK / "token-shapes"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    write_rows(folder / "rows.jsonl", rows)
    (folder / "task.yaml").write_text(TASK)
    run = timed([*ASSAY, "run", "task.yaml", "-j", "8", "--run-dir", "runs", "-q"], cwd=folder)
    run_dir = (folder / "runs" / "latest").resolve()
    paths = [p for p in run_dir.rglob("*") if p.is_file()]
    files = [(p.suffix == ".json" or p.suffix == ".jsonl", p.read_text()) for p in paths]
    markers = sum(text.count("[redacted:") for _, text in files)
    Redactor().redact("load the shapes' library once: https://x.example/?key=warm")
    with_shapes = median([redaction_seconds(files, Redactor()) for _ in range(repeats)])
    without = median([redaction_seconds(files, Redactor(shapes=False)) for _ in range(repeats)])
    found = {
        "rows": rows,
        "files": len(files),
        "megabytes": sum(len(text) for _, text in files) / 1e6,
        "run_seconds": run.seconds,
        "redaction_seconds_with_shapes": with_shapes,
        "redaction_seconds_values_only": without,
        "shapes_share_of_run": (with_shapes - without) / run.seconds,
        "markers_written": markers,
    }
    print(json.dumps(found, indent=2))
    save("token_shapes", found)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000,
         int(sys.argv[2]) if len(sys.argv) > 2 else 3)  # fmt: skip
