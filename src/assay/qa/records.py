"""``prediction.jsonl``: one record per sample and replicate, enough to grade again later.

The record is ToMEval's ``PredictionRecord`` (``reference/originals.md`` §2.3)::

    sample_id, sample_index, repeat, story, question, correct_answers, wrong_answers,
    prompt_type, prompt, options, correct_letters, wrong_letters, shuffle_seed, meta,
    pred {content, reasoning}, raw_prediction

plus what assay needs to grade it again without the answering model (``assay evaluate``):
``schema_version``, ``dataset`` (the shuffle's seed source), ``model`` (who answered) and
``error`` (why the answering call failed; such a record grades as ``content_none``).
ToMEval's later optional ``protocol`` and ``extractor`` are accepted so its files load.
``repeat`` keeps ToMEval's name; it is assay's 0-based replicate.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from assay.data.jsonl import count_keys, parse_json_strict
from assay.errors import DatasetError
from assay.qa.item import QaItem
from assay.qa.schema import PromptType

SCHEMA_VERSION = 1
_BOM = b"\xef\xbb\xbf"

#: The fields a record and a :class:`QaItem` share under one name (lists in the record,
#: tuples in the item); ``repeat``/``replicate``, ``options`` and ``meta`` are copied apart.
_ITEM_FIELDS = ("dataset", "sample_id", "sample_index", "story", "question",
                "correct_answers", "wrong_answers", "prompt_type", "prompt",
                "correct_letters", "wrong_letters", "shuffle_seed")  # fmt: skip


class Prediction(BaseModel):
    """What the answering model returned: the final text and any separate reasoning."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    reasoning: str | None = None


class PredictionRecord(BaseModel):
    """One line of ``prediction.jsonl``; see the module docstring."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    dataset: str = ""
    sample_id: str
    sample_index: int = Field(ge=0)
    repeat: int = Field(ge=0)
    story: str
    question: str
    correct_answers: list[str]
    wrong_answers: list[str]
    prompt_type: PromptType
    prompt: str
    options: dict[str, str] | None = None
    correct_letters: list[str] = Field(default_factory=list)
    wrong_letters: list[str] = Field(default_factory=list)
    shuffle_seed: int = 0
    meta: dict[str, Any] = Field(default_factory=dict)
    pred: Prediction = Field(default_factory=Prediction)
    raw_prediction: Any = None
    model: str | None = None
    error: str | None = None
    protocol: str | None = None
    extractor: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> PredictionRecord:
        """A record that could not have come from a QA row is refused, not graded."""
        kind, options = self.prompt_type, self.options
        if kind == "mcq_single" and options:  # the common case, checked in a few operations
            correct, wrong = self.correct_letters, self.wrong_letters
            letters = {*correct, *wrong}
            if (
                len(correct) == 1
                and len(letters) == len(options) == len(wrong) + 1
                and (letters.issubset(options))
            ):
                return self
        if kind in ("mcq_single", "mcq_multi"):
            _check_choice(self)
        elif self.prompt_type == "open" and not self.correct_answers:
            raise ValueError("an open record needs correct_answers (or prompt_type "
                             "open_unanswerable)")  # fmt: skip
        elif self.prompt_type == "open_unanswerable" and self.correct_answers:
            raise ValueError("an open_unanswerable record has no correct_answers")
        return self

    @classmethod
    def from_item(
        cls,
        item: QaItem,
        *,
        content: str | None,
        reasoning: str | None = None,
        raw: Any = None,
        model: str | None = None,
        error: str | None = None,
    ) -> PredictionRecord:
        """The record of ``item`` answered with ``content`` (``None`` when the call failed,
        with ``error`` saying why). ``raw`` defaults to ``content``."""
        fields = {name: getattr(item, name) for name in _ITEM_FIELDS}
        return cls(
            **fields,
            repeat=item.replicate,
            options=dict(item.options) if item.options is not None else None,
            meta=dict(item.meta),
            pred=Prediction(content=content, reasoning=reasoning),
            raw_prediction=content if raw is None else raw,
            model=model,
            error=error,
        )

    @property
    def replicate(self) -> int:
        """assay's name for ``repeat`` (0-based)."""
        return self.repeat

    @property
    def is_choice(self) -> bool:
        """``mcq_single`` or ``mcq_multi``."""
        return self.prompt_type in ("mcq_single", "mcq_multi")

    @property
    def unanswerable(self) -> bool:
        """The sample has no answer; the expected behaviour is to abstain."""
        return self.prompt_type == "open_unanswerable"

    def to_item(self) -> QaItem:
        """The :class:`QaItem` this record was made from (for grading it again)."""
        fields = {name: getattr(self, name) for name in _ITEM_FIELDS}
        tuples = {name: tuple(value) for name, value in fields.items() if isinstance(value, list)}
        return QaItem(**(fields | tuples), replicate=self.repeat, options=self.options,
                      meta=self.meta)  # fmt: skip

    def to_json_line(self) -> str:
        """The record as one JSON line (UTF-8 text kept, no NaN), without the newline."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, allow_nan=False)


def _check_choice(record: PredictionRecord) -> None:
    options = record.options
    if not options:
        raise ValueError(f"a {record.prompt_type} record needs its options (letter → text)")
    correct, wrong = record.correct_letters, record.wrong_letters
    unknown = [letter for letter in (*correct, *wrong) if letter not in options]
    if unknown:
        raise ValueError(f"letter {unknown[0]!r} is not one of the options {sorted(options)}")
    if not correct:
        raise ValueError("a choice record needs correct_letters")
    if set(correct) & set(wrong):
        raise ValueError(f"letter {sorted(set(correct) & set(wrong))[0]!r} is in both "
                         "correct_letters and wrong_letters")  # fmt: skip
    if record.prompt_type == "mcq_single" and len(correct) != 1:
        raise ValueError(f"an mcq_single record has one correct letter, not {len(correct)}")


def read_predictions(path: Path) -> list[PredictionRecord]:
    """Read ``prediction.jsonl`` (a file assay wrote; each line parsed and validated by
    pydantic in one step, which is several times faster than the strict dataset reader).

    Raises:
        DatasetError: the file is missing or not UTF-8, a line is not JSON or not a valid
            record (file:line and the first invalid field; a choice record's letters must be
            its options, correct and wrong disjoint), or one sample and replicate appears
            twice.
    """
    return list(iter_predictions(path))


def iter_predictions(path: Path) -> Iterator[PredictionRecord]:
    """Like :func:`read_predictions`, one record at a time (constant memory).

    Raises:
        DatasetError: as :func:`read_predictions`, when the bad line is reached.
    """
    seen: dict[tuple[str, int], int] = {}
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                text = _line_text(raw, path, number)
                if text and not text.isspace():  # no copy of a long line
                    record = _record(text, path, number)
                    first = seen.setdefault((record.sample_id, record.repeat), number)
                    if first != number:
                        raise DatasetError(
                            f"sample {record.sample_id} replicate {record.repeat} appears "
                            f"twice (first at line {first})",
                            file=path, line=number,
                            hint="keep one record per sample and replicate",
                        )  # fmt: skip
                    yield record
    except FileNotFoundError:
        raise DatasetError(f"prediction file not found: {path}", file=path) from None


def _line_text(raw: bytes, path: Path, line: int) -> str:
    """One line as text: UTF-8, a byte-order mark at the file's start dropped (as the
    dataset reader does).

    Raises:
        DatasetError: the line is not UTF-8, naming the byte.
    """
    if line == 1 and raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"not UTF-8 text (byte {exc.start + 1} of the line)", file=path,
                           line=line, hint="save the file as UTF-8") from None  # fmt: skip


def _keys(record: PredictionRecord) -> int:
    """The JSON keys a record was read from (a few operations: this runs once per line)."""
    count = len(record.model_fields_set) + len(record.options or ())
    if "pred" in record.model_fields_set:
        count += len(record.pred.model_fields_set)
    return count + count_keys(record.meta) + count_keys(record.raw_prediction)


def _record(text: str, path: Path, line: int) -> PredictionRecord:
    try:
        record = PredictionRecord.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        if first["type"] == "json_invalid":
            message = f"invalid JSON: {_within_line(first['msg'])}"
        else:
            message = f"not a prediction record: {first['msg']}"
        raise DatasetError(message, file=path, line=line, field=field) from None
    if "pred" not in record.model_fields_set:  # raw_prediction alone is not the answer graded
        raise DatasetError(
            "not a prediction record: it has no 'pred' (the answer graded)",
            file=path, line=line, field="pred",
            hint='a sample the model did not answer keeps "pred": {"content": null}',
        )  # fmt: skip
    if _keys(record) != text.count('":'):  # a repeated key would have been read last-wins
        try:  # (text inside strings can only add separators: then the strict parse decides)
            parse_json_strict(text)
        except ValueError as exc:
            key = getattr(exc, "key", None)
            reason = f"the key '{key}' appears twice in one object" if key else str(exc)
            raise DatasetError(f"invalid JSON: {reason}", file=path, line=line) from None
    return record


def _within_line(reason: str) -> str:
    """pydantic's JSON error for one line of the file, placed in that line: ``… at line 1
    column 9`` → ``… at column 9``; past its end (``line 2 column 0``) → ``at the end of the
    line`` (the file's own line number is the error's)."""
    reason = reason.removeprefix("Invalid JSON: ")
    found = re.search(r" at line (\d+) column (\d+)$", reason)
    if found is None:
        return reason
    where = f" at column {found[2]}" if found[1] == "1" else " at the end of the line"
    return reason[: found.start()] + where


def by_replicate(records: list[PredictionRecord]) -> dict[int, list[PredictionRecord]]:
    """Records grouped by replicate (ascending), each group sorted by ``sample_index``."""
    groups: dict[int, list[PredictionRecord]] = defaultdict(list)
    for record in records:
        groups[record.repeat].append(record)
    return {
        replicate: sorted(groups[replicate], key=lambda r: r.sample_index)
        for replicate in sorted(groups)
    }
