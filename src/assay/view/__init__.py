"""``assay view``: the local web viewer (runs, a run's metrics and figures, rows paged and
filtered on the server, a row's transcript, two runs row by row), and the self-contained
``report.html`` built from the same pages.

It reads run folders as they are and never writes into them; the rows of each run are
indexed in a scratch folder of its own (:mod:`assay.view.index`). It uses the same reading,
roll-up and comparison functions as :mod:`assay.api` (``results.run_folder``,
``reports.compare``, ``results.transcript_otlp``), from below it: the API starts the viewer
and writes the HTML report through :func:`view_runs` and :func:`write_html_report`.

The viewer's verbs, for Python: :func:`view_runs` (``assay view``), :func:`write_html_report`
(``assay report RUN_DIR --html``), :func:`export_rows` (``assay report RUN_DIR --rows``).
"""

from __future__ import annotations

from assay.view.export import export_rows
from assay.view.server import view_runs
from assay.view.static_report import REPORT_FILE, html_report, write_html_report

__all__ = ["REPORT_FILE", "export_rows", "html_report", "view_runs", "write_html_report"]
