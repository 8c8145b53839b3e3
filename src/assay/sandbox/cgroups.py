"""A row's own control groups on ``tempdir`` and ``bwrap``: ``max_memory_mb``, ``max_cpus``
and ``max_pids`` enforced by the kernel, and every process the row started found again at its
end, whatever it did to leave (a new session, a cleared environment, another folder).

Where: cgroup v1 hierarchies (``memory``, ``cpu``, ``pids``) that this process may write,
found from ``/proc/self/mounts`` and ``/proc/self/cgroup``; each row gets a folder
``assay-<pid namespace>-<pid>-<random>`` under this process's own group in each hierarchy
it needs (``pids`` always, to find its processes; ``memory`` for ``max_memory_mb``,
``cpu`` for ``max_cpus``); a run's containment first removes the groups of an assay
process of its pid namespace that is gone (killed before it could remove them), killing
what still ran in them. A machine whose memory and CPU controllers are on cgroup v2 only, or whose
hierarchies this user may not write (no delegation), gets no row groups: :func:`find`
says why, ``assay doctor`` and ``assay plan`` say it, and the limits stay with the
``docker`` driver there.

Limits (the kernel's v1 interface, Documentation/admin-guide/cgroup-v1/): memory:
``memory.limit_in_bytes`` and, where swap is accounted, ``memory.memsw.limit_in_bytes``
(MiB × 1,048,576 bytes; no swap beyond it), the kernel killing a process of the group
that passes it (counted in ``memory.oom_control``'s ``oom_kill``); CPU:
``cpu.cfs_quota_us`` = ``max_cpus`` × ``cpu.cfs_period_us`` (100,000 µs), the group's
processes together getting at most that much CPU time per period; processes: ``pids.max`` =
``max_pids`` (processes and threads together, as ``RLIMIT_NPROC`` counts them) plus what the
driver itself keeps in the group while a program runs (bwrap's two processes), a fork past it
failing with ``EAGAIN`` and counted in ``pids.events``' ``max``. A row that failed after a
count grew names the limit (:mod:`assay.sandbox.limit_counts`).

A program enters the row's groups through :meth:`RowGroups.enter`: ``/bin/sh`` writes its
own pid into each group's ``cgroup.procs`` and then becomes the program (``exec``), so
every process it starts is in the groups from its first instruction.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from assay.sandbox.limit_counts import NOTHING_COUNTED, LimitCounts, limit_note

PERIOD_US = 100_000
_GROUP = re.compile(r"assay-(\d+)-(\d+)-[0-9a-f]{12}")  # pid namespace, pid, random
_ENTER = ('for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || '
          '{ echo "assay: cannot enter the row\'s cgroup ($f)" >&2; exit 125; }; shift; done; '
          'shift; command -v -- "$1" >/dev/null || '
          '{ echo "assay: $1: command not found" >&2; exit 127; }; exec "$@"')  # fmt: skip
KILL_SECONDS = 5.0


@dataclass(frozen=True)
class Hierarchies:
    """The cgroup v1 folders this process may make row groups in: controller (``memory``,
    ``cpu``, ``pids``) → this process's own group in that hierarchy."""

    parents: dict[str, Path]

    def row(
        self,
        *,
        memory_mb: int | None = None,
        cpus: float | None = None,
        max_pids: int | None = None,
        held: int = 0,
    ) -> RowGroups:
        """New groups for one row with these limits (``pids`` always, to find its processes);
        ``held``: the processes a driver keeps in the groups beside the row's own while a
        program runs (bwrap's two), added to ``max_pids`` in ``pids.max``.

        Raises:
            OSError: a group could not be made or a limit not written (what was made is
                removed).
        """
        name = f"assay-{pid_namespace()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        wanted = ["pids", *(["memory"] if memory_mb else []), *(["cpu"] if cpus else [])]
        groups = RowGroups(memory_mb=memory_mb, cpus=cpus, max_pids=max_pids)
        try:
            for controller in wanted:
                folder = self.parents[controller] / name
                folder.mkdir()
                groups.folders[controller] = folder
            if max_pids:
                (groups.folders["pids"] / "pids.max").write_text(f"{max_pids + held}\n")
            if memory_mb:
                _limit_memory(groups.folders["memory"], memory_mb)
            if cpus:
                (groups.folders["cpu"] / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
                quota = max(1000, round(cpus * PERIOD_US))
                (groups.folders["cpu"] / "cpu.cfs_quota_us").write_text(f"{quota}\n")
        except OSError:
            groups.close()
            raise
        return groups

    def sweep(self) -> list[Path]:
        """Remove the row groups an assay process left when it was killed (its pid, in the
        group's name, is gone): what still runs in them is killed first. Returns the
        groups removed."""
        removed: list[Path] = []
        for parent in self.parents.values():
            for folder in _stale(parent):
                RowGroups(folders={"": folder}).close()
                removed += [] if folder.exists() else [folder]
        return removed


@dataclass
class RowGroups:
    """One row's groups: ``folders`` (controller → folder), its limits (``max_pids``: the
    row's own processes and threads; ``pids.max`` holds it plus the driver's, see
    :meth:`Hierarchies.row`)."""

    memory_mb: int | None = None
    cpus: float | None = None
    max_pids: int | None = None
    folders: dict[str, Path] = field(default_factory=dict)

    def enter(self, command: str | list[str]) -> list[str]:
        """``command`` (argv, or a shell string run by ``/bin/sh -c``) run inside the row's
        groups (see the module docstring); a group that cannot be entered ends the program
        with exit code 125 and says so on stderr."""
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else command
        procs = [str(folder / "cgroup.procs") for folder in self.folders.values()]
        return ["/bin/sh", "-c", _ENTER, "assay", *procs, "--", *argv]

    def counts(self) -> LimitCounts:
        """What the kernel has counted against the row's limits so far (0 for a limit that
        is not set, or a count that cannot be read)."""
        return LimitCounts(
            oom_kills=_count(self.folders.get("memory"), "memory.oom_control", "oom_kill"),
            refused_forks=(_count(self.folders.get("pids"), "pids.events", "max")
                           if self.max_pids else 0),
        )  # fmt: skip

    def limit_note(self, *, since: LimitCounts = NOTHING_COUNTED) -> str | None:
        """What the error of a row that reached a limit says: when the kernel killed one of
        its processes for memory, or refused it a process at ``max_pids``, after the
        counts were ``since`` (:meth:`counts`), else ``None``."""
        return limit_note(self.counts(), since=since, memory_mb=self.memory_mb,
                          max_pids=self.max_pids)  # fmt: skip

    def close(self) -> list[int]:
        """End every process still in the row's groups (``SIGKILL``, also in groups made
        inside them; one stopped in a frozen freezer group is thawed so the kill lands) and
        remove the groups; returns the pids killed. It waits (up to :data:`KILL_SECONDS`):
        call it from a worker thread in async code."""
        killed: list[int] = []
        deadline = time.monotonic() + KILL_SECONDS
        for folder in self.folders.values():
            rounds = 0
            while time.monotonic() < deadline:
                pids = _pids_under(folder)
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                    if rounds:  # still there after a kill: frozen?
                        thaw(pid)
                rounds += 1
                time.sleep(0.01)
        for folder in self.folders.values():
            _remove_tree(folder, deadline)
        self.folders.clear()
        return sorted(set(killed))


def thaw(pid: int) -> None:
    """Thaw the cgroup v1 freezer groups that hold ``pid`` stopped (its own and those above
    it that were frozen themselves, ``freezer.self_freezing``), outermost first: a frozen
    process acts on a pending ``SIGKILL`` only once thawed. Nothing when no freezer
    hierarchy is mounted or the process is gone."""
    try:
        mount = _v1_mounts(Path("/proc/self/mounts").read_text(), ("freezer",)).get("freezer")
        path = _own_groups(Path(f"/proc/{pid}/cgroup").read_text()).get("freezer")
    except OSError:
        return
    if mount is None or path is None:
        return
    group, chain = mount, []
    for part in [p for p in path.split("/") if p]:
        group = group / part
        chain.append(group)
    for folder in chain:
        with contextlib.suppress(OSError):
            if (folder / "freezer.self_freezing").read_text().strip() == "1":
                (folder / "freezer.state").write_text("THAWED\n")


def _count(folder: Path | None, name: str, key: str) -> int:
    """The number after ``key`` in the flat-keyed file ``name`` of ``folder`` (0 without
    the folder, the file or the key)."""
    if folder is None:
        return 0
    with contextlib.suppress(OSError, ValueError):
        for line in (folder / name).read_text().splitlines():
            found, _, value = line.partition(" ")
            if found == key:
                return int(value)
    return 0


def _limit_memory(folder: Path, memory_mb: int) -> None:
    limit = f"{memory_mb * 1024 * 1024}\n"
    (folder / "memory.limit_in_bytes").write_text(limit)
    swap = folder / "memory.memsw.limit_in_bytes"
    if swap.exists():  # swap accounted: no swap beyond the limit either
        swap.write_text(limit)


def _stale(parent: Path) -> list[Path]:
    """The row groups in ``parent`` whose assay process is gone."""
    try:
        with os.scandir(parent) as entries:
            names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    here = str(pid_namespace())  # a pid means something only in its own pid namespace
    owners = [(name, _GROUP.fullmatch(name)) for name in names]
    return [parent / name for name, owner in owners
            if owner and owner[1] == here and not process_alive(int(owner[2]))]  # fmt: skip


def pid_namespace() -> int:
    """This process's pid namespace (the inode of ``/proc/self/ns/pid``; 0 unknown)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists in this pid namespace (one of another user's
    counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pids_under(folder: Path) -> list[int]:
    """The pids in ``folder``'s group and in the groups made inside it."""
    pids: list[int] = []
    for group in _groups_under(folder):
        with contextlib.suppress(OSError, ValueError):
            pids += [int(line) for line in (group / "cgroup.procs").read_text().split()]
    return pids


def _groups_under(folder: Path) -> list[Path]:
    """``folder`` and the groups inside it, deepest last (a group's files are not folders)."""
    found, index = [folder], 0
    while index < len(found):
        with contextlib.suppress(OSError), os.scandir(found[index]) as entries:
            found += [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
        index += 1
    return found


def _remove_tree(folder: Path, deadline: float) -> None:
    """Remove ``folder`` and the groups in it, deepest first (a group is removed with
    ``rmdir`` once its processes are gone; the kernel may take a moment)."""
    for current in reversed(_groups_under(folder)):
        while True:
            try:
                os.rmdir(current)
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.01)


def find(
    *, mounts: Path = Path("/proc/self/mounts"), own: Path = Path("/proc/self/cgroup")
) -> Hierarchies | str:
    """The hierarchies row groups can be made in, or why none can (a sentence).

    A hierarchy counts when it is mounted (cgroup v1), this process's own group in it is
    known, and this user may make groups in it (write access to that group's folder, which
    a read-only mount denies; a group that still cannot be made is the row's error). No
    group is made: this is asked for every task a plan warns about, so it stays cheap."""
    try:
        mounted = _v1_mounts(mounts.read_text())
        groups = _own_groups(own.read_text())
    except OSError as exc:
        return f"cgroups cannot be read here ({exc.strerror})"
    missing = [c for c in ("memory", "cpu", "pids") if c not in mounted]
    if missing:
        if (Path("/sys/fs/cgroup") / "cgroup.controllers").exists():
            return ("cgroup v2: assay makes row groups on cgroup v1 only; use the docker "
                    "driver for memory and CPU limits")  # fmt: skip
        return f"no cgroup v1 hierarchy for {', '.join(missing)} is mounted"
    parents = {}
    for controller in ("memory", "cpu", "pids"):
        relative = groups.get(controller, "/").lstrip("/")
        parents[controller] = mounted[controller] / relative
    for controller, parent in parents.items():
        if not os.access(parent, os.W_OK | os.X_OK):
            why = "read-only" if _read_only(parent) else "Permission denied"
            return (f"cgroup v1: this user may not make groups in the {controller} "
                    f"hierarchy ({parent}: {why}); run as root, or use the docker "
                    "driver")  # fmt: skip
    return Hierarchies(parents)


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _v1_mounts(
    text: str, controllers: tuple[str, ...] = ("memory", "cpu", "pids")
) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or parts[2] != "cgroup":
            continue
        for option in parts[3].split(","):
            if option in controllers:
                found.setdefault(option, Path(parts[1].replace("\\040", " ")))
    return found


def _own_groups(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in text.splitlines():
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        for controller in controllers.split(","):
            if controller:
                found[controller] = path
    return found
