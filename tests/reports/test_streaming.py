"""Reports written from a stream of rows: the same files whatever order the rows come in and
however often the sorted spill goes to disk; run.json read without its rows, and its rows
one at a time; a run that keeps no finished row in memory."""

from __future__ import annotations

import json
import random
import tracemalloc
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.criteria.registry import default_criteria
from assay.reports import spill
from assay.reports.spill import SortedLines
from assay.reports.writer import RunMeta, write_reports
from assay.results.io import dumps
from assay.results.run_file import iter_task_rows, read_summary
from tests.helpers import write
from tests.reports.test_rollup import CLASSIFY, PREPARE, SUITE, errored, graded

CRITERIA = [c.model_dump(mode="json", exclude_none=True) for c in (PREPARE, CLASSIFY)]


def _rows(count: int) -> list[Any]:
    labels = ["positive", "negative"]
    made = []
    for i in range(count):
        if i % 7 == 3:
            made.append(errored(i))
            continue
        made.append(graded(i, labels[i % 2], labels[(i * i) % 3 % 2], replicate=i % 2))
    return made


def _meta() -> RunMeta:
    moment = datetime(2026, 1, 1)
    return RunMeta(run_id="r", stage="report", start_time=moment, end_time=moment,
                   max_parallel=1, criteria={SUITE: CRITERIA})  # fmt: skip


def _written(folder: Path, rows: list[Any]) -> dict[str, str]:
    folder.mkdir()
    write_reports(folder, rows, _meta(), default_criteria(), junit_path=folder / "junit.xml")
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*"))
            if p.is_file()}  # fmt: skip


def test_reports_do_not_depend_on_row_order_or_on_spilling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _rows(60)
    expected = _written(tmp_path / "in-order", rows)
    shuffled = list(rows)
    random.Random(7).shuffle(shuffled)
    monkeypatch.setattr(spill, "CHUNK", 4)  # 15 chunks on disk, merged back
    assert _written(tmp_path / "shuffled", shuffled) == expected
    run = json.loads(expected["run.json"])
    assert [(r["row_id"], r["replicate_index"]) for r in run["task_results"]] == [
        (r.row_id, r.replicate_index) for r in rows]  # fmt: skip
    suite = json.loads(expected[f"default/{SUITE}/suite.json"])
    assert suite["replicates"] == 2 and suite["pass_k"]  # the second pass found them
    failed = [r.row_id for r in rows if r.final_status.category in ("failed", "error")]
    assert [s["row_id"] for s in suite["failed_samples"]] == failed[:20]  # dataset order
    assert expected["junit.xml"].count("<testcase ") == 60 + 1  # the rows and the gate


@pytest.mark.parametrize("fan_in", [None, 2, 3, 5])
def test_sorted_lines_merge_their_chunks_in_key_order(fan_in: int | None) -> None:
    keys = [[random.Random(i).randint(0, 9), f"k{i % 5}"] for i in range(500)]
    with SortedLines(chunk=7, fan_in=fan_in) as lines:
        for index, key in enumerate(keys):
            lines.add(key, f"line {index}")
        if fan_in is not None:  # 71 chunks: levels merged, few files open
            assert sum(len(files) for files in lines._levels) < fan_in * 5
        found = list(lines.sorted())
    order = sorted(range(500), key=lambda i: (keys[i], i))  # equal keys keep their order
    assert found == [f"line {i}" for i in order]


def test_run_json_is_read_without_its_rows_and_row_by_row(tmp_path: Path) -> None:
    files = _written(tmp_path / "run", _rows(9))
    path = tmp_path / "run" / "run.json"
    summary = read_summary(path)
    assert summary.tasks_run == 9 and summary.task_results == []
    rows = list(iter_task_rows(path))
    assert [r.row_id for r in rows] == [r["row_id"] for r in json.loads(files["run.json"])[
        "task_results"]]  # fmt: skip
    older = tmp_path / "older.json"  # one row over several lines, as an older assay wrote it
    older.write_text(dumps(json.loads(files["run.json"])))
    assert [r.row_id for r in iter_task_rows(older)] == [r.row_id for r in rows]
    assert read_summary(older).tasks_run == 9


def test_a_run_keeps_no_finished_row_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the code before streaming a run held every row until its reports (25 KB a row of
    this task, measured with tracemalloc); the plan (about 0.6 KB a row) still grows. The
    secret scan at the end reads the run folder's small files in batches (1 MB), a bound that
    does not grow with the rows but that a run this small barely reaches: here its batches
    are made smaller, so that what grows with the rows shows."""
    import functools

    from assay.results import secret_scan

    monkeypatch.setattr(secret_scan, "scan_run",  # the writer's scan looks it up when it runs
                        functools.partial(secret_scan.scan_run, batch_bytes=64 << 10))  # fmt: skip

    def peak(rows: int) -> int:
        folder = tmp_path / str(rows)
        lines = "".join(json.dumps({"id": f"r{i:05d}", "text": "x" * 40}) + "\n"
                        for i in range(rows))  # fmt: skip
        write(folder / "rows.jsonl", lines)
        task = write(
            folder / "task.yaml",
            """\
task_id: echo
description: rows answered by the echo model
dataset: {paths: [rows.jsonl]}
initial_prompt: "${row.text}"
agent: {type: llm, model: mock/echo}
success_criteria: [{type: file_check, includes: ["x"], description: echoed}]
""",
        )
        tracemalloc.start()
        result = assay.run(task, run_dir=folder / "runs", jobs=8)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert result.exit_code == 0 and result.suites[0].rows_total == rows
        return peak

    peak(10)  # the first run imports what a run needs
    small, large = peak(100), peak(3100)
    # bytes a row more (25 KB when a run held its rows; about 1.6 KB after streaming, most of
    # it the report's sort buffer, bounded at 4,096 rows; since the clustered intervals of
    # issue 33, about 4.4 KB at the peak: each cluster's sums stay until the reports, and
    # their estimates make arrays of every cluster — memory that grows with the clusters,
    # said in docs/compatibility.md). Over 3,000 rows, so that a one-off reallocation of the
    # interpreter's table of interned strings (about 1.8 MB; pathlib interns each new file
    # name) cannot decide the outcome.
    assert (large - small) / 3000 < 6 * 1024


def test_scores_stream_to_the_standard_librarys_numbers() -> None:
    import statistics

    from assay.metrics.streaming import ScoreStats

    values = [random.Random(3).random() for _ in range(5000)] + [0.0, 1.0] * 10
    stats = ScoreStats()
    for value in values:
        stats.add(value)
    assert stats.mean() == statistics.fmean(values)
    assert stats.median() == statistics.median(values)
    assert stats.pstdev() == statistics.pstdev(values)
