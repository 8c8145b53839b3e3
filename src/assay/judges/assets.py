"""Judges as assets: judge files, store judges, and resolving a task's ``judge:`` references.

A run resolves every ``llm_judge`` of its tasks once, when it is planned, into a
:class:`~assay.spec.judge.JudgeAsset` carried by the criterion (so ``task.json`` records the
judge exactly as it graded, and ``assay evaluate`` grades again with the same one):

- ``judge: judges/helpful.yaml`` (relative to the task file): a judge file, named by its
  ``name`` field or its stem, version ``None``;
- ``judge: helpful@2`` / ``judge: helpful`` (the latest, pinned for the run): a store judge;
- an inline judge (``prompt``, ``model``, …): named ``inline``.

Each gets its content hash and, when the store holds one, its latest calibration with that
hash (what a binary judge's corrected pass rate rests on).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from assay.errors import StoreError, TaskFileError, UsageError, UserError
from assay.judges.prompt import rubric_fields
from assay.spec.base import ScreenError, screen
from assay.spec.criteria import CriterionSpec, LlmJudge
from assay.spec.judge import (
    CalibrationRef,
    JudgeAsset,
    JudgeDefinition,
    judge_reference,
    split_calibration_pin,
)
from assay.spec.source import YamlDocument, field_path, read_yaml

if TYPE_CHECKING:
    from assay.store import Store
    from assay.store.judges import CalibrationRecord

INLINE = "inline"
Locate = Callable[[tuple[str | int, ...]], tuple[str, int | None]]
"""Field path in the task file → ``(file, line)``."""


def load_judge_file(path: Path, *, display: str | None = None) -> JudgeDefinition:
    """Read and validate a judge file (YAML or JSON).

    Raises:
        TaskFileError: missing or unreadable file, invalid YAML, an unknown field, an invalid
            value, or a few-shot example whose row lacks a field the rubric uses; with the
            file, line and field.
    """
    shown = display or str(path)
    if not path.exists():
        raise TaskFileError(
            "judge file not found",
            file=shown,
            hint="give a path relative to the task file (or to the working "
            "directory for assay judge commands)",
        )
    if not path.is_file() and not path.is_dir():
        raise TaskFileError("a judge file must be a regular file (this is a device, a pipe "
                            "or a socket)", file=shown)  # fmt: skip
    document = read_yaml(path, kind="judge file")
    data = document.data
    if not isinstance(data, dict):
        raise TaskFileError(
            "a judge file is a YAML mapping with model, rubric and verdict",
            file=shown,
            line=document.line_of(()),
        )
    if "task_id" in data and "rubric" not in data:
        raise TaskFileError(
            "this is a task file (it has task_id), not a judge file",
            file=shown,
            line=document.line_of(("task_id",)),
            hint="name a judge file: a YAML mapping with model, rubric and verdict "
            "(docs/judges.md)",
        )
    try:
        screened = screen(data, JudgeDefinition)
        definition = JudgeDefinition.model_validate(screened.data)
    except ScreenError as exc:
        loc = exc.problem.loc
        raise TaskFileError(
            exc.problem.message,
            file=shown,
            line=document.line_of(loc),
            field=field_path(loc),
            hint=exc.problem.hint,
        ) from None
    except ValidationError as exc:
        raise _invalid(exc, document, shown) from None
    if definition.name is None:
        definition = definition.model_copy(update={"name": path.stem})
    check_examples(definition, document=document, display=shown)
    return definition


def _invalid(exc: ValidationError, document: YamlDocument, display: str) -> TaskFileError:
    error = exc.errors()[0]
    loc = tuple(error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "missing":
        message = "required field is missing"
    elif error["type"] == "extra_forbidden":
        message = "unknown field"
    return TaskFileError(
        message, file=display, line=document.line_of(loc), field=field_path(loc) or None
    )


def check_examples(
    definition: JudgeDefinition, *, document: YamlDocument | None = None, display: str
) -> None:
    """Every few-shot example's ``row`` fills every ``${row.x}`` of the rubric.

    Raises:
        TaskFileError: naming the example and the missing field.
    """
    needed = rubric_fields(definition.rubric)
    for index, example in enumerate(definition.few_shot):
        missing = sorted(needed - set(example.row))
        if missing:
            loc: tuple[str | int, ...] = ("few_shot", index, "row")
            raise TaskFileError(
                f"the rubric uses ${{row.{missing[0]}}}, which this example's row lacks",
                file=display,
                line=document.line_of(loc) if document else None,
                field=field_path(loc),
                hint="give the example a row with every field the "
                "rubric uses, e.g. row: {" + ", ".join(f"{m}: ..." for m in missing) + "}",
            )


@dataclass
class JudgeResolver:
    """Resolves ``llm_judge`` criteria for one plan; opens the store only when a judge
    needs it (a store judge, or a calibration to look up in an existing store).

    Args:
        store_url: the store (``--store``; ``None``: ``$ASSAY_STORE`` or the default file).
        pins: judge name → version, for unversioned store references (a resumed run reads
            the versions it started with).
    """

    store_url: str | None = None
    pins: Mapping[str, int] | None = None

    def __post_init__(self) -> None:
        self._store: Store | None = None
        self._opened = False
        self._resolved: dict[tuple[str, str], JudgeAsset] = {}
        self._calibrations: dict[str, CalibrationRef | None] = {}

    def close(self) -> None:
        """Release the store, if it was opened."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def store(self, *, required: bool) -> Store | None:
        """The store; ``None`` when there is none and ``required`` is false.

        Raises:
            StoreError: ``required`` and there is no store, or it cannot be opened.
        """
        if self._store is None and (required or not self._opened):
            self._opened = True
            from assay.store.engine import display_url, resolve_url, sqlite_path

            url = resolve_url(self.store_url)
            path = sqlite_path(url)
            if path is not None and not path.exists():
                if required:
                    raise StoreError(
                        f"no store at {display_url(url)}",
                        hint="give --store "
                        "URL or $ASSAY_STORE, or add the judge with assay judge "
                        "add",
                    )
                return None
            from assay.store import open_store

            self._store = open_store(url)
        return self._store

    def resolve_criteria(
        self,
        criteria: Sequence[CriterionSpec],
        *,
        base_dir: Path,
        locate: Locate,
        task_id: str,
    ) -> list[CriterionSpec]:
        """``criteria`` with each ``llm_judge`` carrying its resolved judge.

        Raises:
            TaskFileError: a judge file is missing or invalid; a store judge is unknown (the
                message names the task file's line and field).
        """
        resolved: list[CriterionSpec] = []
        for index, spec in enumerate(criteria):
            if isinstance(spec, LlmJudge) and spec.asset is None:
                loc: tuple[str | int, ...] = ("success_criteria", index, "judge")
                try:
                    asset = self.asset(spec, base_dir=base_dir, task_id=task_id)
                except TaskFileError:
                    raise
                except UserError as exc:
                    file, line = locate(loc)
                    raise TaskFileError(
                        exc.message, file=file, line=line, field=field_path(loc), hint=exc.hint
                    ) from None
                except ValidationError as exc:  # an inline judge whose parts do not fit
                    error = exc.errors()[0]
                    where = ("success_criteria", index, *error["loc"])
                    file, line = locate(where[:2])
                    message = str(error["msg"]).removeprefix("Value error, ")
                    raise TaskFileError(
                        f"invalid inline judge: {message}",
                        file=file,
                        line=line,
                        field=field_path(where),
                    ) from None
                spec = spec.model_copy(update={"asset": asset})
            resolved.append(spec)
        return resolved

    def asset(self, spec: LlmJudge, *, base_dir: Path, task_id: str) -> JudgeAsset:
        """The judge ``spec`` names (see the module docstring).

        Raises:
            TaskFileError, StoreError: as :meth:`resolve_criteria`.
        """
        if spec.judge is None:
            definition = spec.inline_definition()
            return self._asset(definition, INLINE, None, "inline", base_dir)
        return self.named_asset(spec.judge, base_dir=base_dir)

    def named_asset(self, reference: str, *, base_dir: Path) -> JudgeAsset:
        """The judge ``reference`` names: a judge file relative to ``base_dir``, or a store
        judge ``name``/``name@N``, with a ``#calibration`` pin; each reference read once.

        Raises:
            TaskFileError: an invalid judge file.
            UserError: a missing judge file; ``StoreError``: no store or no such judge;
            ValueError: a malformed reference or calibration pin.
        """
        key = (reference, str(base_dir))
        if key not in self._resolved:
            self._resolved[key] = self._referenced(reference, base_dir)
        return self._resolved[key]

    def _referenced(self, reference: str, base_dir: Path) -> JudgeAsset:
        asset = self._named(reference, base_dir)
        _, pin = split_calibration_pin(reference)
        if pin is None:
            return asset
        return asset.model_copy(update={"calibration": self.pinned(asset, pin)})

    def pinned(self, asset: JudgeAsset, pin: str) -> CalibrationRef:
        """The stored calibration of ``asset``'s content hash whose id starts with ``pin``.

        Raises:
            StoreError: no store, no such calibration of this judge's content (another
                judge's, or one made before its rubric changed), several that match, or
                one that compared no row.
        """
        store = self.store(required=True)
        assert store is not None
        found = [c for c in store.calibrations(judge_hash=asset.content_hash)
                 if c.calibration_id.startswith(pin)]  # fmt: skip
        fix = f"`assay judge show {asset.name}` lists its calibrations"
        if not found:
            raise StoreError(
                f"judge {asset.label} has no calibration whose id starts with {pin!r}",
                hint=f"a calibration belongs to one judge content; {fix}",
            )
        if len(found) > 1:
            ids = ", ".join(c.calibration_id[:12] for c in found)
            raise StoreError(f"calibration {pin!r} of judge {asset.label} is ambiguous: {ids}",
                             hint="give more digits of its id")  # fmt: skip
        if not usable(found[0].report):
            raise StoreError(
                f"calibration {found[0].calibration_id[:12]} of judge {asset.label} compared "
                "no row and cannot be pinned",
                hint=f"pin one that compared rows; {fix}",
            )
        return calibration_ref(found[0])

    def _named(self, reference: str, base_dir: Path) -> JudgeAsset:
        kind, value, version = judge_reference(reference)
        if kind == "file":
            path = (base_dir / value) if not Path(value).is_absolute() else Path(value)
            if not path.exists():  # a folder or a device: load_judge_file says which
                raise UsageError(
                    f"judge file not found: {value} (looked in {_display(path)})",
                    hint="a judge file's path is relative to the task file",
                )
            definition = load_judge_file(path, display=_display(path))
            return self.file_asset(definition, definition.name or path.stem, path)
        return self.store_asset(value, version, base_dir=base_dir)

    def file_asset(self, definition: JudgeDefinition, name: str, path: Path) -> JudgeAsset:
        """The asset of a judge file (version ``None``; a ``mock/`` script is relative to
        the file's folder)."""
        return self._asset(definition, name, None, f"file:{_display(path)}", path.resolve().parent)

    def store_asset(self, name: str, version: int | None, *, base_dir: Path) -> JudgeAsset:
        """A store judge (``version`` ``None``: the pinned one, else the latest); a
        ``mock/`` script of its model is found next to the file it was added from when that
        folder exists, else in ``base_dir``.

        Raises:
            StoreError: no store, no such judge or version, or a stored definition that
                this assay cannot read.
        """
        store = self.store(required=True)
        assert store is not None
        wanted = version if version is not None else (self.pins or {}).get(name)
        record = store.judge(name, wanted)
        try:
            definition = JudgeDefinition.model_validate(record.definition)
        except ValidationError as exc:
            raise StoreError(
                f"judge {record.ref} in the store is not a valid judge: {exc.errors()[0]['msg']}"
            ) from None
        folder = Path(record.origin).parent if record.origin else None
        if folder is not None and folder.is_absolute() and folder.is_dir():
            base_dir = folder  # a mock/ script next to the file the judge was added from
        asset = self._asset(definition, name, record.version, f"store:{record.ref}", base_dir)
        return asset.model_copy(update={"content_hash": record.content_hash})

    def _asset(
        self,
        definition: JudgeDefinition,
        name: str,
        version: int | None,
        source: str,
        base_dir: Path,
    ) -> JudgeAsset:
        content_hash = definition.content_hash()
        return JudgeAsset(
            definition=definition,
            name=name,
            version=version,
            content_hash=content_hash,
            source=source,
            base_dir=str(Path(base_dir).resolve()),
            calibration=self.calibration(content_hash),
        )

    def calibration(self, content_hash: str) -> CalibrationRef | None:
        """The newest usable stored calibration of ``content_hash`` (one that compared at
        least one row), if the store has one: a calibration that compared nothing never
        replaces one that did. Looked up once per content hash for this resolver's life."""
        if content_hash not in self._calibrations:
            store = self.store(required=False)
            found = (
                []
                if store is None
                else [c for c in store.calibrations(judge_hash=content_hash) if usable(c.report)]
            )
            self._calibrations[content_hash] = calibration_ref(found[0]) if found else None
        return self._calibrations[content_hash]


def usable(report: dict[str, Any]) -> bool:
    """A calibration report can correct pass rates and gate: it compared at least one row
    (and was not stored marked unusable)."""
    return report.get("usable") is not False and int(report.get("rows_compared") or 0) > 0


def calibration_ref(record: CalibrationRecord) -> CalibrationRef:
    """What a resolved judge keeps of a stored calibration."""
    report: dict[str, Any] = record.report
    counts = report.get("binary_counts") or {}
    return CalibrationRef(
        calibration_id=record.calibration_id,
        dataset=record.dataset,
        dataset_version=record.dataset_version,
        label_field=record.label_field,
        created_at=record.created_at.isoformat(),
        rows=int(report.get("rows_compared", 0)),
        agreement=(report.get("agreement") or {}).get("value"),
        kappa=(report.get("kappa") or {}).get("value"),
        tp=counts.get("tp"),
        positives=counts.get("positives"),
        tn=counts.get("tn"),
        negatives=counts.get("negatives"),
    )


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
