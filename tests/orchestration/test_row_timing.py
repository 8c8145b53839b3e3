"""A row's ``started_at`` and ``duration_seconds`` are its own: they count from when it has a
``-j`` slot, never the wait for one (a row queued behind another reported both rows' time,
which inflated every duration figure of a busy run)."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from pathlib import Path

from assay import api
from tests.helpers import write

TASK = """\
task_id: timed
description: rows that take a moment each
initial_prompt: go
agent: {type: command, command: 'sleep 0.3; echo done'}
dataset: {rows: [{id: a}, {id: b}, {id: c}, {id: d}]}
success_criteria: [{type: response_match, expected: done}]
"""


def test_rows_run_one_at_a_time_report_spans_that_do_not_overlap(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", TASK)
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"), jobs=1)
    spans = sorted(
        (datetime.fromisoformat(r.started_at),
         datetime.fromisoformat(r.started_at) + timedelta(seconds=r.duration_seconds))
        for r in result.rows()
    )  # fmt: skip
    assert len(spans) == 4
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end - timedelta(milliseconds=5), spans  # one row at a time: no overlap
