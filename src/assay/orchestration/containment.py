"""Which rows run contained, and the ``bwrap`` sandbox of each (:mod:`assay.sandbox.bwrap`).

A task's driver is :attr:`assay.spec.task.TaskDefinition.sandbox_driver` (``bwrap`` by
default for a coding agent that may write or run commands). When a plan holds a ``bwrap``
task, :func:`check_containment` makes one sandbox before any row runs (``assay plan`` and
``assay run`` alike) and refuses the plan, with the reason and the fix, where the machine
cannot make one. A task that asks for ``tempdir`` although its coding agent may write or
run commands gets one warning: its rows are not contained.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from assay.agents.registry import AgentRegistry
from assay.errors import SandboxError, TaskFileError, UsageError
from assay.orchestration.task_loader import LoadedTask
from assay.sandbox.bwrap import BridgeLink, Jail, JailPolicy, make_policy
from assay.sandbox.mounts import unreadable
from assay.sandbox.probe import probe
from assay.spec.task import SandboxLimits, TaskDefinition

NOT_CONTAINED = (
    "sandbox.driver tempdir: the {agent} agent may write files and run commands, and a "
    "tempdir sandbox does not contain it (it can read and write anywhere the user running "
    "assay can); remove the driver (bwrap is the default for coding agents) or set "
    "sandbox.driver: bwrap"
)
BWRAP_ONLY = (
    "sandbox.{field} applies to the bwrap driver only; this task's rows run in a tempdir "
    "sandbox, where it has no effect"
)


def uses_bwrap(tasks: Iterable[TaskDefinition]) -> bool:
    """Some of ``tasks`` (every variant of every task of a plan) runs in a ``bwrap`` sandbox."""
    return any(t.sandbox_driver == "bwrap" for t in tasks)


def containment_warnings(display: str, variants: Iterable[TaskDefinition]) -> list[str]:
    """One warning per task file (``display``), for its first variant that needs it: a coding
    agent that may act in a ``tempdir`` sandbox, or bwrap-only settings under ``tempdir``."""
    for task in variants:
        agent = task.agent
        if task.sandbox_driver != "tempdir":
            continue
        if agent.may_act:
            return [f"{display}: {NOT_CONTAINED.format(agent=agent.type)}"]
        sandbox = task.sandbox
        settings = (("limits", sandbox.limits.model_fields_set), ("network", sandbox.network),
                    ("read_only", sandbox.read_only))  # fmt: skip
        given = [name for name, value in settings if value]
        if given:
            return [f"{display}: {BWRAP_ONLY.format(field=given[0])}"]
    return []


def check_containment(
    planned: Iterable[tuple[LoadedTask, TaskDefinition]], *, agents: AgentRegistry
) -> None:
    """Make one ``bwrap`` sandbox if some task (as a variant runs it, beside its file) needs
    them (see the module docstring); as root, check that each bwrap task's folders can be
    read by the row's own user.

    Raises:
        TaskFileError: the machine cannot make one, or a folder cannot be read: located at
            the task, with why and how to fix it.
    """
    contained = [(loaded, task) for loaded, task in planned if task.sandbox_driver == "bwrap"]
    if not contained:
        return
    try:
        policy = make_policy(path_variable=os.environ.get("PATH", ""))
        probe(policy)
    except UsageError as exc:
        raise _located(contained[0][0], exc.message, exc.hint) from None
    if not policy.as_root:
        return
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


READABLE_HINT = (
    "assay runs as root, so each row of a bwrap task runs as an unprivileged user of its own, "
    "which must be able to read the task's folder, its plugins and its agent's CLI: chmod "
    "o+rx that folder (o+r for a file), or run assay as a normal user"
)


def _located(loaded: LoadedTask, message: str, hint: str | None) -> TaskFileError:
    explicit = loaded.definition.sandbox.driver == "bwrap"
    why = "" if explicit else " (bwrap: the default for a coding agent that may act)"
    return TaskFileError(
        message + why, file=loaded.display, field="sandbox.driver", hint=hint,
        line=loaded.document.line_of(("sandbox", "driver")) if explicit else None,
    )  # fmt: skip


def _row_folders(task: TaskDefinition, base_dir: Path, agents: AgentRegistry) -> list[Path]:
    """The folders a row of ``task`` reads besides the system's and ``sandbox.read_only``
    (checked on their own): the task's folder, and what its agent needs (a coding agent's
    CLI and plugins)."""
    return [base_dir, *agents.build(task.agent).folders(base_dir)]


def rlimits(limits: SandboxLimits) -> dict[str, int]:
    """``sandbox.limits`` as ``RLIMIT_*`` values."""
    values = {
        "RLIMIT_NPROC": limits.max_pids,
        "RLIMIT_NOFILE": limits.max_open_files,
        "RLIMIT_FSIZE": limits.max_file_size_mb * 1024 * 1024,
    }
    if limits.cpu_seconds is not None:
        values["RLIMIT_CPU"] = limits.cpu_seconds
    return values


@dataclass(frozen=True)
class Containment:
    """Makes the ``bwrap`` sandbox of each row of a run (``None`` policy: no row needs one)."""

    policy: JailPolicy | None = None

    @classmethod
    def for_tasks(
        cls,
        tasks: Iterable[TaskDefinition],
        *,
        private: Iterable[Path],
        bridge: BridgeLink | None = None,
        check: bool = False,
    ) -> Containment:
        """A policy when one of ``tasks`` uses ``bwrap`` (``check``: and make one sandbox
        first, as :func:`check_containment` does).

        Raises:
            UsageError: bwrap is not installed, or (``check``) cannot make a sandbox here.
        """
        if not uses_bwrap(tasks):
            return cls()
        policy = make_policy(path_variable=os.environ.get("PATH", ""), hidden=private,
                             bridge=bridge)  # fmt: skip
        if check:
            probe(policy)
        return cls(policy)

    def jail(self, task: TaskDefinition, root: Path, base_dir: Path) -> Jail | None:
        """The sandbox of a row of ``task`` whose folder is ``root`` (``None`` for a
        ``tempdir`` task).

        Raises:
            SandboxError: it cannot be made, or the run made no policy.
        """
        if task.sandbox_driver != "bwrap":
            return None
        if self.policy is None:
            raise SandboxError("this row needs a bwrap sandbox, and the run made none")
        readable = [p if p.is_absolute() else base_dir / p
                    for p in map(Path, task.sandbox.read_only)]  # fmt: skip
        return self.policy.jail(root, limits=rlimits(task.sandbox.limits),
                                network=task.sandbox.network, readable=readable,
                                task_dir=base_dir)  # fmt: skip


def private_paths(
    run_dir: Path, *, cache: Path | None, store_urls: Iterable[str] = ()
) -> list[Path]:
    """What rows may not see: the runs folder, ``.assay/`` (store and cache), the cache file
    and every SQLite store the run reads or ``$ASSAY_STORE`` names (with its journals)."""
    paths = [run_dir.parent, Path.cwd() / ".assay"]
    if cache is not None:
        paths.append(cache)
    for url in [*store_urls, os.environ.get("ASSAY_STORE") or ""]:
        if url.startswith("sqlite") and ":///" in url:
            database = Path(url.split(":///", 1)[1].split("?", 1)[0])
            paths += [database, database.with_name(database.name + "-wal"),
                      database.with_name(database.name + "-journal")]  # fmt: skip
    return [p.absolute() for p in paths]
