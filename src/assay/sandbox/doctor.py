"""Which sandbox drivers work on this machine, why the others do not and how to fix them, and
which ``sandbox.limits`` each one enforces here (``assay doctor``)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assay.errors import UsageError
from assay.sandbox import cgroups, reaper

if TYPE_CHECKING:
    from assay.spec.task import TaskDefinition

RLIMIT_FIELDS = ("max_pids", "cpu_seconds", "max_file_size_mb", "max_open_files")
EVERYWHERE = ("max_output_mb", "max_log_mb")
CGROUP_FIELDS = ("max_memory_mb", "max_cpus")
ENGINE_CGROUP_FIELDS = ("max_memory_mb", "max_cpus", "max_pids")
"""What a container engine enforces with the container's cgroup (``--memory``, ``--cpus``,
``--pids-limit``): what a rootless engine on cgroup v1 ignores."""
TEMPDIR = "a plain folder: rows are not contained (they see the whole machine)"
SUBREAPER = ("what a row leaves running is found by its environment, its folder, and the "
             "subreaper each program runs under")  # fmt: skip


@dataclass(frozen=True)
class DriverCheck:
    """What one driver can do here.

    Attributes:
        driver: ``tempdir``, ``bwrap``, ``docker`` or ``podman`` (the docker driver on
            Podman, ``sandbox.docker.engine: podman``).
        works: a row can run in it here.
        detail: what was found (a version, or why it does not work).
        fix: how to make it work (``None`` when it works).
        limits: the ``sandbox.limits`` fields it enforces here.
    """

    driver: str
    works: bool
    detail: str
    fix: str | None
    limits: tuple[str, ...]


def check_drivers(*, path_variable: str) -> list[DriverCheck]:
    """Check every driver (a bwrap sandbox and a container engine's answer are tried for
    real); ``path_variable`` is the ``PATH`` rows would get."""
    tempdir = f"{TEMPDIR}; {cgroup_note()}"
    if not isinstance(cgroups.find(), cgroups.Hierarchies) and reaper.available():
        tempdir += f"; {SUBREAPER}"
    return [
        DriverCheck("tempdir", True, tempdir, None, enforced_limits("tempdir")),
        _bwrap(path_variable),
        *(_engine(kind) for kind in ("docker", "podman")),
    ]


def enforced_limits(driver: str, *, engine_ignores: bool = False) -> tuple[str, ...]:
    """The ``sandbox.limits`` fields ``driver`` enforces (on a machine where it works): on
    ``tempdir`` and ``bwrap``, ``max_memory_mb`` and ``max_cpus`` where this machine gives
    a row control groups of its own (:func:`assay.sandbox.cgroups.find`), and there
    ``max_pids`` on ``tempdir`` too (the row's pids group; ``bwrap`` enforces it
    everywhere); on ``docker``,
    without :data:`ENGINE_CGROUP_FIELDS` when ``engine_ignores`` them
    (:meth:`assay.sandbox.docker.Engine.limits_ignored`)."""
    if driver == "docker":
        every = (*RLIMIT_FIELDS, *CGROUP_FIELDS, *EVERYWHERE)
        return tuple(n for n in every if not (engine_ignores and n in ENGINE_CGROUP_FIELDS))
    groups = CGROUP_FIELDS if isinstance(cgroups.find(), cgroups.Hierarchies) else ()
    if driver == "bwrap":
        return (*RLIMIT_FIELDS, *groups, *EVERYWHERE)
    return (*groups, *(("max_pids",) if groups else ()), *EVERYWHERE)


def limits_text(task: TaskDefinition, *, engine_ignores: bool = False) -> str:
    """``task``'s ``sandbox.limits`` as its driver enforces them (``assay plan``): each
    enforced field with its value, those left unset, then those set that it does not
    enforce (on ``docker``, with ``engine_ignores``, the ones a rootless engine on cgroup v1
    drops: :func:`enforced_limits`)."""
    driver, limits = task.sandbox_driver, task.sandbox.limits
    enforced = enforced_limits(driver, engine_ignores=engine_ignores)
    shown = [f"{name} {getattr(limits, name):.12g}" for name in enforced
             if getattr(limits, name) is not None]  # fmt: skip
    unset = [name for name in enforced if getattr(limits, name) is None]
    ignored = sorted(n for n in limits.model_fields_set if n not in enforced)
    text = f"limits ({driver}): " + ", ".join(shown)
    if unset:
        text += f"; unset: {', '.join(unset)}"
    if ignored:
        text += f"; not enforced by {driver}: {', '.join(ignored)}"
    return text


def cgroup_note() -> str:
    """Whether ``max_memory_mb`` and ``max_cpus`` are enforced on ``bwrap`` and ``tempdir``
    here (each row in control groups of its own), and why not when they are not."""
    found = cgroups.find()
    if isinstance(found, cgroups.Hierarchies):
        return ("each row in cgroups of its own (cgroup v1: memory, cpu, pids): "
                "max_memory_mb, max_cpus and max_pids enforced")  # fmt: skip
    return f"max_memory_mb and max_cpus not enforced: {found}"


def _bwrap(path_variable: str) -> DriverCheck:
    from assay.sandbox.bwrap import make_policy
    from assay.sandbox.probe import probe

    limits = enforced_limits("bwrap")
    try:
        policy = make_policy(path_variable=path_variable)
        probe(policy)
    except UsageError as exc:
        return DriverCheck("bwrap", False, exc.message, exc.hint, limits)
    version = _version([str(policy.bwrap), "--version"])
    return DriverCheck("bwrap", True, f"{version} at {policy.bwrap}; {cgroup_note()}", None,
                       limits)  # fmt: skip


def _engine(kind: str) -> DriverCheck:
    from assay.sandbox.docker import find_engine

    limits = enforced_limits("docker")
    name = "docker" if kind == "docker" else "docker (engine: podman)"
    try:
        engine = find_engine(kind)
    except UsageError as exc:
        why = exc.message.split(": ", 1)[-1]
        return DriverCheck(name, False, why, ENGINE_FIXES[kind]["not installed" in why], limits)
    done = engine.run("version", "--format", "{{.Server.Version}}", timeout=20)
    detail = f"{kind} {done.stdout.strip()} at {engine.path}"
    ignored = engine.limits_ignored()
    if ignored is not None:
        detail += f"; {ignored}: {', '.join(ENGINE_CGROUP_FIELDS)} not enforced"
    return DriverCheck(name, True, detail, None,
                       enforced_limits("docker", engine_ignores=ignored is not None))  # fmt: skip


ENGINE_FIXES = {
    "docker": {
        True: "install it (Debian/Ubuntu: apt-get install docker.io; Fedora: dnf install "
        "moby-engine)",
        False: "start its daemon (dockerd; to leave the host's network alone: dockerd "
        "--iptables=false --ip-forward=false --bridge=none --data-root DIR -H unix://SOCKET), "
        "or point DOCKER_HOST at one that runs",
    },
    "podman": {
        True: "install it (Debian/Ubuntu: apt-get install podman; Fedora: dnf install podman)",
        False: "run podman info to see why; where root lacks CAP_SYS_RESOURCE, set "
        'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"] in a file named by '
        "CONTAINERS_CONF",
    },
}
"""How to make an engine work: ``[kind][not installed]``."""


def _version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return argv[0]
    return done.stdout.strip() or argv[0]
