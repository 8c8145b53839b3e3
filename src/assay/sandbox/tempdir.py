"""A sandbox: a fresh temporary directory per row-task, filled from ``template_sources``.

Sources apply in order and later ones win on conflicts (Coder Eval's rule): ``template_dir``
copies a folder (relative to the task file) to ``mount_point`` (default: the root);
``starter_files`` writes files. Paths a criterion reads are resolved with
:meth:`Sandbox.resolve`, which refuses absolute paths, ``..`` and symlinks that lead out.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path, PurePosixPath

from assay.errors import SandboxError
from assay.spec.task import SandboxConfig, StarterFiles, TemplateDir


class SandboxEscape(ValueError):
    """A path that would leave the sandbox."""


class Sandbox:
    """One row-task's working directory.

    Args:
        root: the directory (it must exist).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._real = root.resolve()

    @classmethod
    def create(cls, config: SandboxConfig, *, base_dir: Path, prefix: str = "assay-") -> Sandbox:
        """Make a new temporary directory and fill it from ``config.template_sources``.

        Args:
            config: the task's sandbox block.
            base_dir: the task file's directory (template paths are relative to it).
            prefix: the temporary directory's name prefix.

        Raises:
            SandboxError: a template folder is missing or a file cannot be written.
        """
        sandbox = cls(Path(tempfile.mkdtemp(prefix=prefix)))
        try:
            for source in config.template_sources or []:
                if isinstance(source, TemplateDir):
                    sandbox._copy_dir(source, base_dir)
                elif isinstance(source, StarterFiles):
                    for item in source.files:
                        target = sandbox.resolve(item.path)
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_text(item.content, encoding="utf-8")
        except (OSError, SandboxEscape) as exc:
            sandbox.remove()
            raise SandboxError(f"cannot prepare the sandbox: {exc}") from exc
        return sandbox

    def _copy_dir(self, source: TemplateDir, base_dir: Path) -> None:
        origin = Path(source.path)
        origin = origin if origin.is_absolute() else base_dir / origin
        if not origin.is_dir():
            raise SandboxError(f"template_dir not found: {origin}")
        target = self.resolve(source.mount_point) if source.mount_point else self.root
        shutil.copytree(origin, target, symlinks=True, dirs_exist_ok=True)

    def resolve(self, relative: str) -> Path:
        """The absolute path of ``relative`` inside the sandbox.

        Raises:
            SandboxEscape: ``relative`` is absolute, climbs out with ``..``, or resolves
                (through symlinks) to a place outside the sandbox.
        """
        pure = PurePosixPath(relative.replace("\\", "/"))
        if pure.is_absolute() or (relative[1:3] in (":\\", ":/")):
            raise SandboxEscape(f"path '{relative}' is absolute; use a path inside the sandbox")
        if ".." in pure.parts:
            raise SandboxEscape(f"path '{relative}' leaves the sandbox ('..')")
        candidate = self.root.joinpath(*pure.parts)
        real = candidate.resolve()
        if real != self._real and self._real not in real.parents:
            raise SandboxEscape(f"path '{relative}' resolves outside the sandbox (a symlink)")
        return candidate

    def preserve(self, destination: Path) -> Path:
        """Move the sandbox to ``destination`` (kept for ``assay evaluate``)."""
        destination.parent.mkdir(parents=True, exist_ok=True)
        if destination.exists():
            shutil.rmtree(destination)
        shutil.move(str(self.root), destination)
        self.root = destination
        self._real = destination.resolve()
        return destination

    def remove(self) -> None:
        """Delete the sandbox (an empty one with a single ``rmdir``)."""
        try:
            self.root.rmdir()
        except OSError:
            shutil.rmtree(self.root, ignore_errors=True)
