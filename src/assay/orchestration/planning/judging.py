"""The plan's judges, and what a row needs to be graded at all.

- :func:`resolve_judges`: every ``llm_judge`` of a task file, and the judge asset its
  ``qa.judge`` names, resolved once, when the run is planned
  (:class:`assay.judges.assets.JudgeResolver`), checked (a labels judge knows which labels
  pass; its suite thresholds name metrics it produces; its model can start);
- :func:`tie_warnings`: a majority judge asked an even number of ``samples`` can tie, and a
  tie is a ``judge_error`` (not graded), so the plan warns;
- :func:`judge_keys`: the judge models to start with the run's other models;
- :func:`check_graded_rows`: a task whose rows have neither an agent to run nor a trace or
  session to grade, but whose criteria grade the response, is refused (it would grade empty
  responses).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from assay.agents.llm import model_key
from assay.errors import TaskFileError, UserError
from assay.judges.assets import JudgeResolver
from assay.orchestration.loading.task_loader import LoadedTask
from assay.orchestration.loading.thresholds import check_threshold_names
from assay.orchestration.planning.expand import Expansion
from assay.providers.pool import ModelKey, ProviderRegistry
from assay.qa.open_judge import asset_problem
from assay.spec.criteria import CriterionSpec, LlmJudge
from assay.spec.judge import JudgeAsset
from assay.spec.source import field_path
from assay.spec.task import TaskDefinition

NO_RESPONSE = (
    "agent: none runs nothing, and the rows of this dataset have no trace or session to "
    "grade, so criteria that grade the response ({names}) would grade empty responses"
)
NO_RESPONSE_HINT = (
    "give the task an agent (llm, command, claude-code, codex), or grade a store dataset "
    "with a trace or session field (assay dataset add-run / add-traces), or give the "
    "criteria a path in the sandbox"
)


def resolve_judges(loaded: LoadedTask, resolver: JudgeResolver) -> LoadedTask:
    """``loaded`` with every ``llm_judge`` resolved and checked (module docstring).

    Raises:
        TaskFileError: a judge file or store judge that cannot be read, a labels judge that
            cannot tell a passing label, an unknown suite threshold.
    """
    definition = resolve_definition(loaded.definition, loaded, resolver)
    return loaded if definition is loaded.definition else replace(loaded, definition=definition)


def resolve_definition(
    task: TaskDefinition, loaded: LoadedTask, resolver: JudgeResolver
) -> TaskDefinition:
    """``task`` (the task file's, or a variant's) with its judges resolved and checked.

    Raises:
        TaskFileError: as :func:`resolve_judges`.
    """
    task = resolve_qa_judge(task, loaded, resolver)
    if not any(isinstance(c, LlmJudge) and c.asset is None for c in task.success_criteria):
        return task
    criteria = resolver.resolve_criteria(
        task.success_criteria, base_dir=loaded.base_dir, locate=loaded.located, task_id=task.task_id
    )
    for index, spec in enumerate(criteria):
        _check_passing(loaded, index, spec)
    definition = task.model_copy(update={"success_criteria": criteria})
    check_threshold_names(definition, display=loaded.display, document=loaded.document)
    return definition


def resolve_qa_judge(
    task: TaskDefinition, loaded: LoadedTask, resolver: JudgeResolver
) -> TaskDefinition:
    """``task`` with the judge asset its ``qa.judge`` names resolved and checked
    (:func:`assay.qa.open_judge.asset_problem`); unchanged without one.

    Raises:
        TaskFileError: at ``qa.judge``: the judge cannot be read or found, or cannot judge
            QA answers.
    """
    qa = task.qa
    if qa is None or qa.judge is None or qa.judge.judge is None or qa.judge.asset is not None:
        return task
    loc: tuple[str | int, ...] = ("qa", "judge")
    try:
        asset = resolver.named_asset(qa.judge.judge, base_dir=loaded.base_dir)
        problem = asset_problem(asset)
        if problem is not None:
            raise UserError(problem, hint="name another judge in qa.judge, or give a model")
    except TaskFileError:
        raise
    except (UserError, ValueError) as exc:
        message, hint = (exc.message, exc.hint) if isinstance(exc, UserError) else (str(exc), None)
        raise TaskFileError(
            message, file=loaded.display, line=loaded.document.line_of(loc),
            field=field_path(loc), hint=hint,
        ) from None  # fmt: skip
    judge = qa.judge.model_copy(update={"asset": asset})
    return task.model_copy(update={"qa": qa.model_copy(update={"judge": judge})})


def _check_passing(loaded: LoadedTask, index: int, spec: CriterionSpec) -> None:
    if not isinstance(spec, LlmJudge) or spec.asset is None:
        return
    loc: tuple[str | int, ...]
    verdict = spec.asset.definition.verdict
    if spec.expected_label is not None and verdict.kind != "labels":
        loc = ("success_criteria", index, "expected_label")
        raise TaskFileError(
            f"expected_label compares the judge's label with the row's, but judge "
            f"{spec.asset.name} answers {verdict.describe()}",
            file=loaded.display, line=loaded.document.line_of(loc), field=field_path(loc),
            hint="remove expected_label, or use a judge with verdict: {kind: labels, ...}",
        )  # fmt: skip
    if verdict.kind == "labels" and not verdict.pass_labels and spec.expected_label is None:
        loc = ("success_criteria", index)
        raise TaskFileError(
            f"judge {spec.asset.name} answers one of the labels {verdict.labels}, and neither "
            "the judge's pass_labels nor the criterion's expected_label says which pass a row",
            file=loaded.display,
            line=loaded.document.line_of(loc),
            field=field_path(loc),
            hint="add pass_labels to the judge, or expected_label: ${row.<field>} here",
        )


TIE = (
    "{judge} takes the majority of {samples} samples of a {kind} verdict, and an even "
    "number can tie: a tied row is a judge_error (not graded, counted apart)"
)
TIE_HINT = "use an odd samples (1, 3, 5, …): it cannot split evenly between two answers"


def tie_warnings(loaded: LoadedTask, task: TaskDefinition) -> list[str]:
    """Warnings for the resolved judges of ``task`` (``llm_judge`` criteria and a
    ``qa.judge`` asset) that combine an even number of binary or labels samples by majority
    (:mod:`assay.judges.grade`), each naming the task file, line and field."""
    judges: list[tuple[tuple[str | int, ...], JudgeAsset]] = [
        (("success_criteria", index), spec.asset)
        for index, spec in enumerate(task.success_criteria)
        if isinstance(spec, LlmJudge) and spec.asset is not None and spec.enabled
    ]
    qa_judge = task.qa.judge if task.qa is not None else None
    if qa_judge is not None and qa_judge.asset is not None:
        judges.append((("qa", "judge"), qa_judge.asset))
    warnings = []
    for loc, asset in judges:
        judge = asset.definition
        if judge.verdict.kind == "scale" or judge.samples % 2:
            continue
        who = "this judge" if asset.source == "inline" else f"judge {asset.name}"
        text = TIE.format(judge=who, samples=judge.samples, kind=judge.verdict.kind)
        line = loaded.document.line_of(loc) or "?"
        warnings.append(f"{loaded.display}:{line}: {field_path(loc)}: {text}; {TIE_HINT}")
    return warnings


def task_judge_keys(task: TaskDefinition) -> list[ModelKey]:
    """The models of a task's resolved judges."""
    keys = []
    for spec in task.success_criteria:
        if isinstance(spec, LlmJudge) and spec.asset is not None and spec.enabled:
            definition = spec.asset.definition
            keys.append(model_key(definition, Path(spec.asset.base_dir)))
    return keys


def judge_keys(tasks: Iterable[TaskDefinition]) -> list[ModelKey]:
    """The judge models of ``tasks``, each once, to start before any row."""
    return list(dict.fromkeys(key for task in tasks for key in task_judge_keys(task)))


def check_judge_models(loaded: LoadedTask, registry: ProviderRegistry) -> None:
    """Every judge's model can start (provider, API key, mock script, local weights).

    Raises:
        TaskFileError: naming the criterion's line.
    """
    for index, spec in enumerate(loaded.definition.success_criteria):
        if not isinstance(spec, LlmJudge) or spec.asset is None or not spec.enabled:
            continue
        try:
            registry.preflight(model_key(spec.asset.definition, Path(spec.asset.base_dir)))
        except UserError as exc:
            loc: tuple[str | int, ...] = ("success_criteria", index)
            raise TaskFileError(
                f"judge {spec.asset.name}: {exc.message}",
                file=loaded.display,
                line=loaded.document.line_of(loc),
                field=field_path(loc),
                hint=exc.hint,
            ) from None


def check_graded_rows(expansion: Expansion, task: TaskDefinition) -> None:
    """Refuse ``agent: none`` over rows without a trace or session when a criterion grades
    the response (module docstring).

    Raises:
        TaskFileError: at the task's ``agent`` field.
    """
    if task.agent.answers:
        return
    readers = [c.type for c in task.success_criteria if c.reads_response]
    if not readers:
        return
    store = expansion.store
    if store is not None and store.pointer_field is not None:
        return
    loaded = expansion.task
    raise TaskFileError(
        NO_RESPONSE.format(names=", ".join(dict.fromkeys(readers))),
        file=loaded.display,
        line=loaded.document.line_of(("agent", "type")),
        field="agent.type",
        hint=NO_RESPONSE_HINT,
    )
