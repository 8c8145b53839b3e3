"""The ``docker`` sandbox driver: every program of a row inside one container of its own.

What a program of the row sees:

- the image's system (``sandbox.docker.image``, or the image built from
  ``sandbox.docker.dockerfile_path``), its root file system read-only;
- the row's folder read-write at its host path (the only writable mount), a private
  ``/tmp`` (also ``HOME``); read-only: the task file's folder (``pre_run``, ``post_run``,
  command criteria and a ``command`` agent read it, as on ``bwrap``), ``sandbox.read_only``
  and ``sandbox.docker.extra_mounts`` (``rw`` when marked), each at the path it names;
- hidden: the run folder, the store and the cache when they lie inside a mounted folder;
- no network (``--network none``: only its own loopback) unless ``sandbox.network``
  (then the host's, ``--network host``);
- an unprivileged user: as root, each row runs as a user of its own (as on ``bwrap``) whose
  files are given back to root when the row ends; otherwise the caller's uid; no
  capabilities, ``no-new-privileges``;
- limits from ``sandbox.limits``: ``--pids-limit``, ``--ulimit`` for open files, file size
  and CPU seconds, ``--memory`` and ``--cpus``.

The container starts with the row's first program (:mod:`assay.sandbox.docker_exec`, which
runs each program with ``ENGINE exec``), so starting it never blocks the run; a container
that cannot start fails that program with the engine's message. A program killed at its
timeout takes what it started with it; what a program left running ends with the row's
container, removed by :meth:`DockerJail.close`.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import SandboxError, UsageError
from assay.sandbox.bwrap import HOST_POINTERS, UID_BASE, UID_SLOTS, XDG_HOMES, give

LAUNCHER = Path(__file__).with_name("docker_exec.py")
ENGINES = ("docker", "podman")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENGINE_VARIABLES = ("DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH",
                    "DOCKER_TLS_VERIFY", "CONTAINERS_CONF", "CONTAINER_HOST",
                    "XDG_RUNTIME_DIR", "PATH", "HOME")  # fmt: skip
"""What the engine's CLI reads from the environment (kept for the launcher, not passed to
the row's programs unless they get them anyway)."""
CATATONIT = "/usr/libexec/podman/catatonit"
SCRATCH = ("/tmp/", "/var/tmp/")
"""Where a container has folders of its own (tmpfs): what a program reads or writes outside
the row's folder is copied there."""
ENGINE_SECONDS = 60.0
BUILD_SECONDS = 1800.0
BUILD_TAIL_LINES = 20

INSTALL_HINT = (
    "install Docker (Debian/Ubuntu: apt-get install docker.io) or Podman (apt-get install "
    "podman) and start its daemon (dockerd; or set DOCKER_HOST to one that runs), or set "
    "sandbox.driver: bwrap"
)


@dataclass(frozen=True)
class Engine:
    """A container engine that answers: its CLI and kind (``docker`` or ``podman``)."""

    path: Path
    kind: str

    def run(self, *args: str, timeout: float = ENGINE_SECONDS) -> subprocess.CompletedProcess[str]:
        """``ENGINE args…`` with its output captured (text); never raises on exit code.

        Raises:
            OSError: the CLI cannot be started; subprocess.TimeoutExpired: it hung.
        """
        return subprocess.run([str(self.path), *args], capture_output=True, text=True,
                              timeout=timeout, check=False)  # fmt: skip


def find_engine(preferred: str | None = None) -> Engine:
    """The engine rows use: ``preferred``, else the first of docker and podman on ``PATH``
    whose daemon (or, for podman, storage) answers.

    Raises:
        UsageError: none is installed, or the one installed does not answer (why, and how
            to fix it).
    """
    problems: list[str] = []
    for kind in [preferred] if preferred else list(ENGINES):
        found = shutil.which(kind)
        if found is None:
            problems.append(f"{kind} is not installed")
            continue
        engine = Engine(Path(found), kind)
        try:
            done = engine.run("version", "--format", "{{.Server.Version}}", timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"{found} does not answer: {exc}")
            continue
        if done.returncode == 0:
            return engine
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        problems.append(f"{found} is installed but its daemon does not answer ({last})")
    raise UsageError("sandbox.driver docker needs a container engine: " + "; ".join(problems),
                     hint=INSTALL_HINT)  # fmt: skip


def context_hash(dockerfile: Path) -> str:
    """The hash (hex, 16 characters) of a Dockerfile and every file of its folder (the
    build context): names, modes and content, in a fixed order."""
    digest = hashlib.sha256()
    context = dockerfile.parent
    for folder, dirs, files in os.walk(context):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            digest.update(str(path.relative_to(context)).encode() + b"\0")
            try:
                digest.update(oct(path.lstat().st_mode).encode() + b"\0")
                if path.is_file() and not path.is_symlink():
                    digest.update(path.read_bytes())
                elif path.is_symlink():
                    digest.update(os.readlink(path).encode())
            except OSError:
                continue
    digest.update(b"\0dockerfile\0" + dockerfile.name.encode())
    return digest.hexdigest()[:16]


def has_image(engine: Engine, image: str) -> bool:
    """Whether the engine holds ``image`` (never pulls)."""
    try:
        return engine.run("image", "inspect", image).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def build_image(engine: Engine, dockerfile: Path) -> str:
    """The tag of the image built from ``dockerfile`` (its folder the context), building
    it only when the engine does not hold that content's tag yet
    (``assay-task:<context hash>``). The build may use the host's network
    (``--network host``): the engine may have no bridge.

    Raises:
        SandboxError: the Dockerfile is missing, or the build failed (its last lines).
    """
    if not dockerfile.is_file():
        raise SandboxError(f"the Dockerfile {dockerfile} does not exist")
    tag = f"assay-task:{context_hash(dockerfile)}"
    if has_image(engine, tag):
        return tag
    args = ["build", "--network", "host", "-t", tag, "-f", str(dockerfile),
            str(dockerfile.parent)]  # fmt: skip
    if engine.kind == "docker":
        args.insert(1, "--force-rm")
    try:
        done = engine.run(*args, timeout=BUILD_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"cannot build the image of {dockerfile}: {exc}") from exc
    if done.returncode != 0:
        lines = (done.stdout + done.stderr).strip().splitlines()[-BUILD_TAIL_LINES:]
        raise SandboxError(f"the image of {dockerfile} did not build ({engine.kind} build "
                           f"exited with code {done.returncode}); its last lines:\n"
                           + "\n".join(lines))  # fmt: skip
    return tag


@dataclass(frozen=True)
class Mount:
    """A host path shown in the container at ``target`` (read-only unless ``writable``)."""

    source: Path
    target: str
    writable: bool = False

    def flag(self) -> list[str]:
        """The engine's ``-v`` argument."""
        return ["-v", f"{self.source}:{self.target}:{'rw' if self.writable else 'ro'}"]


def parse_mount(text: str, base_dir: Path) -> Mount:
    """``HOST:CONTAINER[:ro|rw]`` (a relative ``HOST`` is relative to ``base_dir``)."""
    parts = text.split(":")
    source = Path(parts[0]) if Path(parts[0]).is_absolute() else base_dir / parts[0]
    return Mount(Path(os.path.abspath(source)), parts[1],
                 writable=len(parts) == 3 and parts[2] == "rw")  # fmt: skip


@dataclass(frozen=True)
class DockerPolicy:
    """What every container of one run shares: the engine, the paths no row may see, and
    the numbering of the rows' users (see :class:`assay.sandbox.bwrap.JailPolicy`)."""

    engine: Engine
    python: Path
    hidden: tuple[Path, ...] = ()
    as_root: bool = False
    user: tuple[int, int] = (0, 0)
    numbers: Iterator[int] = field(default_factory=lambda: itertools.count(
        secrets.randbelow(UID_SLOTS)), compare=False, repr=False)  # fmt: skip

    def jail(
        self,
        root: Path,
        *,
        image: str,
        limits: dict[str, int],
        memory_mb: int | None = None,
        cpus: float | None = None,
        network: bool = False,
        readable: Iterable[Path] = (),
        mounts: Iterable[Mount] = (),
        task_dir: Path | None = None,
    ) -> DockerJail:
        """The container of one row whose folder is ``root`` (started by its first
        program); as root, the row's user is given ``root`` until :meth:`DockerJail.close`.

        Args:
            root: the row's folder (read-write inside, at the same path).
            image: the image's name or tag.
            limits: ``RLIMIT_*`` name → value (``RLIMIT_NPROC`` becomes ``--pids-limit``).
            memory_mb, cpus: ``--memory`` (MiB, no swap beyond it) and ``--cpus``.
            network: the host's network instead of none.
            readable: more host folders shown read-only at their paths.
            mounts: ``sandbox.docker.extra_mounts``.
            task_dir: the task file's folder, shown read-only.

        Raises:
            SandboxError: the row's files cannot be given to its user.
        """
        root = Path(os.path.abspath(root))
        state = Path(tempfile.mkdtemp(prefix="assay-docker-"))
        (state / "empty").mkdir()
        state.chmod(0o755)
        uid, gid = self.user
        if self.as_root:
            uid = gid = UID_BASE + next(self.numbers) % UID_SLOTS
        shown = [Path(os.path.abspath(p)) for p in readable]
        if task_dir is not None:
            shown.append(Path(os.path.abspath(task_dir)))
        jail = DockerJail(self, root, state, image, f"assay-row-{secrets.token_hex(6)}",
                          (uid, gid), dict(limits), memory_mb, cpus, network,
                          tuple(Mount(p, str(p)) for p in shown if p.exists()),
                          tuple(mounts))  # fmt: skip
        try:
            if self.as_root:
                give(root, uid)
        except OSError as exc:
            jail.close()
            raise SandboxError(f"cannot prepare the docker sandbox of {root}: {exc}") from exc
        return jail


@dataclass
class DockerJail:
    """One row's container; :meth:`command` wraps each program of the row (the same shape
    as :meth:`assay.sandbox.bwrap.Jail.command`)."""

    policy: DockerPolicy
    root: Path
    state: Path
    image: str
    name: str
    owner: tuple[int, int]
    limits: dict[str, int]
    memory_mb: int | None = None
    cpus: float | None = None
    network: bool = False
    shown: tuple[Mount, ...] = ()
    mounts: tuple[Mount, ...] = ()

    @property
    def uid(self) -> int | None:
        """The row's own user when assay runs as root (else ``None``, as on bwrap)."""
        return self.owner[0] if self.policy.as_root else None

    @property
    def home(self) -> Path:
        """The programs' ``HOME`` inside the container (its private ``/tmp``)."""
        return Path("/tmp")

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
    ) -> tuple[list[str], dict[str, str]]:
        """The argv and environment that run ``argv`` in the row's container (see
        :meth:`assay.sandbox.bwrap.Jail.command` for the arguments). A container's mounts
        are fixed when it starts: ``readable`` and ``writable`` paths it does not show
        (under ``/tmp`` or ``/var/tmp``: a prompt file, a report folder) are copied to the
        same place in the container (its own, empty ones) before the program runs, and the
        ``writable`` ones copied back after.

        Raises:
            SandboxError: such a path is elsewhere, or the program needs the model
                bridge or the host's network, which this driver does not give a program.
        """
        del agent  # the task folder is shown to every program (no coding agent runs here)
        back = [str(Path(os.path.abspath(p))) for p in writable
                if not self._inside(Path(os.path.abspath(p)), writable_only=True)]  # fmt: skip
        if bridge or (network and not self.network):
            raise SandboxError(
                "the docker driver runs programs without the model bridge or "
                "the host's network; use sandbox.driver bwrap for this agent"
            )
        inner = self._environment(env)
        copies = [str(Path(os.path.abspath(p))) for p in readable
                  if not self._inside(Path(os.path.abspath(p)))] + back  # fmt: skip
        for copy in copies:
            if not copy.startswith(SCRATCH):
                raise SandboxError(
                    f"the docker driver cannot show {copy} to the row's container (only "
                    "paths under /tmp and /var/tmp, its own, are copied in): set TMPDIR to "
                    "one of them"
                )
        config = {
            "engine": str(self.policy.engine.path), "kind": self.policy.engine.kind,
            "container": self.name,
            "start": self._start_args(), "lock": str(self.state / "started"),
            "user": f"{self.owner[0]}:{self.owner[1]}",
            "cwd": os.path.abspath(cwd or self.root), "env": sorted(inner), "copy": copies,
            "back": back, "marker": f"ASSAY_EXEC={secrets.token_hex(8)}",
            "memory_mb": self.memory_mb,
        }  # fmt: skip
        launcher = [str(self.policy.python), "-I", "-S", str(LAUNCHER), json.dumps(config),
                    "--", *argv]  # fmt: skip
        outer = {name: os.environ[name] for name in ENGINE_VARIABLES if name in os.environ}
        return launcher, {**outer, **inner}

    def _inside(self, path: Path, *, writable_only: bool = False) -> bool:
        mounts = [Mount(self.root, str(self.root), writable=True), *self.shown, *self.mounts]
        return any((m.source == path or m.source in path.parents) and m.target == str(m.source)
                   and (m.writable or not writable_only) for m in mounts)  # fmt: skip

    def _environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` without pointers to the host; ``HOME`` and ``TMPDIR`` are the container's
        ``/tmp``, ``PATH`` keeps the row's own folders (its ``record_cli`` shims) before
        the image's system folders."""
        clean = {k: v for k, v in env.items() if k not in HOST_POINTERS and k not in XDG_HOMES}
        clean["HOME"] = clean["TMPDIR"] = "/tmp"
        own = [p for p in env.get("PATH", "").split(os.pathsep)
               if p and os.path.isabs(p) and self._inside(Path(p))]  # fmt: skip
        clean["PATH"] = os.pathsep.join([*own, SYSTEM_PATH])
        if self.uid is not None:
            clean["USER"] = clean["LOGNAME"] = "assay"
        return clean

    def _start_args(self) -> list[str]:
        """``ENGINE run -d`` arguments of the row's container (it sleeps; programs run in
        it with ``exec``)."""
        args = ["--name", self.name, "--hostname", "assay", "--read-only",
                "--network", "host" if self.network else "none", "--cap-drop", "ALL",
                "--security-opt", "no-new-privileges", "--user",
                f"{self.owner[0]}:{self.owner[1]}", "--tmpfs", "/tmp:rw,exec,mode=1777",
                "--tmpfs", "/var/tmp:rw,exec,mode=1777", "--label", "assay.row=1"]  # fmt: skip
        args += self._limit_args() + self._init_args()
        args += Mount(self.root, str(self.root), writable=True).flag()
        for mount in [*self.shown, *self.mounts]:
            args += mount.flag()
        empty = self.state / "empty"  # bound over a hidden folder (as Podman orders binds)
        for path in self._hidden():
            args += ["-v", f"{empty if path.is_dir() else '/dev/null'}:{path}:ro"]
        return [*args, "--entrypoint", "sleep", self.image, "infinity"]  # image: second last

    def _init_args(self) -> list[str]:
        """``--init``: a first process that reaps what the row's programs leave behind;
        Podman's own (catatonit) may be missing, then the system's ``tini`` serves."""
        if self.policy.engine.kind != "podman" or Path(CATATONIT).exists():
            return ["--init"]
        tini = shutil.which("tini", path="/usr/bin:/usr/sbin:/usr/local/bin:/bin")
        return ["--init", "--init-path", tini] if tini else []

    def _limit_args(self) -> list[str]:
        limits = self.limits
        args: list[str] = []
        if "RLIMIT_NPROC" in limits:
            args += ["--pids-limit", str(limits["RLIMIT_NPROC"])]
        for name, flag in (("RLIMIT_NOFILE", "nofile"), ("RLIMIT_FSIZE", "fsize"),
                           ("RLIMIT_CPU", "cpu")):  # fmt: skip
            if name in limits:
                args += ["--ulimit", f"{flag}={limits[name]}:{limits[name]}"]
        if self.policy.engine.kind == "podman" and "RLIMIT_NPROC" in limits:
            args += ["--ulimit", "nproc=32768:32768"]  # podman asks for more than root may give
        if self.memory_mb is not None:
            args += ["--memory", f"{self.memory_mb}m", "--memory-swap", f"{self.memory_mb}m"]
        if self.cpus is not None:
            args += ["--cpus", f"{self.cpus:g}"]
        return args

    def _hidden(self) -> list[Path]:
        """The private paths that lie inside a mounted folder (they would show there); never
        one that holds the row's folder itself."""
        found = []
        for path in self.policy.hidden:
            if not path.exists() or path == self.root or path in self.root.parents:
                continue
            if self._inside(path):
                found.append(path)
        return found

    def close(self) -> None:
        """Remove the container and give the row's files back to the user running assay.

        Each program's processes ended with it (:mod:`assay.sandbox.docker_exec`), so the
        container runs only its ``sleep``: it is removed in the background (its own
        session, never waited for), and the run's event loop is not held up."""
        if (self.state / "started").exists():
            with contextlib.suppress(OSError):
                subprocess.Popen([str(self.policy.engine.path), "rm", "-f", self.name],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        if self.uid is not None:
            give(self.root, os.getuid(), os.getgid())
        shutil.rmtree(self.state, ignore_errors=True)


def make_docker_policy(*, engine: Engine, hidden: Iterable[Path] = ()) -> DockerPolicy:
    """The policy of one run (see the module docstring)."""
    return DockerPolicy(
        engine=engine,
        python=Path(sys.executable),
        hidden=tuple(sorted({Path(p).absolute() for p in hidden}, key=lambda p: len(p.parts))),
        as_root=os.geteuid() == 0,
        user=(os.getuid(), os.getgid()),
    )
