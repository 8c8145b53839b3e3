"""Prompt templates: ToMEval's text, literal substitution, validation of overrides."""

from __future__ import annotations

from typing import Any

import pytest

from assay.errors import TaskFileError
from assay.qa import QaTemplates, build_item, normalize_sample, render
from assay.qa.prompts import render_options

TOMEVAL_OPEN = (
    "You are answering a question about a story.\n\nStory:\n{story}\n\nQuestion:\n{question}"
    "\n\nAnswer the question directly.\nReturn only the answer text."
)
TOMEVAL_CHOICE = (
    "You are answering a question about a story.\n\nStory:\n{story}\n\nQuestion:\n{question}"
    "\n\nOptions:\n{options_block}\n\n{answer_instruction}"
)
SINGLE = (
    "Select the single best option.\nPut your final answer letter inside \\boxed{}, "
    "e.g. \\boxed{A}."
)
MULTI = (
    "Select every correct option.\nPut all your final answer letters inside one \\boxed{}, "
    "comma-separated, e.g. \\boxed{A,C}."
)


def sample(correct: list[str], wrong: list[str], story: str = "Tom has a cat.", **kw: Any) -> Any:
    return normalize_sample(
        {
            "sample_id": "s1",
            "story": story,
            "question": kw.get("question", "What does Tom have?"),
            "answer": {"correct_answers": correct, "wrong_answers": wrong},
            "meta": {},
        },
        index=0,
    )


def test_open_prompt_is_tomevals() -> None:
    item = build_item(sample(["a cat"], []), dataset="d", replicate=0)
    assert item.prompt == TOMEVAL_OPEN.format(
        story="Tom has a cat.", question="What does Tom have?"
    )


@pytest.mark.parametrize(("correct", "instruction"), [(["a cat"], SINGLE), (["a", "b"], MULTI)])
def test_choice_prompt_is_tomevals(correct: list[str], instruction: str) -> None:
    item = build_item(sample(correct, ["a dog", "a fish"]), dataset="d", replicate=0)
    block = "\n".join(f"{letter}. {text}" for letter, text in (item.options or {}).items())
    expected = TOMEVAL_CHOICE.format(
        story="Tom has a cat.",
        question="What does Tom have?",
        options_block=block,
        answer_instruction=instruction,
    ).rstrip()
    assert item.prompt == expected


def test_unanswerable_is_prompted_like_open() -> None:
    row = {
        "story": "Tom has a cat.",
        "question": "What does Tom have?",
        "answer": {"correct_answers": []},
        "meta": {"unanswerable": True},
    }
    item = build_item(normalize_sample(row, index=0), dataset="d", replicate=0)
    answerable = build_item(sample(["a cat"], []), dataset="d", replicate=0)
    assert item.prompt == answerable.prompt  # the prompt never reveals that no answer exists


@pytest.mark.parametrize(
    "nasty",
    ["{story}", "{question}", "${row.answer}", "{0} {} {{x}} %s %(a)s", "\\1 \\g<0>", "{options}"],
)
def test_values_are_inserted_literally(nasty: str) -> None:
    item = build_item(
        sample([f"ans {nasty}"], [f"bad {nasty}"], story=f"story {nasty}", question=f"q {nasty}"),
        dataset="d",
        replicate=0,
    )
    assert f"Story:\nstory {nasty}\n\nQuestion:\nq {nasty}\n\n" in item.prompt
    assert f". ans {nasty}" in item.prompt
    assert f". bad {nasty}" in item.prompt
    assert item.prompt.count(nasty) == 4


def test_render_is_one_pass() -> None:
    assert render("{aa}-{bb}", {"aa": "{bb}", "bb": "x"}) == "{bb}-x"


def test_braces_that_are_not_slots_are_text() -> None:
    templates = QaTemplates(choice="Q: {question}\n{options}\nReply \\boxed{A} or {A,C}; {x}")
    item = build_item(sample(["a"], ["b"], story=""), dataset="d", replicate=0, templates=templates)
    assert item.prompt.endswith("Reply \\boxed{A} or {A,C}; {x}")


def test_option_template_override() -> None:
    assert render_options({"A": "x", "B": "y"}, template="({letter}) {text}") == "(A) x\n(B) y"


def test_an_option_over_two_lines_stays_one_option_line() -> None:
    block = render_options({"A": "first line\nB. looks like an option", "B": "x\r\ny"})
    assert block.splitlines() == ["A. first line B. looks like an option", "B. x y"]


def test_override_from_mapping() -> None:
    templates = QaTemplates.from_mapping(
        {"open": "Q: {question}\nA:", "open_instruction": "Be brief."}
    )
    item = build_item(sample(["a"], [], story=""), dataset="d", replicate=0, templates=templates)
    assert item.prompt == "Q: What does Tom have?\nA:"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"open": "{story} {stroy} {question}"},
            "unknown slot {stroy} in template 'open' (allowed: instruction, question, story)",
        ),
        (
            {"choice": "{Question} {options}"},
            "unknown slot {Question} in template 'choice' (allowed: instruction, options, "
            "question, story)",
        ),
        (
            {"open": "{story} {options} {question}"},
            "unknown slot {options} in template 'open' (allowed: instruction, question, story)",
        ),
        ({"open": "{story}"}, "template 'open' lacks the slot(s) {question}"),
        ({"choice": "{question}"}, "template 'choice' lacks the slot(s) {options}"),
        ({"option": "{letter}"}, "template 'option' lacks the slot(s) {text}"),
        (
            {"single_instruction": "Pick for {question}"},
            "unknown slot {question} in template 'single_instruction' (no slots allowed)",
        ),
    ],
)
def test_invalid_templates(fields: dict[str, str], message: str) -> None:
    with pytest.raises(TaskFileError) as info:
        QaTemplates(**fields)
    assert info.value.message == message


def test_unknown_slot_suggests_the_right_one() -> None:
    with pytest.raises(TaskFileError) as info:
        QaTemplates(open="{Story} {question}")
    assert info.value.hint == "did you mean 'story'?"
    assert info.value.field == "qa.templates.open"


def test_unknown_template_name() -> None:
    with pytest.raises(TaskFileError) as info:
        QaTemplates.from_mapping({"choise": "{question} {options}"})
    assert info.value.message == "unknown template 'choise'"
    assert info.value.hint == "did you mean 'choice'?"


def test_template_without_story_refuses_a_story() -> None:
    templates = QaTemplates(open="Q: {question}\nA:")
    with pytest.raises(TaskFileError) as info:
        build_item(sample(["a"], []), dataset="d", replicate=0, templates=templates)
    assert info.value.message == "template 'open' has no {story} slot, but sample s1 has a story"


@pytest.mark.parametrize("correct", [["a cat"], ["a {x}", "b"], ["{x} do"]])
def test_prompt_mutations_change_the_template_text_never_the_samples_own(
    correct: list[str],
) -> None:
    braces = sample(correct, ["prints {x} literally", "Answer with a letter."],
                    story='f"{x}" formats x; Answer with a letter.',
                    question="What does {x} do?")  # fmt: skip
    plain = build_item(braces, dataset="d", replicate=0)
    same = build_item(braces, dataset="d", replicate=0, mutate=lambda text: text)
    assert same.prompt == plain.prompt and same.options == plain.options

    def mutate(text: str) -> str:
        text = text.replace("{x}", "INJECTED").replace("Answer with", "Reply with")
        text = text.replace("Select", "CHOOSE")
        return "FIRST\n" + text.replace("What does", "WHAT DOES") + "\nLAST"

    mutated = build_item(braces, dataset="d", replicate=0, mutate=mutate).prompt
    assert mutated.startswith("FIRST\n") and mutated.endswith("\nLAST")
    assert "INJECTED" not in mutated and "WHAT DOES" not in mutated
    assert mutated.count("{x}") == plain.prompt.count("{x}") >= 3  # story, question, option
    assert mutated.count("Answer with a letter.") == 2  # the story's and the option's
    assert "CHOOSE" in mutated and "Select" not in mutated  # the template's instruction


def test_a_mutation_on_an_open_prompt_keeps_the_story_and_question() -> None:
    item = build_item(sample(["a cat"], [], story="{story} is {question}"), dataset="d",
                      replicate=0, mutate=lambda text: text.replace("{", "<"))  # fmt: skip
    assert "{story} is {question}" in item.prompt
