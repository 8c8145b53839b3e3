"""``assay judge calibrate``: a judge measured against human labels on a store dataset, and
the calibration stored (a call of :func:`assay.api.judges.calibrate_judge`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from assay.cli.shared.common import err, user_errors
from assay.cli.shared.dataset_support import StoreUrl, out

# help texts are rich markup: "\\[" shows a bracket that "[" would open a style tag with
Calibrated = Annotated[
    str,
    typer.Argument(
        help="A judge file (judges/x.yaml), NAME\\[@N], or a run folder whose agent_judge "
        "graded its rows."
    ),
]


def calibrate(
    judge: Calibrated,
    dataset: Annotated[str, typer.Option("--dataset", help="A store dataset: NAME or NAME@N.")],
    label: Annotated[str, typer.Option("--label", help="The field of the human label.")],
    output_field: Annotated[
        str | None,
        typer.Option(
            "--output-field",
            help="The field that holds the output to judge "
            "(rows without a trace or session field).",
        ),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Folder for calibration.json/.md.")
    ] = None,
    jobs: Annotated[int, typer.Option("-j", "--max-parallel", min=1, help="Calls at once.")] = 4,
    max_retries: Annotated[int, typer.Option("--max-retries", min=0)] = 4,
    store: StoreUrl = None,
    criterion: Annotated[
        int | None,
        typer.Option(
            "--criterion",
            min=0,
            help="With a run folder as the judge: which agent_judge (its position in "
            "success_criteria, from 0), when the task has several.",
        ),
    ] = None,
) -> None:
    """Measure how a judge agrees with human labels on a store dataset, and store it.

    The judge may also be a run folder (runs/latest) whose rows an agent_judge graded, with
    sandboxes kept: the rows the dataset labels (its folder field) are judged again by it."""
    from assay.api.judges import calibrate_judge
    from assay.store.files import parse_ref

    def progress(done: int, total: int) -> None:
        if done == total or done % max(1, total // 10) == 0:
            err().print(f"[assay] judged {done}/{total}", markup=False)

    with user_errors():
        name, number = parse_ref(dataset)
        result = calibrate_judge(
            judge,
            dataset=name,
            version=number,
            label_field=label,
            output_field=output_field,
            output_dir=output,
            store=store,
            jobs=jobs,
            max_retries=max_retries,
            progress=progress,
            criterion=criterion,
        )
    _print_summary(result.report, result.directory)
    if not result.report["rows_compared"]:  # stored unusable: a script must not take it for one
        err().print("error: no row was compared: the calibration is stored marked unusable "
                    "(see its notes)", markup=False)  # fmt: skip
        raise typer.Exit(1)


def _print_summary(report: dict[str, Any], directory: Path) -> None:
    judge, data = report["judge"], report["dataset"]
    version = f"@{judge['version']}" if judge.get("version") is not None else ""
    console = out()
    console.print(
        f"calibrated judge {judge['name']}{version} on {data['name']}@{data['version']} "
        f"(label: {report['label_field']}): {report['rows_compared']} row(s) compared, "
        f"{report['rows_unlabelled']} unlabelled, {report['rows_judge_error']} judge error(s)",
        markup=False,
    )
    parts = []
    for key, title in (
        ("agreement", "agreement"),
        ("kappa", "κ"),
        ("weighted_kappa", "weighted κ"),
        ("spearman", "ρ"),
        ("tpr", "TPR"),
        ("tnr", "TNR"),
    ):
        item = report.get(key)
        if item is None:
            continue
        value = "—" if item["value"] is None else f"{item['value']:.3f}"
        bounds = "" if item["low"] is None else f" [{item['low']:.3f}, {item['high']:.3f}]"
        parts.append(f"{title} {value}{bounds}")
    console.print(" · ".join(parts), markup=False)
    for note in report.get("notes", []):
        console.print(f"note: {note}", markup=False)
    console.print(f"report: {directory / 'calibration.md'}", markup=False)
