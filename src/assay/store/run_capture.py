"""A run's row-tasks as dataset examples (``assay dataset add-run NAME RUN_DIR``).

One case per row-task replicate of the run (filtered: ``only_failures`` keeps rows that did
not pass and were graded or errored, ``suite`` one suite, ``variant`` one variant). A case
offers the sources (:mod:`assay.store.capture`): ``response`` (``response.txt``), ``trace``
(``trace.json``: the agent's spans, with its final answer on the ``invoke_agent`` span),
``prompt`` (the row's prompt), ``row`` (the whole row, JSON) and ``row.<field>``,
``status``, ``score`` (the weighted score), ``row_id``, ``task_id``, ``suite_id``,
``variant``, ``replicate``, ``model``, ``error``, and ``attr.<name>`` for every attribute of
the trace's spans (``attr.gen_ai.usage.input_tokens``, ``attr.assay.stop_reason``, …). Its
example id is the row id (the task id for a task without a dataset), with ``.<variant>.rNN``
added when the run has several variants or replicates of it.

A dataset that does not exist yet is created with the rows' fields (typed by their values,
``null`` as ``json``) and ``input``, ``actual_output`` and ``trace``; adding its cases back to
a task with ``agent: none`` grades the stored outputs again.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.errors import UsageError
from assay.results.io import PLAIN, Writer, read_json, read_text_as_written
from assay.results.run_folder import load_task_json, resolve_run_dir, task_json_paths
from assay.results.task_result import EvaluationResult
from assay.store.capture import Captured, CaptureResult, capture, parse_mapping, value_kind
from assay.store.schema import FieldType, Schema
from assay.store.store import Store, open_store
from assay.store.trace_cases import attributes

RUN_FIELDS: dict[str, FieldType] = {"input": "string", "actual_output": "string", "trace": "trace"}


def run_cases(
    run_dir: Path,
    *,
    only_failures: bool = False,
    suite: str | None = None,
    variant: str | None = None,
) -> list[Captured]:
    """The cases of the run in ``run_dir`` that pass the filters, in the run's order.

    Raises:
        UsageError: not a run directory, an invalid ``task.json``, or a ``suite``/``variant``
            the run does not have.
    """
    root = resolve_run_dir(run_dir)
    results = [(p, load_task_json(p)) for p in task_json_paths(root)]
    if not results:
        raise UsageError(f"no task.json under {run_dir}: is it a run directory?")
    _check_filter("suite", suite, {r.suite_id or r.task_id for _, r in results})
    _check_filter("variant", variant, {r.variant_id for _, r in results})
    chosen = [
        (path, result)
        for path, result in results
        if (suite is None or (result.suite_id or result.task_id) == suite)
        and (variant is None or result.variant_id == variant)
        and (not only_failures or result.final_status.category in ("failed", "error"))
    ]
    per_row = Counter((r.suite_id, r.row_id or r.task_id) for _, r in chosen)
    return [
        _case(
            path,
            result,
            root,
            plain=per_row[(result.suite_id, result.row_id or result.task_id)] == 1,
        )
        for path, result in chosen
    ]


def _check_filter(name: str, value: str | None, known: set[str]) -> None:
    if value is not None and value not in known:
        raise UsageError(f"the run has no {name} '{value}' ({name}s: {', '.join(sorted(known))})")


def _case(path: Path, result: EvaluationResult, root: Path, *, plain: bool) -> Captured:
    directory = path.parent
    trace_file = directory / "trace.json"
    row = result.row or {}
    values: dict[str, Any] = {
        "response": read_text_as_written(directory / "response.txt"),
        "prompt": result.task_config.resolved.get("initial_prompt"),
        "row": row,
        "status": result.final_status.value,
        "score": result.weighted_score,
        "row_id": result.row_id,
        "task_id": result.task_id,
        "suite_id": result.suite_id,
        "variant": result.variant_id,
        "replicate": result.replicate_index,
        "model": result.model_used,
        "error": result.error_message,
        **{f"row.{key}": value for key, value in row.items()},
    }
    if trace_file.is_file():
        values["trace"] = read_json(trace_file)
        values.update(attributes(values["trace"]))
    base = result.row_id or result.task_id
    example_id = base if plain else f"{base}.{result.variant_id}.r{result.replicate_index:02d}"
    return Captured(example_id, values, path.relative_to(root).as_posix())


def run_schema(cases: list[Captured], *, id_field: str = "id") -> Schema:
    """The schema a new dataset gets: every row field (typed by its first non-null value;
    ``json`` when always null), then ``input``, ``actual_output`` and ``trace``."""
    fields: dict[str, FieldType] = {}
    for case in cases:
        row = case.values.get("row") or {}
        for key, value in row.items():
            if key == id_field or key in RUN_FIELDS:
                continue
            if fields.get(key) in (None, "json") and value is not None:
                fields[key] = value_kind(value)
            fields.setdefault(key, "json")
    return Schema({**fields, **RUN_FIELDS})


def add_run(
    store: Store,
    name: str,
    run_dir: Path,
    *,
    mapping: dict[str, str] | None = None,
    only_failures: bool = False,
    suite: str | None = None,
    variant: str | None = None,
    writer: Writer = PLAIN,
) -> CaptureResult:
    """Add the run's cases to dataset ``name`` (created when missing) as one new version,
    through ``writer`` (its secrets redacted).

    Raises:
        UsageError: as :func:`run_cases`, or a bad mapping. StoreError: as
            :func:`assay.store.capture.capture`.
    """
    run_dir = resolve_run_dir(run_dir)  # the version records the run, not runs/latest
    cases = run_cases(run_dir, only_failures=only_failures, suite=suite, variant=variant)
    return capture(
        store,
        name,
        cases,
        mapping=mapping or {},
        default_schema=run_schema(cases),
        origin=str(run_dir),
        writer=writer,
    )


def add_run_to_dataset(
    name: str,
    run_dir: str | Path,
    *,
    mapping: Sequence[str] | dict[str, str] = (),
    only_failures: bool = False,
    suite: str | None = None,
    variant: str | None = None,
    store: str | None = None,
) -> CaptureResult:
    """Add the row-tasks of a run as examples of dataset ``name`` (created when missing),
    copying each row's trace into the store (``assay dataset add-run``). What is stored is
    redacted with the secrets of this process's environment.

    Args:
        mapping: ``FIELD=SOURCE`` items (or a dict); see this module's docstring.
        only_failures: only rows that did not pass (failed or errored).
        suite: only that suite.
        variant: only that variant.

    Raises:
        UsageError: not a run, an unknown suite or variant, a bad mapping. StoreError: a
            value that does not fit its field; nothing is added then.
    """
    fields = dict(mapping) if isinstance(mapping, dict) else parse_mapping(mapping)
    with open_store(store) as opened:
        return add_run(
            opened,
            name,
            Path(run_dir),
            mapping=fields,
            only_failures=only_failures,
            suite=suite,
            variant=variant,
            writer=Writer.from_environment(os.environ),
        )
