"""Looking at results from Python: :func:`view_runs` serves the local web viewer (``assay
view``), :func:`write_html_report` writes a run's self-contained ``report.html`` (``assay
report RUN_DIR --html``), :func:`export_rows` gives the rows a filter selects as CSV or JSON
Lines (``assay report RUN_DIR --rows FILTER --format csv|jsonl``)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from assay.orchestration.running.runfiles import resolve_run_dir


def view_runs(
    folders: Sequence[str | Path] = ("runs",),
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    open_browser: bool = False,
    on_ready: Callable[[str], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    store: str | None = None,
    labels: str | None = None,
    reviewer: str | None = None,
) -> None:
    """Serve the viewer over run folders or folders of runs until Ctrl-C (``assay view``).

    It reads the folders as they are (a run in progress included, updating as rows finish)
    and never writes into them.

    Args:
        folders: run folders, or folders of runs (default ``runs``).
        host: the address to listen on; 127.0.0.1 unless you mean to share it (then
            ``on_warning`` is told: the viewer has no login).
        port: the port; ``None`` picks a free one.
        open_browser: open the URL in the default browser.
        on_ready: called with the URL (``http://127.0.0.1:PORT/``) once it listens.
        on_warning: called with each warning.
        store: the store URL human labels are saved to (``None``: ``$ASSAY_STORE``, else
            ``.assay/store.db``); never the run folders.
        labels: one dataset for every run's labels (``None``: ``review-RUN`` per run).
        reviewer: a label's reviewer when the page names none (``None``: the user name).

    Raises:
        UsageError: a folder does not exist, or the port is in use.
    """
    from assay.view import serve

    serve(folders, host=host, port=port, open_browser=open_browser, on_ready=on_ready,
          on_warning=on_warning, store=store, labels=labels, reviewer=reviewer)  # fmt: skip


def write_html_report(run_dir: str | Path, *, output: str | Path | None = None) -> Path:
    """Write the run's self-contained ``report.html`` (the run page's figures and the rows
    that did not pass; it opens from a file with no server and no network) and return its
    path. The run's other reports are left as they are (:func:`assay.report` rebuilds them).

    Args:
        run_dir: the run (``runs/latest`` works).
        output: where to write it (default ``RUN_DIR/report.html``).

    Raises:
        UsageError: not a run directory.
    """
    from assay.view import write_html_report as write

    folder = resolve_run_dir(run_dir)
    return write(folder, output=Path(output) if output is not None else None)


def export_rows(run_dir: str | Path, *, rows: str = "", format: str = "csv") -> Iterator[str]:
    """The rows of a run that a filter selects, as CSV or JSON Lines, line by line (the
    rows page's download; :mod:`assay.view.export`): every page of the filter, in its
    order, with each row's whole prompt, response and dataset row; no secret written, CSV
    formula cells neutralised. Nothing is written into the run folder.

    Args:
        run_dir: the run (``runs/latest`` works).
        rows: the rows page's query string, e.g. ``status=FAILURE&q=love`` (empty: every
            row).
        format: ``csv`` (a header line, then one line per row) or ``jsonl``.

    Returns:
        The lines, each ending with a newline (read as they are produced).

    Raises:
        UsageError: not a run directory; a name that is not a filter; an unknown format.
    """
    from assay.view.export import FORMATS, export_lines, parse_filter
    from assay.view.index import RowIndex

    folder = resolve_run_dir(run_dir)
    chosen = parse_filter(rows)
    if format not in FORMATS:
        from assay.errors import UsageError

        raise UsageError(f"--format: '{format}' is not one of {', '.join(FORMATS)}")

    def lines() -> Iterator[str]:
        scratch = Path(tempfile.mkdtemp(prefix="assay-export-"))
        try:
            index = RowIndex(folder, scratch / "index.sqlite")
            index.refresh()
            with index.connect() as db:
                yield from export_lines(db, folder, chosen, format)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    return lines()
