"""Judges and their calibrations in the store (the ``judges`` and ``calibrations`` tables).

The store keeps a judge's definition as JSON text with the content hash its writer computed
(:meth:`assay.spec.judge.JudgeDefinition.content_hash`); it does not interpret either.
Versions are numbered 1, 2, … per name and never change: adding a definition whose hash
equals the latest version's adds nothing (the latest version is returned). A calibration is
stored with the judge's name, version and hash and the dataset version it measured, and is
found again by the judge's content hash, so a changed rubric never inherits the old one's.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, func, select

from assay.errors import StoreError
from assay.spec.base import did_you_mean
from assay.store.reads import check_name
from assay.store.tables import calibrations, judges


@dataclass(frozen=True)
class JudgeRecord:
    """One stored judge version.

    Attributes:
        name: the judge's name.
        version: 1, 2, …
        definition: the judge's definition (JSON data, as given).
        content_hash: 64 hex digits, as given.
        created_at: when the version was added (UTC).
        origin: the file it came from, if known.
    """

    name: str
    version: int
    definition: dict[str, Any]
    content_hash: str
    created_at: datetime
    origin: str | None = None

    @property
    def ref(self) -> str:
        """``name@N``."""
        return f"{self.name}@{self.version}"

    def to_json(self) -> dict[str, Any]:
        """As JSON data (``assay judge show --json``)."""
        return {
            "name": self.name,
            "version": self.version,
            "content_hash": self.content_hash,
            "created_at": self.created_at.isoformat(),
            "origin": self.origin,
            "definition": self.definition,
        }


@dataclass(frozen=True)
class CalibrationRecord:
    """One stored calibration: which judge (name, version, hash) against which dataset
    version (name, number, hash) and label field, when, and its report (JSON data)."""

    calibration_id: str
    judge_name: str
    judge_version: int | None
    judge_hash: str
    dataset: str
    dataset_version: int
    dataset_hash: str
    label_field: str
    created_at: datetime
    report: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """As JSON data (the report included)."""
        return {
            "calibration_id": self.calibration_id,
            "judge_name": self.judge_name,
            "judge_version": self.judge_version,
            "judge_hash": self.judge_hash,
            "dataset": self.dataset,
            "dataset_version": self.dataset_version,
            "dataset_hash": self.dataset_hash,
            "label_field": self.label_field,
            "created_at": self.created_at.isoformat(),
            "report": self.report,
        }


def _record(row: Row[Any]) -> JudgeRecord:
    return JudgeRecord(
        name=row.name,
        version=row.version,
        definition=json.loads(row.definition),
        content_hash=row.content_hash,
        created_at=datetime.fromisoformat(row.created_at),
        origin=row.origin,
    )


def latest_number(connection: Connection, name: str) -> int:
    """The judge's latest version number, 0 when it has none."""
    found = connection.execute(
        select(func.max(judges.c.version)).where(judges.c.name == name)
    ).scalar_one_or_none()
    return int(found or 0)


def add_judge(
    connection: Connection,
    name: str,
    definition: dict[str, Any],
    content_hash: str,
    *,
    origin: str | None,
    now: str,
) -> tuple[JudgeRecord, bool]:
    """Add ``definition`` as the judge's next version, unless its hash equals the latest's.

    Returns:
        The version (new or latest) and whether it was created.
    """
    check_name(name, kind="judge")
    latest = latest_number(connection, name)
    if latest:
        current = get_judge(connection, name, latest)
        if current.content_hash == content_hash:
            return current, False
    text = json.dumps(definition, sort_keys=True, ensure_ascii=False, allow_nan=False)
    connection.execute(
        judges.insert().values(
            name=name,
            version=latest + 1,
            definition=text,
            content_hash=content_hash,
            created_at=now,
            origin=origin,
        )
    )
    return get_judge(connection, name, latest + 1), True


def get_judge(connection: Connection, name: str, version: int | None = None) -> JudgeRecord:
    """Version ``version`` of the judge (the latest when ``None``).

    Raises:
        StoreError: no such judge (with a "did you mean"), or no such version (naming the
            versions that exist).
    """
    latest = latest_number(connection, name)
    if latest == 0:
        names = [r.name for r in connection.execute(select(judges.c.name).distinct())]
        raise StoreError(
            f"no judge named '{name}' in the store",
            hint=did_you_mean(name, names)
            or f"add one with: assay judge add {name} judges/{name}.yaml",
        )
    number = latest if version is None else version
    row = None
    if number <= latest:  # a larger number is no version (and may not fit the column)
        row = connection.execute(
            select(judges).where(judges.c.name == name, judges.c.version == number)
        ).first()
    if row is None:
        raise StoreError(
            f"judge '{name}' has no version {number} (versions 1 to {latest})",
            hint=f"see them with: assay judge versions {name}",
        )
    return _record(row)


def list_judges(connection: Connection) -> list[JudgeRecord]:
    """The latest version of every judge, by name."""
    latest = (
        select(judges.c.name, func.max(judges.c.version).label("version"))
        .group_by(judges.c.name)
        .subquery()
    )
    rows = connection.execute(
        select(judges)
        .join(latest, (judges.c.name == latest.c.name) & (judges.c.version == latest.c.version))
        .order_by(judges.c.name)
    )
    return [_record(row) for row in rows]


def judge_versions(connection: Connection, name: str) -> list[JudgeRecord]:
    """Every version of the judge, oldest first.

    Raises:
        StoreError: no such judge.
    """
    get_judge(connection, name)
    rows = connection.execute(
        select(judges).where(judges.c.name == name).order_by(judges.c.version)
    )
    return [_record(row) for row in rows]


def _calibration(row: Row[Any]) -> CalibrationRecord:
    return CalibrationRecord(
        calibration_id=row.calibration_id,
        judge_name=row.judge_name,
        judge_version=row.judge_version,
        judge_hash=row.judge_hash,
        dataset=row.dataset,
        dataset_version=row.dataset_version,
        dataset_hash=row.dataset_hash,
        label_field=row.label_field,
        created_at=datetime.fromisoformat(row.created_at),
        report=json.loads(row.report),
    )


def add_calibration(
    connection: Connection, record: dict[str, Any], report: dict[str, Any], *, now: str
) -> CalibrationRecord:
    """Store a calibration (``record``: judge_name, judge_version, judge_hash, dataset,
    dataset_version, dataset_hash, label_field) with its ``report``; returns it with a new id.
    """
    calibration_id = uuid.uuid4().hex
    connection.execute(
        calibrations.insert().values(
            calibration_id=calibration_id,
            created_at=now,
            report=json.dumps(report, sort_keys=True, ensure_ascii=False, allow_nan=False),
            **{
                key: record[key]
                for key in (
                    "judge_name",
                    "judge_version",
                    "judge_hash",
                    "dataset",
                    "dataset_version",
                    "dataset_hash",
                    "label_field",
                )
            },
        )
    )
    row = connection.execute(
        select(calibrations).where(calibrations.c.calibration_id == calibration_id)
    ).one()
    return _calibration(row)


def find_calibrations(
    connection: Connection, *, judge_hash: str | None = None, judge_name: str | None = None
) -> list[CalibrationRecord]:
    """Stored calibrations of a judge's content hash (or of every version of a name),
    newest first."""
    query = select(calibrations)
    if judge_hash is not None:
        query = query.where(calibrations.c.judge_hash == judge_hash)
    if judge_name is not None:
        query = query.where(calibrations.c.judge_name == judge_name)
    rows = connection.execute(query.order_by(calibrations.c.created_at.desc()))
    return [_calibration(row) for row in rows]
