"""``assay view``: parse the flags, call :func:`assay.api.view_runs`, print the URL."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from assay.cli.shared.common import user_errors, warn
from assay.cli.shared.options import StoreOpt


def view(
    folders: Annotated[
        list[str] | None,
        typer.Argument(
            help="Run folders or folders of runs (default: runs).",
            metavar="[RUNS_DIR]...",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", "-p", min=1, max=65535, help="Port (default: a free one)."),
    ] = None,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on; other than 127.0.0.1 is warned about "
            "(the viewer has no login).",
        ),
    ] = "127.0.0.1",
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the viewer in the default browser.")
    ] = False,
    store: StoreOpt = None,
    labels: Annotated[
        str | None,
        typer.Option(
            "--labels",
            help="Store dataset for every run's human labels (default: review-RUN per run).",
        ),
    ] = None,
    reviewer: Annotated[
        str | None,
        typer.Option(
            "--reviewer", help="Reviewer name when the page gives none (default: your user name)."
        ),
    ] = None,
) -> None:
    """Browse runs in a local web viewer: metrics and figures, rows filtered on the server,
    a row's transcript, two runs row by row. Reads run folders; never writes into them.

    Labels people give rows (a row's page, a review queue) go to the store (--store)."""
    from assay import api

    def ready(url: str) -> None:
        sys.stdout.write(f"assay view: {url} (Ctrl-C to stop)\n")
        sys.stdout.flush()

    with user_errors():
        api.view_runs(folders or ["runs"], host=host, port=port, open_browser=open_browser,
                      on_ready=ready, on_warning=warn, store=store, labels=labels,
                      reviewer=reviewer)  # fmt: skip
