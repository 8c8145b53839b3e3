"""The QA sample schema, its normalization, and routing to a prompt type.

A QA row (``reference/originals.md`` §2.1, ToMEval's ``normalize_sample``)::

    {"sample_id": "...",                     # optional
     "story": "context text", "question": "question text",
     "answer": {"correct_answers": ["..."], "wrong_answers": ["..."]},
     "meta": {...}}                          # free-form; grouping keys live here

Normalization, as ToMEval does it:

- ``sample_id`` is ``row.sample_id``, else ``meta.id``, else ``sample_{index}`` (a falsy value
  such as ``""`` or ``0`` falls through to the next source, as in ToMEval);
- answer lists: ``None`` → ``[]``, a scalar → ``[str(value)]``, every item ``str``-ed and
  stripped, blank items dropped; ``story`` and ``question`` are stripped.

Errors (``DatasetError``; the message text is ToMEval's, exactly, plus file and line):

- ``Each standardized sample must contain an 'answer' object.``
- ``Each standardized sample must contain a 'meta' object.``
- ``Each standardized sample must contain a string 'story'.``
- ``Each standardized sample must contain a string 'question'.``
- ``Sample {id} is missing question.``
- ``Sample {id} is missing correct_answers.`` (unless marked unanswerable, below)

assay's additions (each an error, never a silent skip):

- **Unanswerable questions.** A row with no correct answer is accepted only when it says so:
  ``meta.unanswerable: true`` (SQuAD 2.0's unanswerable rows). Such a row routes to
  ``open_unanswerable``: the expected behaviour is to abstain, and the judge is told that no
  answer exists (a response saying the story does not answer the question is correct). Its
  ``wrong_answers``, if any, are plausible-but-unsupported answers shown to the judge.
  ``meta.unanswerable`` must be a JSON boolean; ``true`` together with correct answers is
  ``Sample {id} is marked unanswerable (meta.unanswerable: true) but has correct_answers.``
- ``Sample {id} lists {text!r} as both a correct and a wrong answer.`` (answers compare
  ignoring case and repeated whitespace, here and below)
- ``Sample {id} lists the option {text!r} twice.``: a choice question (correct and wrong
  answers) whose options repeat one text, which would show one answer under two letters.
  Open and unanswerable rows drop repeats instead (SQuAD lists one answer once per
  annotator).
- ``Sample {id}: answer.{field}[{i}] is {value!r}; answers are strings or numbers.``

Routing (:func:`route`), assay's rule:

============================================  =====================
answers                                       prompt type
============================================  =====================
no correct answer, ``meta.unanswerable``      ``open_unanswerable``
no wrong answers (one or more correct)        ``open``
wrong answers and one correct answer          ``mcq_single``
wrong answers and several correct answers     ``mcq_multi``
============================================  =====================

``route(sample, as_open=True)`` asks every answerable sample as an open question (the
options are not shown; the judge sees the wrong answers as "known wrong answers"), for
datasets such as TruthfulQA whose incorrect answers are references, not options.

One deliberate difference from ToMEval: a row with **several correct answers and no wrong
answers** is ``open`` with several accepted answers (NQ-open's aliases such as
``["December 1972", "14 December 1972 UTC"]``, SQuAD's annotator variants), not ``mcq_multi``.
ToMEval would turn it into a multiple-choice question whose every option is correct, which a
model passes by ticking everything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from assay.errors import DatasetError

PromptType = Literal["open", "open_unanswerable", "mcq_single", "mcq_multi"]
PROMPT_TYPES: tuple[PromptType, ...] = ("open", "open_unanswerable", "mcq_single", "mcq_multi")
CHOICE_TYPES: frozenset[str] = frozenset({"mcq_single", "mcq_multi"})
OPEN_TYPES: frozenset[str] = frozenset({"open", "open_unanswerable"})
UNANSWERABLE_KEY = "unanswerable"


@dataclass(frozen=True)
class QaSample:
    """One normalized QA row.

    Attributes:
        sample_id: see the module docstring for where it comes from.
        index: the 0-based position of the row in its dataset.
        story: the passage (may be empty: NQ-open and GSM8K have none).
        question: never empty.
        correct_answers: stripped, non-blank; empty only when ``unanswerable``.
        wrong_answers: stripped, non-blank; empty for open questions.
        meta: the row's ``meta`` object, unchanged.
        unanswerable: ``meta.unanswerable is True``.
    """

    sample_id: str
    index: int
    story: str
    question: str
    correct_answers: tuple[str, ...]
    wrong_answers: tuple[str, ...]
    meta: Mapping[str, Any]
    unanswerable: bool = False

    @property
    def prompt_type(self) -> PromptType:
        """The routing of this sample (see :func:`route`)."""
        return route(self)


def lookup(data: Mapping[str, Any], path: str, default: Any = None) -> Any:
    """The value at a dotted ``path`` (``meta.ability``) in nested mappings, else
    ``default``."""
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return default
        value = value[part]
    return value


def normalize_text_list(value: Any) -> list[str]:
    """``None`` → ``[]``; a list → its items ``str``-ed, stripped, blanks dropped; a scalar →
    ``[str(value).strip()]`` (or ``[]`` when blank). ToMEval's ``normalize_text_list``."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(item).strip() for item in value if str(item).strip()]
    text = str(value).strip()
    return [text] if text else []


def own_sample_id(row: Mapping[str, Any], meta: Mapping[str, Any]) -> str | None:
    """``row.sample_id`` or ``meta.id`` (falsy values fall through), or ``None``."""
    value = row.get("sample_id") or meta.get("id")
    return str(value) if value else None


def build_sample_id(row: Mapping[str, Any], meta: Mapping[str, Any], index: int) -> str:
    """:func:`own_sample_id`, else ``sample_{index}``."""
    return own_sample_id(row, meta) or f"sample_{index}"


def normalize_sample(
    row: Mapping[str, Any],
    *,
    index: int,
    file: str | Path | None = None,
    line: int | None = None,
) -> QaSample:
    """Validate and normalize one QA row.

    Args:
        row: the row as read (a JSON object).
        index: its 0-based position in the dataset (for ``sample_{index}``).
        file: the dataset file, named in errors.
        line: the row's 1-based line in ``file``, named in errors.

    Raises:
        DatasetError: one of the messages in the module docstring, with ``file:line``.
    """

    given_meta = row.get("meta")
    named = row.get("sample_id") or (given_meta.get("id") if isinstance(given_meta, dict) else None)

    def fail(message: str, hint: str | None = None) -> DatasetError:
        # a row without a line (given in Python) is named by its place in the rows
        shown = str(named) if named and str(named) not in message else None
        return DatasetError(message, file=file, line=line, hint=hint,
                            field=None if line else f"rows[{index}]", row_id=shown)  # fmt: skip

    answer, meta = row.get("answer"), row.get("meta")
    if not isinstance(answer, dict):
        raise fail("Each standardized sample must contain an 'answer' object.")
    if not isinstance(meta, dict):
        raise fail("Each standardized sample must contain a 'meta' object.")
    story, question = row.get("story"), row.get("question")
    if not isinstance(story, str):
        raise fail("Each standardized sample must contain a string 'story'.")
    if not isinstance(question, str):
        raise fail("Each standardized sample must contain a string 'question'.")
    sample_id = build_sample_id(row, meta, index)
    for field in ("correct_answers", "wrong_answers"):
        _check_answer_types(answer.get(field), f"Sample {sample_id}: answer.{field}", fail)
    correct = normalize_text_list(answer.get("correct_answers"))
    wrong = normalize_text_list(answer.get("wrong_answers"))
    if not question.strip():
        raise fail(f"Sample {sample_id} is missing question.")
    unanswerable = _unanswerable_flag(meta, sample_id, fail)
    if not correct and not unanswerable:
        raise fail(
            f"Sample {sample_id} is missing correct_answers.",
            hint="mark a question that has no answer with meta.unanswerable: true",
        )
    if correct and unanswerable:
        raise fail(
            f"Sample {sample_id} is marked unanswerable (meta.unanswerable: true) "
            "but has correct_answers."
        )
    correct, wrong = _without_repeats(correct, wrong, sample_id, fail)
    return QaSample(
        sample_id=sample_id,
        index=index,
        story=story.strip(),
        question=question.strip(),
        correct_answers=tuple(correct),
        wrong_answers=tuple(wrong),
        meta=meta,
        unanswerable=unanswerable,
    )


def _check_answer_types(value: Any, where: str, fail: Callable[..., DatasetError]) -> None:
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        if value is None or isinstance(item, str):
            continue
        if isinstance(item, bool) or not isinstance(item, int | float):
            at = f"{where}[{i}]" if isinstance(value, list) else where
            raise fail(
                f"{at} is {item!r}; answers are strings or numbers.",
                hint="write each answer as a JSON string",
            )


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def _without_repeats(
    correct: list[str], wrong: list[str], sample_id: str, fail: Callable[..., DatasetError]
) -> tuple[list[str], list[str]]:
    """Refuse a text that is both correct and wrong, and repeated options of a choice
    question; drop repeats elsewhere (first spelling kept)."""
    wrong_keys = {_key(text) for text in wrong}
    both = next((text for text in correct if _key(text) in wrong_keys), None)
    if both is not None:
        raise fail(f"Sample {sample_id} lists {both!r} as both a correct and a wrong answer.")
    if correct and wrong:
        seen: set[str] = set()
        for text in [*correct, *wrong]:
            if _key(text) in seen:
                raise fail(
                    f"Sample {sample_id} lists the option {text!r} twice.",
                    hint="each option of a choice question must be a different answer",
                )
            seen.add(_key(text))
    return _unique(correct), _unique(wrong)


def _unique(texts: list[str]) -> list[str]:
    first: dict[str, str] = {}
    for text in texts:
        first.setdefault(_key(text), text)
    return list(first.values())


def _unanswerable_flag(
    meta: Mapping[str, Any], sample_id: str, fail: Callable[..., DatasetError]
) -> bool:
    value = meta.get(UNANSWERABLE_KEY, False)
    if not isinstance(value, bool):
        raise fail(
            f"Sample {sample_id}: meta.unanswerable must be true or false, not {value!r}.",
            hint="write the JSON literal true or false",
        )
    return value


def route(sample: QaSample, *, as_open: bool = False) -> PromptType:
    """The prompt type of ``sample``; the table in the module docstring.

    Args:
        sample: a normalized sample.
        as_open: ask choice questions as open ones (TruthfulQA-style generation: no options
            are shown, and the judge compares the response with the correct *and* the
            wrong answers).
    """
    if not sample.correct_answers:
        return "open_unanswerable"
    if not sample.wrong_answers or as_open:
        return "open"
    return "mcq_multi" if len(sample.correct_answers) > 1 else "mcq_single"
