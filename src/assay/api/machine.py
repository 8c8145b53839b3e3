"""What this machine can do for assay, from Python (``assay doctor``)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from assay.agents.coding import CliAgent
from assay.agents.registry import default_agents
from assay.criteria.base import ProgramCheck
from assay.criteria.registry import default_criteria
from assay.errors import UserError
from assay.sandbox.doctor import DriverCheck, check_drivers


def sandbox_drivers(*, path_variable: str | None = None) -> list[DriverCheck]:
    """Which sandbox drivers work here (a bwrap sandbox is made and each container engine
    asked, for real), why the others do not with the fix for each, and which
    ``sandbox.limits`` fields each enforces here.

    Args:
        path_variable: the ``PATH`` rows get (default: this process's).
    """
    path = os.environ.get("PATH", "") if path_variable is None else path_variable
    return check_drivers(path_variable=path)


@dataclass(frozen=True)
class CliCheck:
    """Whether one coding agent's CLI is found here: ``agent`` (its type), ``works``,
    ``detail`` (the executable, or why not) and ``fix`` (how to install it; ``None`` when
    it is found)."""

    agent: str
    works: bool
    detail: str
    fix: str | None = None


def agent_clis(*, base_dir: Path | None = None) -> list[CliCheck]:
    """Each registered coding agent's CLI, looked up as a task without ``agent.cli_path``
    would look it up (``PATH``, then a bundled copy), in registration order.

    Args:
        base_dir: the folder a relative ``cli_path`` would be relative to (default: the
            working directory).
    """
    folder = Path.cwd() if base_dir is None else base_dir
    checks = []
    for cls in default_agents(entry_points=False).classes():
        if not issubclass(cls, CliAgent):
            continue
        name = str(cls.type_name)
        try:
            found = cls(cls.config_model.model_validate({"type": name})).find(folder)
        except UserError as exc:
            checks.append(CliCheck(name, False, exc.message, exc.hint))
            continue
        checks.append(CliCheck(name, True, str(found)))
    return checks


def criterion_programs(*, path_variable: str | None = None) -> list[tuple[str, ProgramCheck]]:
    """``(criterion type, check)`` for each registered criterion that runs a program of its
    own in a row (``pytest``, ``pylint_score``, ``uipath_eval``), looked up as a ``tempdir``
    or ``bwrap`` row finds it (a ``docker`` row uses its image's), in registration order.

    Args:
        path_variable: the ``PATH`` rows get (default: this process's).
    """
    path = os.environ.get("PATH", "") if path_variable is None else path_variable
    classes = default_criteria(entry_points=False).classes()
    with ThreadPoolExecutor() as pool:  # each may wait up to its time limit: side by side
        answers = list(pool.map(lambda cls: cls.program_check(path), classes))
    return [(cls.type_name(), check) for cls, check in zip(classes, answers, strict=True)
            if check is not None]  # fmt: skip
