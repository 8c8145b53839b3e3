"""Deterministic option shuffling: the seed formula, determinism across processes, a new
order per replicate, and inversion (a letter maps back to the answer it was built from)."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import DatasetError
from assay.qa import build_item, extract_choice, grade_choice, normalize_sample, shuffle_options
from assay.qa.shuffle import OPTION_LETTERS, shuffle_seed

CORRECT = ["He wants to get married to a different person ."]
WRONG = [
    "If he gets married in the church he wo nt have to get a divorce .",
    "He wants to know if he does nt like this girl can he divorce her ?",
    "None of the above choices .",
]


def test_seed_is_the_documented_formula() -> None:
    expected = int(hashlib.sha256(b"cosmosqa|cosmosqa-valid-00001|0").hexdigest()[:16], 16)
    assert shuffle_seed("cosmosqa", "cosmosqa-valid-00001", 0) == expected


def test_order_is_tomevals_permutation() -> None:
    """Options are correct-then-wrong, shuffled by random.Random(seed), lettered A..."""
    bundle = shuffle_options(
        dataset="ds", sample_id="s1", replicate=2, correct=CORRECT, wrong=WRONG
    )
    rows = [(t, True) for t in CORRECT] + [(t, False) for t in WRONG]
    random.Random(shuffle_seed("ds", "s1", 2)).shuffle(rows)
    assert bundle.options is not None
    assert list(bundle.options.values()) == [text for text, _ in rows]
    assert list(bundle.options) == ["A", "B", "C", "D"]
    assert bundle.correct_letters == tuple("ABCD"[i] for i, (_, ok) in enumerate(rows) if ok)
    assert bundle.seed == shuffle_seed("ds", "s1", 2)


def test_same_order_in_another_process() -> None:
    code = (
        "import json\n"
        "from assay.qa import shuffle_options\n"
        f"b = shuffle_options(dataset='ds', sample_id='s1', replicate=1, correct={CORRECT!r}, "
        f"wrong={WRONG!r})\n"
        "print(json.dumps([dict(b.options), list(b.correct_letters), b.seed]))\n"
    )
    env_hashseeds = ["0", "12345"]  # str hashing randomization must not matter
    outputs = []
    for seed in env_hashseeds:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        )
        outputs.append(json.loads(done.stdout))
    here = shuffle_options(dataset="ds", sample_id="s1", replicate=1, correct=CORRECT, wrong=WRONG)
    assert (
        outputs[0]
        == outputs[1]
        == [dict(here.options or {}), list(here.correct_letters), here.seed]
    )


def order(replicate: int) -> tuple[str, ...]:
    bundle = shuffle_options(
        dataset="ds", sample_id="s1", replicate=replicate, correct=CORRECT, wrong=WRONG
    )
    return tuple((bundle.options or {}).values())


def test_replicates_differ() -> None:
    assert len({order(r) for r in range(8)}) > 1
    assert order(3) == order(3)
    seeds = {shuffle_seed("ds", "s1", r) for r in range(8)}
    assert len(seeds) == 8


def test_dataset_and_sample_enter_the_seed() -> None:
    assert shuffle_seed("a", "s1", 0) != shuffle_seed("b", "s1", 0)
    assert shuffle_seed("a", "s1", 0) != shuffle_seed("a", "s2", 0)


def test_no_shuffle_keeps_correct_then_wrong() -> None:
    bundle = shuffle_options(
        dataset="ds", sample_id="s1", replicate=0, correct=CORRECT, wrong=WRONG, shuffle=False
    )
    assert list((bundle.options or {}).values()) == CORRECT + WRONG
    assert bundle.correct_letters == ("A",)
    assert bundle.wrong_letters == ("B", "C", "D")


def test_twenty_six_options_fit_twenty_seven_do_not() -> None:
    wrong = [f"w{i}" for i in range(25)]
    bundle = shuffle_options(dataset="d", sample_id="s", replicate=0, correct=["c"], wrong=wrong)
    assert "".join(bundle.options or {}) == OPTION_LETTERS
    with pytest.raises(DatasetError) as info:
        shuffle_options(
            dataset="d", sample_id="big", replicate=0, correct=["c"], wrong=[*wrong, "one more"]
        )
    assert info.value.message == "Too many options for sample big: 27"


def test_open_questions_get_no_options() -> None:
    sample = normalize_sample(
        {"story": "", "question": "q", "answer": {"correct_answers": ["a"]}, "meta": {}}, index=0
    )
    item = build_item(sample, dataset="ds", replicate=3)
    assert (item.options, item.correct_letters, item.wrong_letters, item.shuffle_seed) == (
        None,
        (),
        (),
        0,
    )


def choice_sample(correct: list[str], wrong: list[str], sample_id: str) -> dict[str, object]:
    return {
        "sample_id": sample_id,
        "story": "s",
        "question": "q",
        "answer": {"correct_answers": correct, "wrong_answers": wrong},
        "meta": {},
    }


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(
    answers=st.lists(
        texts.map(str.strip).filter(bool),
        min_size=2,
        max_size=26,
        # options are the same answer when equal up to case and spacing (refused as repeats)
        unique_by=lambda text: " ".join(text.split()).casefold(),
    ).flatmap(lambda xs: st.tuples(st.just(xs), st.integers(1, len(xs) - 1))),
    sample_id=st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,15}", fullmatch=True),
    replicate=st.integers(0, 50),
)
def test_inversion_property(answers: tuple[list[str], int], sample_id: str, replicate: int) -> None:
    """The options are a permutation; correct letters map back to exactly the correct
    answers; an answer letter extracted after the shuffle grades as it should."""
    texts_, n_correct = answers
    correct, wrong = texts_[:n_correct], texts_[n_correct:]
    sample = normalize_sample(choice_sample(correct, wrong, sample_id), index=0)
    item = build_item(sample, dataset="prop", replicate=replicate)
    assert item.options is not None
    assert sorted(item.options.values()) == sorted(correct + wrong)
    assert {item.options[x] for x in item.correct_letters} == set(correct)
    assert {item.options[x] for x in item.wrong_letters} == set(wrong)
    assert set(item.correct_letters).isdisjoint(item.wrong_letters)
    # answering the correct letters is graded correct; any wrong letter is wrong
    answer = ", ".join(item.correct_letters)
    result = grade_choice(item, f"\\boxed{{{answer}}}")
    assert result.is_correct is True
    assert result.extracted_answers is not None
    assert set(result.extracted_answers) == set(correct)
    wrong_letter = item.wrong_letters[0]
    assert grade_choice(item, f"Answer: {wrong_letter}").is_correct is False


def test_right_before_the_shuffle_is_right_after_it_in_every_replicate() -> None:
    sample = normalize_sample(choice_sample(CORRECT, WRONG, "s1"), index=0)
    letters_seen = set()
    for replicate in range(10):
        item = build_item(sample, dataset="cosmosqa", replicate=replicate)
        (letter,) = item.correct_letters
        letters_seen.add(letter)
        found = extract_choice(f"The answer is {letter}.", item.options or {})
        assert found.letters == (letter,)
        assert (item.options or {})[letter] == CORRECT[0]
        assert grade_choice(item, f"\\boxed{{{letter}}}").is_correct is True
    assert len(letters_seen) > 1  # the correct answer moved between replicates
