"""``assay judge add | list | show | versions``: judges as versioned assets in the store (each
a call of :mod:`assay.api.judges`; ``calibrate`` is :mod:`assay.cli.judge_calibrate`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from assay.cli.shared.common import user_errors
from assay.cli.shared.dataset_support import AsJson, StoreUrl, open_store, out, print_json

# help texts are rich markup: "\\[" shows a bracket that "[" would open a style tag with
Judge = Annotated[str, typer.Argument(help="A judge file (judges/x.yaml) or NAME\\[@N].")]


def add(
    name: Annotated[str, typer.Argument(help="The judge's name in the store.")],
    file: Annotated[Path, typer.Argument(help="The judge file (YAML or JSON).")],
    store: StoreUrl = None,
) -> None:
    """Store a judge file as the judge's next version (unchanged content adds nothing)."""
    from assay.api import add_judge

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
