"""Tasks for the Python API: a task file read from disk, or a task built in Python from the
same fields (a dict, or the :class:`~assay.spec.task.TaskDefinition` pydantic model) with
its rows from a list, a pandas or Polars ``DataFrame`` or a ``datasets.Dataset``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.agents.base import Agent
from assay.api.option_types import check_types
from assay.criteria.base import Criterion
from assay.criteria.registry import CriterionRegistry, default_criteria
from assay.data.frames import rows_of
from assay.errors import TaskFileError
from assay.orchestration.loading.task_loader import LoadedTask, load_document
from assay.orchestration.loading.task_loader import load_task as load_task_file
from assay.orchestration.planning.options import criteria_registry
from assay.spec.source import YamlDocument
from assay.spec.task import TaskDefinition as TaskDefinitionBase

if TYPE_CHECKING:
    TaskDefinition = TaskDefinitionBase
else:
    TaskDefinition = default_criteria(entry_points=False).task_model()
"""The task file as a pydantic model, its criteria the built-in types (``assay.TaskDefinition``;
a task naming a plugin's type is given as a dict or a file instead)."""


def load_task(
    path: str | Path,
    *,
    criteria: Sequence[type[Criterion]] = (),
    agents: Sequence[type[Agent[Any]]] = (),
) -> LoadedTask:
    """Read and validate one task file, as ``assay run`` does.

    Args:
        path: the task file.
        criteria: criterion classes of your own that the file names (as given to
            :func:`assay.run`; an installed plugin's are found by their type).
        agents: agent classes of your own whose type the file names.

    Returns:
        The task: ``.definition`` (a :class:`~assay.spec.task.TaskDefinition`), ``.path``,
        ``.base_dir`` (where its relative paths start) and ``.warnings`` (one line each).

    Raises:
        TaskFileError: unreadable file, invalid YAML, unknown field (with a "did you mean"),
            invalid value, missing prompt file, unknown suite threshold name; each names
            the file, line and field.
        PluginError: a class of ``criteria`` or ``agents`` is not one, or its type is taken.
    """
    classes = check_types("load_task", {"criteria": criteria, "agents": agents})
    registry = criteria_registry(classes["criteria"], agents=classes["agents"])
    return load_task_file(Path(path), criteria=registry)


def task(
    definition: TaskDefinition | Mapping[str, Any],
    *,
    rows: Any = None,
    base_dir: str | Path | None = None,
    criteria: CriterionRegistry | Sequence[type[Criterion]] = (),
    agents: Sequence[type[Agent[Any]]] = (),
) -> LoadedTask:
    """A task built in Python, validated exactly as a task file with the same fields.

    Args:
        definition: the task file's fields as a dict (``{"task_id": ..., "description":
            ..., "initial_prompt": "Review: ${row.text}", "success_criteria": [...]}``) or
            a :class:`~assay.spec.task.TaskDefinition`.
        rows: the dataset's rows: a list of dicts, a ``pandas.DataFrame``, a
            ``polars.DataFrame`` or a ``datasets.Dataset`` (missing values become
            ``null``). They become ``dataset.rows``; the other ``dataset`` settings
            (``id_field``, ``stratify_field``, ``sample_seed``, …) apply as written. A
            ``TaskDefinition`` with ``suite_thresholds`` must declare a dataset to
            validate: give it ``dataset={"rows": []}``, which ``rows`` fills.
        base_dir: where relative paths (templates, metrics hook, mock scripts) start;
            default the working directory.
        criteria: criterion classes of your own that the task names (or a registry); the
            same must be given to :func:`assay.run`.
        agents: agent classes of your own (:class:`assay.agents.Agent`) whose type the
            task names; the same must be given to :func:`assay.run`.

    Returns:
        A task for :func:`assay.run` and :func:`assay.plan`. Messages name it
        ``<python:TASK_ID>``. A run saves it, rows included, in its run directory, so the
        run can be resumed (also with ``assay run --resume``).

    Raises:
        TaskFileError: an invalid field, as for a task file (without line numbers), or
            ``rows`` given with ``dataset.rows``, ``dataset.paths`` or ``dataset.store``.
        DatasetError: ``rows`` is not one of the kinds above, or holds a value that is not
            JSON data (naming the row and field).
    """
    data = _fields(definition)
    name = f"<python:{data.get('task_id', 'task')}>"
    if rows is not None:
        data["dataset"] = _with_rows(data.get("dataset"), rows_of(rows, name="rows"), name)
    folder = Path(base_dir).resolve() if base_dir is not None else Path.cwd()
    document = YamlDocument(path=folder / name, text="", data=data, lines={})
    registry = (criteria.with_agents(agents) if isinstance(criteria, CriterionRegistry)
                else criteria_registry(criteria, agents=agents))  # fmt: skip
    loaded = load_document(document, display=name, base_dir=folder, criteria=registry)
    return LoadedTask(loaded.definition, loaded.path, loaded.display, loaded.base_dir,
                      loaded.document, loaded.warnings, built=True)  # fmt: skip


def _fields(definition: TaskDefinition | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(definition, TaskDefinitionBase):
        return definition.model_dump(mode="json", exclude_none=True)
    if not isinstance(definition, Mapping):
        raise TaskFileError(
            f"a task is a dict of task file fields or a TaskDefinition, not "
            f"{type(definition).__name__}",
            file="<python>",
        )
    return dict(definition)


def _with_rows(dataset: Any, rows: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The ``dataset`` block with ``rows`` as its rows.

    Raises:
        TaskFileError: the block already names its rows (``rows``, ``paths`` or ``store``).
    """
    block = dict(dataset) if isinstance(dataset, Mapping) else {}
    if block.get("rows") == []:
        del block["rows"]  # a placeholder: a TaskDefinition with gates needs a dataset block
    given = [key for key in ("rows", "paths", "store") if block.get(key) is not None]
    if given:
        raise TaskFileError(
            f"rows= and dataset.{given[0]} both give the rows; keep one",
            file=name,
            field=f"dataset.{given[0]}",
        )
    block["rows"] = rows
    return block


def task_schema(
    *,
    criteria: Sequence[type[Criterion]] = (),
    agents: Sequence[type[Agent[Any]]] = (),
    plugins: bool = False,
) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a task file, made from the criterion registry
    (``assay schema``): editors validate and complete task files with it (the YAML language
    server: ``# yaml-language-server: $schema=<file>``), and a typo'd field is named.

    Args:
        criteria: criterion classes of your own, to include.
        agents: agent classes of your own, to include.
        plugins: include the criteria and agents of every installed ``assay.criteria`` and
            ``assay.agents`` plugin.

    Returns:
        The schema, a JSON-ready dict.

    Raises:
        PluginError: a class of ``criteria`` is not a criterion or its type is taken; with
            ``plugins``, an installed plugin cannot be loaded.
        TypeError: ``criteria`` or ``agents`` is not a list of classes (one class alone).
    """
    classes = check_types("task_schema", {"criteria": criteria, "agents": agents})
    registry = default_criteria(entry_points=plugins).with_classes(
        classes["criteria"]).with_agents(classes["agents"])  # fmt: skip
    if plugins:
        registry.load_plugins()
        registry.agents.load_plugins()
    return registry.task_schema()
