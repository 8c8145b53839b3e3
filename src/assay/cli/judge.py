"""``assay judge add | list | show | versions | calibrate``: judges as versioned assets in the
store, and their calibration against human labels (each a call of :mod:`assay.api.judges`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from assay.cli.shared.common import err, user_errors
from assay.cli.shared.dataset_support import AsJson, StoreUrl, open_store, out, print_json

# help texts are rich markup: "\\[" shows a bracket that "[" would open a style tag with
Judge = Annotated[str, typer.Argument(help="A judge file (judges/x.yaml) or NAME\\[@N].")]


def add(
    name: Annotated[str, typer.Argument(help="The judge's name in the store.")],
    file: Annotated[Path, typer.Argument(help="The judge file (YAML or JSON).")],
    store: StoreUrl = None,
) -> None:
    """Store a judge file as the judge's next version (unchanged content adds nothing)."""
    from assay.api.judges import add_judge

    with user_errors():
        record, created = add_judge(name, file, store=store)
    what = "added" if created else "unchanged (same content hash as the latest version):"
    out().print(f"{what} judge {record.ref} · sha256 {record.content_hash}", markup=False)


def list_judges(store: StoreUrl = None, as_json: AsJson = False) -> None:
    """List the judges of the store (latest versions)."""
    from rich.table import Table

    with user_errors(), open_store(store) as opened:
        found = opened.judges()
    if as_json:
        print_json([r.to_json() for r in found])
        return
    if not found:
        out().print("no judges in the store (assay judge add NAME FILE)", markup=False)
        return
    table = Table("judge", "version", "model", "verdict", "sha256", "added (UTC)")
    for record in found:
        verdict = record.definition.get("verdict", {}).get("kind", "binary")
        table.add_row(
            record.name,
            str(record.version),
            str(record.definition.get("model", "")),
            verdict,
            record.content_hash[:12],
            record.created_at.strftime("%Y-%m-%d %H:%M:%S"),
        )
    out().print(table)


def versions(
    name: Annotated[str, typer.Argument(help="The judge's name.")],
    store: StoreUrl = None,
    as_json: AsJson = False,
) -> None:
    """List every version of a judge, oldest first."""
    from rich.table import Table

    with user_errors(), open_store(store) as opened:
        found = opened.judge_versions(name)
    if as_json:
        print_json([r.to_json() for r in found])
        return
    table = Table("version", "sha256", "added (UTC)", "origin")
    for record in found:
        table.add_row(
            str(record.version),
            record.content_hash[:12],
            record.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            record.origin or "",
        )
    out().print(table)


def show(judge: Judge, store: StoreUrl = None, as_json: AsJson = False) -> None:
    """Show a judge (its definition, name, version, content hash) and its calibrations."""
    import yaml

    from assay.api.judges import judge_asset

    with user_errors():
        asset = judge_asset(judge, store=store)
        with open_store(store) as opened:
            calibrations = opened.calibrations(judge_hash=asset.content_hash)
    data: dict[str, Any] = {
        "name": asset.name,
        "version": asset.version,
        "content_hash": asset.content_hash,
        "source": asset.source,
        "definition": asset.definition.model_dump(mode="json", exclude_defaults=True),
        "calibrations": [_calibration(c.to_json()) for c in calibrations],
    }
    if as_json:
        print_json(data)
        return
    sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _calibration(record: dict[str, Any]) -> dict[str, Any]:
    report = record.pop("report")
    record["rows_compared"] = report.get("rows_compared")
    for key in ("agreement", "kappa", "tpr", "tnr"):
        if report.get(key) is not None:
            record[key] = report[key].get("value")
    return record


def calibrate(
    judge: Judge,
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
) -> None:
    """Measure how a judge agrees with human labels on a store dataset, and store it."""
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
        )
    _print_summary(result.report, result.directory)


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
