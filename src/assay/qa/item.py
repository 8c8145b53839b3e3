"""A QA work item: one sample in one replicate, with its prompt and lettered options."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.qa.prompts import QaTemplates, render_prompt
from assay.qa.schema import CHOICE_TYPES, PromptType, QaSample, route
from assay.qa.shuffle import NO_OPTIONS, shuffle_options

DEFAULT_TEMPLATES = QaTemplates()


@dataclass(frozen=True)
class QaItem:
    """Everything needed to ask one sample and to grade the answer.

    ``options``, ``correct_letters``, ``wrong_letters`` and ``shuffle_seed`` are those of
    :class:`~assay.qa.shuffle.OptionShuffle` (``None``, ``()``, ``()``, 0 for open questions).
    ``replicate`` is 0-based (directory ``00`` is replicate 0).
    """

    dataset: str
    sample_id: str
    sample_index: int
    replicate: int
    story: str
    question: str
    correct_answers: tuple[str, ...]
    wrong_answers: tuple[str, ...]
    prompt_type: PromptType
    prompt: str
    options: Mapping[str, str] | None = None
    correct_letters: tuple[str, ...] = ()
    wrong_letters: tuple[str, ...] = ()
    shuffle_seed: int = 0
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_choice(self) -> bool:
        """``mcq_single`` or ``mcq_multi``."""
        return self.prompt_type in CHOICE_TYPES

    @property
    def unanswerable(self) -> bool:
        """The sample has no answer; the expected behaviour is to abstain."""
        return self.prompt_type == "open_unanswerable"


def build_item(
    sample: QaSample,
    *,
    dataset: str,
    replicate: int,
    templates: QaTemplates = DEFAULT_TEMPLATES,
    shuffle: bool = True,
    as_open: bool = False,
    mutate: Callable[[str], str] | None = None,
) -> QaItem:
    """Route ``sample``, letter and shuffle its options, and render its prompt.

    Args:
        sample: a normalized sample.
        dataset: the dataset name that seeds the shuffle.
        replicate: the 0-based replicate (a different option order per replicate).
        templates: the prompt templates.
        shuffle: ``False`` keeps options in correct-then-wrong order.
        as_open: ask a choice sample as an open question (:func:`~assay.qa.schema.route`).
        mutate: an experiment's prompt mutations (:func:`~assay.qa.prompts.render_prompt`).

    Raises:
        DatasetError: more than 26 options.
        TaskFileError: the template drops a non-empty story.
    """
    prompt_type = route(sample, as_open=as_open)
    bundle = NO_OPTIONS
    if prompt_type in CHOICE_TYPES:
        bundle = shuffle_options(
            dataset=dataset,
            sample_id=sample.sample_id,
            replicate=replicate,
            correct=sample.correct_answers,
            wrong=sample.wrong_answers,
            shuffle=shuffle,
        )
    prompt = render_prompt(
        templates,
        prompt_type=prompt_type,
        story=sample.story,
        question=sample.question,
        options=bundle.options,
        sample_id=sample.sample_id,
        mutate=mutate,
    )
    return QaItem(
        dataset=dataset,
        sample_id=sample.sample_id,
        sample_index=sample.index,
        replicate=replicate,
        story=sample.story,
        question=sample.question,
        correct_answers=sample.correct_answers,
        wrong_answers=sample.wrong_answers,
        prompt_type=prompt_type,
        prompt=prompt,
        options=bundle.options,
        correct_letters=bundle.correct_letters,
        wrong_letters=bundle.wrong_letters,
        shuffle_seed=bundle.seed,
        meta=sample.meta,
    )
