"""Reading a run directory back: which folder is a run, and its rows' ``task.json`` files
(laid out as :mod:`assay.orchestration.running.rundir` writes them: ``<variant>/<suite>/<row>/
<NN>/task.json``, and ``<variant>/<task>/<NN>/task.json`` for a task without a dataset).

Everything that reads a finished run (reports, re-grading, the viewer, the store's capture
of a run's rows, the Python API's results) reads it through these functions."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from assay.errors import UsageError
from assay.results.io import read_json
from assay.results.plan_record import PLAN_FILE
from assay.results.task_result import EvaluationResult

REPLICATE_DIR = re.compile(r"^\d{2,}$")


def existing_run_dir(argument: str | Path) -> Path:
    """A run directory to resume, made absolute.

    Raises:
        UsageError: not a directory.
    """
    path = Path(argument)
    _refuse_non_folder(path, argument)
    return path.resolve()


def _refuse_non_folder(path: Path, argument: str | Path) -> None:
    """Refuse a run directory argument that names no folder (missing, or a file)."""
    if path.is_dir():
        return
    if path.exists():
        raise UsageError(f"{argument} is a file, not a run directory",
                         hint="give the run's folder, e.g. runs/latest")  # fmt: skip
    raise UsageError(f"run directory not found: {argument}")


def resolve_run_dir(argument: str | Path) -> Path:
    """A finished (or interrupted) run directory given by path (``runs/latest`` works).

    Raises:
        UsageError: not a directory; a folder of runs (``runs/``) rather than one run; or a
            folder that holds no run.
    """
    path = Path(argument)
    _refuse_non_folder(path, argument)
    path = path.resolve()
    if (path / PLAN_FILE).is_file() or (path / "run.json").is_file():
        return path
    runs = [
        p.name
        for p in path.iterdir()
        if not p.is_symlink() and ((p / PLAN_FILE).is_file() or (p / "run.json").is_file())
    ]
    if runs:
        raise UsageError(
            f"{argument} is a folder of {len(runs)} run{'s' if len(runs) != 1 else ''}, not one "
            "run",
            hint=f"pass one of them, e.g. {Path(argument) / 'latest'}",
        )
    raise UsageError(f"{argument} is not a run directory (no plan.json or run.json)")


def task_json_paths(run_dir: Path) -> list[Path]:
    """Every row's ``task.json``, found where the layout puts them (never inside a kept
    sandbox): ``<variant>/<suite>/<row>/<NN>/`` and ``<variant>/<task>/<NN>/``."""
    found: list[Path] = []
    for variant in sorted(p for p in run_dir.iterdir() if p.is_dir()):
        for entry in sorted(p for p in variant.iterdir() if p.is_dir()):
            found += list(entry_task_jsons(entry))
    return found


def scan_task_jsons(run_dir: Path) -> Iterator[Path]:
    """Every row's ``task.json`` like :func:`task_json_paths`, one at a time and in the
    order the file system lists them (a folder of a million rows is never listed whole)."""
    for variant in sorted(p for p in run_dir.iterdir() if p.is_dir()):
        for entry in sorted(p for p in variant.iterdir() if p.is_dir()):
            with os.scandir(entry) as children:
                for child in children:
                    if not child.is_dir():
                        continue
                    if is_replicate(child.name, child.path):  # a task without a dataset
                        yield Path(child.path) / "task.json"
                    else:
                        yield from _replicates(Path(child.path))


def is_replicate(name: str, path: str) -> bool:
    """Whether the folder ``name`` at ``path``, in a suite's or a task's folder, is a
    replicate's (``NN`` holding its ``task.json``: a task without a dataset) rather than a
    row's, whose id may be a number too (``10``, ``001``): a row's folder holds its
    replicates' folders, never a ``task.json``."""
    return REPLICATE_DIR.match(name) is not None and os.path.isfile(f"{path}/task.json")


def entry_task_jsons(entry: Path) -> Iterator[Path]:
    """The ``task.json`` files of one suite folder (``<variant>/<suite>/``: every row's
    replicates) or one task folder without a dataset (``<variant>/<task>/``), in order."""
    yield from _replicates(entry)
    for row in sorted(p for p in entry.iterdir() if p.is_dir()):
        if not is_replicate(row.name, str(row)):
            yield from _replicates(row)


def _replicates(folder: Path) -> list[Path]:
    return [
        child / "task.json"
        for child in sorted(folder.iterdir())
        if REPLICATE_DIR.match(child.name) and (child / "task.json").is_file()
    ]


def load_task_json(path: Path) -> EvaluationResult:
    """One ``task.json``.

    Raises:
        UsageError: the file is not a valid ``task.json`` (named, with what to do).
    """
    try:
        return EvaluationResult.model_validate(read_json(path))
    except (ValueError, OSError) as exc:
        reason = str(exc).splitlines()[0]
        raise UsageError(
            f"{path} is not a valid task.json ({reason})",
            hint="delete it and run `assay run --resume RUN_DIR` to run that row again",
        ) from None


def iter_results(run_dir: Path) -> Iterator[EvaluationResult]:
    """Every ``task.json`` of the run in ``run_dir``, read one at a time
    (:func:`scan_task_jsons`), so a run of any size is read in memory that does not grow
    with it.

    Raises:
        UsageError: a file is not a valid ``task.json``.
    """
    for path in scan_task_jsons(run_dir):
        yield load_task_json(path)


def has_results(run_dir: Path) -> bool:
    """Some ``task.json`` exists under ``run_dir`` (where the layout puts them)."""
    return next(scan_task_jsons(run_dir), None) is not None


def load_results(run_dir: Path) -> list[EvaluationResult]:
    """Every ``task.json`` of the run in ``run_dir``.

    Raises:
        UsageError: a file is not a valid ``task.json``.
    """
    return [load_task_json(path) for path in task_json_paths(run_dir)]


def load_run_results(run_dir: Path) -> list[EvaluationResult]:
    """Like :func:`load_results`, refusing a run without any row.

    Raises:
        UsageError: no ``task.json`` at all.
    """
    results = load_results(run_dir)
    if not results:
        raise UsageError(f"no task.json under {run_dir}: is it a run directory?")
    return results
