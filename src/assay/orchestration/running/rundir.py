"""The run directory: ``runs/<YYYY-MM-DD_HH-MM-SS>/`` and the ``runs/latest`` symlink.

Layout (docs/cli.md, "The run directory")::

    runs/<timestamp>/run.json run.md
      <variant_id>/<suite_id>/suite.json suite.md
      <variant_id>/<suite_id>/<row_id>/<NN>/task.json response.txt trace.json task.log
      <variant_id>/<task_id>/<NN>/task.json ...        (tasks without a dataset)
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from pathlib import Path

from assay.spec.run_names import LATEST as LATEST  # re-exported


def create_run_dir(root: Path, *, now: datetime | None = None) -> Path:
    """Make a new, unique run directory under ``root`` and point ``root/latest`` at it."""
    stamp = (now or datetime.now()).strftime("%Y-%m-%d_%H-%M-%S")
    root.mkdir(parents=True, exist_ok=True)
    candidate = root / stamp
    suffix = 1
    while True:
        try:
            candidate.mkdir()
            break
        except FileExistsError:
            suffix += 1
            candidate = root / f"{stamp}-{suffix}"
    point_latest(root, candidate)
    return candidate


def point_latest(root: Path, run_dir: Path) -> None:
    """Atomically make ``root/latest`` a relative symlink to ``run_dir``."""
    link = root / LATEST
    tmp = root / f".{LATEST}.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    try:
        tmp.symlink_to(run_dir.name, target_is_directory=True)
        os.replace(tmp, link)
    except OSError:
        tmp.unlink(missing_ok=True)


def latest_target(root: Path) -> str | None:
    """The name ``root/latest`` points at, or ``None`` (no link)."""
    try:
        return os.readlink(root / LATEST)
    except OSError:
        return None


def withdraw_run_dir(run_dir: Path, *, previous: str | None) -> None:
    """Remove a run directory nothing ran in, and point ``latest`` back at ``previous``
    (``None``: no link), unless another run has taken ``latest`` since."""
    root = run_dir.parent
    if latest_target(root) == run_dir.name:
        if previous is None:
            (root / LATEST).unlink(missing_ok=True)
        else:
            point_latest(root, root / previous)
    shutil.rmtree(run_dir, ignore_errors=True)


def replicate_dir_name(replicate: int) -> str:
    """``00``, ``01``, …"""
    return f"{replicate:02d}"


def item_dir(
    run_dir: Path,
    *,
    variant_id: str,
    task_id: str,
    suite_id: str | None,
    row_id: str | None,
    replicate: int,
) -> Path:
    """Where one row-task replicate writes its files."""
    base = run_dir / variant_id
    if suite_id is not None and row_id is not None:
        base = base / suite_id / row_id
    else:
        base = base / task_id
    return base / replicate_dir_name(replicate)


def suite_dir(run_dir: Path, variant_id: str, suite_id: str) -> Path:
    """Where a suite's ``suite.json`` and ``suite.md`` go."""
    return run_dir / variant_id / suite_id
