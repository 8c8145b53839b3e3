"""Which rows run contained, and the ``bwrap`` sandbox (:mod:`assay.sandbox.bwrap`) or
``docker`` container (:mod:`assay.sandbox.docker`) of each.

A task's driver is :attr:`assay.spec.task.TaskDefinition.sandbox_driver` (``bwrap`` by
default for a coding agent that may write or run commands). When a plan holds a ``bwrap``
task, :func:`check_containment` makes one sandbox before any row runs (``assay plan`` and
``assay run`` alike) and refuses the plan, with the reason and the fix, where the machine
cannot make one. When a plan holds a ``docker`` task, the engine must answer, and each
task's image must exist or build (a Dockerfile is built then, once per content). A task
that asks for ``tempdir`` although its coding agent may write or run commands gets one
warning: its rows are not contained.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from assay.agents.coding import CliAgent
from assay.agents.registry import AgentRegistry
from assay.errors import BuildFailed, SandboxError, TaskFileError, UsageError
from assay.orchestration.loading.task_loader import LoadedTask
from assay.sandbox import cgroups, reaper
from assay.sandbox.build_context import is_run_folder
from assay.sandbox.bwrap import JAIL_PROCESSES, BridgeLink, Jail, JailPolicy, make_policy
from assay.sandbox.cgroups import Hierarchies
from assay.sandbox.docker import (
    SCRATCH,
    DockerJail,
    DockerPolicy,
    Engine,
    build_image,
    closed_folders,
    find_engine,
    has_image,
    has_network,
    image_tag,
    interpreter,
    make_docker_policy,
    missing_programs,
    parse_mount,
)
from assay.sandbox.docker_sweep import sweep_containers
from assay.sandbox.doctor import enforced_limits, limits_text
from assay.sandbox.mounts import unreadable
from assay.sandbox.node_version import declared_node, image_node, too_old
from assay.sandbox.probe import probe
from assay.sandbox.reaper import RowProcesses
from assay.spec.task import UNSET_VARIABLE, SandboxLimits, TaskDefinition

NOT_CONTAINED = (
    "sandbox.driver tempdir: the {agent} agent may write files and run commands, and a "
    "tempdir sandbox does not contain it (it can read and write anywhere the user running "
    "assay can); remove the driver (bwrap is the default for coding agents) or set "
    "sandbox.driver: bwrap"
)
BWRAP_ONLY = (
    "sandbox.{field} applies to the bwrap and docker drivers only; this task's rows run in "
    "a tempdir sandbox, where it has no effect"
)
BWRAP_ONLY_LIMITS = (
    "{fields} apply to the bwrap and docker drivers only; this task's rows run in a tempdir "
    "sandbox, where they have no effect"
)
DOCKER_ONLY = (
    "sandbox.limits.{field} is enforced by the docker driver (the engine's cgroup), and by "
    "{driver} only where the machine gives a row cgroups of its own; this task's rows run in "
    "a {driver} sandbox, where it is not enforced ({why}); set sandbox.driver: docker to "
    "enforce it"
)


def uses_bwrap(tasks: Iterable[TaskDefinition]) -> bool:
    """Some of ``tasks`` (every variant of every task of a plan) runs in a ``bwrap`` sandbox."""
    return any(t.sandbox_driver == "bwrap" for t in tasks)


def is_contained(task: TaskDefinition) -> bool:
    """``task``'s rows run in a ``bwrap`` sandbox or a ``docker`` container (what
    :func:`private_paths` lists is hidden there)."""
    return task.sandbox_driver in ("bwrap", "docker")


def needs_bridge_socket(tasks: Iterable[TaskDefinition]) -> bool:
    """Some of ``tasks`` runs in a ``bwrap`` sandbox or ``docker`` container, without the
    host's network: a coding agent there reaches the model bridge through its unix socket."""
    return any(is_contained(t) for t in tasks)


ImageKey = tuple[str, str, str, str]
"""What one image of a run is told by (:func:`image_key`)."""


@dataclass
class EngineAnswers:
    """Whether each container engine ignores the cgroup limits, asked once per engine during
    one plan (``assay plan`` shows it in a task's warnings and its limits line), and each
    task's image, built once per plan (``reuse_images``: a resumed run's or a regrade's plan
    keeps the images the engine holds, see :func:`task_image`)."""

    reuse_images: bool = False
    answers: dict[str | None, str | None] = field(default_factory=dict)
    images: dict[tuple[ImageKey, str | None], str | None] = field(default_factory=dict)
    built: dict[ImageKey, str] = field(default_factory=dict)
    failed: dict[ImageKey, str] = field(default_factory=dict)

    def limits_ignored(self, kind: str | None) -> str | None:
        """:meth:`~assay.sandbox.docker.Engine.limits_ignored` of the engine ``kind`` (``None``:
        the one found); ``None`` also when no engine answers (the run says so)."""
        if kind not in self.answers:
            try:
                self.answers[kind] = find_engine(kind).limits_ignored()
            except UsageError:
                self.answers[kind] = None
        return self.answers[kind]

    def image(
        self, task: TaskDefinition, base_dir: Path, *, started: str | None = None
    ) -> str | None:
        """:func:`image_identity`, once per docker block and folder in one plan (a task's
        variants mostly share it: the engine is asked and the build context hashed once);
        ``started``: the identity a resumed run started with."""
        docker = task.sandbox.docker
        if task.sandbox_driver != "docker" or docker is None:
            return None
        key = (image_key(task, base_dir), started)
        if key not in self.images:
            self.images[key] = image_identity(task, base_dir, started=started,
                                              build=self.task_image)  # fmt: skip
        return self.images[key]

    def task_image(self, engine: Engine, task: TaskDefinition, base_dir: Path) -> str:
        """:func:`task_image`, once per engine, docker block and folder in one plan: its
        build context is hashed and the engine asked for it once, not for every variant and
        every check that names the image.

        Raises:
            SandboxError: as :func:`task_image` (a build that failed: once, then its
                :class:`~assay.errors.BuildFailed` again for the others that name it).
        """
        key = image_key(task, base_dir)
        if key in self.failed:
            raise BuildFailed(self.failed[key])
        if key not in self.built:
            try:
                self.built[key] = task_image(engine, task, base_dir, reuse=self.reuse_images)
            except BuildFailed as exc:
                self.failed[key] = str(exc)
                raise
        return self.built[key]


def containment_warnings(
    display: str, variants: Iterable[TaskDefinition], *, engines: EngineAnswers | None = None
) -> list[str]:
    """One warning per task file (``display``), for its first variant that needs it: a coding
    agent that may act in a ``tempdir`` sandbox, or bwrap-only settings under ``tempdir``.
    ``engines``: the plan's answers of the container engines (asked here when not given)."""
    engines = engines or EngineAnswers()
    for task in variants:
        agent = task.agent
        limits = task.sandbox.limits
        unenforced = [name for name in ("max_memory_mb", "max_cpus")
                      if getattr(limits, name) is not None]  # fmt: skip
        found = cgroups.find() if unenforced and task.sandbox_driver != "docker" else None
        if isinstance(found, str):
            return [f"{display}: " + DOCKER_ONLY.format(field=unenforced[0], why=found,
                                                        driver=task.sandbox_driver)]  # fmt: skip
        ignored = _engine_ignores(task, engines)
        if ignored:
            return [f"{display}: {ignored}"]
        image = _image_field(task)
        if image is not None and task.sandbox_driver != "docker":
            return [f"{display}: {UNUSED_IMAGE.format(field=image, driver=task.sandbox_driver)}"]
        if task.sandbox_driver != "tempdir":
            continue
        if agent.may_act:
            return [f"{display}: {NOT_CONTAINED.format(agent=agent.type)}"]
        sandbox = task.sandbox
        unenforced = _unenforced_limits(sandbox.limits, "tempdir")
        if unenforced:
            return [f"{display}: {_limits_warning(unenforced)}"]
        settings = (("network", sandbox.network), ("read_only", sandbox.read_only))
        given = [name for name, value in settings if value]
        if given:
            return [f"{display}: {BWRAP_ONLY.format(field=given[0])}"]
    return []


def limits_line(task: TaskDefinition, *, engines: EngineAnswers | None = None) -> str:
    """``task``'s limits as ``assay plan`` shows them (:func:`assay.sandbox.doctor.limits_text`),
    asking a ``docker`` task's engine (through ``engines``, the plan's answers) whether it
    ignores the cgroup limits the task sets."""
    ignored = _engine_ignores(task, engines or EngineAnswers())
    return limits_text(task, engine_ignores=ignored is not None)


def _engine_ignores(task: TaskDefinition, engines: EngineAnswers) -> str | None:
    """The warning for a ``docker`` task whose memory, CPU or pids limit its engine ignores
    (rootless on cgroup v1: :meth:`~assay.sandbox.docker.Engine.limits_ignored`), else
    ``None`` (also when no engine answers: the run says so)."""
    given = _unenforced_limits(task.sandbox.limits, "docker", engine_ignores=True)
    if task.sandbox_driver != "docker" or not given:
        return None
    why = engines.limits_ignored(engine_of(task))
    if why is None:
        return None
    return (
        f"sandbox.limits.{given[0]} is not enforced: {why} (the engine runs the container "
        "without it); run the engine as root, or on cgroup v2 with delegation"
    )


def _unenforced_limits(
    limits: SandboxLimits, driver: str, *, engine_ignores: bool = False
) -> list[str]:
    """The ``sandbox.limits`` fields the task sets and ``driver`` does not enforce (in the
    order of the model; ``max_output_mb`` and ``max_log_mb`` hold on every driver)."""
    enforced = enforced_limits(driver, engine_ignores=engine_ignores)
    return [name for name in type(limits).model_fields
            if name in limits.model_fields_set and name not in enforced]  # fmt: skip


def _limits_warning(names: list[str]) -> str:
    """The warning for bwrap-only ``sandbox.limits`` fields under ``tempdir``, naming each."""
    if len(names) == 1:
        return BWRAP_ONLY.format(field=f"limits.{names[0]}")
    return BWRAP_ONLY_LIMITS.format(fields=", ".join(f"sandbox.limits.{n}" for n in names))


UNUSED_IMAGE = (
    "sandbox.docker.{field}: used only by sandbox.driver: docker; this task runs on "
    "{driver}, so no image is used (set sandbox.driver: docker to run its rows in it)"
)


def _image_field(task: TaskDefinition) -> str | None:
    """``image`` or ``dockerfile_path`` when the task's ``sandbox.docker`` names one."""
    docker = task.sandbox.docker
    if docker is None:
        return None
    return next((f for f in ("dockerfile_path", "image") if getattr(docker, f, None)), None)


def check_containment(
    planned: Iterable[tuple[LoadedTask, TaskDefinition]],
    *,
    agents: AgentRegistry,
    engines: EngineAnswers | None = None,
) -> list[str]:
    """Make one ``bwrap`` sandbox if some task (as a variant runs it, beside its file) needs
    them (see the module docstring); as root, check that each bwrap task's folders can be
    read by the row's own user. Returns warnings (:func:`check_docker`'s).

    ``engines``: the plan's answers (its images already built are not looked up again).

    Raises:
        TaskFileError: the machine cannot make one, or a folder cannot be read: located at
            the task, with why and how to fix it.
    """
    planned = list(planned)
    warnings = _check_scratch(planned)
    warnings += check_docker([(loaded, task) for loaded, task in planned
                              if task.sandbox_driver == "docker"], agents=agents,
                             engines=engines or EngineAnswers())  # fmt: skip
    contained = [(loaded, task) for loaded, task in planned if task.sandbox_driver == "bwrap"]
    if not contained:
        return warnings
    try:
        policy = make_policy(path_variable=os.environ.get("PATH", ""))
        probe(policy)
    except UsageError as exc:
        raise _located(contained[0][0], exc.message, exc.hint) from None
    if not policy.as_root:
        return warnings
    _check_readable(contained, agents)
    return warnings


def _check_scratch(planned: list[tuple[LoadedTask, TaskDefinition]]) -> list[str]:
    """Where the rows' own folders are made (``TMPDIR``) against what each contained row
    sees: inside a ``bwrap`` or ``docker`` task's folder (shown to every row), every row
    would see the others' folders, so it is refused; outside ``/tmp`` and ``/var/tmp`` a
    ``docker`` row cannot be given a folder made there (a prompt, pytest's report), which
    is warned.

    Raises:
        TaskFileError: ``TMPDIR`` lies inside a contained task's folder.
    """
    scratch = Path(tempfile.gettempdir()).resolve()
    warnings: list[str] = []
    for loaded, task in planned:
        if task.sandbox_driver not in ("bwrap", "docker"):
            continue
        folder = loaded.base_dir.resolve()
        if scratch == folder or folder in scratch.parents:
            raise _located(loaded, f"TMPDIR ({scratch}) lies inside the task's folder "
                           f"({folder}), which every row sees: the other rows' folders, made "
                           "there, would show", hint="set TMPDIR outside the task's folder "
                           "(the default: /tmp)")  # fmt: skip
        docker_scratch = f"{scratch}/".startswith(SCRATCH)  # what a container is given
        note = (f"{loaded.display}: TMPDIR ({scratch}) is outside /tmp and /var/tmp: a docker "
                "row's programs that read a folder made there (a command agent's prompt, "
                "pytest's report) end ERROR; set TMPDIR under /tmp")  # fmt: skip
        if task.sandbox_driver == "docker" and not docker_scratch and note not in warnings:
            warnings.append(note)
    return warnings


def _check_readable(
    contained: list[tuple[LoadedTask, TaskDefinition]], agents: AgentRegistry
) -> None:
    """As root: each bwrap task's read-only folders and row folders readable by the row's
    own user."""
    for loaded, task in contained:
        for index, name in enumerate(task.sandbox.read_only):
            path = Path(name) if Path(name).is_absolute() else loaded.base_dir / name
            problem = unreadable(path)
            if problem is not None:
                raise TaskFileError(
                    problem, file=loaded.display, field=f"sandbox.read_only[{index}]",
                    line=loaded.document.line_of(("sandbox", "read_only", index)),
                    hint=READABLE_HINT,
                )  # fmt: skip
        for path in _row_folders(task, loaded.base_dir, agents):
            problem = unreadable(path)
            if problem is not None:
                raise _located(loaded, problem, READABLE_HINT)


def check_docker(
    planned: list[tuple[LoadedTask, TaskDefinition]],
    *,
    agents: AgentRegistry | None = None,
    engines: EngineAnswers,
) -> list[str]:
    """For ``docker`` tasks: an engine that answers, each task's image held by the engine
    or built from its Dockerfile (once per content), the engine's bridge network when
    ``sandbox.docker.network: bridge`` asks for it, and (as root) the task's folder and its
    coding agent's CLI and plugins readable by the row's user. Returns warnings: an image
    whose Node.js is older than a CLI's ``engines.node`` (:mod:`assay.sandbox.node_version`).

    Raises:
        TaskFileError: located at the task's field, with why and how to fix it.
    """
    if not planned:
        return []
    found: dict[str | None, Engine] = {}
    looked = _Looks()  # one look per image
    for loaded, task in planned:
        wanted = engine_of(task)
        if wanted not in found:
            try:
                found[wanted] = find_engine(wanted)
            except UsageError as exc:
                raise _located(loaded, exc.message, exc.hint) from None
        engine = found[wanted]
        _check_mounts(loaded, task)
        _note_closed_mounts(loaded, task, looked.warnings)
        _check_container_limits(loaded, task)
        _note_engine_choice(engine, wanted, looked.warnings)
        _note_unset_args(loaded, task, looked.warnings)
        _note_unused_image(loaded, task, looked.warnings)
        try:
            image = engines.task_image(engine, task, loaded.base_dir)
        except BuildFailed as exc:  # that task's rows end ERROR with it; the others run
            note = _build_failed(loaded, str(exc))
            looked.warnings += [] if note in looked.warnings else [note]
            continue
        except SandboxError as exc:
            raise _docker_located(loaded, task, str(exc)) from None
        _check_network(engine, loaded, task, image, looked)
        _check_agent_programs(engine, loaded, task, image, agents, looked)
        if os.geteuid() == 0:
            folders = _row_folders(task, loaded.base_dir, agents) if agents else [loaded.base_dir]
            for path in folders:
                problem = unreadable(path)
                if problem is not None:
                    raise _located(loaded, problem, READABLE_HINT)
            _check_reachable(engine, loaded, task, image, folders, looked)
    return looked.warnings


def _build_failed(loaded: LoadedTask, message: str) -> str:
    """The warning of a task whose image did not build (``message``: the build's)."""
    line = loaded.document.line_of(("sandbox", "docker", "dockerfile_path")) or "?"
    return (f"{loaded.display}:{line}: sandbox.docker.dockerfile_path: {message}\n"
            "  each row of this task ends ERROR with it; the other tasks run")  # fmt: skip


def _check_reachable(
    engine: Engine,
    loaded: LoadedTask,
    task: TaskDefinition,
    image: str,
    folders: list[Path],
    looked: _Looks,
) -> None:
    """As root (each row its own user): the folders a row is shown at their own paths can
    be reached in the container, through the image's own folders on the way (a task under
    ``/root``: Debian's image closes it; a home an image's ``useradd -m`` made ``700``).
    One throwaway container per image and set of folders in a plan."""
    shown = [*folders, *(Path(p) if Path(p).is_absolute() else loaded.base_dir / p
                         for p in task.sandbox.read_only)]  # fmt: skip
    on_way = {str(parent): path for path in shown for parent in Path(os.path.abspath(path)).parents
              if parent != Path("/")}  # fmt: skip
    key = (image, tuple(sorted(on_way)))
    if key not in looked.closed:
        looked.closed[key] = closed_folders(engine, image, on_way)
    closed = looked.closed[key]
    if closed:
        folder = closed[0]
        raise _docker_located(loaded, task, (
            f"{on_way[folder]} is shown to each row at its own path, inside {folder}, which "
            f"the image {image} holds closed to other users: the row's unprivileged user "
            "cannot reach it in the container"),
            hint="move the task's folder (and sandbox.read_only) out of it, e.g. under /srv "
            "or /tmp, or run assay as a normal user")  # fmt: skip


def _note_unused_image(loaded: LoadedTask, task: TaskDefinition, warnings: list[str]) -> None:
    """A warning for ``sandbox.docker.image`` beside ``dockerfile_path``: the image is built
    from the Dockerfile and the name is not used (Coder Eval's rule)."""
    docker = task.sandbox.docker
    if docker is None or not (docker.image and docker.dockerfile_path):
        return
    line = loaded.document.line_of(("sandbox", "docker", "image")) or "?"
    note = (f"{loaded.display}:{line}: sandbox.docker.image: {docker.image} is not used: "
            "the rows' image is built from sandbox.docker.dockerfile_path, set too")  # fmt: skip
    warnings += [] if note in warnings else [note]


def _note_unset_args(loaded: LoadedTask, task: TaskDefinition, warnings: list[str]) -> None:
    """A warning for each ``build.args`` value naming a ``$VAR`` that is not set here: the
    build would get it as written."""
    for name, value, variable in _unset_build_args(task):
        loc = ("sandbox", "docker", "build", "args", name)
        note = (f"{loaded.display}:{loaded.document.line_of(loc) or '?'}: sandbox.docker.build."
                f"args.{name}: ${variable} is not set here, so the build gets "
                f"{value!r} as written; set it, or write the value")  # fmt: skip
        if note not in warnings:
            warnings.append(note)


def _note_engine_choice(engine: Engine, wanted: str | None, warnings: list[str]) -> None:
    """A warning (once) when no engine was named and Podman runs the rows because Docker,
    installed, does not answer: its images are not Docker's."""
    if wanted is not None or engine.kind == "docker" or shutil.which("docker") is None:
        return
    note = ("sandbox.docker.engine is not set and docker does not answer here, so the rows run "
            "on podman (its own images and limits); set sandbox.docker.engine: podman to say "
            "so, or start docker's daemon")  # fmt: skip
    if note not in warnings:
        warnings.append(note)


@dataclass
class _Looks:
    """What :func:`check_docker` looked up in images, each once: the programs an image
    lacks, its Node.js version, its folders closed to other users; and the warnings found."""

    missing: dict[tuple[str, str, tuple[str, ...]], list[str]] = field(default_factory=dict)
    node: dict[tuple[str, str], str | None] = field(default_factory=dict)
    bridge: dict[str, str | None] = field(default_factory=dict)
    closed: dict[tuple[str, tuple[str, ...]], list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _check_agent_programs(
    engine: Engine,
    loaded: LoadedTask,
    task: TaskDefinition,
    image: str,
    agents: AgentRegistry | None,
    looked: _Looks,
) -> None:
    """A coding agent's container runs programs of the image: ``python3`` for assay's first
    program there (:mod:`assay.sandbox.jail_init`: the CLI's output pipes, the model
    bridge's forwarder) and for an ``agent_judge``'s verdict tool, and the interpreter a CLI
    that is a script names (``node`` for Codex and Gemini); an image that lacks one is
    refused here, not in every row."""
    if agents is None:
        return
    for config, judge in [(task.agent, False),
                          *((config, True) for config in task.agent_graders())]:  # fmt: skip
        agent = agents.build(config)
        if not isinstance(agent, CliAgent):
            continue
        needed = {
            "python3": "assay's first program in the agent's container (its CLI's "
            "output pipes, the forwarder to the model bridge) runs on it"
        }
        if judge:
            needed["python3"] = "an agent_judge's verdict tool runs on it"
        try:
            cli = agent.program(loaded.base_dir)
        except UsageError:
            continue  # the agent's own preflight names the missing CLI
        script, kind = interpreter(cli), agent.type_name
        if script is not None:
            needed[script] = f"the {kind} CLI ({os.path.realpath(cli)}) is a script for it"
        _refuse_missing(engine, loaded, task, image, kind, needed, looked.missing)
        if script == "node":
            _warn_old_node(engine, loaded, task, image, kind, cli, looked)


def _warn_old_node(
    engine: Engine, loaded: LoadedTask, task: TaskDefinition, image: str, kind: str, cli: Path,
    looked: _Looks,
) -> None:  # fmt: skip
    """Warn when the ``image``'s Node.js is older than the CLI's ``engines.node``."""
    wanted = declared_node(cli)
    if wanted is None:
        return
    key = (engine.kind, image)
    if key not in looked.node:
        looked.node[key] = image_node(engine, image)
    version = looked.node[key]
    if version is None or not too_old(version, wanted):
        return
    where = _docker_located(loaded, task, "")
    warning = (f"{where.file}:{where.line or '?'}: {where.field}: the image {image} has Node.js "
               f"{version}, and the {kind} CLI asks for {wanted} (engines.node in its "
               "package.json): its rows may fail as the CLI starts; give the image a newer "
               "nodejs, or set sandbox.driver: bwrap")  # fmt: skip
    if warning not in looked.warnings:
        looked.warnings.append(warning)


def _refuse_missing(
    engine: Engine,
    loaded: LoadedTask,
    task: TaskDefinition,
    image: str,
    kind: str,
    needed: dict[str, str],
    looked: dict[tuple[str, str, tuple[str, ...]], list[str]],
) -> None:
    key = (engine.kind, image, tuple(sorted(needed)))
    try:
        missing = looked[key] if key in looked else missing_programs(engine, image, needed)
    except SandboxError as exc:
        raise _docker_located(loaded, task, str(exc)) from None
    looked[key] = missing
    if missing:
        lacking = missing[0]
        package = PACKAGES.get(lacking, lacking)
        raise _docker_located(loaded, task, f"the image {image} has no {lacking} on its PATH, "
                              f"which a {kind} agent needs: {needed[lacking]}",
                              hint=f"add it to the image (Debian: RUN apt-get install -y "
                              f"{package}), or set sandbox.driver: bwrap")  # fmt: skip


PACKAGES = {"python3": "python3", "node": "nodejs"}
"""The Debian package of a program an agent's container needs."""


def _check_network(
    engine: Engine, loaded: LoadedTask, task: TaskDefinition, image: str, looked: _Looks
) -> None:
    """``sandbox.docker.network: bridge`` needs the engine's bridge network: Docker's
    ``bridge`` (a daemon started with ``--bridge=none`` has none); Podman's default
    network (``podman``, which ``--network bridge`` names), tried with a container of the
    task's image, since its network backend may be missing (``netavark``)."""
    docker = task.sandbox.docker
    if docker is None or docker.network != "bridge":
        return
    if engine.kind == "podman":  # one container tried per image and plan
        if image not in looked.bridge:
            looked.bridge[image] = _podman_bridge_problem(engine, image)
        why = looked.bridge[image]
    else:
        why = None if has_network(engine, "bridge") else (
            "its daemon runs without one, e.g. dockerd --bridge=none")  # fmt: skip
    if why is None:
        return
    raise TaskFileError(
        f"sandbox.docker.network bridge: {engine.kind} has no working bridge network here "
        f"({why})", file=loaded.display,
        field="sandbox.docker.network", line=loaded.document.line_of(("sandbox", "docker",
        "network")), hint="remove the field (no network, the default: a coding agent "
        "still reaches the model bridge), set sandbox.network: true (the host's network), "
        "or give the engine its bridge",
    )  # fmt: skip


def _podman_bridge_problem(engine: Engine, image: str) -> str | None:
    """Why a Podman container cannot join its bridge network here, or ``None``."""
    try:
        done = engine.run_in_image(image, "true", network="bridge", timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else f"podman run exited with code {done.returncode}"


SYSTEM_TARGETS = frozenset(
    {
        "/",
        "/bin",
        "/dev",
        "/etc",
        "/lib",
        "/lib64",
        "/proc",
        "/sbin",
        "/sys",
        "/tmp",
        "/usr",
        "/var",
        "/var/tmp",
    }
)
"""Container folders an ``extra_mounts`` entry may not replace whole: the image's system (a
row could not start without it) and the container's own ``/tmp`` and ``/var/tmp``."""


def _check_mounts(loaded: LoadedTask, task: TaskDefinition) -> None:
    """Each ``extra_mounts`` host path exists (the engine would make a missing one, empty
    and owned by root), and each target is a folder of its own: not a system folder the
    container needs, not one another entry takes (the engine refuses both at run, as the
    agent's error)."""
    docker = task.sandbox.docker
    targets: dict[str, int] = {}
    for index, text in enumerate(docker.extra_mounts if docker is not None else []):
        mount = parse_mount(text, loaded.base_dir)
        target = os.path.normpath(mount.target)
        problem, hint = None, "create it, or fix the path (relative to the task file)"
        if not mount.source.exists():
            problem = f"{mount.source} does not exist"
            if text.startswith("~") or "$" in text:
                problem += " (extra_mounts expands neither ~ nor $VARIABLES)"
        elif target in SYSTEM_TARGETS:
            problem = f"{target} is the container's own (its system or its /tmp)"
            hint = "mount it under a folder of its own, e.g. /data"
        elif target in targets:
            problem = f"{target} is the target of extra_mounts[{targets[target]}] too"
            hint = "give each entry a target of its own"
        elif _within(target, str(loaded.base_dir.absolute())):
            problem = (f"{target} is where the task's folder is mounted (at its host path); "
                       "the engine cannot mount another folder there")  # fmt: skip
            hint = "mount it under a folder of its own, e.g. /data"
        targets.setdefault(target, index)
        if problem is not None:
            raise TaskFileError(
                problem, file=loaded.display, field=f"sandbox.docker.extra_mounts[{index}]",
                line=loaded.document.line_of(("sandbox", "docker", "extra_mounts", index)),
                hint=hint,
            )  # fmt: skip


def _note_closed_mounts(loaded: LoadedTask, task: TaskDefinition, warnings: list[str]) -> None:
    """As root (each row its own user), a warning for each ``extra_mounts`` entry marked
    ``rw`` whose folder other users may not write: no row could."""
    docker = task.sandbox.docker
    if os.geteuid() != 0 or docker is None:
        return
    for index, text in enumerate(docker.extra_mounts):
        mount = parse_mount(text, loaded.base_dir)
        if not mount.writable or not mount.source.is_dir():
            continue
        if mount.source.stat().st_mode & 0o003 != 0o003:
            line = loaded.document.line_of(("sandbox", "docker", "extra_mounts", index))
            warnings.append(
                f"{loaded.display}:{line or '?'}: sandbox.docker.extra_mounts[{index}]: "
                f"{mount.source} is marked rw, but each row runs as a user of its own, which "
                "may not write there: chmod o+wx it (what a row makes there is that row's "
                "user's: another row cannot change it)"
            )


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


CONTAINER_LEAST_PIDS = 8
"""The fewest processes a row's container may be limited to: its init, ``sleep``, a
program's shell and the copy in and out take several (a smaller ``--pids-limit`` fails every
row, said as something else)."""


def _check_container_limits(loaded: LoadedTask, task: TaskDefinition) -> None:
    """``sandbox.limits`` a container can start under: ``max_cpus`` at most this machine's
    CPUs (the engine refuses more) and ``max_pids`` at least :data:`CONTAINER_LEAST_PIDS`.

    Raises:
        TaskFileError: at the field, with what would work.
    """
    limits, cpus = task.sandbox.limits, os.cpu_count() or 1
    problem: tuple[str, str, str] | None = None
    if limits.max_cpus is not None and limits.max_cpus > cpus:
        problem = ("max_cpus", f"{limits.max_cpus:g} CPUs is more than this machine has ({cpus})",
                   f"set sandbox.limits.max_cpus to at most {cpus}")  # fmt: skip
    elif limits.max_pids < CONTAINER_LEAST_PIDS:
        problem = ("max_pids", f"{limits.max_pids} processes are too few for a container (its "
                   "init, sleep and a program's shell take several)",
                   f"set sandbox.limits.max_pids to {CONTAINER_LEAST_PIDS} or more")  # fmt: skip
    if problem is not None:
        raise TaskFileError(problem[1], file=loaded.display,
                            field=f"sandbox.limits.{problem[0]}",
                            line=loaded.document.line_of(("sandbox", "limits", problem[0])),
                            hint=problem[2])  # fmt: skip


def engine_of(task: TaskDefinition) -> str | None:
    """The engine a task names (``sandbox.docker.engine``), or ``None``: the first found."""
    return task.sandbox.docker.engine if task.sandbox.docker is not None else None


def image_identity(
    task: TaskDefinition,
    base_dir: Path,
    *,
    started: str | None = None,
    build: Callable[[Engine, TaskDefinition, Path], str] | None = None,
) -> str | None:
    """What a ``docker`` task's rows run in, as ``ENGINE IMAGE ID`` (the engine's kind, the
    image's name or ``assay-task:<hash>`` tag, and its content id): a resumed run or a
    regrade compares it with the one the run ``started`` in. ``None`` for another driver, or
    when the engine does not answer (the run's own checks say so).

    A Dockerfile whose build context now gives another tag than the one the run started
    with is not built to be refused: its identity is ``ENGINE TAG not-built``. Otherwise the
    image the run started in, while the engine holds it by its id, is ``started`` itself
    (a base image rebuilt since, or a new run's build that moved the tag, does not change a
    resumed run's environment). ``build`` gives the image (:func:`task_image`, or a plan's
    :meth:`EngineAnswers.task_image`).
    """
    if task.sandbox_driver != "docker":
        return None
    try:
        engine = find_engine(engine_of(task))
        tag = _dockerfile_tag(task, base_dir) if started is not None else None
        if started is not None and tag is not None and started.split(" ")[1:2] != [tag]:
            # a resume's: refused without a build (and said whether the first is still held)
            gone = "" if _still_held(engine, task, started) else FIRST_GONE
            return f"{engine.kind} {tag} {NOT_BUILT}{gone}"
        if started is not None and _still_held(engine, task, started):
            return started  # its rows go on in the image the run started in, not rebuilt
        if build is None:  # no plan's answers (a regrade): a resume keeps a held tag
            image = task_image(engine, task, base_dir, reuse=started is not None)
        else:
            image = build(engine, task, base_dir)
        found = engine.run("image", "inspect", "--format", "{{.Id}}", image, timeout=30)
    except (UsageError, SandboxError, OSError, subprocess.TimeoutExpired):
        return None
    return f"{engine.kind} {image} {found.stdout.strip() or '?'}"


def _still_held(engine: Engine, task: TaskDefinition, started: str) -> bool:
    """Whether the engine holds the image of ``started`` (an :func:`image_identity`) by its
    content id, on the same engine and, for an image by name, under the same name."""
    kind, image, _ = _parts(started)
    content = content_id(started)
    docker = task.sandbox.docker
    named = docker.image if docker is not None and not docker.dockerfile_path else None
    if kind != engine.kind or content is None or named not in (None, image):
        return False
    return has_image(engine, content)


def image_key(task: TaskDefinition, base_dir: Path) -> ImageKey:
    """What one image of a run is told by: the task's folder, engine, Dockerfile or image
    name, and build settings (the key of :attr:`Containment.images`)."""
    docker = task.sandbox.docker
    assert docker is not None  # SandboxConfig refuses driver docker without the block
    image = docker.dockerfile_path or docker.image or ""
    return (os.path.realpath(base_dir), str(docker.engine), image, docker.build.model_dump_json())


def content_id(identity: str) -> str | None:
    """The content id of an :func:`image_identity` (``None``: unknown or not built)."""
    content = _parts(identity)[2]
    return None if content in ("", "?", NOT_BUILT, NOT_BUILT + FIRST_GONE) else content


def _parts(identity: str) -> tuple[str, str, str]:
    """``(engine, image, content id)`` of an :func:`image_identity` (``""`` for what is
    missing)."""
    engine, _, rest = identity.partition(" ")
    image, _, content = rest.partition(" ")
    return engine, image, content


def refuse_other_images(
    task_id: str,
    file: str | Path,
    images: Mapping[str, str],
    started: Mapping[str, str],
    *,
    task: TaskDefinition | None = None,
) -> None:
    """A ``docker`` task's rows run in the images (variant → :func:`image_identity`) the run
    ``started`` in.

    Raises:
        UsageError: a variant's image is another one now, naming both: its Dockerfile,
            build context, base image or tag changed since (and, ``task``, each ``$VAR`` of
            its ``build.args`` that is not set here), or, under the same name, the engine
            no longer holds the first one (removed, then built or tagged anew).
    """
    unset = [variable for *_, variable in _unset_build_args(task)] if task is not None else []
    for variant, first in started.items():
        now = images.get(variant)
        if now is None or now == first:
            continue
        where = "" if variant == "default" else f" (variant {variant})"
        if _parts(now)[:2] == _parts(first)[:2]:  # one name: the first image is not held
            raise UsageError(
                f"task {task_id}{where} runs in the image {describe_image(now)} now, but "
                f"the run started in {describe_image(first)}, which the engine no longer "
                "holds (removed since, as by `image prune`): the image under that name now "
                "is another one, and the rows would run in two environments",
                file=file, hint="load the image the run started in back into the engine "
                f"(`{_parts(first)[0]} load` of a saved copy), or start a new run",
            )  # fmt: skip
        raise UsageError(
            f"task {task_id}{where} runs in the image {describe_image(now)} now, but "
            f"the run started in {describe_image(first)}: its Dockerfile, build context, "
            "base image or tag changed since, and its rows would run in two environments",
            file=file, hint=(_first_gone(first) if _parts(now)[2].endswith(FIRST_GONE) else
            "restore the Dockerfile (or tag the image back) as it was, or start a new run")
            + "".join(
                f"; sandbox.docker.build.args names ${name}, which is not set here"
                for name in unset),
        )  # fmt: skip


def _first_gone(first: str) -> str:
    """The hint when the Dockerfile changed and the first image is gone too."""
    return (f"restoring the Dockerfile is not enough: the engine no longer holds the image the "
            f"run started in either (removed since); `{_parts(first)[0]} load` a saved copy "
            "of it and restore the Dockerfile, or start a new run")  # fmt: skip


def _unset_build_args(task: TaskDefinition) -> list[tuple[str, str, str]]:
    """``(arg, value, VAR)`` for each ``build.args`` value of a Dockerfile task that names a
    ``$VAR`` not set here (the build would get it as written)."""
    docker = task.sandbox.docker
    if docker is None or not docker.dockerfile_path:
        return []
    found = ((name, value, UNSET_VARIABLE.search(os.path.expandvars(value)))
             for name, value in docker.build.args.items())  # fmt: skip
    return [(name, value, unset.group(1)) for name, value, unset in found if unset is not None]


FIRST_GONE = "+first-gone"
"""Added to :data:`NOT_BUILT` when the engine no longer holds the image the run started in
either (a resume then needs more than the Dockerfile restored)."""

NOT_BUILT = "not-built"
"""The content id of an :func:`image_identity` that was not built (it differs already)."""


def describe_image(identity: str) -> str:
    """``IMAGE (ENGINE, ID)`` of an :func:`image_identity`, its id cut to 12 hex digits (or
    ``not built``)."""
    engine, image, content = _parts(identity)
    built = not content.startswith(NOT_BUILT)
    shown = content.removeprefix("sha256:")[:12] if built else "not built"
    return f"{image} ({engine}, {shown})"


def _dockerfile_tag(task: TaskDefinition, base_dir: Path) -> str | None:
    """The tag a ``docker`` task's Dockerfile builds as (:func:`image_tag`), or ``None``
    when the task names an image.

    Raises:
        SandboxError: the Dockerfile is missing.
    """
    found = _build_inputs(task, base_dir)
    return image_tag(found[0], args=found[1], extra_args=found[2])[0] if found else None


def _build_inputs(
    task: TaskDefinition, base_dir: Path
) -> tuple[Path, dict[str, str], list[str]] | None:
    """A ``docker`` task's Dockerfile (``dockerfile_path`` relative to ``base_dir``), its
    build arguments (``$VAR`` expanded) and extra flags; ``None`` when it names an image."""
    docker = task.sandbox.docker
    if docker is None or not docker.dockerfile_path:
        return None
    path = Path(docker.dockerfile_path)
    build = docker.build
    return (path if path.is_absolute() else base_dir / path,
            {k: os.path.expandvars(v) for k, v in build.args.items()},
            list(build.extra_args))  # fmt: skip


def task_image(engine: Engine, task: TaskDefinition, base_dir: Path, *, reuse: bool = False) -> str:
    """The image a ``docker`` task's rows run in: built from ``dockerfile_path`` (relative
    to ``base_dir``) when it is set (with ``reuse``, only when the engine holds no image of
    its tag: :func:`~assay.sandbox.docker.build_image`), else ``image``, which the engine
    must hold.

    Raises:
        SandboxError: the image is missing, or its Dockerfile is missing or fails to build.
    """
    docker = task.sandbox.docker
    assert docker is not None  # SandboxConfig refuses driver docker without the block
    found = _build_inputs(task, base_dir)
    if found is not None:
        return build_image(engine, found[0], args=found[1], extra_args=found[2],
                           buildkit=docker.build.buildkit, reuse=reuse)  # fmt: skip
    assert docker.image is not None
    if not has_image(engine, docker.image):
        raise SandboxError(f"the image {docker.image} is not in {engine.kind}'s images (assay "
                           f"never pulls one): {engine.kind} pull, load or build it first, or "
                           "set sandbox.docker.dockerfile_path")  # fmt: skip
    return docker.image


def _docker_located(
    loaded: LoadedTask, task: TaskDefinition, message: str, hint: str | None = None
) -> TaskFileError:
    docker = task.sandbox.docker
    name = "dockerfile_path" if docker is not None and docker.dockerfile_path else "image"
    return TaskFileError(message, file=loaded.display, field=f"sandbox.docker.{name}",
                         line=loaded.document.line_of(("sandbox", "docker", name)),
                         hint=hint)  # fmt: skip


READABLE_HINT = (
    "assay runs as root, so each row of a bwrap or docker task runs as an unprivileged user "
    "of its own, which must be able to read the task's folder, its plugins and its agent's "
    "CLI (and an agent_judge's): chmod "
    "o+rx that folder (o+r for a file), or run assay as a normal user"
)


def _located(loaded: LoadedTask, message: str, hint: str | None) -> TaskFileError:
    explicit = loaded.definition.sandbox.driver in ("bwrap", "docker")
    why = "" if explicit else " (bwrap: the default for a coding agent that may act)"
    return TaskFileError(
        message + why, file=loaded.display, field="sandbox.driver", hint=hint,
        line=loaded.document.line_of(("sandbox", "driver")) if explicit else None,
    )  # fmt: skip


def _row_folders(task: TaskDefinition, base_dir: Path, agents: AgentRegistry) -> list[Path]:
    """The folders a row of ``task`` reads besides the system's and ``sandbox.read_only``
    (checked on their own): the task's folder, and what its agent and the coding agents
    that grade it (an ``agent_judge``'s) need (a coding agent's CLI and plugins)."""
    graders = [config for spec in task.success_criteria for config in spec.graders()]
    return [base_dir, *(path for config in (task.agent, *graders)
                        for path in agents.build(config).folders(base_dir))]  # fmt: skip


def rlimits(limits: SandboxLimits, *, grouped: bool = False) -> dict[str, int]:
    """``sandbox.limits`` as ``RLIMIT_*`` values; ``grouped``: the row's programs run in its
    own pids group, which holds ``max_pids`` (and counts what it refuses, so the row's error
    names the limit), and ``RLIMIT_NPROC`` is one above it, for a program outside the group
    (an ``agent_judge``'s copy of the sandbox)."""
    values = {
        "RLIMIT_NPROC": limits.max_pids + grouped,
        "RLIMIT_NOFILE": limits.max_open_files,
        "RLIMIT_FSIZE": limits.max_file_size_mb * 1024 * 1024,
    }
    if limits.cpu_seconds is not None:
        values["RLIMIT_CPU"] = limits.cpu_seconds
    return values


@dataclass(frozen=True)
class Containment:
    """Makes the ``bwrap`` sandbox or ``docker`` container of each row of a run (``None``
    policy: no row needs one; ``docker``: a policy per engine the tasks ask for, ``None``
    for the default one; ``images``: each Dockerfile's or image name's image, resolved once
    per run; ``planned``: the content ids the plan found for them, which the rows run by, so
    a build elsewhere that moves a tag mid-run changes nothing of this run).
    ``private``: what no row may see, whatever its driver (:func:`private_paths`):
    hidden in a bwrap sandbox or container, and never copied into a sandbox by a
    ``template_dir``. ``groups``: where each ``tempdir`` and ``bwrap`` row gets control
    groups of its own (:mod:`assay.sandbox.cgroups`; ``None``: this machine gives none)."""

    policy: JailPolicy | None = None
    docker: dict[str | None, DockerPolicy] = field(default_factory=dict)
    images: dict[ImageKey, str] = field(default_factory=dict, compare=False)
    planned: Mapping[ImageKey, str] = field(default_factory=dict)
    failed: dict[ImageKey, str] = field(default_factory=dict, compare=False)
    private: tuple[Path, ...] = ()
    groups: Hierarchies | None = None

    @classmethod
    def for_tasks(
        cls,
        tasks: Iterable[TaskDefinition],
        *,
        private: Iterable[Path],
        bridge: BridgeLink | None = None,
        check: bool = False,
        images: Mapping[ImageKey, str] | None = None,
        failed: Mapping[ImageKey, str] | None = None,
    ) -> Containment:
        """A policy when one of ``tasks`` uses ``bwrap`` (``check``: and make one sandbox
        first, as :func:`check_containment` does), and one per engine the ``docker`` tasks
        ask for; ``images``: the content ids of their images (``planned``); ``failed``: the
        images that did not build when planned (their rows end ``ERROR`` with the message).

        Raises:
            UsageError: bwrap is not installed, or (``check``) cannot make a sandbox here;
                an engine a ``docker`` task needs does not answer.
        """
        tasks = list(tasks)
        private = list(private)
        found = cgroups.find() if any(t.sandbox_driver != "docker" for t in tasks) else None
        groups = found if isinstance(found, Hierarchies) else None
        if groups is not None:
            groups.sweep()  # the groups of a run that was killed (kill -9) go now
        docker: dict[str | None, DockerPolicy] = {}
        for task in tasks:
            kind = engine_of(task)
            if task.sandbox_driver == "docker" and kind not in docker:
                engine = find_engine(kind)
                sweep_containers(engine)  # the containers of a run that was killed go now
                docker[kind] = make_docker_policy(engine=engine, hidden=private,
                                                  bridge=bridge)  # fmt: skip
        planned, broken = dict(images or {}), dict(failed or {})
        if not uses_bwrap(tasks):
            return cls(docker=docker, planned=planned, failed=broken, private=tuple(private),
                       groups=groups)  # fmt: skip
        policy = make_policy(path_variable=os.environ.get("PATH", ""), hidden=private,
                             bridge=bridge)  # fmt: skip
        if check:
            probe(policy)
        return cls(policy, docker, planned=planned, failed=broken, private=tuple(private),
                   groups=groups)  # fmt: skip

    def row_groups(self, task: TaskDefinition) -> RowProcesses | None:
        """New control groups for a row of ``task`` with its ``max_memory_mb``, ``max_cpus``
        and ``max_pids``; on a machine that gives none, a subreaper for a ``tempdir`` row
        (:class:`~assay.sandbox.reaper.RowReaper`: what it leaves running is still found);
        ``None``: a ``docker`` row, whose engine has its own, or a ``bwrap`` row without
        groups (its processes end with its sandbox).

        Raises:
            SandboxError: the groups could not be made.
        """
        if task.sandbox_driver == "docker":
            return None
        if self.groups is None:
            tempdir = task.sandbox_driver == "tempdir" and reaper.available()
            return reaper.RowReaper() if tempdir else None
        limits = task.sandbox.limits
        held = JAIL_PROCESSES if task.sandbox_driver == "bwrap" else 0
        try:
            return self.groups.row(memory_mb=limits.max_memory_mb, cpus=limits.max_cpus,
                                   max_pids=limits.max_pids, held=held)  # fmt: skip
        except OSError as exc:
            raise SandboxError(f"cannot make the row's control groups: {exc}") from exc

    def jail(self, task: TaskDefinition, root: Path, base_dir: Path) -> Jail | DockerJail | None:
        """The sandbox of a row of ``task`` whose folder is ``root`` (``None`` for a
        ``tempdir`` task).

        Raises:
            SandboxError: it cannot be made, or the run made no policy.
        """
        if task.sandbox_driver == "docker":
            return self._container(task, root, base_dir)
        if task.sandbox_driver != "bwrap":
            return None
        if self.policy is None:
            raise SandboxError("this row needs a bwrap sandbox, and the run made none")
        readable = [p if p.is_absolute() else base_dir / p
                    for p in map(Path, task.sandbox.read_only)]  # fmt: skip
        limits = rlimits(task.sandbox.limits, grouped=self.groups is not None)
        return self.policy.jail(root, limits=limits,
                                network=task.sandbox.network, readable=readable,
                                task_dir=base_dir)  # fmt: skip

    def _container(self, task: TaskDefinition, root: Path, base_dir: Path) -> DockerJail:
        policy = self.docker.get(engine_of(task))
        if policy is None:
            raise SandboxError("this row needs a docker container, and the run made no policy")
        docker = task.sandbox.docker
        assert docker is not None  # SandboxConfig refuses driver docker without the block
        key = image_key(task, base_dir)
        if key in self.failed:  # built once per run: its other rows end with the same error
            raise BuildFailed(self.failed[key])
        if key not in self.images:  # by the id the plan found, if this engine holds it
            image = self.planned.get(key)
            try:
                if image is None or not has_image(policy.engine, image):
                    image = task_image(policy.engine, task, base_dir, reuse=True)
            except BuildFailed as exc:
                self.failed[key] = str(exc)
                raise
            self.images[key] = image
        readable = [p if p.is_absolute() else base_dir / p
                    for p in map(Path, task.sandbox.read_only)]  # fmt: skip
        limits = task.sandbox.limits
        return policy.jail(root, image=self.images[key], limits=rlimits(limits),
                                memory_mb=limits.max_memory_mb, cpus=limits.max_cpus,
                                network=task.sandbox.network,
                                engine_network=docker.network, readable=readable,
                                mounts=[parse_mount(m, base_dir) for m in docker.extra_mounts],
                                task_dir=base_dir, isolation=docker.isolated,
                                kept=[*task.env_passthrough,
                                      *task.agent.program_variables])  # fmt: skip


def shown_folders(task: TaskDefinition, base_dir: Path) -> list[Path]:
    """The host folders a task's rows are shown: its own folder, ``sandbox.read_only`` and
    ``sandbox.docker.extra_mounts`` (relative ones from ``base_dir``); the run folders in
    any of them are private (:func:`private_paths`)."""
    shown = [base_dir, *(p if p.is_absolute() else base_dir / p
                         for p in map(Path, task.sandbox.read_only))]  # fmt: skip
    docker = task.sandbox.docker
    if docker is not None:
        shown += [parse_mount(m, base_dir).source for m in docker.extra_mounts]
    return shown


def private_paths(
    run_dir: Path,
    *,
    cache: Path | None,
    store_urls: Iterable[str] = (),
    task_dirs: Iterable[Path] = (),
) -> list[Path]:
    """What rows may not see: the runs folder, ``.assay/`` (store and cache), the cache file,
    every SQLite store the run reads or ``$ASSAY_STORE`` names (with its journals), and
    every other run folder in the folders shown to the rows (``task_dirs``: the tasks'
    folders and what :func:`shown_folders` adds; :func:`run_folders_in`): an earlier run's
    ``task.json`` holds each row with its expected answer."""
    paths = [run_dir.parent, Path.cwd() / ".assay"]
    for folder in {Path(d).absolute() for d in task_dirs}:
        paths += run_folders_in(folder)
    if cache is not None:
        paths.append(cache)
    for url in [*store_urls, os.environ.get("ASSAY_STORE") or ""]:
        if url.startswith("sqlite") and ":///" in url:
            database = Path(url.split(":///", 1)[1].split("?", 1)[0])
            paths += [database, database.with_name(database.name + "-wal"),
                      database.with_name(database.name + "-journal")]  # fmt: skip
    found = list(dict.fromkeys(p.absolute() for p in paths))
    return [p for p in found if not any(other in p.parents for other in found)]  # outermost


RUN_SEARCH_DEPTH = 8
"""How deep below a task's folder :func:`run_folders_in` looks for run folders."""

_NOT_SEARCHED = frozenset({"node_modules", "__pycache__", "site-packages"})


def run_folders_in(folder: Path, *, depth: int = RUN_SEARCH_DEPTH) -> list[Path]:
    """The assay run folders (:func:`~assay.sandbox.build_context.is_run_folder`) at most
    ``depth`` folders below ``folder`` (``--run-dir`` anywhere in a project: a baseline's
    and a candidate's); hidden folders, ``node_modules`` and the like are not searched,
    and a run folder's own folders are not."""
    found: list[Path] = []
    for top, dirs, _ in os.walk(folder):
        here = Path(top)
        if is_run_folder(here):
            found.append(here)
            dirs[:] = []
            continue
        if len(here.relative_to(folder).parts) >= depth:
            dirs[:] = []
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _NOT_SEARCHED]
    return found
