"""Calibrating an ``agent_judge``: the coding agent that judged a run's rows, measured against
the human labels those rows were given (``assay judge calibrate RUN_DIR``).

An agent judge reads a row's files, so its labelled examples are rows of a run that kept its
sandboxes (``assay run --keep-sandboxes`` or ``assay execute``): a store dataset whose
examples name a row folder of the run in the field ``folder`` (the labels saved in ``assay
view``'s review have it) and carry a human label. Each labelled row is judged again, as
``assay evaluate`` judges it (a copy of its kept sandbox, the run's model bridge and
containment; the run's files are not changed), by the row's own ``agent_judge`` criterion
as the run recorded it (``criterion``: which one, when its task has several). The verdict
is read as the row's outcome: it passes when the score reaches the criterion's
``pass_threshold``; the human label is read as a binary verdict (``pass``/``fail``,
``true``/``false``, ``yes``/``no``, ``1``/``0``). A judge error (no verdict submitted) is left
out of every number, counted, and listed; examples that name no row of the run are counted
apart. The report (agreement, Cohen's κ, TPR/TNR, the confusion and each disagreement:
:mod:`assay.judges.agreement`) is written to ``calibration.json``/``calibration.md`` and
stored under the judge's content hash (the rubric and agent block, as a graded row records
it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from assay.api.regrade import GradingSession, grading_session, task_of
from assay.criteria.agent_judge import AgentJudgeCriterion
from assay.criteria.registry import default_criteria
from assay.errors import StoreError, UsageError
from assay.judges.agreement import Compared, Value, agreement_report
from assay.judges.calibration import (
    CALIBRATION_SCHEMA_VERSION,
    CalibrationResult,
    Progress,
    each_in_order,
    first_few,
    human_value,
    write_calibration,
)
from assay.results.run_folder import load_task_json, scan_task_jsons
from assay.results.task_result import CriterionResult, EvaluationResult
from assay.spec.judge import VerdictSpec
from assay.spec.task import TaskDefinition
from assay.store import Store

BINARY = VerdictSpec(kind="binary")


@dataclass
class _Row:
    """One labelled row to judge again."""

    example_id: str
    human: Value
    path: Path
    result: EvaluationResult
    judge: AgentJudgeCriterion


@dataclass
class _Examples:
    rows: list[_Row] = field(default_factory=list)
    unlabelled: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)
    dataset: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Labels:
    """Where the human labels are: the store dataset ``dataset`` at ``version`` (the
    latest when ``None``), in its field ``label_field``."""

    dataset: str
    version: int | None
    label_field: str


async def calibrate_agent_judge(
    store: Store,
    run_dir: Path,
    labels: Labels,
    *,
    criterion: int | None,
    directory: Path,
    jobs: int = 4,
    progress: Progress | None = None,
) -> CalibrationResult:
    """Calibrate the ``agent_judge`` of ``run_dir``'s rows on ``labels`` (see the module
    docstring); writes ``calibration.json`` and ``calibration.md`` into ``directory`` and
    stores the calibration.

    Raises:
        StoreError: no such dataset or version; it has no ``folder`` or no ``label_field``;
            labels that are not binary (the first few named with their example ids).
        UsageError: no example names a row of the run; a labelled row has no
            ``agent_judge`` (or several, and ``criterion`` does not choose one: their
            positions are named); the run did not keep the rows' sandboxes.
        ModelError: the judge's model could not start.
    """
    found = _read_examples(store, run_dir, labels, criterion=criterion)
    async with grading_session(run_dir, jobs=jobs) as session:
        results = await _judge(session, found.rows, jobs=jobs, progress=progress)
        writer = session.writer
    report = writer.redact_data(
        _report(
            found, results, label_field=labels.label_field, store_url=store.url, run_dir=run_dir
        )
    )  # the store's copy too
    ref = found.rows[0].judge.judge_ref()
    record = store.add_calibration(
        {"judge_name": ref.name, "judge_version": None, "judge_hash": ref.content_hash,
         "dataset": labels.dataset, "dataset_version": found.dataset["version"],
         "dataset_hash": found.dataset["content_hash"], "label_field": labels.label_field},
        report,
    )  # fmt: skip
    report["calibration_id"] = record.calibration_id
    write_calibration(directory, report, writer=writer)
    return CalibrationResult(report, directory, record)


def _read_examples(
    store: Store, run_dir: Path, labels: Labels, *, criterion: int | None
) -> _Examples:
    dataset, label_field = labels.dataset, labels.label_field
    info, pinned = store.dataset(dataset), store.resolve(dataset, labels.version)
    for name, role in (("folder", "the run's row folder"), (label_field, "the human label")):
        if name not in info.schema.fields:
            raise StoreError(f"dataset '{dataset}' has no field '{name}' "
                             f"(fields: {', '.join(info.schema.fields)})", field=name,
                             hint=f"an agent judge's examples name {role}")  # fmt: skip
    rows = {path.parent.relative_to(run_dir).as_posix(): path
            for path in scan_task_jsons(run_dir)}  # fmt: skip
    found = _Examples(dataset={"name": dataset, "version": pinned.number,
                               "content_hash": pinned.content_hash,
                               "item_count": pinned.item_count})  # fmt: skip
    bad: list[str] = []
    registry = default_criteria()  # built once: the rows' tasks are read with it
    for example in store.iter_examples(dataset, pinned.number):
        label, folder = example.data.get(label_field), example.data.get("folder")
        if label is None:
            found.unlabelled.append(example.example_id)
            continue
        path = rows.get(str(folder))
        if path is None:
            found.elsewhere.append(example.example_id)
            continue
        try:
            human = human_value(BINARY, label)
        except ValueError as exc:
            bad.append(f"{example.example_id}: {exc}")
            continue
        result = load_task_json(path)
        folder_name = path.parent.relative_to(run_dir).as_posix()
        judge = _judge_of(task_of(result, registry), folder_name, criterion)
        found.rows.append(_Row(example.example_id, human, path, result, judge))
    _check(found, bad, dataset=f"{dataset}@{pinned.number}", label_field=label_field,
           run_dir=run_dir)  # fmt: skip
    return found


def _judge_of(task: TaskDefinition, folder: str, criterion: int | None) -> AgentJudgeCriterion:
    """The row's ``agent_judge`` as its task recorded it (``criterion``: its position among
    the task's criteria, from 0)."""
    specs = list(task.success_criteria)
    judges = [i for i, spec in enumerate(specs) if isinstance(spec, AgentJudgeCriterion)]
    if criterion is None and len(judges) == 1:
        return specs[judges[0]]  # type: ignore[return-value]
    if criterion is not None and criterion in judges:
        return specs[criterion]  # type: ignore[return-value]
    where = f"criteria {', '.join(map(str, judges))} are" if judges else "no criterion is an"
    raise UsageError(
        f"row {folder}: " + (f"criterion {criterion} is not an agent_judge; "
                             if criterion is not None else "") + f"{where} agent_judge",
        field="--criterion",
        hint="calibrate a run whose task has an agent_judge; choose one with --criterion N "
        "(its position in success_criteria, from 0)",
    )  # fmt: skip


def _check(
    found: _Examples, bad: list[str], *, dataset: str, label_field: str, run_dir: Path
) -> None:
    if bad:
        raise StoreError(
            f"{len(bad)} example(s) of {dataset} have a '{label_field}' that is not a binary "
            f"label: " + first_few(bad),
            field=label_field,
            hint="an agent judge's verdict is read as pass or fail: label pass/fail (or set "
            "a label to null to leave the row out)",
        )
    if not found.rows:
        raise UsageError(
            f"no labelled example of {dataset} names a row folder of the run {run_dir} "
            f"({len(found.elsewhere)} name another run's rows, {len(found.unlabelled)} have "
            "no label)",
            hint="calibrate on the labels given to this run's rows (assay view RUN_DIR, then "
            "review), or point at the run they were given to",
        )


async def _judge(
    session: GradingSession, rows: list[_Row], *, jobs: int, progress: Progress | None
) -> list[CriterionResult]:
    """Each row judged again by its agent judge, ``jobs`` at a time, in the rows' order."""

    async def one(row: _Row) -> CriterionResult:
        (judged,) = await session.grade(row.path, row.result, [row.judge])
        return judged

    return await each_in_order(rows, one, jobs=jobs, progress=progress)


def _report(
    found: _Examples,
    results: list[CriterionResult],
    *,
    label_field: str,
    store_url: str,
    run_dir: Path,
) -> dict[str, Any]:
    """``calibration.json``'s data, as an LLM judge's calibration has it."""
    judge = found.rows[0].judge
    compared, errors = [], []
    for row, result in zip(found.rows, results, strict=True):
        if result.graded:
            verdict = result.score >= judge.pass_threshold
            compared.append(Compared(row.example_id, row.human, verdict, result.details or ""))
        else:
            errors.append({"example_id": row.example_id, "error": result.error,
                           "raw": getattr(result, "raw", None)})  # fmt: skip
    ref = judge.judge_ref()
    report = {
        "schema_version": CALIBRATION_SCHEMA_VERSION,
        "created_at": datetime.now().astimezone().isoformat(),
        "judge": {
            "name": ref.name,
            "version": None,
            "content_hash": ref.content_hash,
            "source": f"agent_judge of {run_dir}",
            "model": ref.model,
            "verdict": f"binary (score ≥ pass_threshold {judge.pass_threshold:g})",
            "samples": 1,
        },
        "dataset": {**found.dataset, "store": store_url},
        "label_field": label_field,
        "output_source": f"run:{run_dir.name}",
        "rows_total": len(found.rows) + len(found.unlabelled) + len(found.elsewhere),
        "rows_unlabelled": len(found.unlabelled),
        "rows_elsewhere": len(found.elsewhere),
        "rows_judge_error": len(errors),
        **agreement_report(BINARY, compared),
        "judge_errors": errors,
        "unlabelled_example_ids": found.unlabelled,
        "judge_tokens": sum(getattr(r, "judge_tokens", 0) or 0 for r in results),
    }
    report["usable"] = report["rows_compared"] > 0
    if found.elsewhere:
        report["notes"].append(f"{len(found.elsewhere)} labelled example(s) name no row of "
                               "this run and were left out")  # fmt: skip
    return report


def run_folder(judge: str) -> Path | None:
    """``judge`` as a run folder (it holds a ``task.json`` row), else ``None`` (a judge file
    or name)."""
    path = Path(judge)
    if not path.is_dir():
        return None
    return path if next(iter(scan_task_jsons(path)), None) is not None else None
