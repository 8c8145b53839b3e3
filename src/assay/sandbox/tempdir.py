"""A sandbox: a fresh temporary directory per row-task, filled from ``template_sources``.

Sources apply in order and later ones win on conflicts (Coder Eval's rule): ``template_dir``
copies a folder (relative to the task file) to ``mount_point`` (default: the root), without
the sandbox being filled and the folders and files the run keeps from rows (the run folder,
the store, the response cache: ``exclude``) wherever they lie inside it; ``starter_files``
writes files. Paths a criterion reads are resolved with
:meth:`Sandbox.resolve`, which refuses absolute paths, ``..`` and symlinks that lead out.
Programs run in it with :meth:`Sandbox.run`: inside its bwrap sandbox when it has one
(:mod:`assay.sandbox.bwrap`, the ``bwrap`` driver) or container
(:mod:`assay.sandbox.docker`), else as plain processes.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from assay.errors import SandboxError
from assay.results.io import LogFolder, Writer
from assay.results.secret_scan import SCAN_BLOCK, SCAN_OVERLAP
from assay.results.sparse import copy_file, data_blocks, data_extents, read_range
from assay.sandbox.bwrap import Jail
from assay.sandbox.cli_shims import LOG_NAME, MOCKS_DIR, PROBLEMS_NAME, write_shims
from assay.sandbox.docker import DockerJail
from assay.sandbox.limit_counts import LimitCounts
from assay.sandbox.process import MAX_OUTPUT_BYTES, ProcessResult, run_process
from assay.sandbox.reaper import RowProcesses
from assay.sandbox.trees import remove_tree, walk_tree
from assay.spec.task import SandboxConfig, StarterFiles, TemplateDir

MOCK_PATH_DIR = ".mock_path"
"""Where ``sandbox.mock_path_dirs`` are copied in the row's sandbox (``.mock_path/0/``, …)."""


def shim_path(env: dict[str, str], sandbox: Path, config: SandboxConfig) -> dict[str, str]:
    """``env`` with the sandbox's ``record_cli`` shims, then its ``mock_path_dirs``, first on
    ``PATH`` (``env`` itself when it has neither)."""
    first = [str((sandbox / MOCKS_DIR).absolute())] if config.record_cli else []
    first += [str((sandbox / MOCK_PATH_DIR / str(index)).absolute())
              for index in range(len(config.mock_path_dirs or []))]  # fmt: skip
    if not first:
        return env
    return {**env, "PATH": os.pathsep.join([*first, *filter(None, [env.get("PATH")])])}


def place_stand_ins(
    root: Path, config: SandboxConfig, base_dir: Path, *, fresh_log: bool = True
) -> None:
    """Write ``config.record_cli``'s shims into ``cli_mocks/`` (with ``fresh_log``, an empty
    call log) and copy each of ``config.mock_path_dirs`` into ``.mock_path/N/``, the folders
    :func:`shim_path` puts first on ``PATH``; each is made a folder of its own first
    (:func:`own_folder`).

    Raises:
        OSError: a folder cannot be written. ValueError: a ``record_cli`` rule is refused.
    """
    if config.record_cli:
        own_folder(root / MOCKS_DIR)
        write_shims(root, [rule.model_dump() for rule in config.record_cli], fresh_log=fresh_log)
    if config.mock_path_dirs:
        own_folder(root / MOCK_PATH_DIR)
    for index, folder in enumerate(config.mock_path_dirs or []):
        shutil.copytree(base_dir / folder, root / MOCK_PATH_DIR / str(index), symlinks=True)


def restore_stand_ins(root: Path, config: SandboxConfig, base_dir: Path) -> None:
    """Make the folders :func:`shim_path` puts first on ``PATH`` what the task wrote again,
    before criteria run: the agent could write them (they are in its sandbox), and a
    ``python3`` or ``pytest`` it left there would answer for a criterion's command. What the
    agent left in them goes, but for the calls ``cli_mocks/`` recorded; then
    :func:`place_stand_ins` writes them again.

    Raises:
        OSError: a folder cannot be removed or written.
    """
    folders = [root / MOCKS_DIR] if config.record_cli else []
    folders += [root / MOCK_PATH_DIR] if config.mock_path_dirs else []
    for folder in folders:
        own_folder(folder)
        for entry in folder.iterdir():
            kept = entry.name in (LOG_NAME, PROBLEMS_NAME) and folder.name == MOCKS_DIR
            if not kept or entry.is_symlink() or not entry.is_file():
                _remove(entry)
    place_stand_ins(root, config, base_dir, fresh_log=False)


def own_folder(path: Path) -> None:
    """``path`` a folder of its own: a link or a file the agent put there instead goes first
    (a link is never followed)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _named_limit(
    result: ProcessResult, groups: RowProcesses, *, before: LimitCounts
) -> ProcessResult:
    """A program that failed after the row reached a limit (the kernel killed one of its
    processes for memory, or refused it a process at ``max_pids``, more often than the
    counts ``before``) says so on its stderr, naming the ``sandbox.limits`` field, as the
    ``docker`` driver's programs do."""
    if result.exit_code == 0:
        return result  # (the counts are read only for a failed program)
    note = groups.limit_note(since=before)
    if note is None:
        return result
    stderr = result.stderr + ("" if result.stderr.endswith("\n") or not result.stderr else "\n")
    return replace(result, stderr=f"{stderr}assay: {note}\n")


GLOB_CHARS = frozenset("*?[")
GLOB_IGNORED = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".tox",
                          ".mypy_cache", ".pytest_cache"})  # fmt: skip
"""Folders a criterion's glob never looks into (as Coder Eval's matches skip ignored dirs)."""


class SandboxEscape(ValueError):
    """A path that would leave the sandbox."""


class LinkEscape(SandboxEscape):
    """A path that leaves the sandbox through a link inside it (one the agent made), not by
    how it is written (absolute, ``..``)."""


class Sandbox:
    """One row-task's working directory.

    Args:
        root: the directory (it must exist).
        jail: the bwrap sandbox or docker container its programs run in (``None``: plain
            processes).
        max_output_bytes: what :meth:`run` keeps in memory of each output stream
            (``sandbox.limits.max_output_mb``).
        logs: where a stream that passes it is written whole (the row's folder), or
            ``None`` (the rest is dropped).
        groups: the row's control groups (``tempdir`` and ``bwrap``, where the machine
            gives them: :mod:`assay.sandbox.cgroups`), or a ``tempdir`` row's subreaper
            where it gives none (:mod:`assay.sandbox.reaper`): every program runs inside
            them.
    """

    def __init__(
        self,
        root: Path,
        jail: Jail | DockerJail | None = None,
        *,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        logs: LogFolder | None = None,
        groups: RowProcesses | None = None,
    ) -> None:
        self.root = root
        self.jail = jail
        self.max_output_bytes = max_output_bytes
        self.logs = logs
        self.groups = groups
        self._real = root.resolve()

    async def run(
        self,
        command: str | list[str],
        *,
        env: dict[str, str],
        timeout: float,
        stdin: str | None = None,
        readable: tuple[Path, ...] = (),
        writable: tuple[Path, ...] = (),
        log_name: str | None = None,
        agent: bool = False,
    ) -> ProcessResult:
        """Run a shell command (or an argv list) in the sandbox's folder, inside its jail
        when it has one; ``readable`` are more host folders the program may read there (a
        tool it runs), ``writable`` more folders it may write; ``agent``: a program the
        agent chose (assay's own agent's ``run_command``), which the jail treats as a coding
        agent's: the task file's folder (the dataset and its answers) stays hidden.

        A stream longer than ``max_output_bytes`` is written whole to ``logs`` as
        ``<log_name>.stdout.log``/``.stderr.log`` (``command-N`` when ``None``), on every
        driver: the jail's program is read through the same pipes.

        Raises:
            FileNotFoundError, PermissionError: an argv program cannot be started (without
                a jail or control groups; inside them, the shell reports it with exit code
                127 or 126).
        """
        cap = self.max_output_bytes
        logs = self.logs.logs(log_name) if self.logs is not None else None
        if self.jail is None:
            program, inner = command, env
        else:
            argv = ["/bin/sh", "-c", command] if isinstance(command, str) else command
            program, inner = self.jail.command(argv, env=env, cwd=self.root, readable=readable,
                                               writable=writable, agent=agent)  # fmt: skip
        if self.groups is None:
            return await run_process(program, cwd=self.root, env=inner, timeout=timeout,
                                     stdin=stdin, max_output_bytes=cap, logs=logs)  # fmt: skip
        counts = self.groups.counts()
        result = await run_process(self.groups.enter(program), cwd=self.root, env=inner,
                                   timeout=timeout, stdin=stdin, max_output_bytes=cap,
                                   logs=logs)  # fmt: skip
        return _named_limit(result, self.groups, before=counts)

    @classmethod
    def create(
        cls,
        config: SandboxConfig,
        *,
        base_dir: Path,
        prefix: str = "assay-",
        at: Path | None = None,
        exclude: Iterable[Path] = (),
    ) -> Sandbox:
        """Make a new directory and fill it from ``config.template_sources``.

        Args:
            config: the task's sandbox block.
            base_dir: the task file's directory (template paths are relative to it).
            prefix: the temporary directory's name prefix.
            at: create the sandbox at this (new) path instead of a temporary directory; a
                sandbox that will be kept is made where it stays, so nothing in it (absolute
                symlinks, FIFOs) has to survive a move.
            exclude: folders and files a ``template_dir`` never copies, wherever they lie
                inside it (the run folder, the store, the response cache); the sandbox's
                own folder is never copied either, so a template that holds the place the
                sandbox is made in does not copy it into itself.

        ``config.record_cli``'s shims are written into ``cli_mocks/`` last, and each of
        ``config.mock_path_dirs`` copied into ``.mock_path/N/`` (:mod:`assay.sandbox.cli_shims`;
        :func:`shim_path` puts them first on ``PATH``).

        Raises:
            SandboxError: a template folder is missing, a file cannot be written, or ``at``
                already exists.
        """
        if at is not None:
            try:
                at.mkdir(parents=True)
            except OSError as exc:
                raise SandboxError(f"cannot create the sandbox at {at}: {exc}") from exc
            sandbox = cls(at, max_output_bytes=config.limits.max_output_bytes)
        else:
            sandbox = cls(Path(tempfile.mkdtemp(prefix=prefix)),
                          max_output_bytes=config.limits.max_output_bytes)  # fmt: skip
        try:
            skipped = _identities([*exclude, sandbox.root])
            for source in config.template_sources or []:
                if isinstance(source, TemplateDir):
                    sandbox._copy_dir(source, base_dir, skipped)
                elif isinstance(source, StarterFiles):
                    for item in source.files:
                        target = sandbox.resolve(item.path)
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_text(item.content, encoding="utf-8")
            place_stand_ins(sandbox.root, config, base_dir)
        except SandboxError:
            sandbox.remove()
            raise
        except (OSError, SandboxEscape, ValueError) as exc:
            sandbox.remove()
            raise SandboxError(f"cannot prepare the sandbox: {exc}") from exc
        return sandbox

    def _copy_dir(
        self, source: TemplateDir, base_dir: Path, skipped: frozenset[tuple[int, int]]
    ) -> None:
        try:
            origin = source.folder(base_dir)
        except ValueError as exc:
            raise SandboxError(str(exc)) from None
        if not origin.is_dir():
            raise SandboxError(f"template_dir not found: {origin}")
        target = self.resolve(source.mount_point) if source.mount_point else self.root
        _copy_over(origin, target, skipped)

    def resolve(self, relative: str) -> Path:
        """The absolute path of ``relative`` inside the sandbox.

        Raises:
            SandboxEscape: ``relative`` is absolute or climbs out with ``..``; its
                :class:`LinkEscape` when it resolves (through symlinks) outside the sandbox,
                or through a link that may not be followed (``/proc/1/root``, a loop).
        """
        pure = PurePosixPath(relative.replace("\\", "/"))
        if pure.is_absolute() or (relative[1:3] in (":\\", ":/")):
            raise SandboxEscape(f"path '{relative}' is absolute; use a path inside the sandbox")
        if ".." in pure.parts:
            raise SandboxEscape(f"path '{relative}' leaves the sandbox ('..')")
        candidate = self.root.joinpath(*pure.parts)
        try:
            real = candidate.resolve()
        except (OSError, RuntimeError) as exc:  # /proc/PID/root, or a loop of links
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "a loop"
            raise LinkEscape(f"path '{relative}' resolves through a link that cannot be "
                             f"followed ({why})") from None  # fmt: skip
        if real != self._real and self._real not in real.parents:
            raise LinkEscape(f"path '{relative}' resolves outside the sandbox (a symlink)")
        return candidate

    def matches(self, pattern: str) -> list[str]:
        """What the glob ``pattern`` matches inside the sandbox, sorted, as relative paths:
        Coder Eval's fallback for a criterion's path that does not exist (``**`` crosses
        folders; nothing under :data:`GLOB_IGNORED` folders, nothing through a link that
        leads out); ``[]`` for a path without glob characters (``*``, ``?``, ``[``).

        Raises:
            SandboxEscape: ``pattern`` is absolute or climbs out with ``..``.
        """
        if not GLOB_CHARS & set(pattern):
            return []
        self.resolve(pattern)  # absolute or '..': refused as a plain path is
        found = []
        for path in self.root.glob(PurePosixPath(pattern.replace("\\", "/")).as_posix()):
            relative = path.relative_to(self.root)
            if GLOB_IGNORED & set(relative.parts[:-1]):
                continue
            try:
                real = path.resolve()
            except (OSError, RuntimeError):  # a link not to be followed, or a loop
                continue
            if real == self._real or self._real in real.parents:
                found.append(relative.as_posix())
        return sorted(found)

    def copy_to(self, destination: Path) -> Sandbox:
        """A copy at ``destination`` (a new folder) in which absolute symlinks that pointed
        inside this sandbox point to the same place inside the copy, relative to the link's
        folder (so they hold wherever the copy is read from, and when it moves). Named pipes,
        sockets and device files are not copied (they hold no content, and opening a pipe
        would block); a sparse file's holes stay holes (:func:`~assay.results.sparse.copy_file`)."""
        shutil.copytree(self.root, destination, symlinks=True, ignore=_special_files,
                        copy_function=copy_file)  # fmt: skip
        real = self.root.resolve()
        for link in [p for p in destination.rglob("*") if p.is_symlink()]:
            target = Path(os.readlink(link))
            if target.is_absolute() and (target == real or real in target.parents or
                                         self.root in target.parents):  # fmt: skip
                base = real if (target == real or real in target.parents) else self.root
                inside = destination.absolute() / target.relative_to(base)
                link.unlink()
                link.symlink_to(os.path.relpath(inside, link.parent.absolute()))
        return Sandbox(destination, max_output_bytes=self.max_output_bytes, logs=self.logs)

    def redact(self, writer: Writer) -> list[Path]:
        """Replace what ``writer`` redacts in every file of the sandbox (bytes); symlinks are
        neither followed nor rewritten. Returns the files changed.

        For a sandbox kept in the run folder: what the agent wrote there is as shareable as
        the reports, whatever times it gave its files (``touch -d``, ``cp -p``, a folder moved
        in with ``mv``). A changed file is written anew and renamed over the old one, with its
        mode and times, so a file the row hard-linked from elsewhere (``ln``, ``cp -al``) is
        not rewritten through the link. A folder or file the row made unreadable (``chmod
        000``) is first made readable and writable by its owner (assay, who keeps it), so it
        is redacted too (a hard-linked file's mode is left alone); one that still cannot be
        read or written is left as it is, and the run's secret scan reports it.
        """
        changed = []
        _own(self.root, 0o700)
        for folder, dirs, files in walk_tree(self.root):
            for name in dirs:
                _own(Path(folder) / name, 0o700)
            changed += [path for name in files
                        if _redact_file(path := Path(folder) / name, writer)]  # fmt: skip
        return changed

    def remove(self) -> None:
        """Delete the sandbox (an empty one with a single ``rmdir``)."""
        try:
            self.root.rmdir()
        except OSError:
            remove_tree(self.root)


def _redact_file(path: Path, writer: Writer) -> bool:
    """Redact one regular file of a kept sandbox (see :meth:`Sandbox.redact`); whether it
    changed. Only its data is read and written: its holes (a sparse file,
    :mod:`assay.results.sparse`) stay holes, and cost nothing. A file that cannot be read
    or written is left as it is."""
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode):
            return False
        if info.st_nlink == 1:  # a hard link's inode is shared with a file elsewhere
            _own(path, 0o600, info)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with open(fd, "rb") as handle:
            if not _redacts(handle, writer):
                return False  # read in blocks: a large file costs its memory only to change
            pieces = [(start, read_range(fd, start, end))
                      for start, end in data_extents(fd, info.st_size)]  # fmt: skip
        redacted = [writer.redact_bytes(data) for _, data in pieces]
        if all(new is data for new, (_, data) in zip(redacted, pieces, strict=True)):
            return False
        tmp = path.with_name(f".{path.name}.assay-redacted")
        try:
            _write_pieces(tmp, [(start, new, len(data)) for new, (start, data)
                                in zip(redacted, pieces, strict=True)], info.st_size)  # fmt: skip
            os.chmod(tmp, stat.S_IMODE(path.lstat().st_mode))
            os.utime(tmp, ns=(info.st_atime_ns, info.st_mtime_ns))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)  # gone by the rename, or half written
        return True
    except OSError:
        return False


def _redacts(handle: BinaryIO, writer: Writer) -> bool:
    """Whether ``writer`` changes anything in the open file ``handle``'s data, read in blocks
    (:func:`~assay.results.sparse.data_blocks`, its holes left out) each seen with the last
    :data:`~assay.results.secret_scan.SCAN_OVERLAP` bytes before it (so a secret across a
    cut is whole in one of them)."""
    kept = b""
    for block in data_blocks(handle, SCAN_BLOCK - SCAN_OVERLAP):
        data = kept + block
        if writer.redact_bytes(data) is not data:
            return True
        kept = data[-SCAN_OVERLAP:]
    return False


def _write_pieces(path: Path, pieces: list[tuple[int, bytes, int]], size: int) -> None:
    """Write a new file at ``path`` of ``size`` bytes less what redaction took out: each
    ``(offset, data, length before redaction)`` at its offset, moved by what the pieces
    before it shrank or grew; the gaps between stay holes."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        shift = 0
        for offset, data, length in pieces:
            written = 0
            while written < len(data):
                written += os.pwrite(fd, data[written:], offset + shift + written)
            shift += len(data) - length
        os.ftruncate(fd, size + shift)
    finally:
        os.close(fd)


def _own(path: Path, bits: int, info: os.stat_result | None = None) -> None:
    """Give the owner ``bits`` (``0o700`` for a folder, ``0o600`` for a file) on ``path``
    when it lacks them; a symlink, or a path assay cannot change, is left as it is."""
    try:
        info = info or path.lstat()
        if not stat.S_ISLNK(info.st_mode) and info.st_mode & bits != bits:
            path.chmod(stat.S_IMODE(info.st_mode) | bits)
    except OSError:
        pass


def _identities(paths: Iterable[Path]) -> frozenset[tuple[int, int]]:
    """The device and inode of each of ``paths`` that exists (a folder or file is the same
    one however the path to it is spelled: relative, through a symlink, ``..``); a path that
    is itself a symlink adds the link's own as well (``latest``: the link is not copied)."""
    found = set()
    for path in paths:
        for look in (path.stat, path.lstat):
            try:
                info = look()
            except OSError:
                continue
            found.add((info.st_dev, info.st_ino))
    return frozenset(found)


def _copy_over(
    source: Path, target: Path, skipped: frozenset[tuple[int, int]] = frozenset()
) -> None:
    """Copy the contents of ``source`` into ``target``; each entry replaces what was there.

    Unlike ``shutil.copytree(dirs_exist_ok=True)``, a file never writes through a symlink an
    earlier source left, never lands inside a directory of the same name, and a symlink or a
    directory replaces a file: later sources win on every kind of conflict. Symlinks are
    copied as symlinks. A folder, file or link in ``skipped`` (device and inode) is not copied.
    """
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        _delete(target)
    target.mkdir(parents=True, exist_ok=True)
    for entry in os.scandir(source):
        destination = target / entry.name
        if skipped:
            info = entry.stat(follow_symlinks=False)  # a symlink: the link's own
            if (info.st_dev, info.st_ino) in skipped:
                continue
        if entry.is_dir(follow_symlinks=False):
            _copy_over(Path(entry.path), destination, skipped)
            continue
        if destination.is_symlink() or destination.exists():
            _delete(destination)
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), destination)
        else:
            copy_file(entry.path, destination)
    shutil.copystat(source, target)


def _special_files(folder: str, names: list[str]) -> list[str]:
    """The names in ``folder`` that are neither folders, regular files nor symlinks."""
    special = []
    for name in names:
        mode = os.lstat(os.path.join(folder, name)).st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            special.append(name)
    return special


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
