"""Prompt templates for QA samples, and literal slot substitution.

The default English templates are ToMEval's (``reference/originals.md`` §2.3); rendered, they
give exactly ToMEval's prompts (the choice prompt is right-stripped, as ToMEval does).

A template is plain text with **slots** ``{name}``: ``{story}``, ``{question}``,
``{options}`` (the lettered option block) and ``{instruction}`` (the answer instruction of
the prompt type). Substitution is one pass, not ``str.format``: a value is inserted exactly
as it is, so a story or an answer containing ``{braces}``, ``{0}``, ``%s`` or ``${row.x}``
reaches the model literally and is never expanded again. Text in braces that is not an
identifier of two or more characters (``\\boxed{A}``, ``\\boxed{}``, ``{A,C}``) is ordinary text.

Validation (:class:`QaTemplates` raises ``TaskFileError`` on construction):

- a slot that is not one of the template's allowed slots is an error naming it, with a
  "did you mean" suggestion (``{Story}``, ``{stroy}``);
- ``open`` must contain ``{question}``; ``choice`` must contain ``{question}`` and
  ``{options}``; ``option`` must contain ``{letter}`` and ``{text}``;
- the instructions are inserted literally and may contain no slot;
- a sample with a non-empty story rendered with a template without ``{story}`` is an error
  (:func:`render_prompt`), so a passage is never dropped silently.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields

from assay.errors import TaskFileError

OPEN_TEMPLATE = (
    "You are answering a question about a story.\n\n"
    "Story:\n{story}\n\n"
    "Question:\n{question}\n\n"
    "{instruction}"
)
CHOICE_TEMPLATE = (
    "You are answering a question about a story.\n\n"
    "Story:\n{story}\n\n"
    "Question:\n{question}\n\n"
    "Options:\n{options}\n\n"
    "{instruction}"
)
OPTION_TEMPLATE = "{letter}. {text}"
OPEN_INSTRUCTION = "Answer the question directly.\nReturn only the answer text."
SINGLE_INSTRUCTION = (
    "Select the single best option.\n"
    "Put your final answer letter inside \\boxed{}, e.g. \\boxed{A}."
)
MULTI_INSTRUCTION = (
    "Select every correct option.\n"
    "Put all your final answer letters inside one \\boxed{}, comma-separated, e.g. \\boxed{A,C}."
)

SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]+)\}")

# template field → (allowed slots, required slots)
_SLOTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "open": (frozenset({"story", "question", "instruction"}), frozenset({"question"})),
    "choice": (
        frozenset({"story", "question", "options", "instruction"}),
        frozenset({"question", "options"}),
    ),
    "option": (frozenset({"letter", "text"}), frozenset({"letter", "text"})),
    "open_instruction": (frozenset(), frozenset()),
    "single_instruction": (frozenset(), frozenset()),
    "multi_instruction": (frozenset(), frozenset()),
}


@dataclass(frozen=True)
class QaTemplates:
    """The prompt templates of a QA task; every field may be overridden in the task file.

    Attributes:
        open: template of ``open`` and ``open_unanswerable`` questions (the two are
            prompted identically, so the prompt never reveals that a question has no answer).
        choice: template of ``mcq_single`` and ``mcq_multi`` questions.
        option: one line of the ``{options}`` block.
        open_instruction: the ``{instruction}`` of open questions.
        single_instruction: the ``{instruction}`` of ``mcq_single``.
        multi_instruction: the ``{instruction}`` of ``mcq_multi``.

    Raises:
        TaskFileError: on construction, see the module docstring.
    """

    open: str = OPEN_TEMPLATE
    choice: str = CHOICE_TEMPLATE
    option: str = OPTION_TEMPLATE
    open_instruction: str = OPEN_INSTRUCTION
    single_instruction: str = SINGLE_INSTRUCTION
    multi_instruction: str = MULTI_INSTRUCTION

    def __post_init__(self) -> None:
        for spec in fields(self):
            allowed, required = _SLOTS[spec.name]
            check_template(
                getattr(self, spec.name), name=spec.name, allowed=allowed, required=required
            )

    @classmethod
    def from_mapping(cls, data: Mapping[str, object], *, file: str | None = None) -> QaTemplates:
        """Build from a task file's ``qa.templates`` mapping (unknown keys are errors).

        Raises:
            TaskFileError: an unknown key, a value that is not a string, or a bad template.
        """
        names = [spec.name for spec in fields(cls)]
        for key, value in data.items():
            if key not in names:
                raise TaskFileError(
                    f"unknown template {key!r}",
                    file=file,
                    field=f"qa.templates.{key}",
                    hint=_did_you_mean(key, names) or f"templates are {', '.join(names)}",
                )
            if not isinstance(value, str):
                raise TaskFileError(
                    "a template must be a string", file=file, field=f"qa.templates.{key}"
                )
        return cls(**{key: str(value) for key, value in data.items()})


def slots_of(template: str) -> list[str]:
    """The slot names of ``template`` in order of appearance (repeats kept)."""
    return SLOT.findall(template)


def check_template(
    template: str, *, name: str, allowed: frozenset[str], required: frozenset[str]
) -> None:
    """Raise ``TaskFileError`` if ``template`` uses a slot outside ``allowed`` or lacks one
    of ``required``."""
    field = f"qa.templates.{name}"
    for slot in slots_of(template):
        if slot not in allowed:
            what = f"allowed: {', '.join(sorted(allowed))}" if allowed else "no slots allowed"
            raise TaskFileError(
                f"unknown slot {{{slot}}} in template {name!r} ({what})",
                field=field,
                hint=_did_you_mean(slot, sorted(allowed)),
            )
    missing = sorted(required - set(slots_of(template)))
    if missing:
        raise TaskFileError(
            f"template {name!r} lacks the slot(s) {', '.join('{' + m + '}' for m in missing)}",
            field=field,
        )


def render(template: str, values: Mapping[str, str]) -> str:
    """Replace each ``{slot}`` of ``template`` by ``values[slot]``, literally, in one pass.

    Raises:
        KeyError: a slot of the template has no value (templates are validated first).
    """
    return SLOT.sub(lambda match: values[match.group(1)], template)


def render_options(options: Mapping[str, str], *, template: str = OPTION_TEMPLATE) -> str:
    """The option block: one ``template`` line per option, in letter order.

    An option's own line breaks become spaces: an option written over two lines, the second
    starting "B.", would otherwise read as one more option.
    """
    return "\n".join(
        render(template, {"letter": letter, "text": " ".join(text.splitlines())})
        for letter, text in options.items()
    )


def render_prompt(
    templates: QaTemplates,
    *,
    prompt_type: str,
    story: str,
    question: str,
    options: Mapping[str, str] | None,
    sample_id: str = "",
    mutate: Callable[[str], str] | None = None,
) -> str:
    """Render the prompt of one sample.

    Args:
        templates: the (validated) templates.
        prompt_type: ``open``, ``open_unanswerable``, ``mcq_single`` or ``mcq_multi``.
        story: the passage, possibly empty.
        question: the question.
        options: letter → text for choice questions; ignored for open ones.
        sample_id: named in the error below.
        mutate: an experiment's prompt mutations: they change the prompt as the templates
            make it, never the sample's own text (its story, question and options are put in
            after them, as a task's ``${row.x}`` are), so a ``{x}`` or a pattern in the data
            stays as written.

    Raises:
        TaskFileError: the template has no ``{story}`` slot but the sample has a story.
    """
    if prompt_type in ("mcq_single", "mcq_multi"):
        template = templates.choice
        instruction = (
            templates.multi_instruction
            if prompt_type == "mcq_multi"
            else templates.single_instruction
        )
        block = render_options(options or {}, template=templates.option)
    else:
        template, instruction, block = templates.open, templates.open_instruction, ""
    if story and "story" not in slots_of(template):
        kind = "choice" if prompt_type in ("mcq_single", "mcq_multi") else "open"
        raise TaskFileError(
            f"template {kind!r} has no {{story}} slot, but sample {sample_id} has a story",
            field=f"qa.templates.{kind}",
            hint="add {story} to the template, or blank the stories in the dataset",
        )
    if mutate is not None:
        return _mutated(templates, template, instruction, story, question, options or {}, mutate)
    values = {"story": story, "question": question, "options": block, "instruction": instruction}
    text = render(template, values)
    return text.rstrip() if template is templates.choice else text


_MASK = re.compile("\ue000([a-z0-9]+)\ue001")
"""A sample's text held out of the prompt while mutations run (private-use characters)."""


def _mutated(
    templates: QaTemplates,
    template: str,
    instruction: str,
    story: str,
    question: str,
    options: Mapping[str, str],
    mutate: Callable[[str], str],
) -> str:
    """:func:`render_prompt` with ``mutate`` applied to the prompt with the sample's text
    masked, then the text put in, in one pass (the text itself is never searched)."""
    held = {"s": story, "q": question}
    masked = {}
    for number, (letter, text) in enumerate(options.items()):
        held[f"o{number}"] = " ".join(text.splitlines())  # as render_options puts it
        masked[letter] = f"\ue000o{number}\ue001"
    block = render_options(masked, template=templates.option)
    values = {"story": "\ue000s\ue001" if story else "", "question": "\ue000q\ue001",
              "options": block, "instruction": instruction}  # fmt: skip
    skeleton = render(template, values)
    skeleton = skeleton.rstrip() if template is templates.choice else skeleton
    return _MASK.sub(lambda match: held.get(match.group(1), match.group(0)), mutate(skeleton))


def _did_you_mean(name: str, choices: list[str]) -> str | None:
    close = difflib.get_close_matches(name.lower(), choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None
