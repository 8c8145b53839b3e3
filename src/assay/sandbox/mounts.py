"""What a bwrap sandbox shows of the host: the system folders, the tools' folders, and the
folders that lead to bound paths (:mod:`assay.sandbox.bwrap` uses them).

Every path is bound at the place it has on the host. The system folders are bound as they
are (a symlink such as ``/bin → usr/bin`` stays one); the tools are assay's own Python, the
``PATH`` folders outside home folders, and any virtual environment or ``node_modules/.bin``
on ``PATH`` with its whole environment.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
                "/nix")  # fmt: skip


def system_binds() -> list[str]:
    """Binds of the system folders that exist (a symlink such as ``/bin → usr/bin`` stays a
    symlink)."""
    args: list[str] = []
    for name in SYSTEM_PATHS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    return args


def parent_dirs(paths: list[Path]) -> list[str]:
    """``--dir`` for the folders that lead to bound paths outside the system folders, made
    traversable (``0755``): bwrap would give them the host's mode, and a host ``/root`` is
    ``0700``, which the row's user could not cross."""
    system = [Path(s) for s in SYSTEM_PATHS]
    parents: set[Path] = set()
    for path in paths:
        for parent in path.parents:
            if parent == Path("/") or any(s == parent or s in parent.parents for s in system):
                continue
            if parent in (Path("/tmp"), Path("/var/tmp")):
                continue  # the sandbox's own, made 1777
            parents.add(parent)
    args: list[str] = []
    for parent in sorted(parents, key=lambda p: (len(p.parts), str(p))):
        args += ["--perms", "0755", "--dir", str(parent)]
    return args


def outermost(paths: Iterable[Path]) -> list[Path]:
    """Existing folders (and files) outside the system folders (bound anyway), without
    those inside another one, outermost first."""
    found = sorted({p for p in paths if p.exists()}, key=lambda p: (len(p.parts), str(p)))
    system = [Path(s) for s in SYSTEM_PATHS]
    kept: list[Path] = []
    for path in found:
        if any(s == path or s in path.parents for s in [*system, *kept]):
            continue
        kept.append(path)
    return kept


SHARED_PATHS = ("/tmp", "/var/tmp", "/dev/shm", "/run", "/proc", "/sys", "/dev")
"""Folders every process of the host shares (other rows' sandboxes are in the temporary
folder): a ``PATH`` entry that is one of them, or contains one (``/``, ``/var``), is never
shown to a sandbox."""


def shares_host_scratch(path: Path) -> bool:
    """True when ``path`` is a shared folder of :data:`SHARED_PATHS` (or the system's
    temporary folder), or contains one."""
    shared = {Path(p) for p in SHARED_PATHS} | {Path(tempfile.gettempdir()).resolve()}
    return any(path == s or path in s.parents for s in shared)


def tool_folders(path_variable: str) -> list[Path]:
    """The folders of ``PATH`` a sandbox shows: those outside home folders, and any
    virtual environment (``bin/`` beside ``pyvenv.cfg``, with the Python it was made from)
    or ``node_modules/.bin`` (its ``node_modules``) wherever it is; never a shared folder
    such as ``/tmp`` or one containing it such as ``/`` (:func:`shares_host_scratch`)."""
    homes = home_folders()
    folders: list[Path] = []
    for entry in path_variable.split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        path = Path(entry).resolve()
        if shares_host_scratch(path):
            continue
        environment = _environment_root(path)
        if environment is not None:
            folders += [f for f in environment if not shares_host_scratch(f)]
        elif not any(h == path or h in path.parents for h in homes):
            folders.append(path)
    return folders


def _environment_root(path: Path) -> list[Path] | None:
    if (path.parent / "pyvenv.cfg").is_file():
        return [path.parent, *_base_python(path.parent / "pyvenv.cfg")]
    if path.name == ".bin" and path.parent.name == "node_modules":
        return [path.parent]
    return None


def _base_python(config: Path) -> list[Path]:
    """The prefix of the Python a virtual environment was made from (``home = …/bin``)."""
    for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return [Path(value.strip()).resolve().parent]
    return []


def python_folders() -> list[Path]:
    """assay's own Python: its environment, the installation it comes from, and the folder
    assay is imported from (outside the environment when installed in editable mode; its
    pytest plugin is loaded by every pytest of that environment)."""
    names = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    folders = [Path(n).resolve() for n in names]
    folders.append(Path(os.path.realpath(sys.executable)).parent.parent)
    folders.append(Path(__file__).resolve().parents[2])
    return folders


def home_folders() -> list[Path]:
    """Where users' homes are: ``/home``, ``/root``, and this user's home."""
    homes = {Path("/home"), Path("/root")}
    with contextlib.suppress(KeyError):
        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir))
    if os.environ.get("HOME"):
        homes.add(Path(os.environ["HOME"]))
    return [h.resolve() for h in homes if str(h) != "/"]


def install_root(executable: Path) -> Path:
    """The folder a CLI needs to run: its ``node_modules`` (an npm install), else the folder
    of the real executable."""
    real = executable.resolve()
    for parent in real.parents:
        if parent.name == "node_modules":
            outer = [p for p in real.parents if p.name == "node_modules"]
            return outer[-1]
    return real.parent


def unreadable(path: Path) -> str | None:
    """Why a row's own user (assay running as root) could not read ``path``, or ``None``:
    a folder needs ``o+rx``, a file ``o+r``."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return f"{path} cannot be read: {exc.strerror}"
    needed = 0o005 if path.is_dir() else 0o004
    if mode & needed != needed:
        kind = "folder" if path.is_dir() else "file"
        return (f"{path} is a {kind} with mode {oct(mode & 0o777)[2:]}, which the row's "
                "unprivileged user cannot read")  # fmt: skip
    return None
