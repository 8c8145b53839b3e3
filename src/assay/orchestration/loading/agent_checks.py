"""Before any row runs: a task's agent can work (its preflight).

``assay plan`` and ``assay run`` refuse, with the task file's line, what would otherwise fail
in every row: a CLI that is not installed, a model that cannot start (no key, no mock
script), a plugin folder or system prompt file that does not exist, and limits the chosen
route cannot enforce; the same for a coding agent a criterion runs to grade (an
``agent_judge``'s, located at the criterion's ``agent``). What to check is the agent's own answer
(:meth:`assay.agents.base.Agent.preflight`); this module runs the checks and locates their
errors in the task file.
"""

from __future__ import annotations

from pathlib import Path

from assay.agents.base import PreflightCheck, PreflightSetup
from assay.agents.registry import AgentRegistry
from assay.errors import TaskFileError, UserError
from assay.orchestration.loading.task_loader import LoadedTask
from assay.providers.pool import ProviderRegistry
from assay.providers.pricing import PriceTable
from assay.spec.source import field_loc, field_path
from assay.spec.task import RunLimits, TaskDefinition


def check_agent(
    loaded: LoadedTask,
    task: TaskDefinition,
    *,
    agents: AgentRegistry,
    providers: ProviderRegistry,
    prices: PriceTable,
) -> None:
    """Run the preflight of ``task``'s agent, in order.

    Raises:
        TaskFileError: what would make every row fail, located at its field (or in its own
            file, such as a mock script, with the task file's field in the hint).
    """
    setup = PreflightSetup(base_dir=loaded.base_dir, providers=providers, prices=prices,
                           limits=task.run_limits)  # fmt: skip
    agent = agents.build(task.agent)
    for check in agent.preflight(setup):
        try:
            _run(check, agent.type_name)
        except UserError as exc:
            raise located(exc, loaded, check.loc) from None
    judged = PreflightSetup(base_dir=loaded.base_dir, providers=providers, prices=prices,
                            limits=RunLimits())  # fmt: skip
    for index, spec in enumerate(task.success_criteria):
        for config in spec.graders():  # an agent_judge's agent, at the criterion's agent:
            grader = agents.build(config)
            for check in grader.preflight(judged):
                try:
                    _run(check, grader.type_name)
                except UserError as exc:
                    where = ("success_criteria", index)
                    raise located(exc, loaded, check.loc, under=where) from None


def _run(check: PreflightCheck, agent: str) -> None:
    """Run ``check``; any other exception than a :class:`UserError` (an agent of one's own
    whose check lets ``FileNotFoundError`` through) becomes one, naming the agent type.

    Raises:
        UserError: the check failed.
    """
    try:
        check.check()
    except UserError:
        raise
    except Exception as exc:  # a plugin's check: its failure is located, not a traceback
        raise UserError(f"a preflight check of the {agent} agent failed: "
                        f"{type(exc).__name__}: {exc}", hint="an agent's preflight check "
                        "raises assay.errors.UserError with the fix") from exc  # fmt: skip


def located(
    exc: UserError,
    loaded: LoadedTask,
    loc: tuple[str | int, ...],
    *,
    under: tuple[str | int, ...] = (),
) -> TaskFileError:
    """``exc`` located: in its own file (a mock script, a settings file) when the problem is
    there, else at the task file's field ``loc`` (inside the block at ``under``, such as a
    criterion's)."""
    loc = (*under, *loc)
    line, field = loaded.document.line_of(loc), field_path(loc)
    if exc.field is not None and under:
        exc = UserError(exc.message, field=f"{field_path(under)}.{exc.field}", hint=exc.hint,
                        file=exc.file, line=exc.line)  # fmt: skip
    if exc.file is not None and Path(exc.file).resolve() != loaded.path.resolve():
        hint = f"used by {loaded.display}:{line} ({field})" + (f"; {exc.hint}" if exc.hint else "")
        return TaskFileError(exc.message, file=exc.file, line=exc.line, field=exc.field,
                             hint=hint)  # fmt: skip
    if exc.field is not None and not under:  # the field the error names: its own line
        line = loaded.document.line_of(field_loc(exc.field)) or line
    return TaskFileError(exc.message, field=exc.field or field, hint=exc.hint,
                         file=loaded.display, line=line)  # fmt: skip
