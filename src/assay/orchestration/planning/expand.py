"""``expand_dataset``: a task with ``dataset:`` → one row-task per selected row.

Exactly as Coder Eval's DATASETS.md specifies (``reference/000_5cd227a88a34738f.txt``,
``reference/originals.md`` §1.2): load the rows (paths concatenated in order) → empty check →
row ids over **all** rows (field present, pattern, unique) → placeholders over all rows
(field present, scalar value) → selection → one row-task per row with
``task_id = <task_id>/<row_id>``, ``suite_id = <task_id>``, ``row_id``.

Row-tasks are light: the substitution into ``initial_prompt`` and ``success_criteria``
happens in :meth:`RowTask.resolve`, when the row runs. Criteria whose substituted fields are
validated (a ``path``, a regex) are resolved for every selected row here, so a bad value is
a load-time error in ``plan`` and ``run`` alike.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError

from assay.data.hashing import files_hash, row_hash, rows_hash
from assay.data.lazy import MadeWhenRead
from assay.data.rows import Packed, Rows, check_inline_rows, load_rows, unpack_row
from assay.data.select import Selection, SelectionRequest, select_rows
from assay.data.substitute import (
    PLACEHOLDER,
    PlaceholderKeyError,
    PlaceholderTypeError,
    fields_in,
    fields_in_tree,
    scalar_text,
    substitute,
    substitute_tree,
    text_fields_in_tree,
    value_fields_in_tree,
)
from assay.errors import DatasetError, SelectionError, StoreError
from assay.metrics.clustered import QA_CLUSTER_FIELD, field_value
from assay.orchestration.loading.qa_rows import (
    check_items,
    explicit_ids,
    group_by_warnings,
    make_item,
    qa_samples,
    templates_of,
)
from assay.orchestration.loading.store_rows import StoreSource, read_store_rows
from assay.orchestration.loading.task_loader import LoadedTask
from assay.qa import QaItem, QaSample
from assay.results.secrets import clip_head
from assay.results.suite import DatasetRecord, FileRecord, SelectionRecord
from assay.spec.criteria import ClassificationMatch, CriterionSpec
from assay.spec.ids import ID_PATTERN, MAX_ID_LENGTH, RESERVED_ROW_IDS, row_id_problem
from assay.spec.run_names import CASE_CLASH_CONSEQUENCE, case_clash_text, case_clashes
from assay.spec.source import field_loc
from assay.spec.task import DatasetSpec, TaskDefinition

_VALIDATED_FIELDS = (  # every field with a check of its own (a path that leaves, a pattern)
    "path",
    "rcfile",
    "log",
    "files",
    "agent_file",
    "reference_file",
    "agent_name",
    "model",
    "patterns",
    "expected",
    "expected_stdout",
    "includes",
    "excludes",
    "command",
    "pattern",
    "command_pattern",
    "exclude_pattern",
    "arguments_pattern",
    "assertions",
    "json_schema",
    "skill_name",
    "args",
)


@dataclass(frozen=True)
class CriterionTemplate:
    """A criterion before substitution: its raw fields and whether they need re-validation."""

    spec: CriterionSpec
    raw: dict[str, Any]
    has_placeholders: bool
    needs_validation: bool

    @classmethod
    def of(cls, spec: CriterionSpec) -> CriterionTemplate:
        """Analyse ``spec`` once per task."""
        raw = spec.model_dump(exclude_unset=True)
        raw["type"] = spec.type
        placeholders = bool(fields_in_tree(raw))
        validated = any(fields_in_tree(raw.get(name)) for name in _VALIDATED_FIELDS)
        return cls(spec, raw, placeholders, validated)

    def resolve(self, row: dict[str, Any]) -> CriterionSpec:
        """The criterion for ``row``.

        Raises:
            PlaceholderKeyError, PlaceholderTypeError: see :func:`scalar_text`.
            ValidationError: a substituted value is invalid (a path out of the sandbox, a
                bad regex).
        """
        if not self.has_placeholders:
            return self.spec
        late = self.spec.late_fields
        data = substitute_tree({k: v for k, v in self.raw.items() if k not in late}, row,
                               value_keys=self.spec.value_keys)  # fmt: skip
        changed = {k: v for k, v in data.items() if k != "type" and v != self.raw.get(k)}
        if self.needs_validation or any(_nested(v) for v in changed.values()):
            return type(self.spec).model_validate({**self.raw, **data})
        return self.spec.model_copy(update=changed)


def _nested(value: Any) -> bool:
    """A substituted value that holds a nested model's fields (validated, not copied in)."""
    return isinstance(value, dict) or (isinstance(value, list) and
                                       any(isinstance(v, dict) for v in value))  # fmt: skip


@dataclass(frozen=True, slots=True)
class RowTask:
    """One row of a dataset task (or a task without a dataset, when ``row`` is ``None``).

    The row is kept packed (compact JSON, :func:`assay.data.rows.pack_row`) and decoded
    when read: a plan holds every selected row until the run ends."""

    source: LoadedTask
    templates: tuple[CriterionTemplate, ...]
    row_id: str | None = None
    row_index: int | None = None
    packed: Packed | None = None
    store: StoreSource | None = None
    qa: QaSample | None = None

    @property
    def row(self) -> dict[str, Any] | None:
        """The row (a new dict each time), or ``None`` for a task without a dataset."""
        return unpack_row(self.packed) if self.packed is not None else None

    @property
    def trace_id(self) -> str | None:
        """The id of the stored trace (or session) this row points to, if any."""
        row = self.row
        if self.store is None or self.store.pointer_field is None or row is None:
            return None
        value = row.get(self.store.pointer_field)
        return value if isinstance(value, str) and value else None

    @property
    def task_id(self) -> str:
        """``<task_id>/<row_id>``, or the task's id without a dataset."""
        base = self.source.definition.task_id
        return f"{base}/{self.row_id}" if self.row_id is not None else base

    @property
    def suite_id(self) -> str | None:
        """The task file's ``task_id`` for a row-task, else ``None``."""
        return self.source.definition.task_id if self.row_id is not None else None

    def qa_item(self, variant: TaskDefinition | None = None, replicate: int = 0) -> QaItem | None:
        """The QA item of this row in ``replicate`` (its prompt and shuffled options), or
        ``None`` for a row of a task without ``qa:``."""
        task = variant or self.source.definition
        if self.qa is None or task.qa is None:
            return None
        named = task.model_copy(update={"suite_id": self.source.definition.task_id})
        return make_item(self.qa, named, replicate, templates_of(task.qa))

    def resolve(self, variant: TaskDefinition | None = None, replicate: int = 0) -> TaskDefinition:
        """The row-task as it runs: placeholders substituted, ``dataset`` cleared; a QA row's
        prompt is built for ``replicate``.

        Args:
            variant: the task as a variant merged it (its prompt and agent); the criteria
                are always the task file's.
            replicate: 0-based; the option order of a QA row depends on it.
        """
        task = variant or self.source.definition
        row = self.row
        if row is None:
            return task
        item = self.qa_item(variant, replicate)
        prompt = item.prompt if item is not None else task.initial_prompt
        if item is None and prompt is not None:
            prompt = substitute(prompt, row)
        return task.model_copy(
            update={
                "task_id": self.task_id,
                "suite_id": self.source.definition.task_id,
                "row_id": self.row_id,
                "dataset": None,
                "initial_prompt": prompt,
                "success_criteria": [t.resolve(row) for t in self.templates],
            }
        )


class RowTasks(MadeWhenRead[RowTask]):
    """The row-tasks of a task file's selected rows, each made when read.

    A plan keeps the selection (an 8-byte position a row) and the dataset's rows
    (:class:`~assay.data.rows.RowList`, on disk past a megabyte), not a row-task per row, so
    its memory does not grow with the rows; each read decodes the row again.
    """

    def __init__(self, loaded: LoadedTask, templates: tuple[CriterionTemplate, ...], rows: Rows,
                 indexes: Iterable[int], ids: Sequence[str], *, store: StoreSource | None = None,
                 samples: Sequence[QaSample | None] | None = None) -> None:  # fmt: skip
        self.loaded, self.templates, self.rows = loaded, templates, rows
        self.indexes = array("q", indexes)
        self.ids, self.store, self.samples = ids, store, samples

    def __len__(self) -> int:
        return len(self.indexes)

    def _at(self, position: int) -> RowTask:
        return self._make(self.indexes[position])

    def __iter__(self) -> Iterator[RowTask]:
        rows = self.rows.items.iter_packed(self.indexes)  # read in blocks, in order
        for index, packed in zip(self.indexes, rows, strict=True):
            yield self._make(index, packed)

    def _make(self, index: int, packed: Packed | None = None) -> RowTask:
        sample = self.samples[index] if self.samples is not None else None
        if packed is None:
            packed = self.rows.items.packed(index)
        return RowTask(self.loaded, self.templates, self.ids[index], index, packed,
                       self.store, sample)  # fmt: skip


@dataclass
class Expansion:
    """A task file's row-tasks, with the rows they came from and the selection made."""

    task: LoadedTask
    row_tasks: Sequence[RowTask]
    rows: Rows | None = None
    selection: Selection | None = None
    warnings: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    store: StoreSource | None = None

    @property
    def id_field(self) -> str:
        """The field the row ids came from: ``dataset.id_field``, or a QA dataset's
        ``sample_id`` (``meta.id``) when the task sets none."""
        task = self.task.definition
        assert task.dataset is not None
        return task.dataset.id_field if task.qa is None or explicit_ids(task) else "sample_id"

    @property
    def dataset_record(self) -> DatasetRecord | None:
        """Where the rows came from, for ``suite.json`` and ``run.json``."""
        spec = self.task.definition.dataset
        if spec is None:
            return None
        if self.store is not None:
            version = self.store.version
            return DatasetRecord(source="store", id_field=self.id_field, store=self.store.name,
                                 cluster_field=cluster_field(self.task.definition),
                                 store_url=self.store.shown_url, version=version.number,
                                 content_hash=version.content_hash,
                                 item_count=version.item_count)  # fmt: skip
        if spec.rows is not None:
            return DatasetRecord(source="rows", id_field=self.id_field,
                                 cluster_field=cluster_field(self.task.definition),
                                 content_hash=rows_hash(spec.rows),
                                 item_count=len(spec.rows))  # fmt: skip
        files = [FileRecord(path=raw, sha256=source.sha256 or "")
                 for raw, source in zip(spec.paths or [], self.rows.sources if self.rows else [],
                                        strict=False)]  # fmt: skip
        return DatasetRecord(
            source="paths", paths=list(spec.paths or []), id_field=self.id_field, files=files,
            cluster_field=cluster_field(self.task.definition),
            content_hash=files_hash([f.sha256 for f in files]) if files else None,
            item_count=len(self.rows) if self.rows is not None else None,
        )  # fmt: skip

    def selection_record(
        self, request: SelectionRequest, *, rows_file: str | None = None
    ) -> SelectionRecord | None:
        """The selection made, with the selected row ids (dataset order) and hashes; with
        ``rows_file``, without them (a run lists them in that file: :meth:`selected_rows`)."""
        if self.selection is None:
            return None
        listed = rows_file is None
        return SelectionRecord(
            rows_in_dataset=self.selection.rows_in_dataset,
            rows_selected=len(self.row_tasks),
            applied=self.selection.applied,
            sample=request.sample,
            sample_per_stratum=request.sample_per_stratum
            if request.sample_per_stratum is not None
            else request.yaml_sample_per_stratum,
            split=request.split,
            stratify_field=request.stratify_field,
            stratified_seed=self.selection.stratified_seed,
            seed_was_drawn=self.selection.seed_was_drawn,
            row_ids=[t.row_id for t in self.row_tasks if t.row_id is not None] if listed else [],
            row_hashes=self.row_hashes() if listed else {},
            rows_file=rows_file,
        )

    def selected_rows(self) -> Iterator[tuple[str, str]]:
        """``(row id, content hash)`` of each selected row, in dataset order, one at a time
        (:func:`assay.data.hashing.row_hash`)."""
        for row_task in self.row_tasks:
            row = row_task.row
            if row_task.row_id is not None and row is not None:
                yield row_task.row_id, row_hash(row)

    def row_hashes(self) -> dict[str, str]:
        """Each selected row's content hash (:func:`assay.data.hashing.row_hash`), by id."""
        return dict(self.selected_rows())


@dataclass(frozen=True)
class Selectors:
    """Row selectors from the command line."""

    sample: int | None = None
    sample_per_stratum: int | None = None
    split: str | None = None


def selection_request(task: TaskDefinition, selectors: Selectors) -> SelectionRequest:
    """Combine CLI selectors with the task's dataset block."""
    spec = task.dataset
    assert spec is not None
    return SelectionRequest(
        sample=selectors.sample,
        sample_per_stratum=selectors.sample_per_stratum,
        split=selectors.split,
        yaml_sample_per_stratum=spec.sample_per_stratum,
        stratify_field=spec.stratify_field,
        split_field=spec.split_field,
        sample_seed=spec.sample_seed,
    )


def expand_dataset(
    loaded: LoadedTask,
    selectors: Selectors | None = None,
    *,
    fixed_row_ids: list[str] | None = None,
    store_url: str | None = None,
    store_version: int | None = None,
    missing_ok: bool = False,
) -> Expansion:
    """Fan ``loaded`` out over its dataset; a task without one gives one row-task.

    Args:
        loaded: the task file.
        selectors: ``--sample``, ``--sample-per-stratum``, ``--split``.
        fixed_row_ids: select exactly these rows instead (a resumed run's recorded selection,
            so even an unseeded sample comes back the same).
        store_url: the store for ``dataset.store`` (``None``: ``$ASSAY_STORE`` or the default).
        store_version: read this version of a store dataset (a resumed run's recorded one)
            instead of ``dataset.version`` or the latest.
        missing_ok: a fixed row id that is no longer in the dataset is listed in
            ``selection.missing_ids`` rather than raised (checking a run's data).

    Raises:
        DatasetError: unreadable rows, an empty dataset, a bad or duplicate row id, a
            placeholder naming a missing field or a non-scalar value.
        SelectionError: ``--split`` names a split no labelled row has, or a fixed row id is
            no longer in the dataset.
    """
    task = loaded.definition
    templates = tuple(CriterionTemplate.of(c) for c in task.success_criteria)
    if task.dataset is None:
        return Expansion(loaded, [RowTask(loaded, templates)])
    store = None
    if task.dataset.store is not None:
        try:
            rows, store = read_store_rows(
                task.dataset.store,
                version=store_version or task.dataset.version,
                id_field=task.dataset.id_field,
                url=store_url,
            )
        except StoreError as exc:  # named at the task file's field, as other errors are
            if exc.file is not None or exc.field is None:
                raise
            document = loaded.document
            line = document.line_of(field_loc(exc.field)) or document.line_of(("dataset",))
            raise StoreError(exc.message, hint=exc.hint, file=loaded.display, line=line,
                             field=exc.field) from None  # fmt: skip
    else:
        rows = read_dataset(loaded)
    if not rows.items:
        raise DatasetError(
            f"Dataset for task '{task.task_id}' is empty",
            file=loaded.display,
            line=loaded.document.line_of(("dataset",)),
        )
    samples: list[QaSample | None] = []
    qa_warnings: list[str] = []
    if task.qa is None:
        ids = check_row_ids(rows, loaded)
    else:
        explicit = check_row_ids(rows, loaded) if explicit_ids(task) else None
        found, ids, qa_warnings = qa_samples(rows, task, explicit)
        samples = list(found)
    check_placeholders(rows, loaded, ids)
    check_cluster_field(rows, loaded, ids)
    if fixed_row_ids is not None:
        selection = fixed_selection(ids, fixed_row_ids, task_id=task.task_id,
                                    missing_ok=missing_ok)  # fmt: skip
    else:
        request = selection_request(task, selectors or Selectors())
        by_id = ids if task.dataset.store is not None else None  # order-free for versions
        selection = select_rows(rows.items, request, task_id=task.task_id, ids=by_id)
    row_tasks = RowTasks(loaded, templates, rows, selection.indexes, ids, store=store,
                         samples=samples if task.qa is not None else None)  # fmt: skip
    selection = replace(selection, indexes=[])  # the positions are kept in row_tasks
    _validate_substituted(row_tasks, templates, rows)
    if task.qa is not None:
        check_qa_rows(loaded, row_tasks, rows, task)
        qa_warnings += group_by_warnings([rt.qa for rt in row_tasks if rt.qa], task.qa)
    warnings = [*selection.warnings, *_label_warnings(row_tasks, templates, loaded),
                *_boolean_warnings(loaded), *qa_warnings, *_case_warnings(ids, loaded)]  # fmt: skip
    return Expansion(loaded, row_tasks, rows, selection, warnings, ids, store)


def _case_warnings(ids: Sequence[str], loaded: LoadedTask) -> list[str]:
    """Row ids that differ only in case (``r1``, ``R1``): see :func:`case_clashes`."""
    clashes = case_clashes(ids)
    if not clashes:
        return []
    return [f"{loaded.display}: task '{loaded.definition.task_id}' has row ids that differ "
            f"only in case ({case_clash_text(clashes)}): {CASE_CLASH_CONSEQUENCE}"]  # fmt: skip


def check_qa_rows(
    loaded: LoadedTask, row_tasks: Sequence[RowTask], rows: Rows, task: TaskDefinition
) -> None:
    """Render every selected QA row under ``task`` (the task file's or a variant's ``qa:``).

    Raises:
        TaskFileError: a bad template; DatasetError: a sample with too many options.
    """
    selected = [
        (row_task.qa, rows.origin(row_task.row_index))
        for row_task in row_tasks
        if row_task.qa is not None and row_task.row_index is not None
    ]
    named = task.model_copy(update={"suite_id": loaded.definition.task_id})
    check_items(selected, named, file=loaded.display, line_of=loaded.document.line_of)


def _label_warnings(
    row_tasks: Sequence[RowTask], templates: tuple[CriterionTemplate, ...], loaded: LoadedTask
) -> list[str]:
    """Rows whose expected label is outside ``allowed_labels`` can never pass: say so."""
    out = []
    for position, template in enumerate(templates):
        spec = template.spec
        if not isinstance(spec, ClassificationMatch) or not template.has_placeholders:
            continue
        allowed = {label.casefold() for label in spec.allowed_labels}
        if any("${" in label for label in spec.allowed_labels):
            continue
        bad, empty = [], []
        whole = PLACEHOLDER.fullmatch(spec.expected_label)
        for row_task in row_tasks:
            row = row_task.row
            assert row is not None
            if whole is not None:  # "${row.x}": no substitution needed
                value = row.get(whole.group(1))
                label = "" if value is None else str(value).strip()
            else:
                label = substitute(spec.expected_label, row).strip()
            if label and label.casefold() not in allowed:
                bad.append(f"{row_task.row_id} ({label!r})")
            elif not label:
                empty.append(str(row_task.row_id))
        if empty:
            out.append(
                f"{loaded.display}: success_criteria[{position}]: {len(empty)} row(s) have an "
                "empty or null expected label, so they expect no answer ('(none)') and pass "
                f"when the agent answers nothing: {', '.join(empty[:5])}"
                + (" ..." if len(empty) > 5 else "")
            )
        if bad:
            out.append(
                f"{loaded.display}: success_criteria[{position}]: {len(bad)} row(s) expect a "
                f"label outside allowed_labels, so they can never pass: {', '.join(bad[:5])}"
                + (" ..." if len(bad) > 5 else "")
            )
    return out


def _boolean_warnings(loaded: LoadedTask) -> list[str]:
    """Inline rows with YAML booleans where text was probably meant."""
    spec = loaded.definition.dataset
    if spec is None or spec.rows is None:
        return []
    found = [
        (index, key)
        for index, row in enumerate(spec.rows)
        for key, value in row.items()
        if isinstance(value, bool)
    ]
    if not found:
        return []
    line = loaded.document.line_of(("dataset", "rows", found[0][0], found[0][1]))
    names = ", ".join(f"dataset.rows[{index}].{key}" for index, key in found[:3])
    verb = "holds a boolean" if len(found) == 1 else "hold booleans"
    return [
        f"{loaded.display}:{line or '?'}: {names}{' ...' if len(found) > 3 else ''} {verb} "
        "(YAML reads unquoted yes/no/on/off/true/false that way); booleans substitute as "
        "True/False: quote them if you meant text"
    ]


def fixed_selection(
    ids: list[str], wanted: list[str], *, task_id: str, missing_ok: bool = False
) -> Selection:
    """The selection of exactly the rows ``wanted`` (by id), in dataset order.

    Args:
        missing_ok: select the wanted rows that exist and list the others in
            ``Selection.missing_ids`` instead of raising.

    Raises:
        SelectionError: an id is no longer in the dataset.
    """
    where = {row_id: index for index, row_id in enumerate(ids)}
    missing = [row_id for row_id in wanted if row_id not in where]
    if missing and missing_ok:
        present = sorted(where[row_id] for row_id in wanted if row_id in where)
        return Selection(present, ["recorded selection"], len(ids), missing_ids=missing)
    if missing:
        raise SelectionError(
            f"row id(s) {missing[:5]} of task '{task_id}' are not in its dataset ({len(ids)} "
            f"rows; ids such as {', '.join(repr(i) for i in ids[:3])})",
            hint="name ids of the dataset (rows={task_id: [ids]}); a resumed run evaluates "
            "exactly the rows it started with: restore the dataset, or start a new run",
        )
    return Selection(sorted(where[row_id] for row_id in wanted), ["recorded selection"], len(ids))


def read_dataset(loaded: LoadedTask) -> Rows:
    """Read the task's rows (inline or files), remembering where each came from."""
    spec = loaded.definition.dataset
    assert spec is not None
    if spec.rows is not None:
        check_inline_rows(spec.rows, loaded.display)
    try:
        rows = load_rows(
            inline=spec.rows, paths=spec.paths, base_dir=loaded.base_dir, task_file=loaded.display
        )
    except DatasetError as exc:
        if exc.message.startswith("Dataset file not found") and spec.paths:
            listed = next((i for i, p in enumerate(spec.paths) if p in exc.message), 0)
            loc = ("dataset", "paths", listed)
            exc.hint = (
                f"listed in {loaded.display}:{loaded.document.line_of(loc)} "
                f"(dataset.paths[{listed}]); paths are relative to the task file's folder"
            )
        raise
    if spec.rows is not None:
        for index in range(len(spec.rows)):
            line = loaded.document.line_of(("dataset", "rows", index))
            rows.sources[0].lines.append(line or 0)
        rows.sources[0].name = loaded.display
    return rows


def _short_row(row: dict[str, Any], limit: int = 200) -> str:
    text = repr(row)
    return clip_head(text, limit, "...")


def check_row_ids(rows: Rows, loaded: LoadedTask) -> list[str]:
    """Every row's id as text, in order.

    Raises:
        DatasetError: Coder Eval's messages for a missing, malformed or duplicate id.
    """
    task_id = loaded.definition.task_id
    spec = loaded.definition.dataset
    assert spec is not None
    id_field = spec.id_field
    ids: list[str] = []
    seen: set[str] = set()  # where a duplicate was first used is looked up on error
    match = ID_PATTERN.fullmatch
    for index, row in enumerate(rows.items):
        value = row.get(id_field)
        if isinstance(value, bool):
            file, line = rows.origin(index)
            raise DatasetError(
                f"Dataset row {index} for task '{task_id}' has id_field '{id_field}' = {value}, "
                "a boolean",
                file=file, line=line,
                hint="YAML reads unquoted yes/no/on/off/true/false as booleans; quote the id",
            )  # fmt: skip
        if value is None or isinstance(value, dict | list):
            file, line = rows.origin(index)
            what = "missing" if id_field not in row else f"has a {_kind(value)} for"
            raise DatasetError(
                f"Dataset row {index} for task '{task_id}' {what} id_field '{id_field}': "
                + _short_row(row),
                file=file,
                line=line,
                hint=f"give every row a text or number '{id_field}', or set dataset.id_field",
            )
        row_id = str(value)
        if not match(row_id) or row_id in RESERVED_ROW_IDS or len(row_id) > MAX_ID_LENGTH:
            file, line = rows.origin(index)
            raise DatasetError(str(row_id_problem(row_id)), file=file, line=line,
                               hint=_id_fix(spec))  # fmt: skip
        if row_id in seen:
            file, line = rows.origin(index)
            first_file, first_line = rows.origin(ids.index(row_id))
            raise DatasetError(
                f"Duplicate dataset row id for task '{task_id}': {row_id!r}",
                file=file,
                line=line,
                hint=f"first used at {first_file}:{first_line}",
            )
        seen.add(row_id)
        ids.append(row_id)
    return ids


def cluster_field(task: TaskDefinition) -> str | None:
    """The field that clusters a task's rows: ``dataset.cluster_field``, else the QA
    schema's ``story`` for a ``qa:`` task, else none (each row is its own cluster)."""
    if task.dataset is not None and task.dataset.cluster_field is not None:
        return task.dataset.cluster_field
    return QA_CLUSTER_FIELD if task.qa is not None and task.dataset is not None else None


def check_cluster_field(rows: Rows, loaded: LoadedTask, ids: Sequence[str]) -> None:
    """Every row carries the task's ``dataset.cluster_field`` as text or a number.

    Raises:
        DatasetError: naming the file, line and row id of the first row without it.
    """
    spec = loaded.definition.dataset
    name = spec.cluster_field if spec is not None else None
    if name is None:
        return
    for index, row in enumerate(rows.items):
        value = field_value(row, name)
        if value is None or isinstance(value, dict | list | bool) or not str(value).strip():
            file, line = rows.origin(index)
            what = ("has no" if value is None else f"has a {_kind(value)} for"
                    if isinstance(value, dict | list) else f"has {value!r} for")  # fmt: skip
            raise DatasetError(
                f"Dataset row {index} for task '{loaded.definition.task_id}' {what} "
                f"dataset.cluster_field '{name}'",
                file=file, line=line, row_id=ids[index] if index < len(ids) else None,
                hint=f"give every row a text or number '{name}' (the rows that share a value "
                "form one cluster), or remove dataset.cluster_field",
            )  # fmt: skip


def _kind(value: Any) -> str:
    return "null" if value is None else "list" if isinstance(value, list) else "object"


def _id_fix(spec: DatasetSpec) -> str | None:
    """How to mend a store dataset whose example ids cannot name row-tasks."""
    if spec.store is None:
        return None
    return (f"the ids are store dataset {spec.store}'s example ids: set dataset.id_field "
            "to a field whose values fit, or import the rows again with --id-field naming "
            "one")  # fmt: skip


def check_placeholders(
    rows: Rows, loaded: LoadedTask, ids: list[str], *, prompt: str | None = None
) -> None:
    """Every placeholder of the prompt and criteria resolves, for every row.

    Args:
        prompt: check this prompt (a variant's) instead of the task file's.

    Raises:
        DatasetError: ``${row.foo}: key not found (available: [...])`` or ``${row.foo}:
            value must be a scalar ...``, with the row's id, file and line.
    """
    task = loaded.definition
    places: dict[str, list[str]] = {}
    for name in fields_in(prompt if prompt is not None else task.initial_prompt or ""):
        places.setdefault(name, []).append("initial_prompt")
    values: dict[str, list[str]] = {}  # taken whole, or filled by the criterion itself
    for position, spec in enumerate(task.success_criteria):
        raw = spec.model_dump(exclude_unset=True)
        late = {k: raw.pop(k) for k in spec.late_fields if k in raw}
        where = f"success_criteria[{position}]"
        for name in text_fields_in_tree(raw, spec.value_keys):
            places.setdefault(name, []).append(where)
        for name in value_fields_in_tree(raw, spec.value_keys) | fields_in_tree(late):
            values.setdefault(name, []).append(where)
    if not places and not values:
        return
    ordered = sorted(places.keys() | values.keys())
    for index, row in enumerate(rows.items):
        for name in ordered:
            value = row.get(name, _MISSING)
            if value is _MISSING or (name in places and isinstance(value, dict | list)):
                used_in = places.get(name, []) + values.get(name, [])
                _placeholder_error(rows, index, ids[index], name, row, used_in=used_in)


_MISSING = object()


def _placeholder_error(
    rows: Rows, index: int, row_id: str, name: str, row: dict[str, Any], *, used_in: list[str]
) -> None:
    file, line = rows.origin(index)
    try:
        scalar_text(name, row)
    except PlaceholderTypeError as exc:
        raise DatasetError(str(exc), file=file, line=line, row_id=row_id,
                           hint=f"it is used in {', '.join(used_in)}, which takes text: give "
                                f"'{name}' a text or a number in every row (a list or an "
                                "object cannot be put into text: write it as text in the "
                                "dataset)") from None  # fmt: skip
    except PlaceholderKeyError as exc:
        raise DatasetError(str(exc), file=file, line=line, row_id=row_id,
                           hint=f"it is used in {', '.join(used_in)}: give every row the key, "
                                "or correct the placeholder") from None  # fmt: skip


def _validate_substituted(
    row_tasks: Sequence[RowTask], templates: tuple[CriterionTemplate, ...], rows: Rows
) -> None:
    checked = [(i, t) for i, t in enumerate(templates) if t.needs_validation]
    if not checked:
        return
    for row_task in row_tasks:
        row = row_task.row
        assert row is not None and row_task.row_index is not None
        for position, template in checked:
            try:
                template.resolve(row)
            except ValidationError as exc:
                file, line = rows.origin(row_task.row_index)
                reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
                raise DatasetError(
                    f"criterion '{template.spec.type}' is invalid for this row after "
                    f"substitution: {reason}",
                    file=file,
                    line=line,
                    row_id=row_task.row_id,
                    field=f"success_criteria[{position}]",
                ) from None
