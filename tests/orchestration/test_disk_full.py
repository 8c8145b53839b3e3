"""A full disk under the run folder: the run stops starting rows (each would be lost, its
model calls spent for nothing), says why, keeps what finished, and a resume runs the rest
(found by a break-test: 3,000 rows ran, 4 were saved, then a traceback)."""

from __future__ import annotations

import errno
import threading
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import UsageError
from assay.orchestration.running import rowfiles
from tests.helpers import write

ROWS = ", ".join(f"{{id: r{i:02d}, text: x{i}}}" for i in range(40))
TASK = f"""\
task_id: full
description: forty rows on a disk that fills after the fifth
initial_prompt: "${{row.text}}"
agent: {{type: llm, model: mock/echo}}
dataset:
  rows: [{ROWS}]
success_criteria:
  - {{type: response_match, expected: x, match: contains}}
"""


def test_a_full_disk_stops_the_run_and_a_resume_finishes_it(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = rowfiles.write_row_files
    saved: list[Path] = []

    lock = threading.Lock()

    def filling(directory: Path, files: Any, **keywords: Any) -> None:
        with lock:  # (the rows' files are written by several threads)
            if len(saved) >= 5:
                raise OSError(errno.ENOSPC, "No space left on device")
            real(directory, files, **keywords)
            saved.append(directory)

    monkeypatch.setattr(rowfiles, "write_row_files", filling)
    warnings: list[str] = []
    first = assay.run([str(write(workdir / "t.yaml", TASK))], jobs=2, on_warning=warnings.append)
    ran = list((first.run_dir / "default" / "full").glob("*/00"))
    assert len(saved) == 5 and len(ran) < 12  # not forty rows run for nothing
    assert first.interrupted and first.exit_code == 130
    (said,) = [w for w in first.warnings if w.startswith("the run stopped starting rows")]
    assert "[Errno 28] No space left on device" in said and "--retry-errors" in said
    monkeypatch.setattr(rowfiles, "write_row_files", real)
    second = assay.resume(first.run_dir, retry_errors=True)
    assert second.exit_code == 0 and second.suite("full").rollup.rows_passed == 40


def test_reports_that_cannot_be_written_are_a_clear_error_not_a_traceback(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = assay.run([str(write(workdir / "t.yaml", TASK))], jobs=2)
    from assay.reports import writer

    def full(*_: Any, **__: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer, "_write", full)
    with pytest.raises(UsageError) as caught:
        assay.report(first.run_dir)
    assert caught.value.message.startswith("cannot write the reports into ")
    assert caught.value.message.endswith(f"{first.run_dir.name}: [Errno 28] No space left on "
                                         "device")  # fmt: skip
    assert "`assay report RUN_DIR` writes the reports" in (caught.value.hint or "")
