"""``assay dataset add-run | add-traces``: production cases into a dataset, from a run
directory or from a file of OTLP traces (calls of :mod:`assay.api.judges`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli.shared.common import user_errors
from assay.cli.shared.dataset_support import Name, StoreUrl, out, version_line

if TYPE_CHECKING:
    from assay.store.capture import CaptureResult

Mapping = Annotated[
    list[str] | None,
    typer.Option(
        "--map",
        help="FIELD=SOURCE, repeatable (e.g. actual_output=response, "
        "question=row.q, model=attr.gen_ai.request.model).",
    ),
]


def add_run(
    name: Name,
    run_dir: Annotated[Path, typer.Argument(help="A run directory (runs/latest works).")],
    mapping: Mapping = None,
    only_failures: Annotated[
        bool, typer.Option("--only-failures", help="Only rows that did not pass.")
    ] = False,
    suite: Annotated[str | None, typer.Option("--suite", help="Only this suite.")] = None,
    variant: Annotated[str | None, typer.Option("--variant", help="Only this variant.")] = None,
    store: StoreUrl = None,
) -> None:
    """Add a run's row-tasks (response, trace, row fields) as one new version."""
    from assay.api import add_run_to_dataset

    with user_errors():
        result = add_run_to_dataset(
            name,
            run_dir,
            mapping=mapping or [],
            only_failures=only_failures,
            suite=suite,
            variant=variant,
            store=store,
        )
    _report(name, result, "row-task")


def add_traces(
    name: Name,
    file: Annotated[Path, typer.Argument(help="OTLP JSON: one object, or one per line.")],
    mapping: Mapping = None,
    session_by: Annotated[
        str | None,
        typer.Option(
            "--session-by",
            help="A span attribute naming the session "
            "(session.id, gen_ai.conversation.id): one example per session.",
        ),
    ] = None,
    store: StoreUrl = None,
) -> None:
    """Add the traces of a file (one example per trace, or per session) as one new version."""
    from assay.api import add_traces_to_dataset

    with user_errors():
        result = add_traces_to_dataset(
            name, file, mapping=mapping or [], session_by=session_by, store=store
        )
    _report(name, result, "session" if session_by else "trace")


def _report(name: str, result: CaptureResult, noun: str) -> None:
    console = out()
    if result.created:
        console.print(f"created dataset {name}", markup=False)
    if result.mapping:
        shown = ", ".join(f"{field}={source}" for field, source in result.mapping.items())
        console.print(f"fields: {shown}", markup=False)
    if result.skipped_existing:
        console.print(
            f"{len(result.skipped_existing)} {noun}(s) already in {name}, skipped: "
            + ", ".join(result.skipped_existing[:10])
            + (" …" if len(result.skipped_existing) > 10 else ""),
            markup=False,
        )
    if result.renamed:
        console.print(
            f"{len(result.renamed)} {noun}(s) whose id is in {name} with other content, "
            "added as new examples: "
            + ", ".join(f"{old} → {new}" for old, new in list(result.renamed.items())[:10])
            + (" …" if len(result.renamed) > 10 else ""),
            markup=False,
        )
    if result.version is None:
        what = "no new" if result.skipped_existing else "no matching"
        console.print(f"{what} {noun}s: nothing added to {name}", markup=False)
        return
    console.print(
        f"added {len(result.added)} {noun}(s): {version_line(result.version)}", markup=False
    )
