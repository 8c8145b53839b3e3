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
  (then the host's, ``--network host``) or ``sandbox.docker.network: bridge`` (the
  engine's bridge);
- an unprivileged user: as root, each row runs as a user of its own (as on ``bwrap``) whose
  files are given back to root when the row ends; otherwise the caller's uid (rootless
  Podman: ``--userns keep-id``; rootless Docker: uid 0 in its user namespace, which is the
  caller outside: :func:`container_user`); no capabilities, ``no-new-privileges``;
- limits from ``sandbox.limits``: ``--pids-limit``, ``--ulimit`` for open files, file size
  and CPU seconds, ``--memory`` and ``--cpus``.

The container starts with the row's first program (:mod:`assay.sandbox.docker_exec`, which
runs each program with ``ENGINE exec``), so starting it never blocks the run; a container
that cannot start fails that program with the engine's message. A program killed at its
timeout takes what it started with it; what a program left running ends with the row's
container, removed by :meth:`DockerJail.close`.

A coding agent's CLI runs in a container of its own from the same image
(:meth:`DockerJail.agent_command`), removed when the CLI ends: the row's folder and the
CLI's fresh home writable, the CLI's installation and plugins read-only where they are on
the host, never the task file's folder (nor, with ``agent_isolation``, ``extra_mounts``),
and the model bridge's unix socket behind ``127.0.0.1:port`` (the forwarder of
:mod:`assay.sandbox.jail_init`, on the image's ``python3``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from assay.errors import BuildFailed, SandboxError, UsageError
from assay.sandbox import jail_init
from assay.sandbox.build_context import context_hash, copy_context, needs_copy
from assay.sandbox.bwrap import (
    HOST_POINTERS,
    INIT,
    INIT_SOURCE,
    UID_BASE,
    UID_SLOTS,
    XDG_HOMES,
    BridgeLink,
    give,
    soft_hard,
)
from assay.sandbox.docker_exec import START_TRIES, start_refused
from assay.sandbox.docker_sweep import ROW_LABEL, owner_label
from assay.spec.coding_agents import CodingAgent

LAUNCHER = Path(__file__).with_name("docker_exec.py")
ENGINES = ("docker", "podman")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENGINE_VARIABLES = ("DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH",
                    "DOCKER_TLS_VERIFY", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF",
                    "CONTAINER_HOST", "XDG_RUNTIME_DIR", *XDG_HOMES, "TMPDIR", "PATH",
                    "HOME")  # fmt: skip
"""What the engine's CLI reads from the environment: the launcher keeps this process's values
for the engine; a program that gets one of these names too gets its own value, as
``-e NAME=value`` (:meth:`DockerJail._launcher`)."""
CATATONIT = "/usr/libexec/podman/catatonit"
SETTLE_SCRIPT = r"""
mounted=""
while read -r _ point _; do mounted="$mounted
$point"; done < /proc/mounts
for entry in /tmp/* /tmp/.[!.]* /tmp/..?* /var/tmp/* /var/tmp/.[!.]* /var/tmp/..?* \
  /dev/shm/* /dev/shm/.[!.]* /dev/shm/..?*; do
  [ -e "$entry" ] || [ -L "$entry" ] || continue
  case "$mounted
" in *"
$entry
"* | *"
$entry/"*) continue ;; esac
  rm -rf -- "$entry"
done
"""
"""What :meth:`DockerJail.settle` runs in the row's container as the row's user (``sh``
builtins and ``rm``): every entry of ``/tmp``, ``/var/tmp`` and ``/dev/shm`` removed but
those that are, or hold, a mount point (``/proc/mounts``): the row's folder and the task's
may be there."""
SCRATCH = ("/tmp/", "/var/tmp/")
"""Where a container has folders of its own (tmpfs): what a program reads or writes outside
the row's folder is copied there."""
OWN_OUTPUT_CAPABILITIES = ["--cap-add", "SETUID", "--cap-add", "SETGID"]
"""What a coding agent's container keeps of root's powers: its CLI is started by
:mod:`~assay.sandbox.jail_init` as root, which makes the CLI's output pipes (root's, so the
commands the CLI runs, of the row's uid, cannot reopen them through ``/proc`` to forge the
transcript) and then becomes the row's user. A process of the row's uid gets neither power
(``no-new-privileges``: no setuid program nor file capability gives it one)."""

PODMAN_ULIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=32768:32768"]
"""Limits a rootful Podman can set where root lacks ``CAP_SYS_RESOURCE`` (its defaults ask
for more open files and processes than that root may give)."""
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

    def run_in_image(
        self,
        image: str,
        program: str,
        *args: str,
        network: str = "none",
        timeout: float = ENGINE_SECONDS,
    ) -> subprocess.CompletedProcess[str]:
        """``program args…`` in a throwaway container of ``image`` (removed when it ends; no
        network unless ``network`` names one; Podman's rlimits, :data:`PODMAN_ULIMITS`), as
        :meth:`run`: the plan's looks into an image.

        Raises:
            OSError: the CLI cannot be started; subprocess.TimeoutExpired: it hung.
        """
        ulimits = PODMAN_ULIMITS if self.kind == "podman" else []
        return self.run("run", "--rm", "--network", network, *ulimits, "--entrypoint", program,
                        image, *args, timeout=timeout)  # fmt: skip

    def info(self) -> str:
        """The engine's cgroup version and whether it runs rootless, as ``ENGINE info``
        answers them (Podman's ``{{.Host.CgroupsVersion}} {{.Host.Security.Rootless}}``:
        ``v1 true``; Docker's ``{{.CgroupVersion}} {{json .SecurityOptions}}``:
        ``1 ["name=rootless",…]``); ``""`` when it does not answer."""
        if self.kind == "podman":
            fields = "{{.Host.CgroupsVersion}} {{.Host.Security.Rootless}}"
        else:
            fields = "{{.CgroupVersion}} {{json .SecurityOptions}}"
        try:
            done = self.run("info", "--format", fields, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout if done.returncode == 0 else ""

    def limits_ignored(self) -> str | None:
        """Why this engine ignores memory, CPU and pids limits, or ``None``: a rootless engine
        on cgroup v1 has no cgroup of its own to limit (Podman says "Resource limits are not
        supported and ignored on cgroups V1 rootless systems" and runs the container
        anyway). An engine that does not say is taken to apply them."""
        return limits_ignored(self.kind, self.info())


def is_rootless(kind: str, info: str) -> bool:
    """Whether the engine's answer ``info`` (:meth:`Engine.info`) says it runs rootless."""
    _, _, rest = info.strip().partition(" ")
    return rest == "true" if kind == "podman" else "name=rootless" in rest


def limits_ignored(kind: str, info: str) -> str | None:
    """:meth:`Engine.limits_ignored` from the engine's answer ``info`` (:meth:`Engine.info`):
    rootless on cgroup v1."""
    version = info.strip().partition(" ")[0]
    if version.lstrip("v") == "1" and is_rootless(kind, info):
        return f"rootless {kind} on cgroup v1 ignores memory, CPU and pids limits"
    return None


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


def has_image(engine: Engine, image: str) -> bool:
    """Whether the engine holds ``image`` (never pulls)."""
    try:
        return engine.run("image", "inspect", image).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def has_network(engine: Engine, name: str) -> bool:
    """Whether the engine has the network ``name`` (``bridge``: not on a daemon started
    with ``--bridge=none``)."""
    try:
        return engine.run("network", "inspect", name).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def interpreter(program: Path) -> str | None:
    """The program a script's ``#!`` line names (``#!/usr/bin/env node`` → ``node``), or
    ``None`` for an executable that needs none (or cannot be read)."""
    try:
        with open(os.path.realpath(program), "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        return rest[0] if rest else None
    return words[0]


def missing_programs(engine: Engine, image: str, programs: Iterable[str]) -> list[str]:
    """Those of ``programs`` (names looked up on the image's ``PATH``, or absolute paths)
    that ``image`` lacks, found by one throwaway container (``sh`` and ``command -v``); all
    of them when even that cannot run.

    Raises:
        SandboxError: the container could not start (the engine's last lines).
    """
    wanted = sorted(set(programs))
    if not wanted:
        return []
    script = (
        "for p in "
        + " ".join(f"'{p}'" for p in wanted)
        + ('; do command -v "$p" >/dev/null 2>&1 || echo "$p"; done')
    )
    try:
        done = engine.run_in_image(image, "sh", "-c", script)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"cannot look into the image {image}: {exc}") from exc
    if done.returncode != 0:
        last = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise SandboxError(f"cannot look into the image {image} ({engine.kind} run exited "
                           f"with code {done.returncode}; it needs sh): {last}")  # fmt: skip
    return done.stdout.split()


def closed_folders(engine: Engine, image: str, folders: Iterable[str]) -> list[str]:
    """Those of ``folders`` that ``image`` holds and its other users may not enter (no
    ``o+x``: Debian's ``/root`` is ``700``), found by one throwaway container (``sh`` and
    ``stat``); ``[]`` when it cannot look (the rows then say what failed). A folder the image
    lacks is made by the engine on the way to a mount, open to everyone."""
    wanted = sorted(set(folders))
    if not wanted:
        return []
    script = ("for p in " + " ".join(map(shlex.quote, wanted))
              + '; do [ -d "$p" ] && stat -c "%a %n" "$p"; done; true')  # fmt: skip
    try:
        done = engine.run_in_image(image, "sh", "-c", script)
    except (OSError, subprocess.TimeoutExpired):
        return []
    found = []
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        mode, _, folder = line.partition(" ")
        if re.fullmatch(r"[0-7]{3,4}", mode) and not int(mode, 8) & 0o001:
            found.append(folder)
    return found


def image_tag(
    dockerfile: Path, *, args: dict[str, str] | None = None, extra_args: Iterable[str] = ()
) -> tuple[str, list[str]]:
    """The tag :func:`build_image` gives the image of ``dockerfile`` (``assay-task:<hash of
    the context and the flags>``), worked out without building, and the build's flags.

    Raises:
        SandboxError: the Dockerfile is missing, or a folder.
    """
    if dockerfile.is_dir():
        raise SandboxError(f"{dockerfile} is a folder: sandbox.docker.dockerfile_path names the "
                           "Dockerfile itself (its folder is the build context)")  # fmt: skip
    if not dockerfile.is_file():
        raise SandboxError(f"the Dockerfile {dockerfile} does not exist")
    flags = [f for name, value in sorted((args or {}).items())
             for f in ("--build-arg", f"{name}={value}")] + list(extra_args)  # fmt: skip
    return f"assay-task:{context_hash(dockerfile, flags=flags)}", flags


def build_image(
    engine: Engine,
    dockerfile: Path,
    *,
    args: dict[str, str] | None = None,
    extra_args: Iterable[str] = (),
    buildkit: bool | None = None,
    reuse: bool = False,
) -> str:
    """The tag of the image built from ``dockerfile`` (its folder the context):
    ``assay-task:<hash of the context and the flags>``. The engine builds it each time
    (its layer cache makes a build whose steps, context and base image are unchanged take a
    tenth of a second or so, and a base image rebuilt under the same name is built on), or,
    with ``reuse``, only when it holds no image of that tag (a resumed run keeps the image
    it started in). The build may use the host's network (``--network host``): the engine
    may have no bridge.

    Args:
        engine: the engine that builds and holds it.
        dockerfile: the Dockerfile (its folder is the context).
        args: ``--build-arg NAME=VALUE`` each (values already expanded).
        extra_args: more flags of ``ENGINE build``, before the context.
        buildkit: ``DOCKER_BUILDKIT`` set to ``1`` or ``0`` for the build (``None``: the
            environment's).
        reuse: keep an image of the tag the engine holds, unbuilt.

    Raises:
        SandboxError: the Dockerfile is missing; BuildFailed: the build failed (its last
            lines).
    """
    tag, flags = image_tag(dockerfile, args=args, extra_args=extra_args)
    if reuse and has_image(engine, tag):
        return tag
    shown = os.path.normpath(dockerfile)  # task/../image/Dockerfile: image/Dockerfile
    with tempfile.TemporaryDirectory(prefix="assay-context-") as scratch:
        context = dockerfile.parent
        try:
            if needs_copy(context):  # runs or the store in the folder: built without them
                context = Path(scratch) / "context"
                copy_context(dockerfile.parent, context)
            done = _build(engine, context / dockerfile.name, tag, flags, buildkit=buildkit)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxError(f"cannot build the image of {shown}: {exc}") from exc
    if done.returncode != 0:
        lines = _build_lines(done.stdout + done.stderr)[-BUILD_TAIL_LINES:]
        raise BuildFailed(f"the image of {shown} did not build ({engine.kind} build "
                           f"exited with code {done.returncode}); its last lines:\n"
                           + "\n".join(lines))  # fmt: skip
    return tag


def _build_lines(output: str) -> list[str]:
    """A build's output as lines to show: terminal colours taken out, and the classic
    builder's notice that it is deprecated left out (it is said on every build)."""
    lines = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line) for line in output.strip().splitlines()]
    notice = ("DEPRECATED: The legacy builder", "Install the buildx component",
              "https://docs.docker.com/go/buildx/")  # fmt: skip
    return [line for line in lines if not line.strip().startswith(notice)]


def _build(
    engine: Engine, dockerfile: Path, tag: str, flags: list[str], *, buildkit: bool | None
) -> subprocess.CompletedProcess[str]:
    command = [str(engine.path), "build", "--network", "host", "-t", tag, "-f",
               str(dockerfile), *flags, str(dockerfile.parent)]  # fmt: skip
    if engine.kind == "docker":
        command.insert(2, "--force-rm")
    env = dict(os.environ)
    if buildkit is not None:
        env["DOCKER_BUILDKIT"] = "1" if buildkit else "0"
    return subprocess.run(command, capture_output=True, text=True, env=env,
                          timeout=BUILD_SECONDS, check=False)  # fmt: skip


@dataclass(frozen=True)
class Mount:
    """A host path shown in the container at ``target`` (read-only unless ``writable``)."""

    source: Path
    target: str
    writable: bool = False

    def flag(self) -> list[str]:
        """The engine's ``--mount`` argument (Docker's and Podman's CSV fields: a path with
        a ``:``, which ``-v HOST:CONTAINER`` cannot write, or a ``,``, quoted)."""
        fields = ["type=bind", f"source={self.source}", f"target={self.target}"]
        fields += [] if self.writable else ["readonly"]
        return ["--mount", ",".join(map(_csv_field, fields))]


def _csv_field(text: str) -> str:
    """``text`` as one field of a comma-separated line (RFC 4180: quoted where it holds a
    comma, a quote or a line end, its quotes doubled)."""
    if not any(mark in text for mark in ',"\n\r'):
        return text
    return '"' + text.replace('"', '""') + '"'


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
    bridge: BridgeLink | None = None
    as_root: bool = False
    user: tuple[int, int] = (0, 0)
    numbers: Iterator[int] = field(default_factory=lambda: itertools.count(
        secrets.randbelow(UID_SLOTS)), compare=False, repr=False)  # fmt: skip
    environments: dict[str, dict[str, str]] = field(default_factory=dict, compare=False,
                                                    repr=False)  # fmt: skip

    def image_environment(self, image: str) -> dict[str, str]:
        """The variables ``image`` sets (its ``ENV``: ``Config.Env``), asked of the engine
        once per image in a run; ``{}`` when it cannot say."""
        if image not in self.environments:
            self.environments[image] = image_environment(self.engine, image)
        return self.environments[image]

    def jail(
        self,
        root: Path,
        *,
        image: str,
        limits: dict[str, int],
        memory_mb: int | None = None,
        cpus: float | None = None,
        network: bool = False,
        engine_network: str | None = None,
        readable: Iterable[Path] = (),
        mounts: Iterable[Mount] = (),
        task_dir: Path | None = None,
        isolation: bool = True,
        kept: Iterable[str] = (),
    ) -> DockerJail:
        """The container of one row whose folder is ``root`` (started by its first
        program); as root, the row's user is given ``root`` until :meth:`DockerJail.close`.

        Args:
            root: the row's folder (read-write inside, at the same path).
            image: the image's name or tag.
            limits: ``RLIMIT_*`` name → value (``RLIMIT_NPROC`` becomes ``--pids-limit``).
            memory_mb, cpus: ``--memory`` (MiB, no swap beyond it) and ``--cpus``.
            network: the host's network instead of none.
            engine_network: ``bridge``: the engine's bridge network (its own address,
                the outside through the engine's NAT) instead of none.
            readable: more host folders shown read-only at their paths
                (``sandbox.read_only``; a coding agent sees them too).
            mounts: ``sandbox.docker.extra_mounts``.
            task_dir: the task file's folder, shown read-only to the task's own programs.
            isolation: ``sandbox.docker.agent_isolation``: a coding agent's container
                shows neither ``task_dir`` nor ``mounts``.
            kept: the variables the task passes on purpose (``env_passthrough``, the
                agent's ``env``): they override the image's ``ENV``, where the others the
                programs get from the host do not (:meth:`DockerJail._environment`).

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
        shown = [Mount(Path(os.path.abspath(p)), os.path.abspath(p)) for p in readable]
        task: tuple[Mount, ...] = ()
        if task_dir is not None:
            task = (Mount(Path(os.path.abspath(task_dir)), os.path.abspath(task_dir)),)
        jail = DockerJail(self, root, state, image, f"assay-row-{secrets.token_hex(6)}",
                          (uid, gid), dict(limits), memory_mb, cpus,
                          "host" if network else engine_network or "none",
                          tuple(m for m in shown if m.source.exists()), tuple(mounts),
                          tuple(m for m in task if m.source.exists()), isolation,
                          image_env=self.image_environment(image),
                          kept=frozenset(kept))  # fmt: skip
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
    as :meth:`assay.sandbox.bwrap.Jail.command`). A coding agent runs in a container of its
    own (:meth:`agent_command`)."""

    policy: DockerPolicy
    root: Path
    state: Path
    image: str
    name: str
    owner: tuple[int, int]
    limits: dict[str, int]
    memory_mb: int | None = None
    cpus: float | None = None
    network: str = "none"
    shown: tuple[Mount, ...] = ()
    mounts: tuple[Mount, ...] = ()
    task: tuple[Mount, ...] = ()
    isolation: bool = True
    agents: list[str] = field(default_factory=list)
    given: list[Path] = field(default_factory=list)
    image_env: dict[str, str] = field(default_factory=dict)
    kept: frozenset[str] = frozenset()

    @property
    def uid(self) -> int | None:
        """The row's own user when assay runs as root (else ``None``, as on bwrap)."""
        return self.owner[0] if self.policy.as_root else None

    @property
    def home(self) -> Path:
        """The programs' ``HOME`` inside the container (its private ``/tmp``)."""
        return Path("/tmp")

    @property
    def python(self) -> str:
        """The Python a standard-library script runs on inside the container: the image's
        ``python3`` (the plan refuses an image without it where one is needed)."""
        return "python3"

    def for_copy(self, root: Path) -> DockerJail:
        """A container like this one (image, limits, network, read-only folders; never the
        task's folder nor ``extra_mounts``) over another folder, ``root``: an
        ``agent_judge``'s copy.

        Raises:
            SandboxError: the folder cannot be given to its user.
        """
        network = self.network
        return self.policy.jail(
            root, image=self.image, limits=self.limits, memory_mb=self.memory_mb,
            cpus=self.cpus, network=network == "host",
            engine_network=None if network in ("host", "none") else network,
            readable=[mount.source for mount in self.shown], kept=self.kept,
        )  # fmt: skip

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
        """The argv and environment that run ``argv`` in the row's container (see
        :meth:`assay.sandbox.bwrap.Jail.command` for the arguments; ``agent``: in a
        container of its own, :meth:`agent_command`). A container's mounts are fixed when
        it starts: ``readable`` and ``writable`` paths it does not show (under ``/tmp`` or
        ``/var/tmp``: a prompt file, a report folder) are copied to the same place in the
        container (its own, empty ones) before the program runs, and the ``writable`` ones
        copied back after.

        Raises:
            SandboxError: such a path is elsewhere, or a program that is not a coding agent
                needs the model bridge or the host's network.
        """
        if agent:
            return self.agent_command(argv, env=env, cwd=cwd, readable=readable,
                                      writable=writable, bridge=bridge,
                                      network=network, sealed=sealed)  # fmt: skip
        back = [str(Path(os.path.abspath(p))) for p in writable
                if not self._inside(Path(os.path.abspath(p)), writable_only=True)]  # fmt: skip
        if bridge or (network and self.network != "host"):
            raise SandboxError(
                "the docker driver runs a program that is not a coding agent without the "
                "model bridge or the host's network; set sandbox.network: true"
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
        config = self._config(self.name, self._start_args(self.name, self.network,
                              [*self.shown, *self.task, *self.mounts]),
                              "started", cwd)  # fmt: skip
        config.update({"copy": copies, "back": back})
        return self._launcher(config, argv, inner)

    def agent_command(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path | None = None,
        readable: Iterable[Path] = (),
        writable: Iterable[Path] = (),
        bridge: bool = False,
        network: bool = False,
        sealed: bool = True,
    ) -> tuple[list[str], dict[str, str]]:
        """A coding agent's CLI in a container of its own, from the row's image, removed
        with everything it started when the CLI ends: the row's folder its only writable
        place besides ``writable`` (the CLI's fresh home), ``readable`` (its installation,
        plugins, settings) and ``sandbox.read_only`` read-only, never the task's folder
        nor (with ``agent_isolation``) ``extra_mounts``; no network (``network``: the
        host's, a CLI on its own credentials), and with ``bridge`` the model bridge's unix
        socket mounted in behind ``127.0.0.1:port``. The CLI is started by
        :mod:`assay.sandbox.jail_init` (on the image's ``python3``), as root, which gives it
        output pipes of root's before it becomes the row's user
        (:data:`OWN_OUTPUT_CAPABILITIES`), sealed unless ``sealed`` is false
        (:func:`assay.sandbox.bwrap.seal_lost`). A variable of the image's ``ENV`` through
        which a CLI reaches a model on its own (``CLAUDE_CODE_USE_BEDROCK``,
        :attr:`~assay.spec.coding_agents.CodingAgent.withheld_prefixes`) is set empty, as
        the host's are withheld, unless assay sets it (the bridge's address).

        Raises:
            SandboxError: the row's user cannot be given ``writable``.
        """
        extra = [Path(os.path.realpath(p)) for p in writable]
        try:
            for path in extra:
                if self.uid is not None and path not in self.given:
                    give(path, self.uid)
                    self.given.append(path)
        except OSError as exc:
            raise SandboxError(f"cannot give {path} to the row's user: {exc}") from exc
        mode = "host" if network or self.network == "host" else self.network
        shown = [Mount(Path(os.path.realpath(p)), os.path.realpath(p)) for p in readable]
        shown += [Mount(p, str(p), writable=True) for p in extra]
        shown += [*self.shown] if self.isolation else [*self.shown, *self.task, *self.mounts]
        if argv and os.path.isabs(argv[0]):  # mounted where it really is
            argv = [os.path.realpath(argv[0]), *argv[1:]]
        link = self.policy.bridge if bridge and mode != "host" else None
        shown.append(Mount(INIT_SOURCE, INIT))
        if link is not None:
            shown.append(Mount(link.socket, str(link.socket)))
        options = jail_init.arguments(
            user=self.owner, own_output=True, sealed=sealed,
            forward=(link.port, str(link.socket)) if link is not None else None,
        )  # fmt: skip
        argv = ["python3", "-I", "-S", INIT, *options, "--", *argv]
        name = f"{self.name}-agent{len(self.agents)}"
        self.agents.append(name)
        inner = self._environment(env, writable=extra)
        for variable in self.image_env:  # the image's own model routes: as the host's are
            if variable.startswith(CodingAgent.withheld_prefixes) and variable not in inner:
                inner[variable] = ""  # set empty over the image's (an exec cannot unset)
        start = self._start_args(name, mode, [m for m in shown if m.source.exists()])
        config = self._config(name, [*OWN_OUTPUT_CAPABILITIES, *start], name, cwd)
        config["remove"], config["user"] = True, "0:0"  # jail_init becomes the row's user
        return self._launcher(config, argv, inner)

    def _config(
        self, name: str, start: list[str], lock: str, cwd: Path | None
    ) -> dict[str, object]:
        return {
            "engine": str(self.policy.engine.path), "kind": self.policy.engine.kind,
            "container": name, "start": start, "lock": str(self.state / lock),
            "user": f"{self.owner[0]}:{self.owner[1]}",
            "cwd": os.path.abspath(cwd or self.root), "copy": [],
            "back": [], "marker": f"ASSAY_EXEC={secrets.token_hex(8)}",
            "memory_mb": self.memory_mb, "max_pids": self.limits.get("RLIMIT_NPROC"),
        }  # fmt: skip

    def _launcher(
        self, config: dict[str, object], argv: list[str], inner: dict[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        """The launcher's argv and environment: the engine's CLI reads its own variables
        (``HOME``, the ``XDG_*`` folders, ``DOCKER_HOST``…, :data:`ENGINE_VARIABLES`) as
        this process has them, so rootless Podman finds its user's storage (a coding agent's
        fresh ``XDG_DATA_HOME`` would hide it); the program's values
        of those names (``HOME=/tmp``, its ``PATH``: never secrets) go in the config, given
        as ``-e NAME=value``, the rest by name from the launcher's environment."""
        outer = {name: os.environ[name] for name in ENGINE_VARIABLES if name in os.environ}
        config["set"] = {k: v for k, v in inner.items() if k in ENGINE_VARIABLES}
        config["env"] = sorted(k for k in inner if k not in ENGINE_VARIABLES)
        launcher = [str(self.policy.python), "-I", "-S", str(LAUNCHER), json.dumps(config),
                    "--", *argv]  # fmt: skip
        rest = {k: v for k, v in inner.items() if k not in ENGINE_VARIABLES}
        return launcher, {**rest, **outer}

    def _inside(self, path: Path, *, writable_only: bool = False) -> bool:
        mounts = [Mount(self.root, str(self.root), writable=True), *self.shown, *self.task,
                  *self.mounts]  # fmt: skip
        return any((m.source == path or m.source in path.parents) and m.target == str(m.source)
                   and (m.writable or not writable_only) for m in mounts)  # fmt: skip

    def _environment(self, env: dict[str, str], writable: Iterable[Path] = ()) -> dict[str, str]:
        """``env`` without pointers to the host; ``HOME`` and ``TMPDIR`` are the container's
        ``/tmp`` (a coding agent's: its fresh home and that home's ``tmp``, mounted in),
        ``PATH`` keeps the row's own folders (its ``record_cli`` shims) before the image's
        ``PATH`` (:data:`SYSTEM_PATH` for an image that sets none). A variable the image
        sets keeps the image's value where the row would get the host's own (a
        ``PYTHONPATH`` or ``JAVA_HOME`` of the machine assay runs on, not the image's; Coder
        Eval passes only what a task names): only a value assay, the agent or the task sets
        (:attr:`kept`: passed on purpose) overrides it."""
        clean = {k: v for k, v in env.items()
                 if k not in HOST_POINTERS and not self._image_sets(k, v)}  # fmt: skip
        home = Path(clean.get("HOME") or "/nonexistent")
        if home in list(writable):
            for name in XDG_HOMES:
                if name in clean and home not in Path(clean[name]).parents:
                    del clean[name]
            tmp = Path(clean.get("TMPDIR") or "/nonexistent")
            if not (home == tmp or home in tmp.parents):
                clean["TMPDIR"] = "/tmp"
        else:
            clean = {k: v for k, v in clean.items() if k not in XDG_HOMES}
            clean["HOME"] = clean["TMPDIR"] = "/tmp"
        own = [p for p in env.get("PATH", "").split(os.pathsep)
               if p and os.path.isabs(p) and self._inside(Path(p))]  # fmt: skip
        clean["PATH"] = os.pathsep.join([*own, self.image_env.get("PATH") or SYSTEM_PATH])
        if self.uid is not None:
            clean["USER"] = clean["LOGNAME"] = "assay"
        return clean

    def _image_sets(self, name: str, value: str) -> bool:
        """Whether the image's ``ENV`` sets ``name`` and the row would get the host's own
        value of it instead (passed through from this process's environment, not set
        anew by assay or the agent, and not passed on purpose)."""
        return (name in self.image_env and name not in self.kept
                and os.environ.get(name) == value)  # fmt: skip

    def _start_args(self, name: str, network: str, shown: list[Mount]) -> list[str]:
        """``ENGINE run -d`` arguments of a container of the row (it sleeps; programs run in
        it with ``exec``, as the row's user): the row's folder and ``shown`` mounted, the
        hidden paths covered. Its first processes (the init and ``sleep``) are the
        container's root without a capability, so the row's programs cannot signal them:
        ``kill -TERM 1`` stopped the container, and every criterion after it failed to
        start."""
        args = ["--name", name, "--hostname", "assay", "--read-only",
                "--network", network, "--cap-drop", "ALL",
                "--security-opt", "no-new-privileges", "--user", "0:0",
                "--tmpfs", "/tmp:rw,exec,mode=1777",
                "--tmpfs", "/var/tmp:rw,exec,mode=1777", "--label", ROW_LABEL,
                "--label", owner_label()]  # fmt: skip
        args += self._limit_args() + self._init_args()
        if self.policy.engine.kind == "podman" and not self.policy.as_root:
            args += ["--userns", "keep-id"]  # rootless: the user's uid is the same inside
        args += Mount(self.root, str(self.root), writable=True).flag()
        for mount in shown:  # one of (or inside) a private folder is mounted empty
            args += (self._cover(mount.source, mount.target) if self._private(mount.source)
                     else mount.flag())  # fmt: skip
        for path, where in self._hidden(shown):
            args += self._cover(path, where)
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
                args += ["--ulimit", f"{flag}={soft_hard(name, limits[name])}"]
        if self.policy.engine.kind == "podman" and "RLIMIT_NPROC" in limits:
            args += ["--ulimit", "nproc=32768:32768"]  # podman asks for more than root may give
        if self.memory_mb is not None:
            args += ["--memory", f"{self.memory_mb}m", "--memory-swap", f"{self.memory_mb}m"]
        if self.cpus is not None:
            args += ["--cpus", f"{self.cpus:g}"]
        return args

    def _cover(self, path: Path, target: str) -> list[str]:
        """The mount that shows ``target`` empty: an empty folder for a folder, ``/dev/null``
        for a file (bound after what it covers, as Podman orders binds)."""
        return Mount(self.state / "empty" if path.is_dir() else Path("/dev/null"), target).flag()

    def _private(self, source: Path) -> bool:
        """Whether a mount of ``source`` would show a private path whole: it is one, or
        lies inside one (``extra_mounts: [runs:/r]``)."""
        return any(p == source or p in source.parents for p in self.policy.hidden)

    def _hidden(self, shown: list[Mount]) -> list[tuple[Path, str]]:
        """Each private path inside a mounted folder (``shown``'s or the row's), with where
        it shows in the container: the same path, or under an ``extra_mounts`` entry's
        target (``.:/data`` shows ``runs/`` as ``/data/runs``); never one that holds the
        row's folder at its own place."""
        found = []
        mounted = [
            (self.root, str(self.root)),
            *((m.source, m.target) for m in shown if not self._private(m.source)),
        ]
        for path in self.policy.hidden:
            if not path.exists() or path == self.root:
                continue
            for source, target in mounted:
                where = str(PurePosixPath(target) / path.relative_to(source)) if (
                    source in path.parents) else None  # fmt: skip
                if where is not None and not (where == str(path) and path in self.root.parents):
                    found.append((path, where))
        return found

    def settle(self) -> None:
        """Empty the row container's ``/tmp`` (also ``HOME``), ``/var/tmp`` and ``/dev/shm``
        once the agent has ended, before the criteria run there: what the agent left (a
        Python user site whose ``.pth`` runs first in every ``python3``, caches) must
        neither answer for a criterion nor hold the memory its programs are limited to (a
        tmpfs's pages count against ``sandbox.limits.max_memory_mb``). What is mounted there
        (the row's folder, the task's, a prompt's) is left alone (:data:`SETTLE_SCRIPT`).
        Nothing to do before the container started; a failure leaves it as it was (the
        criteria still run; the engine's refusal to start it for a moment is tried again)."""
        if not (self.state / "started").exists():
            return
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            for _ in range(START_TRIES):  # the runtime's own start can meet max_pids
                done = self.policy.engine.run("exec", "-u", f"{self.owner[0]}:{self.owner[1]}",
                                              self.name, "sh", "-c", SETTLE_SCRIPT)  # fmt: skip
                if not start_refused(done):
                    break

    def close(self) -> None:
        """Remove the container and give the row's files back to the user running assay.

        Each program's processes ended with it (:mod:`assay.sandbox.docker_exec`), so the
        container runs only its ``sleep``: it is removed in the background (its own
        session, never waited for), and the run's event loop is not held up."""
        started = [n for n in [self.name, *self.agents]
                   if (self.state / ("started" if n == self.name else n)).exists()]  # fmt: skip
        if started:  # an agent's container is gone already unless its launcher was killed
            ignore = ["--ignore"] if self.policy.engine.kind == "podman" else []  # else it stops
            with contextlib.suppress(OSError):  # at the first one missing
                subprocess.Popen([str(self.policy.engine.path), "rm", "-f", *ignore, *started],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        if self.uid is not None:
            for path in [self.root, *self.given]:
                give(path, os.getuid(), os.getgid())
        shutil.rmtree(self.state, ignore_errors=True)


def image_environment(engine: Engine, image: str) -> dict[str, str]:
    """The variables ``image`` sets (``ENGINE image inspect``'s ``Config.Env``, each
    ``NAME=value``); ``{}`` when the engine cannot say (the row's container, started from
    it, then says what is wrong)."""
    try:
        done = engine.run("image", "inspect", "--format", "{{json .Config.Env}}", image)
        listed = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    pairs = [str(item).partition("=") for item in listed or []]
    return {name: value for name, _, value in pairs if name}


def make_docker_policy(
    *, engine: Engine, hidden: Iterable[Path] = (), bridge: BridgeLink | None = None
) -> DockerPolicy:
    """The policy of one run (see the module docstring); ``bridge``: the model bridge's
    unix socket, which a coding agent's container reaches."""
    as_root = os.geteuid() == 0
    return DockerPolicy(
        engine=engine,
        python=Path(sys.executable),
        hidden=tuple(sorted({Path(p).absolute() for p in hidden}, key=lambda p: len(p.parts))),
        bridge=bridge,
        as_root=as_root,
        user=container_user(engine, as_root=as_root),
    )


def container_user(engine: Engine, *, as_root: bool) -> tuple[int, int]:
    """The user a row's programs run as in its container when assay is not root (as root,
    each row gets a user of its own): the caller's uid and gid, except under rootless
    Docker, whose user namespace maps the caller to the container's root (uid 0, without a
    capability: ``--cap-drop ALL``), so the row's folder, the caller's, is writable only to
    it there. (Rootless Podman keeps the caller's uid inside: ``--userns keep-id``.)"""
    if not as_root and engine.kind == "docker" and is_rootless("docker", engine.info()):
        return (0, 0)
    return (os.getuid(), os.getgid())
