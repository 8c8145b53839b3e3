"""Calibrating a judge: run it over a store dataset whose rows carry a human label, and
measure how often, and how, it agrees (``assay judge calibrate``).

Each example is one case: a trace-backed row is judged on its stored trace's output (a
session-backed row on its whole conversation, every trace in order), with the transcript
when the rubric places ``${transcript}``; an example-backed row on the field that holds its
output (``output_field``). The rubric's ``${row.x}`` reads the example's fields; an example
whose ``row`` field is an object (a label given in ``assay view`` keeps the run's dataset
row there) reads that object's fields first, so the judge that graded the run reads its
labels as it read the run. The human label (``label_field``) is read as a verdict of the
judge's kind: ``true/false``, ``yes/no``, ``pass/fail``, ``correct/incorrect``, ``1/0`` for
binary judges; one of the labels (any case) for label judges; a number on the scale for
scale judges. A row without a label (``null``) is left out and counted; a label that is not
a verdict of the judge's kind is an error naming the example, the field and the value. A
verdict that cannot be read is a ``judge_error``: left out of every number, counted, and
listed with its raw reply.

The report (:mod:`assay.judges.agreement`) is written to ``calibration.json`` and
``calibration.md`` and stored with the judge's name, version and content hash and the
dataset version it measured.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from assay.agents.llm import model_key
from assay.data.substitute import PlaceholderKeyError
from assay.errors import StoreError
from assay.judges.agreement import Compared, Value, agreement_report
from assay.judges.assets import usable
from assay.judges.calibration_md import render_calibration
from assay.judges.grade import JudgeOutcome, judge_case
from assay.judges.prompt import JudgeCase, fill, transcript_text
from assay.providers.base import Model
from assay.providers.pool import ModelPool, PoolSettings, default_registry
from assay.providers.retry import RetryPolicy
from assay.results.io import Writer
from assay.results.transcript_otlp import from_session, from_trace
from assay.spec.judge import JudgeAsset, VerdictSpec

if TYPE_CHECKING:
    from assay.store import Store
    from assay.store.judges import CalibrationRecord

CALIBRATION_SCHEMA_VERSION = "1"
TRUE_WORDS = frozenset({"true", "yes", "y", "pass", "passed", "correct", "1", "good"})
FALSE_WORDS = frozenset({"false", "no", "n", "fail", "failed", "incorrect", "0", "bad"})
BAD_LABELS_SHOWN = 5
Progress = Callable[[int, int], None]
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Case:
    """One labelled example to judge."""

    example_id: str
    human: Value
    case: JudgeCase


@dataclass
class Cases:
    """The examples of one dataset version, read for a calibration.

    Attributes:
        cases: the labelled examples, in dataset order.
        unlabelled: ids of examples whose label is ``null``.
        reviewed_twice: see the field.
        source: where the judged output came from (``trace``, ``session`` or ``field:X``).
        dataset: ``{name, version, content_hash, item_count}``.
    """

    cases: list[Case] = field(default_factory=list)
    unlabelled: list[str] = field(default_factory=list)
    source: str = ""
    dataset: dict[str, Any] = field(default_factory=dict)
    reviewed_twice: int = 0
    """Rows of a viewer's labels (``run`` and ``folder`` fields) labelled by more than one
    reviewer: each label is a case of its own."""


def human_value(verdict: VerdictSpec, value: Any) -> Value:
    """A human label as a verdict of ``verdict``'s kind.

    Raises:
        ValueError: why the label is not one.
    """
    if verdict.kind == "binary":
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float) and value in (0, 1):
            return bool(value)
        text = str(value).strip().casefold()
        if text in TRUE_WORDS or text in FALSE_WORDS:
            return text in TRUE_WORDS
        raise ValueError(f"{value!r} is not a binary label (true/false, yes/no, pass/fail, 1/0)")
    if verdict.kind == "labels":
        labels = verdict.labels or []
        text = str(value).strip()
        matches = [label for label in labels if label.casefold() == text.casefold()]
        if text in labels:
            return text
        if len(matches) == 1:
            return matches[0]
        raise ValueError(f"{value!r} is not one of the judge's labels {labels}")
    number = _number(value)
    assert verdict.min is not None and verdict.max is not None
    if not verdict.min <= number <= verdict.max:
        raise ValueError(
            f"{number:g} is outside the judge's scale {verdict.min:g}..{verdict.max:g}"
        )
    return number


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number on the scale")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a number on the scale") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{value!r} is not a finite number")
    return number


def read_cases(
    store: Store,
    asset: JudgeAsset,
    *,
    dataset: str,
    version: int | None,
    label_field: str,
    output_field: str | None,
) -> Cases:
    """The labelled examples of ``dataset@version`` (the latest when ``None``) as cases.

    Raises:
        StoreError: no such dataset or version, a field that is not in its schema, no output
            to judge (no trace or session field and no ``output_field``), labels that are
            not verdicts of the judge's kind, or examples without a field the rubric's
            ``${row.x}`` names (the first few named with their example ids).
    """
    info = store.dataset(dataset)
    pinned = store.resolve(dataset, version)
    schema = info.schema
    _has_field(dataset, schema.fields, label_field, "label")
    pointer = schema.pointer_field
    if output_field is not None:
        _has_field(dataset, schema.fields, output_field, "output")
        source = f"field:{output_field}"
    elif pointer is not None:
        source = schema.fields[pointer]
    else:
        raise StoreError(
            f"dataset '{dataset}' has no trace or session field, so there is no stored output "
            "to judge",
            hint="name the field that holds each row's output with --output-field FIELD",
        )
    rubric = asset.definition.rubric
    wants_transcript = "${transcript}" in rubric
    found = Cases(
        source=source,
        dataset={
            "name": dataset,
            "version": pinned.number,
            "content_hash": pinned.content_hash,
            "item_count": pinned.item_count,
        },
    )
    bad: list[str] = []
    unfilled: list[str] = []
    rows: dict[tuple[Any, Any], int] = {}  # a viewer's labels: (run, folder) → labels
    for example in store.iter_examples(dataset, pinned.number):
        label = example.data.get(label_field)
        if label is None:
            found.unlabelled.append(example.example_id)
            continue
        try:
            human = human_value(asset.definition.verdict, label)
        except ValueError as exc:
            bad.append(f"{example.example_id}: {exc}")
            continue
        case = _case(store, example.data, source, pointer, output_field, wants_transcript)
        try:
            fill(rubric, case)
        except PlaceholderKeyError as exc:
            unfilled.append(f"{example.example_id}: {exc}")
            continue
        found.cases.append(Case(example.example_id, human, case))
        row = (example.data.get("run"), example.data.get("folder"))
        if None not in row:
            rows[row] = rows.get(row, 0) + 1
    if unfilled:
        raise StoreError(
            f"{len(unfilled)} example(s) of {dataset}@{pinned.number} cannot fill the rubric "
            f"of judge {asset.name}: " + first_few(unfilled),
            hint="give the examples the fields the rubric's ${row.x} name (an object field "
            "'row' counts too), or calibrate a judge whose rubric names only their fields",
        )  # fmt: skip
    if bad:
        raise StoreError(
            f"{len(bad)} example(s) of {dataset}@{pinned.number} have a '{label_field}' that "
            f"is not a verdict of judge {asset.name} ({asset.definition.verdict.describe()}): "
            + first_few(bad),
            field=label_field,
            hint="fix the labels (or set them to null to leave a row out), or calibrate a "
            "judge whose verdict fits them",
        )
    found.reviewed_twice = sum(1 for count in rows.values() if count > 1)
    return found


def first_few(problems: Sequence[str]) -> str:
    """The first :data:`BAD_LABELS_SHOWN` of ``problems``, joined, and how many more."""
    more = len(problems) - BAD_LABELS_SHOWN
    return "; ".join(problems[:BAD_LABELS_SHOWN]) + (f" (and {more} more)" if more > 0 else "")


def _has_field(dataset: str, fields: Mapping[str, str], name: str, role: str) -> None:
    if name not in fields:
        raise StoreError(
            f"dataset '{dataset}' has no field '{name}' (fields: {', '.join(fields)})",
            field=name,
            hint=f"name the field that holds the {role}",
        )


def _case(
    store: Store,
    data: dict[str, Any],
    source: str,
    pointer: str | None,
    output_field: str | None,
    wants_transcript: bool,
) -> JudgeCase:
    from assay.store.traces import conversation, final_output

    own = data.get("row")
    row = {**data, **own} if isinstance(own, dict) else data  # a review's label: its run row
    if output_field is not None:
        value = data.get(output_field)
        text = value if isinstance(value, str) or value is None else json.dumps(value)
        return JudgeCase(row=row, response=text)
    assert pointer is not None
    trace = store.get_trace(str(data[pointer]))
    session = source == "session"
    response = conversation(trace) if session else final_output(trace)
    transcript = None
    if wants_transcript:
        transcript = transcript_text(from_session(trace) if session else from_trace(trace))
    return JudgeCase(row=row, response=response, transcript=transcript)


async def judge_cases(
    model: Model,
    asset: JudgeAsset,
    cases: list[Case],
    *,
    jobs: int,
    progress: Progress | None = None,
) -> list[JudgeOutcome]:
    """Judge every case, ``jobs`` at a time; outcomes in the cases' order."""

    async def one(case: Case) -> JudgeOutcome:
        return await judge_case(model, asset.definition, case.case)

    return await each_in_order(cases, one, jobs=jobs, progress=progress)


async def each_in_order(
    items: Sequence[T],
    judge: Callable[[T], Awaitable[R]],
    *,
    jobs: int,
    progress: Progress | None = None,
) -> list[R]:
    """``judge(item)`` for every item, ``jobs`` at a time, the answers in the items' order;
    ``progress(done, total)`` after each."""
    slots = asyncio.Semaphore(max(1, jobs))
    done = 0

    async def one(item: T) -> R:
        nonlocal done
        async with slots:
            answer = await judge(item)
        done += 1
        if progress is not None:
            progress(done, len(items))
        return answer

    return list(await asyncio.gather(*(one(item) for item in items)))


def build_report(
    asset: JudgeAsset,
    cases: Cases,
    outcomes: list[JudgeOutcome],
    *,
    label_field: str,
    store_url: str,
) -> dict[str, Any]:
    """``calibration.json``'s data."""
    definition = asset.definition
    compared = [
        Compared(c.example_id, c.human, o.value, o.reason or "")
        for c, o in zip(cases.cases, outcomes, strict=True)
        if o.value is not None
    ]
    errors = [
        {"example_id": c.example_id, "error": o.error, "raw": o.raw}
        for c, o in zip(cases.cases, outcomes, strict=True)
        if o.value is None
    ]
    tokens = sum(o.usage.total_tokens for o in outcomes)
    report = {
        "schema_version": CALIBRATION_SCHEMA_VERSION,
        "created_at": datetime.now().astimezone().isoformat(),
        "judge": {
            "name": asset.name,
            "version": asset.version,
            "content_hash": asset.content_hash,
            "source": asset.source,
            "model": definition.model,
            "verdict": definition.verdict.describe(),
            "samples": definition.samples,
        },
        "dataset": {**cases.dataset, "store": store_url},
        "label_field": label_field,
        "output_source": cases.source,
        "rows_total": len(cases.cases) + len(cases.unlabelled),
        "rows_unlabelled": len(cases.unlabelled),
        "rows_judge_error": len(errors),
        **agreement_report(definition.verdict, compared),
        "judge_errors": errors,
        "unlabelled_example_ids": cases.unlabelled,
        "judge_tokens": tokens,
    }
    if cases.reviewed_twice:  # the numbers count labels, not rows
        report["rows_reviewed_twice"] = cases.reviewed_twice
        report["notes"] = [*report.get("notes", []), (
            f"{cases.reviewed_twice} row(s) carry the labels of several reviewers: each label "
            "is compared as a case of its own, so such a row counts once per reviewer and the "
            "intervals take its labels as independent (they are too narrow); calibrate on one "
            "reviewer's labels for numbers over rows")]  # fmt: skip
    return report


@dataclass(frozen=True)
class CalibrationResult:
    """A finished calibration: its report, where it was written, and its stored record."""

    report: dict[str, Any]
    directory: Path
    record: CalibrationRecord


async def calibrate(
    store: Store,
    asset: JudgeAsset,
    *,
    dataset: str,
    version: int | None,
    label_field: str,
    output_field: str | None,
    directory: Path,
    jobs: int = 4,
    max_retries: int = 4,
    progress: Progress | None = None,
) -> CalibrationResult:
    """Calibrate ``asset`` on ``dataset@version``: judge, measure, write ``calibration.json``
    and ``calibration.md`` into ``directory``, and store the calibration.

    Raises:
        StoreError: as :func:`read_cases`. UsageError: the judge's model cannot start
            (unknown provider, missing key, mock script or weights). ModelError: it failed to
            start.
    """
    cases = read_cases(
        store,
        asset,
        dataset=dataset,
        version=version,
        label_field=label_field,
        output_field=output_field,
    )
    pool = ModelPool(
        default_registry(),
        PoolSettings(parallel=max(1, jobs), retry=RetryPolicy(max_retries=max_retries)),
    )
    key = model_key(asset.definition, Path(asset.base_dir))
    pool.registry.preflight(key)
    try:
        await pool.start([key])
        outcomes = await judge_cases(
            pool.get(key), asset, cases.cases, jobs=jobs, progress=progress
        )
    finally:
        await pool.aclose()
    writer = calibration_writer(asset, os.environ)
    # stored as written: a reason or raw reply that quotes a secret is redacted in the store too
    report = writer.redact_data(
        build_report(asset, cases, outcomes, label_field=label_field, store_url=store.url)
    )
    _mark_usable(report, store, asset)
    record = store.add_calibration(
        {
            "judge_name": asset.name,
            "judge_version": asset.version,
            "judge_hash": asset.content_hash,
            "dataset": dataset,
            "dataset_version": cases.dataset["version"],
            "dataset_hash": cases.dataset["content_hash"],
            "label_field": label_field,
        },
        report,
    )
    report["calibration_id"] = record.calibration_id
    write_calibration(directory, report, writer=writer)
    return CalibrationResult(report, directory, record)


def _mark_usable(report: dict[str, Any], store: Store, asset: JudgeAsset) -> None:
    """Set ``report["usable"]``: a calibration that compared no row is stored marked
    unusable, is never chosen as the judge's calibration, and its notes say so (and which
    calibration the judge keeps)."""
    report["usable"] = usable(report)
    if report["usable"]:
        return
    kept = [c for c in store.calibrations(judge_hash=asset.content_hash) if usable(c.report)]
    keeps = (
        f"the judge keeps calibration {kept[0].calibration_id} "
        f"({kept[0].report.get('rows_compared')} rows compared)"
        if kept
        else "the judge stays uncalibrated"
    )
    report.setdefault("notes", []).insert(
        0,
        "nothing was compared (0 rows with both a human label and a judge verdict): this "
        f"calibration is stored marked unusable and never corrects pass rates; {keeps}",
    )


def calibration_writer(asset: JudgeAsset, environ: Mapping[str, str]) -> Writer:
    """The writer of a calibration's files: it redacts the secrets of ``environ`` (see
    :mod:`assay.results.secrets`) and of the judge's ``api_key_env``."""
    names = [asset.definition.api_key_env] if asset.definition.api_key_env else []
    return Writer.from_environment(environ, names=names)


def write_calibration(directory: Path, report: dict[str, Any], *, writer: Writer) -> None:
    """Write ``calibration.json`` and ``calibration.md`` (each atomically, through
    ``writer``: a reason or a raw reply that quotes a secret is written redacted)."""
    writer.json(directory / "calibration.json", report)
    writer.text(directory / "calibration.md", render_calibration(report))
