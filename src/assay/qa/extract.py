r"""Extract the chosen option letters from what a model wrote.

Rules, tried in this order; the first that yields letters wins. Strong rules (``boxed``,
``whole``, ``marker``) take the **last** valid occurrence (a model that revises its answer
means the last one); the weak rules (``bold``, ``line_start``, ``parenthesized``) only count
when every match of all three names the same letter (a response that restates the options,
``A. … B. … C. …`` or ``(A) … (B) …``, names none of them).

==================  =================================================  ==========
rule                examples                                           occurrence
==================  =================================================  ==========
``boxed``           ``\boxed{B}``, ``\boxed{ b }``, ``\box{B}``,        last valid
                    ``\boxed{\text{B}}``, ``\boxed{A, C}``,
                    ``\boxed{A and C}``, ``\boxed{B. the text}``
``whole``           the whole response is ``B``, ``b``, ``(B)``,       —
                    ``B.``, ``**B**``, ``A,C``
``marker``          ``Answer: B``, ``ANSWER: $B$``, ``Answer: (C)``,   last valid
                    ``the answer is **C**``, ``Final answer: A, C``,
                    ``correct option is D``, ``I choose B``,
                    ``I would go with C``, ``Answer: I think it is C``,
                    ``the answer seems to be A``, ``Answer: probably
                    B.`` (a hedge counts when the letter ends the
                    sentence); else ``B is correct``,
                    ``(C) is the right answer``
``bold``            ``**C**``, ``**(C)**``, ``**C. the text**``        unanimous
``line_start``      a line starting ``D.``, ``D)``, ``D:`` or a        unanimous
                    line that is only ``D``
``parenthesized``   ``(D)`` anywhere                                    unanimous
==================  =================================================  ==========

A letter is only an answer when it stands alone: the ``B`` of "Because" and the ``A`` of
"A good answer" are not (an ``a``/``A``/``i``/``I`` followed by a lower-case word is read as
English, unless the word explains an answer: "A because …", "A since …", "A is correct").
A box right after "e.g."/"for example"/"for instance"/"such as" is an example (the default
instruction's ``e.g. \boxed{A}``, echoed back), not an answer. A list of letters stays on
one line ("ANSWER: B" followed by a line "A. …" is B), and an English word after it is not
part of it ("C a bit unsure" is C, "B, I think" is B).
Lower-case letters count inside a box, after a marker and as the whole response; the weak
rules read capitals only. A letter outside the option range (``E`` of four options) is not
an answer: a candidate containing one is skipped. Several letters (``A, C``) come from the
strong rules only; the weak rules give one letter. A response with nothing extractable gives
``letters == ()`` and ``extraction_failed`` (graded as ``extraction_failed``, never as a
wrong letter).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

_LETTER = r"\(?[A-Za-z]\)?(?![A-Za-z0-9])"
_JOIN = r"[ \t]*(?:,|;|/|&|\+|\band\b)[ \t]*"
_LIST = re.compile(rf"{_LETTER}(?:(?:{_JOIN}|[ \t]+){_LETTER})*")
_LAST_OF_LIST = re.compile(rf"(?:{_JOIN}|[ \t]+){_LETTER}$")
_NEXT_WORD = re.compile(r"[ \t,]+([a-z]+)")
# Words that follow an answer letter in an explanation ("A because …", "Answer: I since …"),
# never the article "a" or the pronoun "I" ("a good one", "I think").
_EXPLAINS = frozenset({
    "because", "since", "as", "with", "according", "for", "given", "which", "based", "due",
    "per", "from", "is", "was", "seems", "looks", "fits", "matches", "being", "here",
})  # fmt: skip
_BOX = re.compile(r"\\box(?:ed)?\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_LATEX_WRAP = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|mathit|emph)\s*\{([^{}]*)\}")
_MARKUP = "*_$`\"' \t"
_MARKER = re.compile(
    r"(?i)(?:\b(?:final\s+)?answers?\b|\b(?:correct|best|right)\s+(?:option|choice)s?\b"
    r"|\bI(?:\s+would|\s+will|'d)?\s+(?:choose|pick|select|go\s+with)\b)"
    r"(?:\s*(?:is|are|(?:would|should|will|must|has\s+to)\s+be|(?:seems|appears)\s+to\s+be)\b)?"
    r"\s*\**\s*[:=\-–—]?"
    r"(?:\s*\**\s*(?:option|choice)\b)?"
)
_HEDGE = re.compile(
    r"(?i)(?:I\s+(?:think|believe|guess|reckon|would\s+say)|I'd\s+say|probably|likely"
    r"|most\s+likely|perhaps|maybe|my\s+(?:guess|pick)\s+is)"
    r"(?:\s+(?:that\s+)?(?:it'?s|it\s+is|it\s+would\s+be|the\s+answer\s+is))?\s*[:,]?\s*"
)
_SENTENCE_END = re.compile(r"[ \t]*(?:[.!,;]|\n|$)|[ \t]*(?:because|since|given|due|based|as)\b")
_MARKER_WORD = re.compile(r"(?i)answer|option|choice|choose|pick|select|go\s+with")
_IS_CORRECT = re.compile(
    r"(?<![A-Za-z0-9])\(?([A-Z])\)?\s+is\s+(?:the\s+)?(?:correct|right|best)\b"
)
_WITH_TEXT = re.compile(r"^\(?([A-Za-z])(?:\)|[.:])\s+\S")
_BOLD = re.compile(r"\*\*\s*\(?([A-Z])\)?[.):]?\s*\*\*|\*\*\s*\(?([A-Z])[.):]\s[^*\n]*\*\*")
_LINE_START = re.compile(r"(?m)^[ \t>#*-]*(?:\(?([A-Z])[.):](?=\s|$)|\(?([A-Z])\)?[ \t]*$)")
_PAREN = re.compile(r"(?<![A-Za-z0-9])\(([A-Z])\)(?![A-Za-z0-9])")
_WORDLIKE = frozenset("aAiI")
_EXAMPLE = re.compile(r"(?i)(?:\be\.g\.|\bfor example|\bfor instance|\bsuch as)[\s,:]*$")


@dataclass(frozen=True)
class ChoiceExtraction:
    """What :func:`extract_choice` found.

    Attributes:
        letters: upper-case option letters, de-duplicated, in the order written; ``()`` when
            nothing could be extracted.
        rule: the rule that matched (``boxed``, ``whole``, ``marker``, ``bold``,
            ``line_start``, ``parenthesized``), or ``None``.
    """

    letters: tuple[str, ...] = ()
    rule: str | None = None

    @property
    def extraction_failed(self) -> bool:
        """No answer letter could be read from the response."""
        return not self.letters


def extract_choice(text: str | None, letters: Collection[str]) -> ChoiceExtraction:
    """Extract the chosen letters from ``text``.

    Args:
        text: the model's response (``None`` and blank give a failed extraction).
        letters: the valid option letters (e.g. ``"ABCD"`` or an option map's keys); a
            ``frozenset`` is taken as already upper-case.
    """
    valid = letters if isinstance(letters, frozenset) else frozenset(x.upper() for x in letters)
    if not text or not text.strip():
        return ChoiceExtraction()
    for rule, finder in _STRONG:
        found = finder(text, valid)
        if found:
            return ChoiceExtraction(found, rule)
    return _weak(text, valid)


def parse_letter_list(content: str, valid: frozenset[str]) -> tuple[str, ...] | None:
    """Read ``content`` as a letter or a list of letters (``B``, ``(b)``, ``A, C``,
    ``A and C``) or an option with its text (``B. the text``); ``None`` if it is not one, or
    names a letter outside ``valid``."""
    if len(content) == 1:  # the common case, a bare letter
        letter = content.upper()
        return (letter,) if content.isalpha() and letter in valid else None
    cleaned = _LATEX_WRAP.sub(r"\1", content).strip(_MARKUP).rstrip(".").strip(_MARKUP)
    if not cleaned:
        return None
    match = _LIST.fullmatch(cleaned)
    if match is None:
        with_text = _WITH_TEXT.match(cleaned)
        if with_text is None:
            return None
        return _checked([with_text.group(1)], valid)
    return _checked(re.findall(r"[A-Za-z]", cleaned.replace("and", " ")), valid)


def _checked(found: Iterable[str], valid: frozenset[str]) -> tuple[str, ...] | None:
    letters = _unique(letter.upper() for letter in found)
    if not letters or any(letter not in valid for letter in letters):
        return None
    return letters


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _boxed(text: str, valid: frozenset[str]) -> tuple[str, ...] | None:
    if "\\box" not in text:  # a substring test in C before the regex
        return None
    for match in reversed(list(_BOX.finditer(text))):
        if _EXAMPLE.search(text, max(0, match.start() - 20), match.start()):
            continue  # the instruction's own "e.g. \boxed{A}", repeated by the model
        letters = parse_letter_list(match.group(1), valid)
        if letters:
            return letters
    return None


def _whole(text: str, valid: frozenset[str]) -> tuple[str, ...] | None:
    cleaned = text.strip().strip(_MARKUP + "\n").rstrip(".").strip(_MARKUP)
    if _LIST.fullmatch(cleaned) is None:
        return None
    return parse_letter_list(cleaned, valid)


def _after_marker(rest: str, valid: frozenset[str]) -> tuple[str, ...] | None:
    rest = rest.lstrip(_MARKUP + "\n")
    hedged = _HEDGE.match(rest)
    if hedged is not None:  # "Answer: I think it is C", "the answer is probably B."
        letters = _hedged(rest[hedged.end() :], valid)
        if letters:
            return letters
    match = _LIST.match(rest)
    if match is None:
        return None
    written = match.group(0)
    after = rest[match.end() :]
    if after[:1].isalnum():
        return None
    while _starts_english(written, after):
        # "Answer: A good one", "the answer is I think", "C a bit unsure", "B, I think"
        last = _LAST_OF_LIST.search(written)
        if last is None:
            return None
        written, after = written[: last.start()], written[last.start() :] + after
    return parse_letter_list(written, valid)


def _hedged(rest: str, valid: frozenset[str]) -> tuple[str, ...] | None:
    """The letters after a hedge when they end the sentence or a reason follows ("I think it
    is C.", "probably A because …"; not "I think A and B are wrong", which goes on)."""
    rest = rest.lstrip(_MARKUP)
    match = _LIST.match(rest)
    if match is None or _SENTENCE_END.match(rest[match.end() :].lstrip(_MARKUP)) is None:
        return None
    return parse_letter_list(match.group(0), valid)


def _starts_english(written: str, after: str) -> bool:
    """The list's last letter is an ``a``/``A``/``i``/``I`` that begins an English phrase:
    a lower-case word follows that does not explain an answer ("because", "since", …)."""
    if written.rstrip(")")[-1:] not in _WORDLIKE or written.endswith(")"):
        return False
    word = _NEXT_WORD.match(after)
    return word is not None and word.group(1) not in _EXPLAINS


def _marker(text: str, valid: frozenset[str]) -> tuple[str, ...] | None:
    if _MARKER_WORD.search(text) is None:  # one scan in C before the full pattern
        return _is_correct(text, valid)
    for match in reversed(list(_MARKER.finditer(text))):
        letters = _after_marker(text[match.end() :], valid)
        if letters:
            return letters
    return _is_correct(text, valid)


def _is_correct(text: str, valid: frozenset[str]) -> tuple[str, ...] | None:
    """ "B is correct", "(C) is the right answer": the last such statement."""
    for match in reversed(list(_IS_CORRECT.finditer(text))):
        letters = _checked([match.group(1)], valid)
        if letters:
            return letters
    return None


def _bold(text: str) -> list[str]:
    if "**" not in text:
        return []
    return [m.group(1) or m.group(2) for m in _BOLD.finditer(text)]


def _line_start(text: str) -> list[str]:
    return [m.group(1) or m.group(2) for m in _LINE_START.finditer(text)]


def _parenthesized(text: str) -> list[str]:
    if "(" not in text:
        return []
    return [m.group(1) for m in _PAREN.finditer(text)]


_STRONG = (("boxed", _boxed), ("whole", _whole), ("marker", _marker))
_WEAK = (("bold", _bold), ("line_start", _line_start), ("parenthesized", _parenthesized))


def _weak(text: str, valid: frozenset[str]) -> ChoiceExtraction:
    """The one letter every weak rule agrees on (with the first rule that found it)."""
    found = [(rule, letter.upper()) for rule, finder in _WEAK for letter in finder(text)]
    letters = {letter for _, letter in found if letter in valid}
    if len(letters) != 1:
        return ChoiceExtraction()
    (letter,) = letters
    rule = next(rule for rule, found_letter in found if found_letter == letter)
    return ChoiceExtraction((letter,), rule)
