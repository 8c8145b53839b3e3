"""The environment of a row's programs, and the names each agent receives (``assay plan``).

Every program a row runs (the agent, ``pre_run``, ``post_run``, command criteria) gets the
host environment without its secrets (:mod:`assay.sandbox.environment`), plus assay's
``ASSAY_*`` variables; a ``command`` agent also gets its ``agent.env`` and the prompt
(``ASSAY_PROMPT``, ``ASSAY_PROMPT_FILE``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from assay.sandbox.environment import EnvironmentNames, agent_environment, environment_names
from assay.sandbox.tempdir import shim_path
from assay.spec.task import TaskDefinition


def row_env(
    base: Mapping[str, str],
    task: TaskDefinition,
    *,
    variant_id: str,
    replicate: int,
    sandbox: Path | None,
    task_dir: Path | None,
    hidden: Collection[str] = (),
) -> dict[str, str]:
    """The environment of every program a row runs (agent, pre/post_run, criteria): ``base``
    without its secrets (:func:`assay.sandbox.environment.agent_environment`; ``hidden``
    adds names to withhold; the task's own credential variables are always withheld and its
    passthrough names passed), plus assay's ``ASSAY_*`` variables, and ``record_cli``'s
    shims first on ``PATH``, and ``PYTHONDONTWRITEBYTECODE=1`` unless the host sets it: a
    row's Python programs leave no bytecode in its sandbox, where it would go stale when an
    agent rewrites a module within the same second at the same size (Python checks a
    source's modification time in whole seconds, and its size) and would be counted among
    the row's files."""
    env = agent_environment(
        base,
        passthrough=task.env_passthrough,
        hidden=task.credential_variables.union(hidden),
    )
    env.update(
        {
            "ASSAY_TASK_ID": task.task_id,
            "ASSAY_SUITE_ID": task.suite_id or "",
            "ASSAY_ROW_ID": task.row_id or "",
            "ASSAY_VARIANT": variant_id,
            "ASSAY_REPLICATE": str(replicate),
            "ASSAY_SANDBOX": str(sandbox.absolute()) if sandbox else "",
            "ASSAY_TASK_DIR": str(task_dir.absolute()) if task_dir else "",
        }
    )
    if not env.get("PYTHONDONTWRITEBYTECODE"):
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    if task.sandbox.record_cli and sandbox is not None:
        return shim_path(env, sandbox)
    return env


def grading_env(
    env: dict[str, str], *, task_dir: Path | None, reference: Path | None
) -> dict[str, str]:
    """The environment of the programs criteria run: the row's, plus Coder Eval's
    ``TASK_DIR`` and (for a task with a ``reference``) ``REFERENCE_DIR``, absolute; the
    agent is never given the reference's place."""
    graded = dict(env)
    if task_dir is not None:
        graded["TASK_DIR"] = str(task_dir.absolute())
    if reference is not None:
        graded["REFERENCE_DIR"] = str(reference)
    return graded


@dataclass(frozen=True)
class AgentVariables:
    """The variable names a task's programs receive (never their values).

    Attributes:
        host: which host variables pass and which are withheld (:class:`EnvironmentNames`).
        assay: the variables assay adds for every program of the row (``ASSAY_*``, and
            ``PYTHONDONTWRITEBYTECODE`` where the host does not set it).
        agent: what the agent alone adds: its ``agent.env`` names and the prompt variables
            (``command`` agents; other agents run no program of the task's).
    """

    host: EnvironmentNames
    assay: list[str]
    agent: list[str]


def agent_variables(
    task: TaskDefinition, environ: Mapping[str, str], *, hidden: Collection[str] = ()
) -> AgentVariables:
    """Which variables ``task``'s programs receive under ``environ``."""
    withheld = task.credential_variables.union(hidden)
    host = environment_names(environ, passthrough=task.env_passthrough, hidden=withheld)
    assay = row_env(environ, task, variant_id="", replicate=0, sandbox=None, task_dir=None)
    added = sorted(name for name in assay if name not in environ)
    return AgentVariables(host=host, assay=added, agent=task.agent.program_variables)
