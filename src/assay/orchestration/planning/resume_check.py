"""A resumed run runs as it started: options that would change what runs are refused.

``--resume`` rebuilds the plan from ``plan.json``. An option given again that would change
the rows, replicates, variants or agent settings (``--sample``, ``--sample-per-stratum``,
``--split``, ``--tags``, ``--exclude-tags``, ``--include-skipped``, ``--repeats``, ``-e``,
``-D``, ``--model``) cannot apply without making the run two experiments, so when its value
differs from the recorded one the resume is refused, naming each option with both values.
Giving the recorded value again is allowed. A task file or the experiment file edited since
the run started is refused too (their content hashes, recorded in ``plan.json``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from assay.errors import UsageError
from assay.orchestration.planning.plan import Plan, PlanOptions
from assay.results.plan_record import PlannedTaskRecord, PlanOptionsRecord
from assay.spec.experiment import Experiment
from assay.spec.task import TaskDefinition


def task_hash(definition: TaskDefinition) -> str:
    """SHA-256 (hex) of a task definition as loaded, without its dataset (whose rows are
    compared one by one, :mod:`assay.orchestration.planning.datacheck`)."""
    data = definition.model_dump(mode="json", exclude={"dataset"})
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()


def check_same_tasks(plan: Plan, tasks: list[PlannedTaskRecord]) -> None:
    """A resumed run must run the tasks it started with, as they were.

    Raises:
        UsageError: a task's definition (all but its dataset) differs from the recorded one
            (its file edited since), naming the file and both hashes.
    """
    recorded = {task.task_id: task for task in tasks if task.content_hash is not None}
    for planned in plan.tasks:
        task = recorded.get(planned.loaded.definition.task_id)
        if task is None or task.content_hash is None:
            continue  # recorded by an older assay
        _check_same_pin(planned.loaded.definition, task)
        now = task_hash(planned.loaded.definition)
        if now != task.content_hash:
            raise UsageError(
                f"task {task.task_id} has content hash {now[:12]} now, but the run started "
                f"with {task.content_hash[:12]}: it was edited since, and its rows would "
                "run under two versions of the task",
                file=task.file,
                hint="restore the task file as it was, or start a new run",
            )


def _check_same_pin(definition: TaskDefinition, task: PlannedTaskRecord) -> None:
    """A store dataset's pinned ``version`` changed since the run started: refused, as an
    edit is (the run keeps reading the version it recorded, so the new pin would be
    dropped without a word).

    Raises:
        UsageError: naming both versions.
    """
    dataset, recorded = definition.dataset, task.dataset
    if dataset is None or dataset.store is None or dataset.version is None or recorded is None:
        return
    if recorded.store == dataset.store and recorded.version not in (None, dataset.version):
        raise UsageError(
            f"task {task.task_id} now pins {dataset.store}@{dataset.version}, but the run "
            f"read {recorded.store}@{recorded.version}: its rows would come from two versions",
            file=task.file,
            hint=f"put back version: {recorded.version} to resume, or start a new run",
        )


def experiment_hash(experiment: Experiment) -> str:
    """SHA-256 (hex) of an experiment as the run uses it: its variants, defaults and stop
    rule (``--stop-when-decided``'s default rule included)."""
    data = experiment.model_dump(mode="json")
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()


def check_same_experiment(plan: Plan, recorded: str | None) -> None:
    """A resumed run must run the experiment it started with, as it was: its variants' settings
    and its stop rule (a rule loosened after looking at the rows would void its guarantee).

    Raises:
        UsageError: the experiment differs from the recorded hash (its file edited since),
            naming the file and both hashes; nothing is checked for a run recorded without
            the hash (an older assay).
    """
    if recorded is None or plan.experiment is None:
        return
    now = experiment_hash(plan.experiment)
    if now != recorded:
        raise UsageError(
            f"experiment {plan.experiment.experiment_id} has content hash {now[:12]} now, but "
            f"the run started with {recorded[:12]}: it was edited since, and its rows would run "
            "under two versions of its variants (and stop rule)",
            file=plan.experiment_file,
            hint="restore the experiment file as it was, or start a new run",
        )


def check_resume_options(run_dir: Path, record: PlanOptionsRecord, given: PlanOptions) -> None:
    """Refuse options given to a resume that differ from those the run recorded.

    Args:
        run_dir: the run being resumed (named in the message).
        record: the options recorded in its ``plan.json``.
        given: the plan options passed to the resume (defaults count as not given).

    Raises:
        UsageError: one or more options differ; the message lists option, the run's value
            and the given value.
    """
    differences = [
        f"{flag}: the run used {old}, given {new}" for flag, old, new in _differences(record, given)
    ]
    if differences:
        raise UsageError(
            f"resuming {run_dir} runs with the run's own settings, and these differ: "
            + "; ".join(differences),
            hint="drop these options to resume the run as it started, or start a new run "
            "(not a resume: without --resume, or assay.run) to use them",
        )


def _differences(record: PlanOptionsRecord, given: PlanOptions) -> list[tuple[str, str, str]]:
    """(flag, recorded value, given value) for every given option that differs."""
    selectors = given.selectors
    found: list[tuple[str, object, object]] = []
    for flag, old, new in (
        ("--sample", record.sample, selectors.sample),
        ("--sample-per-stratum", record.sample_per_stratum, selectors.sample_per_stratum),
        ("--split", record.split, selectors.split),
        ("--repeats", record.repeats, given.repeats),
    ):
        if new is not None and new != old:
            found.append((flag, old, new))
    for flag, old_list, new_list in (
        ("--tags", record.tags, list(given.tags)),
        ("--exclude-tags", record.exclude_tags, list(given.exclude_tags)),
    ):
        if new_list and new_list != old_list:
            found.append((flag, ",".join(old_list) or None, ",".join(new_list)))
    if given.include_skipped and not record.include_skipped:
        found.append(("--include-skipped", False, True))
    if given.skip_unsupported and not record.skip_unsupported:
        found.append(("--skip-unsupported", False, True))
    if given.stop_when_decided and not record.stop_when_decided:
        found.append(("--stop-when-decided", False, True))
    if given.experiment is not None and not _same_file(given.experiment, record.experiment):
        found.append(("-e/--experiment", record.experiment, given.experiment))
    named = [(_named(flag), old, new) for flag, old, new in found]
    named.extend(_override_differences(record, given))
    return [(flag, _shown(old), _shown(new)) for flag, old, new in named]


def _named(flag: str) -> str:
    """``sample (--sample)``: an option as the Python API and the command line name it."""
    keyword = flag.rpartition("--")[2].replace("-", "_")
    return f"{keyword} ({flag})"


def _override_differences(
    record: PlanOptionsRecord, given: PlanOptions
) -> list[tuple[str, object, object]]:
    recorded = {".".join(path): value for path, value in record.overrides}
    found: list[tuple[str, object, object]] = []
    for override in given.overrides:
        name = ".".join(override.path)
        if name not in recorded or recorded[name] != override.value:
            flag = override.flag or f"-D {name}={override.value}"
            found.append((flag, recorded.get(name), override.value))
    return found


def _same_file(given: str, recorded: str | None) -> bool:
    return recorded is not None and Path(given).resolve() == Path(recorded).resolve()


def _shown(value: object) -> str:
    return "nothing" if value is None else repr(value) if isinstance(value, str) else str(value)
