"""The ``bwrap`` sandbox driver: every program of a row inside a bubblewrap sandbox.

What a program of the row sees (every path at the same place as on the host):

- the system read-only: ``/usr``, ``/bin``, ``/sbin``, ``/lib*``, ``/etc``, ``/opt``,
  ``/nix`` (those that exist), and the folders programs are run from: assay's own Python
  environment, the directories of ``PATH`` that are not in a home folder (a virtual
  environment or ``node_modules/.bin`` on ``PATH`` brings its whole environment, even in a
  home folder), the agent's CLI and plugins, ``sandbox.read_only``, and for ``pre_run``,
  ``post_run``, ``run_command`` and ``command`` agents the task file's folder;
- the row's folder read-write, its own home folder read-write, a private ``/tmp``; nothing
  else is writable (the root is remounted read-only);
- hidden: every other folder (home folders, other rows' folders, the run folder, the
  store and the response cache, even inside a folder that is readable), and the host's
  processes (its own ``/proc``);
- no network (its own network namespace, only loopback) unless ``sandbox.network``;
  a coding agent behind the model bridge reaches it at the same ``127.0.0.1`` port as
  outside, through a forwarder that the sandbox's first program starts
  (:mod:`assay.sandbox.jail_init`) and the bridge's unix socket bound into the sandbox;
- an unprivileged user: when assay runs as root, each row runs as a user of its own
  (``1900000000 + n``, ``n`` counted from a random start per run, named ``assay`` in the
  sandbox's ``/etc/passwd``) whose files are given back to root when the row ends;
  otherwise bwrap's user namespace keeps the caller's uid without any capability;
  ``no_new_privs`` is set either way;
- limits per row (``sandbox.limits``) set with ``setrlimit`` before the program starts;
  the whole process tree dies with the sandbox (its own PID namespace; ``--die-with-parent``
  and the process group killed at the timeout).

What is bound comes from :mod:`assay.sandbox.mounts`; :func:`assay.sandbox.probe.probe`
makes one sandbox when a run starts and turns every way it can fail into a message that
says why and how to fix it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import SandboxError, UsageError
from assay.sandbox import jail_init
from assay.sandbox.mounts import (
    outermost,
    parent_dirs,
    python_folders,
    system_binds,
    tool_folders,
)
from assay.sandbox.trees import remove_tree, walk_tree

INIT_SOURCE = Path(__file__).with_name("jail_init.py")
INIT = "/run/assay/init.py"
UID_BASE = 1_900_000_000
UID_SLOTS = 100_000
JAIL_PROCESSES = 2
"""The processes bwrap itself keeps beside a program while it runs (bwrap, and the init of
the sandbox's own pid namespace): a row's pids group holds ``max_pids`` plus these."""

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap; Arch: pacman -S bubblewrap), or set sandbox.driver: tempdir (the row is "
    "then not contained)"
)


@dataclass(frozen=True)
class BridgeLink:
    """How a sandbox without network reaches the model bridge: its unix ``socket`` (bound
    into the sandbox) behind ``127.0.0.1:port`` (the bridge's TCP port outside)."""

    socket: Path
    port: int


@dataclass(frozen=True)
class JailPolicy:
    """What every sandbox of one run shares.

    Attributes:
        bwrap: the ``bwrap`` executable.
        python: the interpreter that runs the sandbox's first program.
        readable: folders every program may read (the system and the tools).
        hidden: folders no program may see, even inside a readable one (the run folder,
            the store, the cache).
        bridge: the model bridge's unix socket and port, or ``None``.
        as_root: assay runs as root: each row becomes a user of its own.
        user: ``(uid, gid)`` inside bwrap's user namespace when not as root (the caller's).
        tools: ``prlimit`` and ``setpriv`` (util-linux), when both are in a system folder.
        numbers: numbers the rows (their users' uids), from a random start: two runs at
            once on one machine do not share users (nor their ``max_pids`` budget).
    """

    bwrap: Path
    python: Path
    readable: tuple[Path, ...]
    hidden: tuple[Path, ...] = ()
    bridge: BridgeLink | None = None
    as_root: bool = False
    user: tuple[int, int] = (0, 0)
    tools: tuple[Path, Path] | None = None
    numbers: Iterator[int] = field(default_factory=lambda: itertools.count(
        secrets.randbelow(UID_SLOTS)), compare=False, repr=False)  # fmt: skip

    def jail(
        self,
        root: Path,
        *,
        limits: dict[str, int],
        network: bool = False,
        readable: Iterable[Path] = (),
        task_dir: Path | None = None,
    ) -> Jail:
        """A sandbox for one row whose folder is ``root``: its own home (and, as root, its
        own user, who is given ``root`` until :meth:`Jail.close`).

        Args:
            root: the row's folder (read-write inside).
            limits: ``RLIMIT_*`` name → value for every program of the row.
            network: share the host's network instead of loopback only.
            readable: more folders the row's programs may read.
            task_dir: the task file's folder, readable by the task's own programs
                (``pre_run``, ``post_run``, command criteria, a ``command`` agent) but not
                by a coding agent (it holds the dataset and its expected answers).

        Raises:
            SandboxError: the home folder or the user's files cannot be made.
        """
        root = Path(os.path.abspath(root))
        home = Path(tempfile.mkdtemp(prefix="assay-jail-home-"))
        jail = Jail(self, root, home, dict(limits), network,
                    tuple(Path(os.path.abspath(p)) for p in readable),
                    Path(os.path.abspath(task_dir)) if task_dir is not None else None)  # fmt: skip
        try:
            if self.as_root:
                jail.uid = UID_BASE + next(self.numbers) % UID_SLOTS
                jail.accounts = _accounts(jail.uid, home)
                for path in (root, home):
                    give(path, jail.uid)
        except OSError as exc:
            jail.close()
            raise SandboxError(f"cannot prepare the bwrap sandbox of {root}: {exc}") from exc
        return jail


@dataclass
class Jail:
    """One row's sandbox; :meth:`command` wraps each program of the row."""

    policy: JailPolicy
    root: Path
    home: Path
    limits: dict[str, int]
    network: bool = False
    readable: tuple[Path, ...] = ()
    task_dir: Path | None = None
    uid: int | None = None
    accounts: Path | None = None
    given: list[Path] = field(default_factory=list)

    @property
    def python(self) -> str:
        """The Python a standard-library script runs on inside the sandbox: this one (the
        host's system folders are shown read-only)."""
        return sys.executable

    def for_copy(self, root: Path) -> Jail:
        """A sandbox like this one (policy, limits, network, readable folders; never the
        task's folder) over another folder, ``root``: an ``agent_judge``'s copy.

        Raises:
            SandboxError: it cannot be made.
        """
        return self.policy.jail(root, limits=self.limits, network=self.network,
                                readable=self.readable)  # fmt: skip

    def command(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path | None = None,
        readable: Iterable[Path] = (),
        writable: Iterable[Path] = (),
        bridge: bool = False,
        agent: bool = False,
        network: bool = False,
        sealed: bool = True,
    ) -> tuple[list[str], dict[str, str]]:
        """The argv and environment that run ``argv`` in this sandbox.

        Args:
            argv: the program and its arguments.
            env: its environment (``HOME`` defaults to the sandbox's home; variables that
                point at the host's agents and sockets are dropped).
            cwd: its working directory (default: the row's folder).
            readable: more folders it may read (a CLI, plugins, a prompt file).
            writable: more folders it may write (a CLI's own home); given to the row's user.
            bridge: start the forwarder to the model bridge.
            agent: a coding agent: the task file's folder stays hidden from it.
            network: this program needs the host's network (a CLI on its own credentials,
                ``route: direct``), whatever ``sandbox.network`` says.
            sealed: with ``agent``, the CLI is sealed from the commands it runs when assay
                runs as root (:func:`assay.sandbox.jail_init.become`); off for one whose
                environment needs what a sealed program loses (:data:`SEAL_LOST`).
        """
        network = network or self.network
        extra = [Path(os.path.abspath(p)) for p in writable]
        for path in extra:
            if self.uid is not None and path not in self.given:
                give(path, self.uid)
                self.given.append(path)
        args = [str(self.policy.bwrap), *self._namespaces(network), *system_binds()]
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp",
                 "--perms", "1777", "--tmpfs", "/var/tmp"]  # fmt: skip
        task = [self.task_dir] if self.task_dir is not None and not agent else []
        more = [Path(os.path.abspath(p)) for p in readable]
        shown = outermost([*self.policy.readable, *self.readable, *task, *more])
        link = self.policy.bridge
        forward = bridge and link is not None and not network
        sockets = [link.socket] if forward and link is not None else []
        args += parent_dirs([*shown, self.root, self.home, *extra, *sockets])
        for path in shown:
            args += ["--ro-bind", str(path), str(path)]
        for path in self.policy.hidden:
            if not any(path == p or p in path.parents for p in shown):
                continue  # not visible anyway
            if path.is_dir():
                args += ["--tmpfs", str(path)]
            elif path.exists():
                args += ["--ro-bind", "/dev/null", str(path)]
        args += _crossings(self.policy.hidden, [self.root, self.home, *extra])
        for path in [self.root, self.home, *extra]:
            args += ["--bind", str(path), str(path)]
        if self.accounts is not None:
            args += ["--ro-bind", str(self.accounts / "passwd"), "/etc/passwd",
                     "--ro-bind", str(self.accounts / "group"), "/etc/group"]  # fmt: skip
        args += ["--ro-bind", str(INIT_SOURCE), INIT]
        if forward and link is not None:
            args += ["--ro-bind", str(link.socket), str(link.socket)]
        args += ["--remount-ro", "/", "--chdir", os.path.abspath(cwd or self.root), "--"]
        args += self._first(argv, link if forward else None, sealed=agent and sealed)
        return args, self._environment(env, extra)

    def _limits(self) -> dict[str, int]:
        """The row's limits, none above the hard limit assay itself runs under (a program
        that is not root cannot raise it)."""
        if self.policy.as_root:
            return dict(self.limits)
        clamped = {}
        for name, value in self.limits.items():
            hard = resource.getrlimit(getattr(resource, name))[1]
            clamped[name] = value if hard == resource.RLIM_INFINITY else min(value, hard)
        return clamped

    def _first(
        self, argv: list[str], link: BridgeLink | None, *, sealed: bool = False
    ) -> list[str]:
        """The sandbox's first program, which sets the limits, becomes the row's user and
        (with the bridge) starts the forwarder before ``argv``: util-linux's ``prlimit`` and
        ``setpriv`` where they exist and no forwarder is needed (a few milliseconds), else
        :mod:`assay.sandbox.jail_init` on Python. ``sealed`` (a coding agent's CLI, when
        assay runs as root and so has a user to become): jail_init, which seals it from the
        commands it runs (:func:`~assay.sandbox.jail_init.become`)."""
        tools = self.policy.tools
        sealed = sealed and self.uid is not None
        if link is None and tools is not None and not sealed:
            prlimit, setpriv = tools
            limits = [f"--{_PRLIMIT[name]}={soft_hard(name, value)}"
                      for name, value in self._limits().items()]  # fmt: skip
            chain = [str(prlimit), *limits, "--"]
            if self.uid is not None:
                chain += [str(setpriv), f"--reuid={self.uid}", f"--regid={self.uid}",
                          "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
                          "--"]  # fmt: skip
            return [*chain, *argv]
        options = jail_init.arguments(
            limits=self._limits(), user=self.uid, sealed=sealed,
            forward=(link.port, str(link.socket)) if link is not None else None,
        )  # fmt: skip
        return [str(self.policy.python), "-I", "-S", INIT, *options, "--", *argv]

    def _namespaces(self, network: bool) -> list[str]:
        args = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
                "--unshare-uts", "--unshare-cgroup-try", "--hostname", "assay"]  # fmt: skip
        if not network:
            args.append("--unshare-net")
        if not self.policy.as_root:
            uid, gid = self.policy.user
            args += ["--unshare-user", "--uid", str(uid), "--gid", str(gid)]
        return args

    def _environment(self, env: dict[str, str], writable: list[Path]) -> dict[str, str]:
        """``env`` without pointers to the host; ``HOME`` is the sandbox's own unless the
        caller made the one it names writable (a CLI's fresh home)."""
        clean = {k: v for k, v in env.items() if k not in HOST_POINTERS}
        home = Path(clean.get("HOME") or "/nonexistent")
        if home not in writable:
            home = self.home
        clean["HOME"] = str(home)
        for name in XDG_HOMES:
            if name in clean and home not in Path(clean[name]).parents:
                del clean[name]
        tmp = clean.get("TMPDIR")
        if tmp is None or not any(w == Path(tmp) or w in Path(tmp).parents for w in writable):
            clean["TMPDIR"] = "/tmp"  # the sandbox's own, unless the caller gave a writable one
        if self.uid is not None:
            clean["USER"] = clean["LOGNAME"] = "assay"
        return clean

    def settle(self) -> None:
        """Empty the row's home once the agent has ended, before the criteria run: what the
        agent left there (a Python user site whose ``.pth`` runs first in every ``python3``,
        a ``pytest`` plugin, a shell's or a tool's settings) must not answer for a criterion.
        Each program's ``/tmp`` is its own already."""
        for entry in list(self.home.iterdir()) if self.home.is_dir() else []:
            if entry.is_dir() and not entry.is_symlink():
                remove_tree(entry)
            else:
                with contextlib.suppress(OSError):
                    entry.unlink()

    def close(self) -> None:
        """Give the row's files back to the user running assay and remove the home."""
        if self.uid is not None:
            for path in [self.root, *self.given]:
                give(path, os.getuid(), os.getgid())
        remove_tree(self.home)
        if self.accounts is not None:
            remove_tree(self.accounts)


SEAL_LOST = frozenset(
    {
        "NODE_OPTIONS",
        "NODE_EXTRA_CA_CERTS",
        "NODE_ICU_DATA",
        "OPENSSL_CONF",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "GCONV_PATH",
        "GETCONF_DIR",
        "HOSTALIASES",
        "LOCALDOMAIN",
        "LOCPATH",
        "MALLOC_TRACE",
        "NIS_PATH",
        "NLSPATH",
        "RESOLV_HOST_CONF",
        "RES_OPTIONS",
        "TZDIR",
    }
)
"""Variables a sealed program does not see (besides every ``LD_*`` and ``TMPDIR``): its real
and effective groups differ, so the kernel runs it in secure-execution mode (``AT_SECURE``),
in which the C library drops them and Node.js ignores its own; a task that sets one in
``agent.env`` (or passes it through) gets its CLI unsealed (:func:`seal_lost`)."""


def seal_lost(names: Iterable[str]) -> list[str]:
    """Those of ``names`` a sealed program would not see (:data:`SEAL_LOST`, ``LD_*``; not
    ``TMPDIR``, which only moves a CLI's temporary files to ``/tmp``)."""
    return sorted(n for n in set(names) if n in SEAL_LOST or n.startswith("LD_"))


_PRLIMIT = {"RLIMIT_NPROC": "nproc", "RLIMIT_NOFILE": "nofile", "RLIMIT_FSIZE": "fsize",
            "RLIMIT_CPU": "cpu"}  # fmt: skip


def soft_hard(name: str, value: int) -> str:
    """``SOFT:HARD`` of a limit (``prlimit``'s and ``docker run --ulimit``'s form): CPU
    seconds' hard limit one second on, so a program past them gets ``SIGXCPU`` (which names
    the limit) before ``SIGKILL`` (at equal limits the kernel kills at once), as
    :func:`assay.sandbox.jail_init.set_limits` does (it runs without assay)."""
    return f"{value}:{value + 1}" if name == "RLIMIT_CPU" else f"{value}:{value}"


HOST_POINTERS = frozenset({
    "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR", "KRB5CCNAME", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
    "DOCKER_HOST", "TMUX",
})  # fmt: skip
"""Variables that lead to the host's agents, sockets and displays: they mean nothing in the
sandbox (their targets are hidden), so they are dropped."""
XDG_HOMES = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")


def give(path: Path, uid: int, gid: int | None = None) -> None:
    """``chown -R`` without following symlinks (a link the agent made may point anywhere),
    at any depth; what cannot be reached (a path past ``PATH_MAX`` in a tree the agent made
    thousands of folders deep) is left as it is: removing the tree still works
    (:func:`~assay.sandbox.trees.remove_tree`)."""
    group = uid if gid is None else gid
    if not path.exists() and not path.is_symlink():
        return
    os.lchown(path, uid, group)
    if path.is_symlink() or not path.is_dir():
        return
    for folder, dirs, files in walk_tree(path):
        for name in [*dirs, *files]:
            with contextlib.suppress(OSError):
                os.lchown(os.path.join(folder, name), uid, group)


def _accounts(uid: int, home: Path) -> Path:
    """``passwd`` and ``group`` files that add the row's user ``assay`` to the host's."""
    folder = Path(tempfile.mkdtemp(prefix="assay-jail-etc-"))
    for name, line in (("passwd", f"assay:x:{uid}:{uid}:assay:{home}:/bin/sh\n"),
                       ("group", f"assay:x:{uid}:\n")):  # fmt: skip
        host = Path("/etc") / name
        text = host.read_text(encoding="utf-8", errors="replace") if host.exists() else ""
        (folder / name).write_text(text + ("" if text.endswith("\n") or not text else "\n")
                                   + line, encoding="utf-8")  # fmt: skip
        (folder / name).chmod(0o644)
    folder.chmod(0o755)
    return folder


def find_bwrap() -> Path:
    """The ``bwrap`` executable.

    Raises:
        UsageError: not installed (the hint says how to install it).
    """
    found = shutil.which("bwrap")
    if found is None:
        raise UsageError("sandbox.driver bwrap needs bubblewrap (bwrap), which is not "
                           "installed", hint=INSTALL_HINT)  # fmt: skip
    return Path(found)


def make_policy(
    *,
    path_variable: str,
    readable: Iterable[Path] = (),
    hidden: Iterable[Path] = (),
    bridge: BridgeLink | None = None,
) -> JailPolicy:
    """The policy of one run (see the module docstring).

    Raises:
        UsageError: bwrap is not installed.
    """
    shown = [*python_folders(), *tool_folders(path_variable), *readable]
    return JailPolicy(
        bwrap=find_bwrap(),
        # `../.venv/bin/python -m assay` gives sys.executable with `..` in it, a path through a
        # folder the sandbox need not have: its lexical normal form names the same file
        python=Path(os.path.abspath(sys.executable)),
        readable=tuple(outermost(shown)),
        hidden=tuple(sorted({Path(p).resolve() for p in hidden}, key=lambda p: len(p.parts))),
        bridge=bridge,
        as_root=os.geteuid() == 0,
        user=(os.getuid(), os.getgid()),
        tools=_util_linux(),
    )


def _util_linux() -> tuple[Path, Path] | None:
    """``prlimit`` and ``setpriv``, when both are in a system folder (visible in the
    sandbox)."""
    found = [shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin") for name in
             ("prlimit", "setpriv")]  # fmt: skip
    if found[0] is None or found[1] is None:
        return None
    return Path(found[0]), Path(found[1])


def _crossings(hidden: tuple[Path, ...], bound: list[Path]) -> list[str]:
    """``--dir`` (``0755``) for the folders between a hidden folder (an empty tmpfs) and a
    path bound inside it (a sandbox kept in the run folder): bwrap makes them ``0700``, so
    the row's user could reach its own folder only by a relative path."""
    folders: set[Path] = set()
    for path in bound:
        for top in hidden:
            if top in path.parents:
                folders.update(p for p in path.parents if top in p.parents or p == top)
    args: list[str] = []
    for folder in sorted(folders, key=lambda p: len(p.parts)):
        args += ["--perms", "0755", "--dir", str(folder)]
    return args
