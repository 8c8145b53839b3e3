"""Load-time checks that relate a task's criteria to its agent.

A criterion that reads the transcript (``skill_triggered``, ``command_executed``,
``tool_called``, ``commands_efficiency``) needs an agent that records one: agent type
``none`` runs no agent, so Coder Eval refuses them there, and so does assay (unless the rows
come from the store and point to recorded traces, which carry their transcript).
"""

from __future__ import annotations

from assay.errors import TaskFileError
from assay.spec.agent_criteria import transcript_criteria
from assay.spec.source import YamlDocument, field_loc
from assay.spec.task import TaskDefinition

NO_TRANSCRIPT = (
    "criterion '{type}' reads what the agent did (its transcript), and agent type "
    "'{agent}' runs no agent"
)
NO_TRANSCRIPT_HINT = (
    "choose an agent that records a transcript (claude-code, codex, command, llm), or grade "
    "what is in the sandbox (file_check, json_check, run_command)"
)
NO_TOOL_CALLS = (
    "criterion '{type}' reads the agent's tool calls and commands, and an agent of type '{agent}' "
    "makes none: it finds none on any row (claude-code and codex record them)"
)


def criterion_agent_problems(task: TaskDefinition) -> list[tuple[str, str]]:
    """``(field, why)`` of each criterion that cannot be checked on the task's agent
    (:meth:`~assay.spec.criterion_base.CriterionSpec.agent_problem`), ``field`` a dotted
    path (``success_criteria[0].skill_name``)."""
    found = []
    for index, criterion in enumerate(task.success_criteria):
        problem = criterion.agent_problem(task.agent)
        if problem is not None:
            found.append((f"success_criteria[{index}].{problem[0]}", problem[1]))
    return found


def check_agent_criteria(task: TaskDefinition, *, display: str, document: YamlDocument) -> None:
    """Refuse transcript criteria on a task whose agent records no transcript, and a criterion
    that cannot be checked on the task's agent (:meth:`CriterionSpec.agent_problem`).

    Raises:
        TaskFileError: naming ``success_criteria[i].type`` and its line.
    """
    for field, why in criterion_agent_problems(task):
        raise TaskFileError(why, file=display, line=document.line_of(field_loc(field)),
                            field=field)  # fmt: skip
    if task.agent.transcript != "none":
        return
    if task.dataset is not None and task.dataset.store is not None:
        return  # rows that point to stored traces are graded on the transcript they hold
    for index in transcript_criteria(list(task.success_criteria)):
        loc = ("success_criteria", index, "type")
        raise TaskFileError(
            NO_TRANSCRIPT.format(type=task.success_criteria[index].type, agent=task.agent.type),
            file=display, line=document.line_of(loc), field=f"success_criteria[{index}].type",
            hint=NO_TRANSCRIPT_HINT,
        )  # fmt: skip


def agent_criteria_warnings(
    task: TaskDefinition, *, display: str, document: YamlDocument
) -> list[str]:
    """Warnings for transcript criteria on an agent that records a transcript without tool
    calls (``command``, ``llm``): each names the file, line and field."""
    if task.agent.transcript != "messages":
        return []
    warnings = []
    for index in transcript_criteria(list(task.success_criteria)):
        line = document.line_of(("success_criteria", index, "type")) or "?"
        text = NO_TOOL_CALLS.format(type=task.success_criteria[index].type, agent=task.agent.type)
        warnings.append(f"{display}:{line}: success_criteria[{index}].type: {text}")
    return warnings
