"""The rows of a ``qa:`` task: QA samples, their row ids, and their items per replicate.

Every row is validated with :func:`assay.qa.normalize_sample` (ToMEval's messages, with the
file and line). Row ids (the folder of each row-task):

- with an explicit ``dataset.id_field`` (or a store dataset), the row id is that field, checked
  as in any dataset task, and it is also the sample id;
- otherwise the sample id follows ToMEval: ``sample_id``, else ``meta.id``, else
  ``sample_{index}`` (0-based position in the whole dataset). A sample id that is not a valid
  folder name (CosmosQA's ``3BFF…##q1_a1##…``) gets the row id ``<sanitized>-<8 hex of its
  sha256>``; the sample id itself is kept unchanged in ``prediction.jsonl`` and the metrics.

Two rows with the same sample id are an error: their results could not be told apart.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, cast

from assay.agents.llm import Endpoint, model_key
from assay.data.rows import Rows
from assay.errors import DatasetError, TaskFileError
from assay.orchestration.loading.experiment import apply_mutations
from assay.providers.pool import ModelKey
from assay.qa import QaItem, QaSample, QaTemplates, build_item, normalize_sample, route
from assay.qa.schema import lookup, own_sample_id
from assay.spec.base import did_you_mean
from assay.spec.ids import ID_PATTERN, MAX_ID_LENGTH
from assay.spec.qa import QaConfig, QaJudge
from assay.spec.task import TaskDefinition

RESERVED = frozenset({"suite.json", "suite.md", "prediction.jsonl", "metrics.json"})
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")


def folder_id(sample_id: str) -> str:
    """``sample_id`` when it is a valid row id, else a sanitized form plus a short hash."""
    valid = ID_PATTERN.fullmatch(sample_id) and len(sample_id) <= MAX_ID_LENGTH
    if valid and sample_id not in RESERVED:
        return sample_id
    base = _UNSAFE.sub("_", sample_id).strip("._-")[:80] or "sample"
    digest = hashlib.sha256(sample_id.encode("utf-8")).hexdigest()[:8]
    return f"{base}-{digest}"


def explicit_ids(task: TaskDefinition) -> bool:
    """Row ids come from ``dataset.id_field`` (written by the user, or a store dataset);
    a ``qa:`` task's ``id_field: sample_id`` names the field QA reads anyway, so its ids
    follow the QA rules (``meta.id`` too, a sample id that is no folder name sanitized)."""
    spec = task.dataset
    assert spec is not None
    if spec.store is not None:
        return True
    return "id_field" in spec.model_fields_set and not (
        task.qa is not None and spec.id_field == "sample_id")  # fmt: skip


def qa_samples(
    rows: Rows, task: TaskDefinition, ids: Sequence[str] | None
) -> tuple[list[QaSample], list[str], list[str]]:
    """Validate every row as a QA sample.

    Args:
        rows: the dataset's rows, with their origins.
        task: the task (its ``task_id`` names errors).
        ids: the checked row ids when :func:`explicit_ids`, else ``None``. A store
            dataset's example ids only name the rows that carry no ``sample_id`` or
            ``meta.id`` of their own (unless the task sets ``dataset.id_field``), so a QA
            file added to the store keeps its sample ids, and with them its option order.

    Returns:
        ``(samples, row_ids, warnings)`` in dataset order.

    Raises:
        DatasetError: a row that is not a QA sample, or two rows with one sample id.
    """
    samples: list[QaSample] = []
    row_ids: list[str] = []
    first_seen: dict[str, int] = {}
    renamed = 0
    spec = task.dataset
    own_first = spec is not None and spec.store is not None and (
        "id_field" not in spec.model_fields_set)  # fmt: skip
    for index, row in enumerate(rows.items):
        file, line = rows.origin(index)
        sample = normalize_sample(row, index=index, file=file, line=line)
        if ids is not None and not (own_first and own_sample_id(row, sample.meta)):
            sample = replace(sample, sample_id=ids[index])
            row_id = ids[index]
        else:
            row_id = folder_id(sample.sample_id)
            renamed += row_id != sample.sample_id
        if sample.sample_id in first_seen:
            first = first_seen[sample.sample_id]
            first_file, first_line = rows.origin(first)
            place = f"{first_file}:{first_line}" if first_line else f"{first_file} rows[{first}]"
            raise DatasetError(
                f"Duplicate sample id for task '{task.task_id}': {sample.sample_id!r}",
                file=file,
                line=line,
                field=None if line else f"rows[{index}]",
                row_id=sample.sample_id,
                hint=f"first used at {place}; give every row a unique sample_id (or meta.id)",
            )
        first_seen[sample.sample_id] = index
        samples.append(sample)
        row_ids.append(row_id)
    _check_unique(row_ids, rows, task)
    warnings = []
    if renamed:
        pairs = zip(samples, row_ids, strict=True)
        example = next(s.sample_id for s, r in pairs if r != s.sample_id)
        warnings.append(
            f"{task.task_id}: {renamed} sample id(s) are not valid folder names "
            f"(e.g. {example!r}); their rows are stored under sanitized ids, and "
            "prediction.jsonl keeps the sample ids"
        )
    return samples, row_ids, warnings


def _check_unique(row_ids: list[str], rows: Rows, task: TaskDefinition) -> None:
    seen: dict[str, int] = {}
    for index, row_id in enumerate(row_ids):
        if row_id in seen:
            file, line = rows.origin(index)
            raise DatasetError(
                f"two samples of task '{task.task_id}' map to the row id {row_id!r}",
                file=file,
                line=line,
                hint="give the rows distinct sample_id values made of letters, digits, _ . -",
            )
        seen[row_id] = index


def templates_of(config: QaConfig, *, file: str | None = None) -> QaTemplates:
    """The prompt templates of ``config`` (defaults with its overrides).

    Raises:
        TaskFileError: an unknown template, an unknown slot, a missing required slot.
    """
    return QaTemplates.from_mapping(config.templates, file=file)


def dataset_name(task: TaskDefinition) -> str:
    """The name that seeds the option shuffle: ``qa.dataset_name``, else the suite's id."""
    assert task.qa is not None
    return task.qa.dataset_name or task.suite_id or task.task_id


def make_item(
    sample: QaSample, task: TaskDefinition, replicate: int, templates: QaTemplates
) -> QaItem:
    """The item of ``sample`` in ``replicate`` under ``task``'s ``qa:`` block."""
    assert task.qa is not None
    mutations = task.qa.prompt_mutations
    return build_item(
        sample,
        dataset=dataset_name(task),
        replicate=replicate,
        templates=templates,
        shuffle=task.qa.shuffle,
        as_open=task.qa.as_open,
        mutate=partial(apply_mutations, mutations=mutations) if mutations else None,
    )


def check_items(
    samples: Sequence[tuple[QaSample, Any]],
    task: TaskDefinition,
    *,
    file: str,
    line_of: Any,
) -> None:
    """Render every selected sample once, so a template that drops a story or a sample with
    more than 26 options is refused before any row runs.

    Args:
        samples: ``(sample, (file, line))`` of each selected row.
        task: the task as a variant runs it.
        file: the task file (named by template errors).
        line_of: ``loc -> line`` of the task file.

    Raises:
        TaskFileError: a template problem; DatasetError: too many options.
    """
    assert task.qa is not None
    try:
        templates = templates_of(task.qa, file=file)
        for sample, (row_file, row_line) in samples:
            try:
                make_item(sample, task, 0, templates)
            except DatasetError as exc:
                raise DatasetError(exc.message, file=row_file, line=row_line,
                                   row_id=sample.sample_id, hint=exc.hint) from None  # fmt: skip
    except TaskFileError as exc:
        loc = tuple(part for part in (exc.field or "qa").split("."))
        raise TaskFileError(
            exc.message, file=file, line=line_of(loc), field=exc.field, hint=exc.hint
        ) from None


def group_by_warnings(samples: Sequence[QaSample], qa: QaConfig) -> list[str]:
    """One warning per ``qa.group_by`` path that no selected sample has a value at (a typo
    puts every row in the group ``unknown``), and per path holding objects (grouped by their
    text)."""
    views = [_record_view(sample) for sample in samples]
    warnings = []
    for path in qa.group_by:
        values = [lookup(view, path) for view in views]
        present = [value for value in values if value not in (None, "", [])]
        if views and not present:
            known = {f"meta.{key}" for view in views for key in view["meta"]}
            hint = did_you_mean(path, known)
            message = f"qa.group_by {path}: no selected row has this field, so every row is in "
            warnings.append(message + "the group 'unknown'" + (f"; {hint}" if hint else ""))
        objects = [value for value in present if isinstance(value, dict)]
        if objects:
            warnings.append(f"qa.group_by {path}: {len(objects)} row(s) hold an object there "
                            f"(e.g. {objects[0]!r}), grouped by its text")  # fmt: skip
    return warnings


def _record_view(sample: QaSample) -> dict[str, Any]:
    """The fields a prediction record has for ``sample`` that do not depend on a replicate."""
    return {
        "sample_id": sample.sample_id, "sample_index": sample.index, "story": sample.story,
        "question": sample.question, "correct_answers": list(sample.correct_answers),
        "wrong_answers": list(sample.wrong_answers), "meta": sample.meta,
        "prompt_type": route(sample),
    }  # fmt: skip


def judge_key(judge: QaJudge, base_dir: Path) -> ModelKey:
    """The pool key of a ``qa.judge`` model (``base_dir``: the task file's folder; a judge
    asset's model is relative to its own folder).

    Raises:
        ValueError: ``judge`` names a judge asset that was not resolved (by a plan).
    """
    endpoint = judge.endpoint
    if endpoint is None:
        raise ValueError(f"qa.judge {judge.judge!r} was not resolved (grade through a plan)")
    folder = Path(judge.asset.base_dir) if judge.asset is not None else base_dir
    return model_key(cast(Endpoint, endpoint), folder)  # a model is given: _model_or_asset
