"""Answer extraction for choice questions: what models really write."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.qa import extract_choice
from assay.qa.prompts import SINGLE_INSTRUCTION

ABCD = "ABCD"


@pytest.mark.parametrize(
    ("text", "letters", "rule"),
    [
        ("\\boxed{B}", "B", "boxed"),
        ("\\boxed{ B }", "B", "boxed"),
        ("\\box{B}", "B", "boxed"),
        ("\\boxed {c}", "C", "boxed"),
        ("\\boxed{\\text{B}}", "B", "boxed"),
        ("\\boxed{$D$}", "D", "boxed"),
        ("\\boxed{(A)}", "A", "boxed"),
        ("\\boxed{B. He wants to get married}", "B", "boxed"),
        ("So \\boxed{A} ... no wait, \\boxed{C}", "C", "boxed"),  # the last box counts
        ("\\boxed{C} then \\boxed{}", "C", "boxed"),  # an empty last box is skipped
        ("ANSWER: $B$", "B", "marker"),
        ("Answer: (C)", "C", "marker"),
        ("answer: c", "C", "marker"),
        ("The answer is B because the story says so.", "B", "marker"),
        ("I think the answer is b.", "B", "marker"),
        ("**Answer:** C", "C", "marker"),
        ("The answer is **D**.", "D", "marker"),
        ("Final answer: A", "A", "marker"),
        ("Answer: Option B", "B", "marker"),
        ("The correct option is D.", "D", "marker"),
        ("### Answer\nB", "B", "marker"),
        ("Answer: A) a person who", "A", "marker"),
        ("Answer: A\nOn reflection...\nAnswer: C", "C", "marker"),  # the last one counts
        ("Answer: B. The answer is a guess.", "B", "marker"),  # a later marker without a letter
        ("**C**", "C", "whole"),
        ("I pick **C** here.", "C", "marker"),
        ("**C. She confirms her biases**", "C", "bold"),
        ("(D)", "D", "whole"),
        ("I would go with (D) here.", "D", "marker"),
        ("D. Because the plane landed on water.", "D", "line_start"),
        ("B. Conservative", "B", "line_start"),
        ("Looking at this:\nC) the bus arrives", "C", "line_start"),
        ("B\n\nExplanation: the story says...", "B", "line_start"),
        ("d", "D", "whole"),
        ("B.", "B", "whole"),
        (" c ", "C", "whole"),
    ],
)
def test_single_letters(text: str, letters: str, rule: str) -> None:
    found = extract_choice(text, ABCD)
    assert found.letters == tuple(letters)
    assert found.rule == rule
    assert not found.extraction_failed


@pytest.mark.parametrize(
    ("text", "letters"),
    [
        ("\\boxed{A,C}", "AC"),
        ("\\boxed{A, C}", "AC"),
        ("\\boxed{A and C}", "AC"),
        ("\\boxed{a; c; d}", "ACD"),
        ("\\boxed{C, A, C}", "CA"),  # de-duplicated, order kept
        ("Answer: A, C", "AC"),
        ("The answers are B and D.", "BD"),
        ("A,C", "AC"),
        # an explanation after the letter: every letter reads the same, A and I included
        ("The answer is A because the story says so.", "A"),
        ("The answer is B because the story says so.", "B"),
        ("Answer: A since he left", "A"),
        ("The answer is A as the text says", "A"),
        ("Final answer: A with confidence", "A"),
        ("The correct option is A according to the text.", "A"),
        ("Answer: A is correct", "A"),
        # an English word after the letter is not a second letter
        ("Answer: C a bit unsure", "C"),
        ("answer: D; a second thought", "D"),
        ("The answer is A, I think.", "A"),
        # a list does not run on into the next line
        ("ANSWER: B\n\nA. foo\nB. bar", "B"),
        ("The answer is C\nA", "C"),
    ],
)
def test_letter_lists_and_letters_followed_by_prose(text: str, letters: str) -> None:
    assert extract_choice(text, ABCD).letters == tuple(letters)


@pytest.mark.parametrize(
    "text",
    [
        "A good answer would be the second one.",  # "A" is an article
        "Because he wanted to.",  # the B of a word
        "Answer: A good question.",
        "the answer is I think unclear",
        "Answer: I think A and B are wrong",  # a hedge whose letters do not end the sentence
        "Answer: I think A is wrong",
        "\\boxed{E}",  # outside A-D
        "Answer: E",
        "\\boxed{A, E}",  # a set containing a letter outside the range
        "A. foo\nB. bar\nC. baz\nD. qux",  # restating the options names none of them
        "(A) foo (B) bar",
        "**A** or **B**",
        "I don't know.",
        "e.g. the story",
        "",
        "   \n",
        "He wants to get married to a different person.",
        "\\boxed{}",
        "Answer:",
    ],
)
def test_not_an_answer(text: str) -> None:
    found = extract_choice(text, ABCD)
    assert found.letters == ()
    assert found.extraction_failed
    assert found.rule is None


def test_none_is_a_failed_extraction() -> None:
    assert extract_choice(None, ABCD).extraction_failed


def test_option_range_comes_from_the_letters_given() -> None:
    assert extract_choice("\\boxed{E}", "ABCDE").letters == ("E",)
    assert extract_choice("Answer: c", ["A", "B"]).extraction_failed


@given(
    st.sampled_from(ABCD),
    st.sampled_from(
        ["\\boxed{%s}", "Answer: %s", "(%s)", "**%s**", "%s", "ANSWER: $%s$", "%s. text"]
    ),
    st.booleans(),
)
def test_each_form_in_each_case(letter: str, form: str, lower: bool) -> None:
    written = letter.lower() if lower else letter
    if lower and form in ("(%s)", "**%s**", "%s. text") and written in "ai":
        return  # lower-case a/i in weak forms read as English, by design
    found = extract_choice(form % written, ABCD)
    if lower and form == "%s. text":
        return  # line-start letters are capitals only
    assert found.letters == (letter,)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_never_crashes_and_never_leaves_the_range(text: str) -> None:
    found = extract_choice(text, "ABC")
    assert set(found.letters) <= set("ABC")
    assert found.extraction_failed == (found.letters == ())


@pytest.mark.parametrize(
    ("text", "letters"),
    [("The answer is B I believe", "B"), ("The answer is B, I think.", "B")],
)
def test_pronoun_after_a_letter_with_nine_options(text: str, letters: str) -> None:
    assert extract_choice(text, "ABCDEFGHIJ").letters == tuple(letters)


def test_the_instructions_example_repeated_is_not_an_answer() -> None:
    echoed = "Options:\nA. yes\nB. no\n\n" + SINGLE_INSTRUCTION
    assert extract_choice(echoed, "AB").extraction_failed
    assert extract_choice(echoed + "\n\\boxed{B}", "AB").letters == ("B",)
    assert extract_choice("for example \\boxed{A, B}", "AB").extraction_failed


@pytest.mark.parametrize(
    ("text", "letters"),
    [
        ("I choose B.", "B"),
        ("I would go with C because of the ending.", "C"),
        ("i'd pick d", "D"),
        ("B is correct.", "B"),
        ("After reading it, (C) is the right answer.", "C"),
        ("A is wrong, D is the best option.", "D"),
        ("Answer: I think it is C", "C"),  # a hedge before the letter (read as none before)
        ("Answer seems to be A.", "A"),
        ("the answer is probably B.", "B"),
        ("Final answer: I believe the answer is (B)", "B"),
        ("Answer: maybe **D**", "D"),
        ("Answer: likely A because of the ending", "A"),
    ],
)
def test_choice_statements(text: str, letters: str) -> None:
    assert extract_choice(text, ABCD).letters == tuple(letters)
    assert extract_choice(text, ABCD).rule == "marker"
