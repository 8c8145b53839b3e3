"""``report.html``: one self-contained page with a run's page (suites, metrics with
intervals, gates, every figure) and the rows that did not pass, for ``assay report RUN_DIR
--html`` and ``assay run --html``.

Everything is inline (the stylesheet, the page script, the vendored Vega-Lite and each
chart's data), so it opens from a file with no server and no network. Its size does not grow
with the run: figures carry binned counts, and at most ``FAILED_LIMIT`` failed rows are
listed, with the count of all of them (a 100,000-row run's report is about 1.5 MB; see
``bench/README.md``). Each listed row links to its ``task.json`` beside the report.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from assay.results.io import write_text_atomic
from assay.results.secrets import Redactor
from assay.view.queries import LIST_COLUMNS, SORTS
from assay.view.render import render
from assay.view.run_pages import run_page
from assay.view.workspace import RunEntry, Workspace

REPORT_FILE = "report.html"
FAILED_LIMIT = 1000


def html_report(run_dir: Path, *, failed_limit: int = FAILED_LIMIT) -> str:
    """The report of the run in ``run_dir`` as HTML text (every row is read first)."""
    with tempfile.TemporaryDirectory(prefix="assay-report-") as scratch:
        ws = Workspace([run_dir], scratch=Path(scratch))
        entry = RunEntry(run_dir.name, run_dir.resolve())
        index = ws.index(entry, start=False)
        index.refresh()
        page = run_page(ws, entry)
        with index.connect() as db:
            condition = "WHERE category NOT IN ('passed', 'not_graded')"
            total = int(db.execute(f"SELECT COUNT(*) FROM rows {condition}").fetchone()[0])
            rows = [dict(r) for r in db.execute(
                f"SELECT {LIST_COLUMNS} FROM rows {condition} ORDER BY {SORTS['row']} LIMIT ?",
                [failed_limit])]  # fmt: skip
        return render("run.html", static=True, page=page, has_charts=True,
                      failed={"total": total, "rows": rows})  # fmt: skip


def write_html_report(run_dir: Path, *, output: Path | None = None) -> Path:
    """Write ``report.html`` into the run folder (or to ``output``) and return its path.

    The run's files are redacted already; the page is redacted again with the secrets of
    this process's environment, as every report is (:mod:`assay.results.secrets`)."""
    target = output if output is not None else run_dir / REPORT_FILE
    redactor = Redactor.from_environment(os.environ)
    write_text_atomic(target, html_report(run_dir), redactor=redactor)
    return target
