"""The progress line's rate and time left start at the first finished row: a model server that
took minutes to start (or a first batch of ``-j`` rows) never makes it promise hours."""

from __future__ import annotations

import io

from assay.reports.progress import PlainProgress
from assay.results.status import FinalStatus
from tests.reports.test_rollup import row


def test_the_first_line_does_not_estimate_from_the_start_up() -> None:
    out = io.StringIO()
    progress = PlainProgress(out, every=0.0)
    progress.start(1000)
    progress.counts.started -= 3600  # the server took an hour to answer the first row
    progress.advance(row(0, FinalStatus.SUCCESS))
    assert out.getvalue().splitlines()[-1] == (
        "[assay] 1/1000 rows · 1 passed · 0 errors · ETA … (measuring)"
    )
    assert progress.counts.first_done is not None
    progress.counts.first_done -= 2.0  # the next rows come one a second
    progress.advance(row(1, FinalStatus.REFUSED))
    progress.advance(row(2, FinalStatus.ERROR))
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("[assay] 3/1000 rows · 1 passed · 1 errors · 1 refused · 1.0 rows/s")
    eta = int(last.rsplit("ETA ", 1)[1].removesuffix(" s"))
    assert 900 < eta < 1100  # about 997 s, not hours


def test_no_rate_is_shown_before_a_second_of_finished_rows() -> None:
    out = io.StringIO()
    progress = PlainProgress(out, every=0.0)
    progress.start(5000)
    for index in range(50):  # fifty rows in well under a second: a rate would be noise
        progress.advance(row(index, FinalStatus.SUCCESS))
    assert out.getvalue().splitlines()[-1].endswith("ETA … (measuring)")
    assert "rows/s" not in out.getvalue()
