"""The eval set ``uipath_eval`` gives ``uipath eval``: found, checked and copied into the row's
sandbox.

An eval set in the task's folder is the task's: it is read before the run (valid JSON, with
evaluations, and an evaluator file for every evaluator it names, in the ``evaluators/``
folder ``uipath`` reads beside its folder: ``X/eval-sets/s.json`` → ``X/evaluators/``), the
thresholds must name its evaluators (or ``*``), and it is copied with its evaluators into
the sandbox for the run, links kept as links (a link is never followed out of the task's
folder into the row). Otherwise ``eval_set`` names a file of the sandbox (a path, or a name
``uipath`` finds in ``evaluations/eval-sets/``), which must exist there. What is wrong with
either is the criterion's error, never a score of the agent's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from assay.criteria.base import CriterionError
from assay.criteria.uipath_metrics import MACRO


def prepare_eval_set(name: str, *, task_dir: str | None, root: Path, scratch: Path,
                     thresholds: dict[str, float]) -> str:  # fmt: skip
    """The eval set as ``uipath`` is given it (relative to the sandbox ``root``): a checked
    copy of the task folder's file in ``scratch``, else ``name`` as written.

    Raises:
        CriterionError: see the module docstring.
    """
    source = Path(task_dir or ".") / name
    if not source.is_file():
        _in_sandbox(name, root, task_dir)
        return name
    refs = _evaluator_ids(_read(source), source)
    evaluators = source.resolve().parent.parent / "evaluators"
    have = _evaluator_files(evaluators)
    missing = [ref for ref in refs if ref not in have]
    if missing:
        raise CriterionError(f"the eval set {source} names evaluator '{missing[0]}', which has "
                             f"no file in {evaluators} (a JSON file whose id is it)")  # fmt: skip
    unknown = [t for t in thresholds if t != MACRO and t not in refs]
    if unknown:
        raise CriterionError(f"thresholds names '{unknown[0]}', which is not an evaluator of "
                             f"the eval set {source} ({', '.join(refs)}) nor '*'")  # fmt: skip
    copy = scratch / "eval-sets" / source.name
    try:
        copy.parent.mkdir(parents=True)
        shutil.copyfile(source, copy)
        shutil.copytree(evaluators, scratch / "evaluators", symlinks=True)
    except OSError as exc:
        raise CriterionError(f"cannot copy the eval set into the sandbox: {exc}") from None
    return copy.relative_to(root).as_posix()


def _in_sandbox(name: str, root: Path, task_dir: str | None) -> None:
    """Refuse an eval set that is neither the task folder's nor the sandbox's."""
    candidates = [name, f"evaluations/eval-sets/{name}", f"evaluations/eval-sets/{name}.json"]
    for candidate in candidates:
        path = (root / candidate).resolve()
        if path.is_file() and (path == root.resolve() or root.resolve() in path.parents):
            return
    raise CriterionError(f"eval_set '{name}' is neither a file of the task's folder "
                         f"({task_dir or '?'}) nor of the sandbox (nor in its "
                         "evaluations/eval-sets/)")  # fmt: skip


def _read(source: Path) -> dict[str, Any]:
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CriterionError(f"the eval set {source} cannot be read as JSON: {exc}") from None
    evaluations = data.get("evaluations") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(evaluations, list) or not evaluations:
        raise CriterionError(f"the eval set {source} has no evaluations (a JSON object whose "
                             "evaluations is a list of them)")  # fmt: skip
    return {str(key): value for key, value in data.items()}


def _evaluator_ids(data: dict[str, Any], source: Path) -> list[str]:
    """The evaluators the eval set names (``evaluatorConfigs[].ref``, else
    ``evaluatorRefs``), as ``uipath`` reads them."""
    configs = data.get("evaluatorConfigs")
    if isinstance(configs, list) and configs:
        refs = [c.get("ref") for c in configs if isinstance(c, dict)]
    else:
        refs = data.get("evaluatorRefs") or []
    names = [r for r in refs if isinstance(r, str) and r]
    if not names:
        raise CriterionError(f"the eval set {source} names no evaluator (evaluatorRefs)")
    return names


def _evaluator_files(folder: Path) -> dict[str, Path]:
    """Evaluator id → its file in ``folder`` (``uipath`` reads ``*.json`` there)."""
    found: dict[str, Path] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CriterionError(f"the evaluator file {path} cannot be read as JSON: "
                                 f"{exc}") from None  # fmt: skip
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            found.setdefault(data["id"], path)
    return found
