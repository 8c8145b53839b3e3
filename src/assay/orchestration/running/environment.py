"""The environment of a row's programs, and the names each agent receives (``assay plan``).

Every program a row runs (the agent, ``pre_run``, ``post_run``, command criteria) gets the
host environment without its secrets (:mod:`assay.sandbox.environment`), plus assay's
``ASSAY_*`` variables; a ``command`` agent also gets its ``agent.env`` and the prompt
(``ASSAY_PROMPT``, ``ASSAY_PROMPT_FILE``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.data.substitute import scalar_text
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
    if sandbox is not None:
        return shim_path(env, sandbox, task.sandbox)
    return env


FIELD_PREFIX = "ASSAY_FIELD_"
FIELD_BYTES = 100_000
"""The longest row value given as a variable (UTF-8 bytes): Linux refuses to start a
program one of whose variables passes 128 KiB."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def grading_env(
    env: dict[str, str],
    *,
    task_dir: Path | None,
    reference: Path | None,
    row: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """The environment of the programs criteria run: the row's, plus Coder Eval's
    ``TASK_DIR`` and (for a task with a ``reference``) ``REFERENCE_DIR``, absolute (the
    agent is never given the reference's place), and each scalar field of the dataset
    ``row`` as ``ASSAY_FIELD_<name>``, as ``${row.<name>}`` would write it (a name of
    letters, digits and underscores; a value of at most :data:`FIELD_BYTES`): a command
    reads ``"$ASSAY_FIELD_answer"`` whole, where a ``${row.answer}`` pasted into it is
    shell text (the agent never gets these: they hold the expected answers)."""
    graded = dict(env)
    if task_dir is not None:
        graded["TASK_DIR"] = str(task_dir.absolute())
    if reference is not None:
        graded["REFERENCE_DIR"] = str(reference)
    fields = dict(row or {})
    for name, value in fields.items():
        if _NAME.fullmatch(name) and not isinstance(value, dict | list):
            text = scalar_text(name, fields)
            if len(text.encode("utf-8", "surrogatepass")) <= FIELD_BYTES and "\0" not in text:
                graded[FIELD_PREFIX + name] = text
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
