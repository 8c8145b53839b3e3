"""Task folders on every node of a Ray cluster.

A row reads files relative to its task file's folder: sandbox templates (``template_dir``),
plugin folders, settings files, mock scripts, commands that run ``$ASSAY_TASK_DIR/...``.
With ``--ray-files ship`` (the default) the driver packs each task folder once (a gzipped
tar in Ray's object store) and every node that is not the driver's own unpacks it into its
temporary folder; that node's runner then reads the copy (the run's records still name the
folder as it is here). A relative path that climbs out of the task folder (``../shared``)
is shipped too, at the same place relative to the folder. Folders a run never reads are
left out: version control, virtual environments, caches, ``node_modules`` and the run
folders themselves. An absolute path is not shipped: it must exist on every node.

With ``--ray-files shared`` nothing is shipped: every node must see the task folders at the
same paths (a shared file system); each node checks that it does before any row runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from assay.errors import UsageError
from assay.orchestration.planning.plan import Plan
from assay.spec.task import TaskDefinition, TemplateDir

FileMode = Literal["ship", "shared"]
FILE_MODES: tuple[FileMode, ...] = ("ship", "shared")
SHIP_LIMIT = 512 * 1024 * 1024
SKIPPED = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".assay", ".tools",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
})  # fmt: skip


@dataclass(frozen=True)
class Bundle:
    """One task folder as shipped: ``folder`` (as it is here) sits at ``inside`` (a relative
    path) in the archive, whose ``root`` holds it and the paths it reaches with ``..``. The
    bundle with ``cwd`` holds the files rows find relative to the working directory (a mock
    script named from the command line); a node's runner works in its copy."""

    folder: str
    root: str
    inside: str
    digest: str
    data: bytes
    cwd: bool = False


def referenced_paths(task: TaskDefinition, base_dir: Path) -> list[Path]:
    """The relative paths a task's rows read from its folder, resolved: template folders,
    plugin folders, settings file, mock scripts of the agent and the judge."""
    found: list[str] = [s.path for s in task.sandbox.template_sources or []
                        if isinstance(s, TemplateDir)]  # fmt: skip
    agent = task.agent
    found += agent.local_paths()
    models = [agent.route_model]
    judge = task.qa.judge if task.qa is not None else None
    if judge is not None and judge.judge is None:  # a judge asset's script: as llm_judge's
        models.append(judge.model)
    paths = [Path(os.path.normpath(base_dir / p)) for p in found if p and not Path(p).is_absolute()]
    for model in models:  # a mock script: in the task folder, else the working directory
        rest = model.partition("/")[2] if isinstance(model, str) else ""
        if (
            model is None
            or not model.startswith("mock/")
            or rest == "echo"
            or Path(rest).is_absolute()
        ):
            continue
        inside = Path(os.path.normpath(base_dir / rest))
        paths.append(inside if inside.is_file() else Path(os.path.normpath(Path.cwd() / rest)))
    return paths


def bundles(plan: Plan, *, exclude: Iterable[Path] = ()) -> list[Bundle]:
    """Every task folder of ``plan``, packed (one per folder).

    Raises:
        UsageError: the folders come to more than 512 MiB (the hint says how to share them).
    """
    reached: dict[Path, set[Path]] = {}
    cwd = Path.cwd()
    from_cwd: set[Path] = set()
    for planned in plan.tasks:
        folder = planned.loaded.base_dir
        paths = reached.setdefault(folder, set())
        for variant in planned.variants:
            for path in referenced_paths(variant.definition, folder):
                inside = path == folder or folder in path.parents
                if not inside and cwd in path.parents and path.exists():
                    from_cwd.add(path)
                else:
                    paths.add(path)
    skipped = {p.resolve() for p in exclude}
    made = [_pack(folder, paths, skipped) for folder, paths in reached.items()]
    if from_cwd:
        packed = _pack(cwd, set(), skipped, only=from_cwd)
        made.append(dataclasses.replace(packed, cwd=True))
    total = sum(len(b.data) for b in made)
    if total > SHIP_LIMIT:
        raise UsageError(
            f"the task folders to send to the cluster's nodes come to {total // 2**20} MiB "
            f"(limit {SHIP_LIMIT // 2**20} MiB): {', '.join(b.folder for b in made)}",
            hint="put them on a file system every node mounts at the same path and pass "
            "--ray-files shared, or move large files out of the task folders",
        )
    return made


def _pack(
    folder: Path, reached: set[Path], skipped: set[Path], *, only: set[Path] | None = None
) -> Bundle:
    """``folder`` (or just the paths ``only`` under it) and the ``reached`` paths outside it."""
    outside = [p for p in reached if p != folder and folder not in p.parents]
    root = Path(os.path.commonpath([folder, *outside])) if outside else folder
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as archive:
        for path in sorted(only) if only is not None else [folder, *sorted(outside)]:
            if path.exists():
                _add(archive, path, path.relative_to(root).as_posix() or ".", skipped)
    data = buffer.getvalue()
    return Bundle(str(folder), str(root), folder.relative_to(root).as_posix() or ".",
                  hashlib.sha256(data).hexdigest()[:16], data)  # fmt: skip


def _add(archive: tarfile.TarFile, path: Path, name: str, skipped: set[Path]) -> None:
    def keep(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(member.name).parts
        if any(part in SKIPPED for part in parts):
            return None
        return member

    if path.is_dir():
        archive.add(path, arcname=name, recursive=False)
        for entry in sorted(os.scandir(path), key=lambda e: e.name):
            child = Path(entry.path)
            if entry.name in SKIPPED or child.resolve() in skipped:
                continue
            _add(archive, child, f"{name}/{entry.name}" if name != "." else entry.name, skipped)
    else:
        archive.add(path, arcname=name, filter=keep)


def unpack_bundle(bundle: Bundle, into: Path) -> Path:
    """Unpack ``bundle`` under ``into`` (once per content: ``into/<digest>/``); returns where
    its task folder is now.

    Raises:
        UsageError: the archive cannot be written there.
    """
    target = into / bundle.digest
    if not target.is_dir():
        partial = into / f".{bundle.digest}.{os.getpid()}"
        try:
            partial.mkdir(parents=True)
            with tarfile.open(fileobj=io.BytesIO(bundle.data), mode="r:gz") as archive:
                archive.extractall(partial, filter="tar")
            partial.rename(target)
        except (OSError, tarfile.TarError) as exc:
            raise UsageError(f"cannot unpack the task folder {bundle.folder} into {into}: "
                             f"{exc}") from None  # fmt: skip
    return target / bundle.inside


def missing_folders(plan: Plan) -> list[str]:
    """Task folders (and absolute template paths) this machine does not have."""
    missing = []
    for planned in plan.tasks:
        folder = planned.loaded.base_dir
        if not folder.is_dir():
            missing.append(str(folder))
        for variant in planned.variants:
            for source in variant.definition.sandbox.template_sources or []:
                if not isinstance(source, TemplateDir):
                    continue
                try:
                    path = source.folder(folder)
                except ValueError:  # an unset variable: refused at load, named there
                    missing.append(source.path)
                    continue
                if not path.is_relative_to(folder) and not path.is_dir():
                    missing.append(str(path))
    return sorted(set(missing))
