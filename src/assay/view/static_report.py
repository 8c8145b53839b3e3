"""``report.html``: one self-contained page with a run's page (suites, metrics with
intervals, gates, every figure), the rows that did not pass, and every row of the run,
searchable and filterable in the page, for ``assay report RUN_DIR --html`` and ``assay run
--html``.

Everything is inline (the stylesheet, the page script, the vendored Vega-Lite and each
chart's data), so it opens from a file with no server and no network. Figures carry binned
counts, and at most ``FAILED_LIMIT`` failed rows are listed in full, with the count of all of
them. Every row is kept in the page's row table (:func:`every_row`), its prompt and response
clipped so that their text stays within ``TEXT_BUDGET`` characters (:func:`text_clip`: 300
characters each up to 10,000 rows, fewer above, never fewer than ``MIN_CLIP``). Each row
links to its ``task.json`` beside the report.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from assay.results.io import Writer
from assay.results.run_folder import resolve_run_dir
from assay.results.secrets import clip_head
from assay.spec.run_names import REPORT_FILE as REPORT_FILE  # re-exported
from assay.view.queries import LIST_COLUMNS, SORTS
from assay.view.render import render
from assay.view.run_pages import run_page
from assay.view.workspace import RunEntry, Workspace

FAILED_LIMIT = 1000
TEXT_BUDGET = 6_000_000  # characters of prompt and response text in the row table, in all
MAX_CLIP = 300
MIN_CLIP = 20
_EVERY = ("SELECT r.folder, r.status, r.score, t.prompt, t.response FROM rows r "
          "LEFT JOIN texts t ON t.pk = r.pk ORDER BY {order}")  # fmt: skip


def text_clip(rows: int) -> int:
    """Characters kept of each prompt and response when ``rows`` rows share
    ``TEXT_BUDGET``: ``MAX_CLIP`` up to 10,000 rows, fewer above, at least ``MIN_CLIP`` (so
    up to 150,000 rows the text stays within the budget)."""
    return max(MIN_CLIP, min(MAX_CLIP, TEXT_BUDGET // max(1, 2 * rows)))


def every_row(db: sqlite3.Connection) -> dict[str, Any]:
    """Every row of a run's index for the report's row table: ``rows`` as ``[folder,
    status, score, prompt, response]`` in the run's order (texts clipped to ``clip``
    characters), ``statuses`` and ``suites`` for its filters."""
    total = int(db.execute("SELECT COUNT(*) FROM rows").fetchone()[0])
    clip = text_clip(total)
    rows = []
    statuses: dict[str, None] = {}
    suites: dict[str, None] = {}
    for folder, status, score, prompt, response in db.execute(_EVERY.format(order=SORTS["row"])):
        statuses[status] = None
        parts = folder.split("/")
        suites[parts[1] if len(parts) > 1 else folder] = None
        rows.append([folder, status, score, clip_head(prompt or "", clip),
                     clip_head(response or "", clip)])  # fmt: skip
    return {"rows": rows, "clip": clip, "statuses": sorted(statuses), "suites": sorted(suites)}


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
            every = every_row(db)
        return render("run.html", static=True, page=page, has_charts=True,
                      failed={"total": total, "rows": rows}, every=every)  # fmt: skip


def write_html_report(run_dir: str | Path, *, output: str | Path | None = None) -> Path:
    """Write the run's self-contained ``report.html`` (the run page's figures and the rows
    that did not pass; it opens from a file with no server and no network) and return its
    path (``assay report RUN_DIR --html``). The run's other reports are left as they are
    (:func:`assay.report` rebuilds them).

    The run's files are redacted already; the page is redacted again with the secrets of
    this process's environment, as every report is (:mod:`assay.results.secrets`).

    Args:
        run_dir: the run (``runs/latest`` works).
        output: where to write it (default ``RUN_DIR/report.html``).

    Raises:
        UsageError: not a run directory.
    """
    folder = resolve_run_dir(run_dir)
    return write_report_file(folder, output=Path(output) if output is not None else None)


def write_report_file(run_dir: Path, *, output: Path | None = None) -> Path:
    """Write ``report.html`` of the run folder ``run_dir`` (a run's own folder, as the run
    names it) into it, or to ``output``, and return its path (``run_dir / report.html``
    when not told otherwise)."""
    target = output if output is not None else run_dir / REPORT_FILE
    Writer.from_environment(os.environ).text(target, html_report(run_dir))
    return target
