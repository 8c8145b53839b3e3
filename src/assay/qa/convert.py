"""Convert common dataset shapes into the QA schema (``assay qa convert``).

Shapes (``--from``) and their default field mapping; every field can be overridden, and a
field name may be a dotted path into nested objects (``answers.text``):

================  ===============================================================
shape             reads
================  ===============================================================
``csv-choices``   ``context`` (story), ``question``, the choices ``answer0..answerN``
                  (every column named ``answer<digits>``, in numeric order) and
                  ``label`` (the 0-based index of the correct choice; ``1;3`` names
                  several). CosmosQA.
``jsonl-answers`` ``question`` and ``answers`` (a list of accepted answers, or one
                  string); no story unless ``story`` is mapped. NQ-open (``--answers
                  answer``).
``squad``         ``context``, ``question``, ``answers.text`` and ``id``; a row with no
                  answer text is unanswerable (``meta.unanswerable: true``; answered rows
                  get ``false``). SQuAD 1.1/2.0.
``gsm8k``         ``question`` and ``answer``, the gold being the text after the last
                  ``####`` (the full solution is kept in ``meta.rationale``); ``idx`` is
                  copied to ``meta``. GSM8K.
================  ===============================================================

The reader follows the file name: ``.csv`` is read by :func:`assay.data.csvrows.iter_csv`,
anything else by :func:`assay.data.jsonl.iter_jsonl` (GSM8K's ``test.json`` is JSONL).

Every output row is ``{sample_id, story, question, answer: {correct_answers, wrong_answers},
meta}`` with ``meta.source`` (the ``source`` label) and ``meta.line`` (the row's first line
in the input), and passes :func:`assay.qa.schema.normalize_sample`. Answer lists keep the
source's text, stripped, with exact duplicates removed (SQuAD repeats each annotator's span).
``sample_id`` is the ``id`` field's value when one is mapped (it must be a valid row id,
``[A-Za-z0-9_][A-Za-z0-9_.-]*``), else ``{id_prefix}{n:05d}`` with ``n`` the 1-based row
number. Ids must be unique. Choice shapes also keep ``meta.options_in_order`` (the choices
as in the source) and ``meta.label_index``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Literal

from assay.data.csvrows import iter_csv
from assay.data.jsonl import iter_jsonl
from assay.errors import DatasetError, UsageError
from assay.qa.schema import lookup, normalize_sample, route
from assay.results.secrets import clip_head
from assay.spec.ids import ID_PATTERN

Shape = Literal["csv-choices", "jsonl-answers", "squad", "gsm8k"]
SHAPES: tuple[Shape, ...] = ("csv-choices", "jsonl-answers", "squad", "gsm8k")
_MISSING = object()


@dataclass(frozen=True)
class FieldMap:
    """Where each part of a QA row comes from (dotted field paths).

    Attributes:
        story: the passage; ``None`` gives an empty story.
        question: the question.
        answers: the accepted answers (a list or one string); answer shapes only.
        wrong: known wrong answers (a list or one string), optional.
        choices: the choice fields, in option order; ``None`` finds ``{choice_prefix}<n>``.
        choice_prefix: see ``choices``.
        label: the correct choice's index (or several, separated by ``,`` ``;`` or spaces).
        label_base: the index of the first choice (0 or 1).
        id: the source id used as ``sample_id``; ``None`` numbers the rows.
        meta: source fields copied into ``meta`` under their (last) name.
        optional_meta: top-level fields copied into ``meta`` when a row has them (the
            ``gsm8k`` preset's ``idx``, which not every copy of GSM8K carries).
        answer_after: keep only the text after the last occurrence of this marker in each
            answer (the full text goes to ``meta.rationale``).
        unanswerable_if_empty: a row without answers is unanswerable instead of an error.
        answer_separator: split an answers or wrong-answers text on this (TruthfulQA's
            ``"; "``): each part is one answer; a list is kept as it is.
    """

    story: str | None = None
    question: str = "question"
    answers: str | None = "answers"
    wrong: str | None = None
    choices: tuple[str, ...] | None = None
    choice_prefix: str = "answer"
    label: str | None = None
    label_base: int = 0
    id: str | None = None
    meta: tuple[str, ...] = ()
    optional_meta: tuple[str, ...] = ()
    answer_after: str | None = None
    unanswerable_if_empty: bool = False
    answer_separator: str | None = None

    @property
    def is_choices(self) -> bool:
        """Choices plus a label, rather than answer lists."""
        return self.label is not None


PRESETS: dict[Shape, FieldMap] = {
    "csv-choices": FieldMap(story="context", answers=None, label="label"),
    "jsonl-answers": FieldMap(),
    "squad": FieldMap(story="context", answers="answers.text", id="id", unanswerable_if_empty=True),
    "gsm8k": FieldMap(answers="answer", answer_after="####", optional_meta=("idx",)),
}


def preset(shape: str, **overrides: Any) -> FieldMap:
    """The field map of ``shape`` with the non-``None`` ``overrides`` applied.

    Raises:
        UsageError: an unknown shape.
    """
    if shape not in PRESETS:
        raise UsageError(f"unknown shape {shape!r}", hint=f"use one of {', '.join(SHAPES)}")
    given = {key: value for key, value in overrides.items() if value is not None}
    return replace(PRESETS[shape], **given)


@dataclass(frozen=True)
class ConvertSummary:
    """What :func:`convert_file` wrote: row count, rows per prompt type, and warnings (an
    answer text that looks like several answers joined, when no separator was given)."""

    rows: int
    by_prompt_type: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """The rows ``skip_invalid`` left out: ``"line N: message"``."""


def read_rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """``(line, row)`` from a CSV (``.csv``) or JSONL (anything else) file, strictly."""
    if path.suffix.lower() == ".csv":
        yield from iter_csv(path)
    else:
        yield from iter_jsonl(path)


def convert_rows(
    rows: Iterable[tuple[int, Mapping[str, Any]]],
    *,
    fields: FieldMap,
    source: str,
    id_prefix: str,
    limit: int | None = None,
    skipped: list[str] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield QA rows (see the module docstring), at most ``limit`` of them.

    Args:
        skipped: when given, a row that cannot be converted is left out and its error
            (``"line N: message"``) appended here, instead of raised.

    Raises:
        DatasetError: a missing field, a bad label, no answer, an invalid or repeated id,
            or a row the QA schema refuses (each naming ``source`` and the line).
    """
    seen: set[str] = set()
    choices = fields.choices
    for number, (line, row) in enumerate(rows, start=1):
        if limit is not None and number > limit:
            return
        if fields.is_choices and choices is None:
            choices = choice_fields(row, fields.choice_prefix, source=source, line=line)
        try:
            out = _converted(row, fields, choices or (), _Where(source, line), seen,
                             id_prefix=id_prefix, number=number)  # fmt: skip
        except DatasetError as exc:
            if skipped is None:
                exc.hint = f"{exc.hint or 'correct the row'}; or {SKIP_HINT}"
                raise
            skipped.append(f"line {line}: {exc.message.rstrip('.')}")
            continue
        yield out


SKIP_HINT = "convert with --skip-invalid to leave such rows out (each named in a warning)"


def _converted(
    row: Mapping[str, Any],
    fields: FieldMap,
    choices: tuple[str, ...],
    where: _Where,
    seen: set[str],
    *,
    id_prefix: str,
    number: int,
) -> dict[str, Any]:
    """One source row as a QA row (its id added to ``seen``).

    Raises:
        DatasetError: see :func:`convert_rows`."""
    out = _convert(row, fields, choices, where)
    sample_id = _sample_id(row, fields, id_prefix, number, where)
    if sample_id in seen:
        raise where.error(f"sample id {sample_id!r} appears twice")
    out = {"sample_id": sample_id, **out}
    normalize_sample(out, index=number - 1, file=where.source, line=where.line)
    seen.add(sample_id)
    return out


def convert_file(
    source_path: Path,
    output: Path | BinaryIO,
    *,
    fields: FieldMap,
    source: str | None = None,
    id_prefix: str | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
) -> ConvertSummary:
    """Convert ``source_path`` into the JSONL file ``output`` (written whole or not at all).

    Args:
        source_path: the input file.
        output: the QA JSONL to write (replaced atomically), or a binary stream to write it
            to once every row converted (stdout).
        fields: the field mapping (:func:`preset`).
        source: the ``meta.source`` label (default: the input's file name).
        id_prefix: the prefix of numbered ids (default: the input's stem and ``-``).
        limit: convert only the first ``limit`` rows.
        skip_invalid: leave out a row that cannot be converted (each named in the
            summary's ``skipped`` and a warning) instead of stopping at it.
    """
    if isinstance(output, Path) and output.exists() and output.resolve() == source_path.resolve():
        raise UsageError(
            f"the output {output} is the input file; converting would replace the source rows",
            hint="write the QA JSONL to another file (-o NAME.qa.jsonl)",
        )
    label = source or source_path.name
    prefix = id_prefix if id_prefix is not None else _default_prefix(source_path)
    counts: dict[str, int] = {}
    lines = []
    joined = 0
    skipped: list[str] | None = [] if skip_invalid else None
    for row in convert_rows(read_rows(source_path), fields=fields, source=label,
                            id_prefix=prefix, limit=limit, skipped=skipped):  # fmt: skip
        kind = route(normalize_sample(row, index=0))
        counts[kind] = counts.get(kind, 0) + 1
        joined += fields.answer_separator is None and _looks_joined(row["answer"])
        lines.append(json.dumps(row, ensure_ascii=False, allow_nan=False))
    if not lines:
        if skipped:  # --skip-invalid left out every row: the first reason is the fix
            raise DatasetError(f"every row was left out (--skip-invalid); the first, "
                               f"{skipped[0]}", file=source_path,
                               hint="a field named wrong leaves out every row: the fields are "
                               "the file's first line (CSV) or its rows' keys")  # fmt: skip
        raise DatasetError(f"{source_path} has no rows to convert", file=source_path)
    text = "".join(line + "\n" for line in lines)
    if not isinstance(output, Path):
        output.write(text.encode("utf-8"))
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        partial = output.with_name(output.name + ".partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(output)
    warnings = [
        f"{source_path}: {joined} of {len(lines)} rows hold an answer with '; ' in it, kept "
        "as one answer; if the field joins several answers (TruthfulQA's do), convert again "
        "with --answer-separator '; '"
    ] if joined else []  # fmt: skip
    if skipped:
        warnings.append(
            f"{source_path}: {len(skipped)} row(s) left out (--skip-invalid): "
            + "; ".join(skipped[:10])
            + ("; ..." if len(skipped) > 10 else "")
        )
    return ConvertSummary(rows=len(lines), by_prompt_type=counts, warnings=warnings,
                          skipped=skipped or [])  # fmt: skip


def _looks_joined(answer: Mapping[str, list[str]]) -> bool:
    """An answer text that reads as several answers joined by ``"; "``."""
    return any("; " in text for key in ("correct_answers", "wrong_answers")
               for text in answer.get(key, []))  # fmt: skip


def choice_fields(
    row: Mapping[str, Any], prefix: str, *, source: str, line: int
) -> tuple[str, ...]:
    """The columns named ``{prefix}<digits>``, in numeric order.

    Raises:
        DatasetError: there is none.
    """
    pattern = re.compile(re.escape(prefix) + r"(\d+)")
    found = sorted(
        (int(m.group(1)), key) for key in row if (m := pattern.fullmatch(str(key))) is not None
    )
    if not found:
        raise DatasetError(
            f"no choice columns named {prefix}0, {prefix}1, …",
            file=source,
            line=line,
            hint="name them with --choices a,b,c or --choice-prefix",
        )
    return tuple(key for _, key in found)


@dataclass(frozen=True)
class _Where:
    source: str
    line: int

    def error(self, message: str, hint: str | None = None) -> DatasetError:
        return DatasetError(message, file=self.source, line=self.line, hint=hint)


def _get(row: Mapping[str, Any], path: str, where: _Where) -> Any:
    """``row[path]`` if that key exists (a CSV header may contain dots), else the dotted
    path's value."""
    value = row[path] if path in row else lookup(row, path, _MISSING)
    if value is _MISSING:
        raise where.error(f"field {path!r} is missing", hint=f"fields: {', '.join(map(str, row))}")
    return value


def _text(row: Mapping[str, Any], path: str, where: _Where) -> str:
    value = _get(row, path, where)
    if not isinstance(value, str):
        raise where.error(f"field {path!r} must be a string, not {type(value).__name__}")
    return value


def _text_list(value: Any, path: str, where: _Where, *, separator: str | None = None) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if separator is not None and isinstance(value, str):
        items = value.split(separator)
    texts = []
    for item in items:
        if item is None:
            continue
        if isinstance(item, dict | list):
            raise where.error(f"field {path!r} holds a {type(item).__name__}, not text")
        text = str(item).strip()
        if text and text not in texts:
            texts.append(text)
    return texts


def _convert(
    row: Mapping[str, Any], fields: FieldMap, choices: tuple[str, ...], where: _Where
) -> dict[str, Any]:
    meta: dict[str, Any] = {"source": where.source, "line": where.line}
    for path in fields.meta:
        meta[path.rsplit(".", 1)[-1]] = _get(row, path, where)
    for path in fields.optional_meta:
        if path in row:
            meta[path] = row[path]
    if fields.is_choices:
        correct, wrong = _from_choices(row, fields, choices, where, meta)
    else:
        correct, wrong = _from_answers(row, fields, where, meta)
    story = _text(row, fields.story, where) if fields.story else ""
    return {
        "story": story,
        "question": _text(row, fields.question, where),
        "answer": {"correct_answers": correct, "wrong_answers": wrong},
        "meta": meta,
    }


def _from_answers(
    row: Mapping[str, Any], fields: FieldMap, where: _Where, meta: dict[str, Any]
) -> tuple[list[str], list[str]]:
    if fields.answers is None:
        raise where.error("no answers field is mapped", hint="pass --answers FIELD")
    raw = _get(row, fields.answers, where)
    correct = _text_list(raw, fields.answers, where, separator=fields.answer_separator)
    if fields.answer_after is not None:
        meta["rationale"] = raw
        correct = _text_list(
            [_after(text, fields.answer_after, where) for text in correct], fields.answers, where
        )
    wrong = (_text_list(_get(row, fields.wrong, where), fields.wrong, where,
                        separator=fields.answer_separator) if fields.wrong else [])  # fmt: skip
    if fields.unanswerable_if_empty:
        meta["unanswerable"] = not correct
    elif not correct:
        raise where.error(
            f"field {fields.answers!r} holds no answer",
            hint="for datasets with unanswerable questions use --unanswerable-if-empty",
        )
    return correct, wrong


def _after(text: str, marker: str, where: _Where) -> str:
    if marker not in text:
        raise where.error(f"the answer has no {marker!r}: {clip_head(text, 80)!r}")
    return text.rsplit(marker, 1)[1].strip()


def _from_choices(
    row: Mapping[str, Any],
    fields: FieldMap,
    choices: tuple[str, ...],
    where: _Where,
    meta: dict[str, Any],
) -> tuple[list[str], list[str]]:
    texts = [_text(row, name, where).strip() for name in choices]
    label = _get(row, fields.label or "label", where)
    indices = _label_indices(label, fields.label_base, len(texts), where)
    meta["options_in_order"] = texts
    meta["label_index"] = indices[0] if len(indices) == 1 else indices
    correct = [texts[i] for i in indices]
    wrong = [text for i, text in enumerate(texts) if i not in indices and text]
    return correct, wrong


def _label_indices(label: Any, base: int, count: int, where: _Where) -> list[int]:
    parts = re.split(r"[,;\s]+", str(label).strip()) if not isinstance(label, int) else [label]
    indices = []
    for part in parts:
        try:
            index = int(part) - base
        except ValueError:
            raise where.error(f"label {label!r} is not a choice index") from None
        if not 0 <= index < count:
            raise where.error(
                f"label {label!r} is out of range for {count} choices (first index {base})"
            )
        if index not in indices:
            indices.append(index)
    return indices


def _sample_id(
    row: Mapping[str, Any], fields: FieldMap, prefix: str, number: int, where: _Where
) -> str:
    if fields.id is None:
        return f"{prefix}{number:05d}"
    value = str(_get(row, fields.id, where))
    if not ID_PATTERN.match(value):
        raise where.error(
            f"id {clip_head(value, 80)!r} is not a valid row id (letters, digits, _ . -)",
            hint=f"number the rows instead (--no-id, --id-prefix) and keep the source id with "
            f"--meta {fields.id}",
        )
    return value


def _default_prefix(path: Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.\-]+", "-", path.stem.split(".")[0]).strip("-.") or "row"
    return f"{stem}-"
