"""The plan: every work item of a run, computed without running anything.

``build_plan`` = discover → load each task file → filter (``skip``, tags) → expand and select
rows → one work item per ``row-task × variant × replicate``. ``assay plan`` prints it;
``assay run`` executes it. Both refuse exactly the same inputs, because both call this.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from assay.criteria.registry import CriterionRegistry, default_criteria
from assay.data.lazy import MadeWhenRead
from assay.data.select import SelectionRequest
from assay.errors import (
    DatasetError,
    SelectionError,
    TaskFileError,
    TaskFilesError,
    UsageError,
    UserError,
)
from assay.judges.assets import JudgeResolver
from assay.orchestration.loading.discover import discover
from assay.orchestration.loading.experiment import (
    DEFAULT_VARIANT,
    Override,
    ResolvedVariant,
    load_experiment,
)
from assay.orchestration.loading.secrets import run_redactor, short_secret_warnings
from assay.orchestration.loading.task_loader import LoadedTask, load_document, load_task
from assay.orchestration.planning.containment import (
    EngineAnswers,
    ImageKey,
    check_containment,
    containment_warnings,
    content_id,
    image_key,
    limits_line,
    refuse_other_images,
)
from assay.orchestration.planning.expand import (
    Expansion,
    RowTask,
    Selectors,
    expand_dataset,
    selection_request,
)
from assay.orchestration.planning.judging import (
    check_judge_models,
    resolve_judges,
)
from assay.orchestration.planning.variants import (
    VariantChecks,
    VariantErrors,
    checked_variants,
    overridden,
)
from assay.providers.pool import ProviderRegistry, default_registry
from assay.providers.pricing import PriceTable
from assay.qa import QaItem
from assay.results.io import Writer
from assay.results.run import SkippedTask, TaskSelection
from assay.results.secrets import Redactor
from assay.spec.base import did_you_mean
from assay.spec.experiment import Experiment, StopRule
from assay.spec.run_names import CASE_CLASH_CONSEQUENCE, case_clash_text, case_clashes
from assay.spec.task import TaskDefinition


@dataclass(frozen=True)
class PlanOptions:
    """What the command line adds to the task files."""

    selectors: Selectors = field(default_factory=Selectors)
    tags: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()
    include_skipped: bool = False
    skip_unsupported: bool = False
    repeats: int | None = None
    fixed_rows: Mapping[str, list[str]] = field(default_factory=dict)
    prices: PriceTable = field(default_factory=PriceTable)
    experiment: str | None = None
    overrides: tuple[Override, ...] = ()
    store_url: str | None = None
    store_versions: Mapping[str, int] = field(default_factory=dict)
    judge_versions: Mapping[str, int] = field(default_factory=dict)
    started_images: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """A resumed run's images (task id → variant → ``image_identity``): a Dockerfile that
    would build another one is refused without building it."""
    stop_when_decided: bool = False
    criteria: CriterionRegistry | None = None
    """The criterion types the tasks may name, when the caller added its own
    (``assay.run(criteria=[...])``); ``None``: the built-ins and installed plugins."""


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One unit of execution: a row-task, in a variant, for one replicate."""

    row_task: RowTask
    variant: ResolvedVariant
    replicate: int
    index: int

    @property
    def variant_id(self) -> str:
        """The variant's id (``default`` without an experiment)."""
        return self.variant.variant_id

    def resolve(self) -> TaskDefinition:
        """The row-task as this variant runs it."""
        return self.row_task.resolve(self.variant.definition, self.replicate)

    def qa_item(self) -> QaItem | None:
        """The QA item this work item asks (``None`` outside ``qa:`` tasks)."""
        return self.row_task.qa_item(self.variant.definition, self.replicate)


@dataclass
class PlannedTask:
    """One task file, expanded, with the selection request that chose its rows and the task as
    each variant runs it."""

    expansion: Expansion
    request: SelectionRequest | None
    variants: list[ResolvedVariant] = field(default_factory=list)
    limits: str = ""
    """The task's ``sandbox.limits`` as its driver (and a ``docker`` task's engine) enforces
    them, for ``assay plan`` (:func:`~assay.orchestration.planning.containment.limits_line`)."""
    images: dict[str, str] = field(default_factory=dict)
    """Each ``docker`` variant's image (:func:`~assay.orchestration.planning.containment.
    image_identity`), recorded in ``plan.json`` so a resume runs in the same one."""

    @property
    def loaded(self) -> LoadedTask:
        """The task file."""
        return self.expansion.task

    @property
    def repeats(self) -> int:
        """Replicates per row-task (of the default variant; ``simulation.n_trials`` in
        dialog mode)."""
        return self.loaded.definition.replicates()

    @property
    def selection_made(self) -> bool:
        """Whether this task selected rows of a dataset (it has a selection record)."""
        return (self.expansion.dataset_record is not None and self.request is not None
                and self.expansion.selection is not None)  # fmt: skip

    def selection(self, *, rows_file: str | None = None) -> TaskSelection | None:
        """The record of the rows this task selected (``rows_file``: see
        :meth:`~assay.orchestration.planning.expand.Expansion.selection_record`)."""
        record, request = self.expansion.dataset_record, self.request
        if not self.selection_made or record is None or request is None:
            return None
        selection = self.expansion.selection_record(request, rows_file=rows_file)
        assert selection is not None
        return TaskSelection(
            task_id=self.loaded.definition.task_id,
            source_file=self.loaded.display,
            dataset=record,
            selection=selection,
        )


@dataclass
class Plan:
    """Everything a run will do, and the secrets it knows (``redactor``: the environment's,
    the credentials its models use, secret ``agent.env`` values; see
    :mod:`assay.orchestration.loading.secrets`)."""

    tasks: list[PlannedTask]
    skipped: list[SkippedTask] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    variants: tuple[str, ...] = (DEFAULT_VARIANT,)
    repeats_override: int | None = None
    experiment: Experiment | None = None
    experiment_file: Path | None = None
    redactor: Redactor = field(default_factory=Redactor)
    criteria: CriterionRegistry = field(default_factory=default_criteria)
    """The criterion types of the run: they grade its rows and roll up its suites."""
    build_failures: dict[ImageKey, str] = field(default_factory=dict)
    """The ``docker`` images that did not build when planned (key: :func:`image_key`): the
    build's message; the run ends their rows ``ERROR`` with it, not building them again
    (a Dockerfile that builds only sometimes gives one answer per run)."""

    def __repr__(self) -> str:
        """``Plan(2 tasks, 12 work items, 1 variant, 1 warning)``: short enough for a notebook
        (the tasks' definitions are in ``.tasks``)."""
        counts = [(len(self.tasks), "task"), (self.work_item_count(), "work item"),
                  (len(self.variants), "variant"), (len(self.warnings), "warning"),
                  (len(self.skipped), "skipped task file")]  # fmt: skip
        shown = [f"{n} {what}{'' if n == 1 else 's'}" for n, what in counts
                 if n or what in ("task", "work item")]  # fmt: skip
        return f"Plan({', '.join(shown)})"

    def work_items(self) -> WorkItems:
        """Every ``row-task × variant × replicate``, in variant, task, row, replicate order
        (made when read: see :class:`WorkItems`)."""
        return WorkItems(self)

    def work_item_count(self) -> int:
        """How many work items :meth:`work_items` gives."""
        return len(self.work_items())

    @property
    def writer(self) -> Writer:
        """The run's one writer: every file of the run goes through it, with the plan's
        secrets (and those added while it runs) redacted."""
        return Writer(self.redactor)

    @property
    def definitions(self) -> list[TaskDefinition]:
        """Every task as each variant runs it."""
        return [v.definition for planned in self.tasks for v in planned.variants]

    def image_ids(self) -> dict[ImageKey, str]:
        """The content id of each ``docker`` image the plan found (key:
        :func:`~assay.orchestration.planning.containment.image_key`): the rows run by it."""
        found = {}
        for planned in self.tasks:
            for variant in planned.variants:
                identity = planned.images.get(variant.variant_id)
                content = content_id(identity) if identity is not None else None
                if content is not None:
                    found[image_key(variant.definition, planned.loaded.base_dir)] = content
        return found

    @property
    def row_task_count(self) -> int:
        """Row-tasks over all task files (before variants and replicates)."""
        return sum(len(t.expansion.row_tasks) for t in self.tasks)


class WorkItems(MadeWhenRead[WorkItem]):
    """A plan's work items (``row-task × variant × replicate``, in variant, task, row,
    replicate order), each made when read, so a run of a million rows never holds a million
    of them; item ``i`` is always the same row, variant and replicate, with ``index == i``."""

    def __init__(self, plan: Plan) -> None:
        self.blocks: list[tuple[PlannedTask, ResolvedVariant, int]] = []
        """``(task, variant, replicates)`` in order: its items are consecutive."""
        self._starts: list[int] = []
        total = 0
        for position, _ in enumerate(plan.variants):
            for planned in plan.tasks:
                variant = planned.variants[position]
                repeats = variant.definition.replicates(plan.repeats_override)
                self._starts.append(total)
                self.blocks.append((planned, variant, repeats))
                total += len(planned.expansion.row_tasks) * repeats
        self._total = total

    def __len__(self) -> int:
        return self._total

    def _at(self, index: int) -> WorkItem:
        block = bisect.bisect_right(self._starts, index) - 1
        planned, variant, repeats = self.blocks[block]
        row, replicate = divmod(index - self._starts[block], repeats)
        return WorkItem(planned.expansion.row_tasks[row], variant, replicate, index)

    def __iter__(self) -> Iterator[WorkItem]:
        index = 0
        for planned, variant, repeats in self.blocks:
            for row_task in planned.expansion.row_tasks:
                for replicate in range(repeats):
                    yield WorkItem(row_task, variant, replicate, index)
                    index += 1


TaskSource = str | Path | LoadedTask


def load_sources(
    sources: Sequence[TaskSource],
    overrides: Sequence[Override] = (),
    *,
    skip_unsupported: bool = False,
    criteria: CriterionRegistry | None = None,
) -> Iterator[LoadedTask]:
    """The tasks of ``sources`` in order: files, folders and globs found by
    :func:`~assay.orchestration.loading.discover.discover` (each file once) and tasks already loaded
    or built; no source at all means ``tasks/``. ``overrides`` (``-D``) are placed in each
    task as if written in it (a task already loaded is validated again with them).
    ``skip_unsupported`` leaves out the criteria assay does not implement yet
    (:func:`~assay.orchestration.loading.task_loader.load_task`). ``criteria``: the criterion types
    the tasks may name when the caller added its own (a task already loaded is validated
    again with them).

    Every file is read before any is returned: with several files, those that cannot run
    are reported together (:class:`~assay.errors.TaskFilesError`, which also says which
    others run as written or with warnings).

    Raises:
        UsageError: a source matches nothing. TaskFileError: the one task file is invalid;
            TaskFilesError: some of several are.
    """
    loaded, refused = load_each(sources, overrides, skip_unsupported=skip_unsupported,
                                criteria=criteria)  # fmt: skip
    if len(refused) == 1 and not loaded:
        raise refused[0]
    if refused:
        warned = {t.display: t.warnings for t in loaded if t.warnings}
        clean = [t.display for t in loaded if not t.warnings]
        raise TaskFilesError(refused, as_written=clean, warned=warned)
    yield from loaded


def load_each(
    sources: Sequence[TaskSource],
    overrides: Sequence[Override] = (),
    *,
    skip_unsupported: bool = False,
    criteria: CriterionRegistry | None = None,
) -> tuple[list[LoadedTask], list[UserError]]:
    """Every task of ``sources`` read (as :func:`load_sources`): those that load, and the
    error of each file that does not, both in the order found.

    Raises:
        UsageError: a source matches nothing.
    """
    found: list[Path | LoadedTask] = []
    seen: set[Path] = set()
    given: Sequence[TaskSource | None] = sources or [None]  # None: tasks/
    for source in given:  # every path is found before any file is read
        if isinstance(source, LoadedTask):
            found.append(source)
            continue
        for path in discover([str(source)] if source is not None else []):
            if path.resolve() not in seen:
                seen.add(path.resolve())
                found.append(path)
    loaded: list[LoadedTask] = []
    refused: list[UserError] = []
    for item in found:
        try:
            loaded.append(_load(item, overrides, skip_unsupported, criteria))
        except TaskFileError as exc:
            refused.append(exc)
    return loaded, refused


def _load(
    item: Path | LoadedTask,
    overrides: Sequence[Override],
    skip: bool,
    criteria: CriterionRegistry | None,
) -> LoadedTask:
    if not isinstance(item, LoadedTask):
        return load_task(item, overrides=overrides, skip_unsupported=skip, criteria=criteria)
    if overrides or skip or criteria is not None:
        again = load_document(item.document, display=item.display, base_dir=item.base_dir,
                              overrides=overrides, skip_unsupported=skip,
                              criteria=criteria)  # fmt: skip
        return replace(again, path=item.path, built=item.built)
    return item


def build_plan(
    arguments: Sequence[TaskSource], options: PlanOptions, registry: ProviderRegistry | None = None
) -> Plan:
    """Load, filter and expand every task named by ``arguments`` (paths, folders, globs, or
    tasks already loaded).

    Raises:
        UserError: any invalid input (including a model with an unknown provider);
            nothing runs.
    """
    registry = registry or default_registry()
    experiment, experiment_file, experiment_warnings = (
        load_experiment(options.experiment) if options.experiment else (None, None, [])
    )
    if options.stop_when_decided:
        experiment = with_stop_rule(experiment)
    plan = Plan(tasks=[], repeats_override=options.repeats, warnings=experiment_warnings,
                criteria=options.criteria or default_criteria())  # fmt: skip
    resolver = JudgeResolver(options.store_url, options.judge_versions)
    try:
        engines = _plan_tasks(plan, arguments, options, registry, resolver,
                              (experiment, experiment_file))  # fmt: skip
    finally:
        resolver.close()
    _check_row_tasks(plan, options.fixed_rows)
    if not plan.tasks:
        reasons = "; ".join(f"{s.path}: {s.reason}" for s in plan.skipped[:5])
        raise UsageError(
            "no task to run: every task file was skipped" + (f" ({reasons})" if reasons else ""),
            hint="check --tags / --exclude-tags, or pass --include-skipped",
        )
    plan.warnings.extend(_trials_beat_repeats(plan))
    plan.warnings.extend(options.prices.unused(_models(plan)))
    plan.warnings.extend(check_containment(
        ((t.loaded, v.definition) for t in plan.tasks for v in t.variants),
        agents=plan.criteria.agents, engines=engines))  # fmt: skip
    plan.build_failures = dict(engines.failed)
    if experiment is not None and experiment_file is not None:
        plan.variants = tuple(v.variant_id for v in experiment.variants)
        plan.experiment = experiment
        plan.experiment_file = experiment_file.resolve()
    plan.redactor = run_redactor(
        (v.definition for t in plan.tasks for v in t.variants),
        os.environ,
        store_url=options.store_url,
        overrides=options.overrides,
    )
    plan.warnings.extend(short_secret_warnings(plan.redactor))
    return plan


def _trials_beat_repeats(plan: Plan) -> list[str]:
    """``--repeats`` or the task's own ``repeats`` beside a dialog task's
    ``simulation.n_trials``: the task's trials decide (as in Coder Eval); said, not silently
    dropped."""
    found = []
    for planned in plan.tasks:
        for variant in planned.variants:
            definition = variant.definition
            asked = plan.repeats_override
            given = f"--repeats {asked}"
            if asked is None and "repeats" in definition.model_fields_set:
                asked, given = definition.repeats, f"repeats ({definition.repeats})"
            trials = definition.replicates(asked)
            if asked is not None and trials != asked:
                found.append(f"{planned.loaded.display}: {given} does not apply: "
                             f"simulation.n_trials ({trials}) sets this dialog task's "
                             "replicates (as in Coder Eval)")  # fmt: skip
                break
    return found


def _models(plan: Plan) -> Iterator[str]:
    """Every model a variant names (its agent's, a simulated user's, a judge's): the keys
    ``model`` of its definition whose values are ``provider/name``."""
    for task in plan.tasks:
        for variant in task.variants:
            yield from _model_values(variant.definition.model_dump(exclude_none=True))


def _model_values(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "model" and isinstance(value, str) and "/" in value:
                yield value
            else:
                yield from _model_values(value)
    elif isinstance(data, list):
        for value in data:
            yield from _model_values(value)


def _check_row_tasks(plan: Plan, fixed_rows: Mapping[str, list[str]]) -> None:
    """Every task id of ``rows={task_id: [...]}`` names a task of the plan, with a row id.

    Raises:
        UsageError: an unknown task id (or one of a task left out), with the closest one; a
            task given no row id.
    """
    known = {t.loaded.definition.task_id for t in plan.tasks}
    for task_id, ids in fixed_rows.items():
        if not ids:
            raise UsageError(f"rows gives task {task_id!r} no row id: nothing of it would run",
                             hint="name the ids of the rows to run, or leave the task out of "
                             "rows to run all of its rows")  # fmt: skip
        if task_id not in known:
            close = did_you_mean(task_id, known)
            raise UsageError(f"rows names the task {task_id!r}, which is not among the tasks "
                             f"planned ({', '.join(sorted(known)) or 'none'})"
                             + (f"; {close}" if close else ""),
                             hint="rows maps a task_id to the ids of the rows to run")  # fmt: skip


def _plan_tasks(
    plan: Plan,
    arguments: Sequence[TaskSource],
    options: PlanOptions,
    registry: ProviderRegistry,
    resolver: JudgeResolver,
    experiment_and_file: tuple[Experiment | None, Path | None],
) -> EngineAnswers:
    """Load, resolve, expand and check every task file into ``plan.tasks``; returns what
    the container engines answered meanwhile (for the plan's containment checks).

    Every task file is checked before any error is raised: with several files, the errors of
    all that cannot run are raised together (:class:`~assay.errors.TaskFilesError`: a CLI or
    an API key missing for three tasks is said once for each of them, not for the first).
    """
    experiment, experiment_file = experiment_and_file
    context = _TaskContext(
        plan,
        options,
        registry,
        resolver,
        experiment,
        experiment_file,
        EngineAnswers(reuse_images=bool(options.started_images)),
    )
    owners: dict[str, str] = {}
    loaded_tasks, refused = load_each(arguments, options.overrides,
                                      skip_unsupported=options.skip_unsupported,
                                      criteria=options.criteria)  # fmt: skip
    planned: dict[str, list[str]] = {}  # each planned file → its load and plan warnings
    for loaded in loaded_tasks:
        plan.warnings.extend(loaded.warnings)
        reason = _skip_reason(loaded, options)
        if reason is not None:
            plan.skipped.append(SkippedTask(path=loaded.display, reason=reason))
            continue
        task_id = loaded.definition.task_id
        if task_id in owners:
            refused.append(TaskFileError(
                f"task_id '{task_id}' is also defined in {owners[task_id]}",
                file=loaded.display,
                line=loaded.document.line_of(("task_id",)),
                field="task_id",
                hint="task ids name run directories and suites; make them unique",
            ))  # fmt: skip
            continue
        owners[task_id] = loaded.display
        before = len(plan.warnings)
        try:
            plan.tasks.append(_plan_task(loaded, context))
            planned[loaded.display] = [*loaded.warnings, *plan.warnings[before:]]
        except (TaskFileError, DatasetError, SelectionError) as exc:
            refused.append(_in_file(exc, loaded.display))
    _raise_refused(refused, planned, plan.skipped)
    clashes = case_clashes(t.loaded.definition.task_id for t in plan.tasks)
    if clashes:
        plan.warnings.append(f"task ids differ only in case ({case_clash_text(clashes)}): "
                             f"{CASE_CLASH_CONSEQUENCE}")  # fmt: skip
    return context.engines


def _raise_refused(
    refused: list[UserError],
    planned: dict[str, list[str]],
    skipped: list[SkippedTask],
) -> None:
    """Raise the refused files' errors (one file's error alone as it is; a file's several
    variants' errors each listed), if any file was refused; ``planned``: each file that
    plans → the warnings its loading and planning gave (the migration report's "runs with
    warnings", as `assay plan FILE` alone would print them)."""
    errors = [
        e for one in refused for e in (one.errors if isinstance(one, VariantErrors) else [one])
    ]
    if len(errors) == 1 and not planned:
        raise errors[0]
    if errors:
        clean = [name for name, warnings in planned.items() if not warnings]
        warned = {name: warnings for name, warnings in planned.items() if warnings}
        raise TaskFilesError(errors, as_written=clean, warned=warned, files=len(refused),
                             skipped=[s.path for s in skipped])  # fmt: skip


def _in_file(exc: UserError, display: str) -> UserError:
    """``exc`` naming the task file ``display`` when it is a dataset's or selection's error that
    names no file (a task file's error without one is the command line's or a variant's)."""
    if isinstance(exc, TaskFileError) or exc.file is not None or exc.located:
        return exc
    return type(exc)(exc.message, file=display, line=exc.line, field=exc.field,
                     row_id=exc.row_id, hint=exc.hint)  # fmt: skip


@dataclass(frozen=True)
class _TaskContext:
    """What planning one task file needs of the whole plan."""

    plan: Plan
    options: PlanOptions
    registry: ProviderRegistry
    resolver: JudgeResolver
    experiment: Experiment | None
    experiment_file: Path | None
    engines: EngineAnswers = field(default_factory=EngineAnswers)


def _plan_task(written: LoadedTask, context: _TaskContext) -> PlannedTask:
    """One task file resolved, expanded into its variants and checked.

    Raises:
        TaskFileError: the task cannot run as planned (each error names the override that
            caused it, if one did).
    """
    plan, options, resolver = context.plan, context.options, context.resolver
    try:
        loaded = resolve_judges(written, resolver)
    except TaskFileError as exc:
        raise overridden(exc, options.overrides) from None
    task_id = loaded.definition.task_id
    expansion = expand_dataset(
        loaded,
        options.selectors,
        fixed_row_ids=options.fixed_rows.get(task_id),
        store_url=options.store_url,
        store_version=options.store_versions.get(task_id),
    )
    plan.warnings.extend(expansion.warnings)
    request = (
        selection_request(loaded.definition, options.selectors)
        if loaded.definition.dataset is not None
        else None
    )
    checks = VariantChecks(plan.warnings, context.registry, resolver, options.overrides,
                           options.prices, plan.criteria.agents, context.experiment,
                           context.experiment_file)  # fmt: skip
    variants = checked_variants(written, loaded, expansion, checks)
    try:
        check_judge_models(loaded, context.registry)
    except TaskFileError as exc:
        raise overridden(exc, options.overrides) from None
    engines = context.engines
    plan.warnings.extend(containment_warnings(loaded.display, [v.definition for v in variants],
                                              engines=engines))  # fmt: skip
    started = options.started_images.get(loaded.definition.task_id, {})
    found = {v.variant_id: engines.image(v.definition, loaded.base_dir,
                                         started=started.get(v.variant_id))
             for v in variants}  # fmt: skip
    images = {variant: image for variant, image in found.items() if image is not None}
    refuse_other_images(loaded.definition.task_id, loaded.path, images, started,
                        task=loaded.definition)  # before a build  # fmt: skip
    return PlannedTask(expansion, request, variants, images=images,
                       limits=limits_line(loaded.definition, engines=engines))  # fmt: skip


def _skip_reason(loaded: LoadedTask, options: PlanOptions) -> str | None:
    task = loaded.definition
    if task.skip and not options.include_skipped:
        return "skip: true (pass --include-skipped to run it)"
    tags = set(task.tags)
    if options.tags and not tags & set(options.tags):
        return f"no tag in --tags {','.join(options.tags)}"
    excluded = tags & set(options.exclude_tags)
    if excluded:
        return f"tag {sorted(excluded)[0]} is in --exclude-tags"
    return None


def base_dirs(plan: Plan) -> dict[str, Path]:
    """Task id → the task file's folder."""
    return {t.loaded.definition.task_id: t.loaded.base_dir for t in plan.tasks}


def with_stop_rule(experiment: Experiment | None) -> Experiment:
    """``--stop-when-decided``: the experiment with its ``stop`` rule (the default rule when it
    has none).

    Raises:
        UsageError: no experiment, or one without exactly two variants.
    """
    if experiment is None:
        raise UsageError("--stop-when-decided stops an experiment: give one with -e (two "
                         "variants)")  # fmt: skip
    if experiment.stop is not None:
        return experiment
    if len(experiment.variants) != 2:
        raise UsageError(f"--stop-when-decided compares two variants, and experiment "
                         f"{experiment.experiment_id} has {len(experiment.variants)}")  # fmt: skip
    return experiment.model_copy(update={"stop": StopRule()})
