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
- ``Sample {id} lists {text!r} as both a correct and a wrong answer.``

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


def normalize_text_list(value: Any) -> list[str]:
    """``None`` → ``[]``; a list → its items ``str``-ed, stripped, blanks dropped; a scalar →
    ``[str(value).strip()]`` (or ``[]`` when blank). ToMEval's ``normalize_text_list``."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(item).strip() for item in value if str(item).strip()]
    text = str(value).strip()
    return [text] if text else []


def build_sample_id(row: Mapping[str, Any], meta: Mapping[str, Any], index: int) -> str:
    """``row.sample_id`` or ``meta.id`` or ``sample_{index}`` (falsy values fall through)."""
    return str(row.get("sample_id") or meta.get("id") or f"sample_{index}")


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

    def fail(message: str, hint: str | None = None) -> DatasetError:
        return DatasetError(message, file=file, line=line, hint=hint)

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
    both = next((text for text in correct if text in wrong), None)
    if both is not None:
        raise fail(f"Sample {sample_id} lists {both!r} as both a correct and a wrong answer.")
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
