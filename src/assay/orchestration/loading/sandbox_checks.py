"""Load-time checks of a task's ``sandbox`` block that need the file system: every
``sandbox.read_only`` folder exists (a folder that is not there would silently not be
shown to the row's programs)."""

from __future__ import annotations

from pathlib import Path

from assay.errors import TaskFileError
from assay.spec.source import YamlDocument
from assay.spec.task import TaskDefinition


def check_read_only(
    task: TaskDefinition, *, base_dir: Path, display: str, document: YamlDocument
) -> None:
    """Each ``sandbox.read_only`` path (relative to the task file) exists.

    Raises:
        TaskFileError: naming ``sandbox.read_only[i]`` and its line.
    """
    for index, name in enumerate(task.sandbox.read_only):
        path = Path(name) if Path(name).is_absolute() else base_dir / name
        if not path.exists():
            raise TaskFileError(
                f"sandbox.read_only: {path} does not exist",
                file=display, line=document.line_of(("sandbox", "read_only", index)),
                field=f"sandbox.read_only[{index}]",
                hint="the path is relative to the task file's folder",
            )  # fmt: skip
