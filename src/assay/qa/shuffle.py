"""Deterministic option order for choice questions (``reference/originals.md`` §2.3).

The order depends only on the dataset name, the sample id and the replicate, so every run
shows a sample's options in the same order, and each replicate in a different one:

1. ``seed = int(sha256(f"{dataset}|{sample_id}|{replicate}").hexdigest()[:16], 16)``
   (the text encoded as UTF-8);
2. options = correct answers, then wrong answers, each in dataset order;
3. ``random.Random(seed).shuffle(options)``;
4. letters ``A``, ``B``, … in the shuffled order; more than 26 options is
   ``Too many options for sample {id}: {n}``.

The seed and the permutation are ToMEval's, so a ToMEval ``prediction.jsonl`` and an assay
one show the same letters for the same ``(dataset, sample_id, repeat)``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from assay.errors import DatasetError

OPTION_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class OptionShuffle:
    """The lettered options of one sample in one replicate.

    Attributes:
        options: letter → answer text in letter order; ``None`` for an open question.
        correct_letters: letters of the correct answers, alphabetical.
        wrong_letters: letters of the wrong answers, alphabetical.
        seed: the shuffle seed (0 for an open question).
    """

    options: Mapping[str, str] | None
    correct_letters: tuple[str, ...] = ()
    wrong_letters: tuple[str, ...] = ()
    seed: int = 0


NO_OPTIONS = OptionShuffle(options=None)


def shuffle_seed(dataset: str, sample_id: str, replicate: int) -> int:
    """The 64-bit seed of ``(dataset, sample_id, replicate)``; see the module docstring."""
    source = f"{dataset}|{sample_id}|{replicate}"
    return int(hashlib.sha256(source.encode("utf-8")).hexdigest()[:16], 16)


def shuffle_options(
    *,
    dataset: str,
    sample_id: str,
    replicate: int,
    correct: Sequence[str],
    wrong: Sequence[str],
    shuffle: bool = True,
) -> OptionShuffle:
    """Letter the options of a choice question in their deterministic order.

    Args:
        dataset: the dataset name that enters the seed.
        sample_id: the sample's id.
        replicate: the 0-based replicate.
        correct: the correct answers (at least one).
        wrong: the wrong answers.
        shuffle: ``False`` keeps correct-then-wrong order (the seed is still computed).

    Raises:
        DatasetError: ``Too many options for sample {id}: {n}`` (more than 26).
    """
    rows = [(text, True) for text in correct] + [(text, False) for text in wrong]
    if len(rows) > len(OPTION_LETTERS):
        raise DatasetError(f"Too many options for sample {sample_id}: {len(rows)}")
    seed = shuffle_seed(dataset, sample_id, replicate)
    if shuffle:
        random.Random(seed).shuffle(rows)
    letters = OPTION_LETTERS[: len(rows)]
    options = {letter: text for letter, (text, _) in zip(letters, rows, strict=True)}
    return OptionShuffle(
        options=options,
        correct_letters=tuple(ltr for ltr, (_, ok) in zip(letters, rows, strict=True) if ok),
        wrong_letters=tuple(ltr for ltr, (_, ok) in zip(letters, rows, strict=True) if not ok),
        seed=seed,
    )
