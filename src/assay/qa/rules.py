"""Rule grading of open answers, tried before the LLM judge: exact match and abstention.

- :func:`normalize_answer` is SQuAD's official normalization (lower-case, drop punctuation
  and the articles a/an/the, collapse whitespace), plus thousands separators removed from
  numbers (``14,000`` → ``14000``) so GSM8K's gold answers match either spelling.
- :func:`matches_any`: the normalized response equals a normalized reference answer.
- :func:`to_number`: a text that is just a number (``18``, ``$1,875``, ``-3.50``, ``40%``)
  as a :class:`~decimal.Decimal`; numbers compare by value (``18`` equals ``18.0``).
- :func:`last_number`: the last number written in a text ("12 * 12 = 144" → 144), the
  flexible extraction lm-evaluation-harness uses for GSM8K.
- :func:`is_abstention`: the response obviously declines to answer ("The story does not
  say.", "unanswerable", "I don't know", a bare "unknown"). Only short responses (at most
  :data:`ABSTENTION_MAX_WORDS` words) without a hedge ("but", "probably", "maybe", …) count;
  anything else is left to the judge.
- :func:`is_refusal`: the response declines to do the task ("I'm sorry, but I can't help
  with that", "As an AI language model, I cannot …", "I must decline"). A refusal is neither
  a wrong answer nor an abstention from an unanswerable question: graders call it only for a
  response they would otherwise grade wrong, and it is counted apart (``refused``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

ABSTENTION_MAX_WORDS = 25
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ABSTAIN = re.compile(
    r"(?ix)"
    r"\b(?:unanswerable|not\s+answerable|no\s+answer"
    r"|can\s*not\s+(?:be\s+)?(?:answer(?:ed)?|determine[d]?|tell|know|say|be\s+determined)"
    r"|can'?t\s+(?:be\s+)?(?:answer(?:ed)?|determine[d]?|tell|know|say)"
    r"|(?:does|do|did)\s*(?:not|n'?t)\s+(?:say|mention|state|specify|tell|contain|provide|give|indicate)"
    r"|(?:is|are|was|were)\s*(?:not|n'?t)\s+(?:mentioned|stated|specified|given|provided|known|answered)"
    r"|not\s+(?:enough|sufficient)\s+information|no\s+information|insufficient\s+information"
    r"|i\s+(?:do\s*not|don'?t)\s+know|(?:answer|it)\s+is\s+unknown"
    r"|impossible\s+to\s+(?:say|tell|know|determine))\b"
)
_REFUSAL = re.compile(
    r"(?ix)"
    r"\b(?:i|we)(?:\s+am|'m|\s+are|'re)?\s+(?:sorry|afraid)\b[^.!?\n]{0,60}?"
    r"\b(?:can\s*not|can'?t|won'?t|will\s+not|unable\s+to|not\s+able\s+to)\b"
    r"|\b(?:i|we)\s+(?:can\s*not|can'?t|won'?t|will\s+not|(?:am|'m|are|'re)\s+(?:unable|not\s+able)\s+to)"
    r"\s+(?:help\s+(?:you\s+)?with|assist|comply|provide|fulfil|do\s+that|engage|"
    r"answer\s+(?:that|this)\s+(?:request|question)|respond\s+to\s+(?:that|this))"
    r"|\bas\s+an\s+ai\b(?:\s+(?:language\s+model|assistant|model))?[^.!?\n]{0,40}?"
    r"\b(?:can\s*not|can'?t|don'?t|do\s+not|am\s+not|unable)\b"
    r"|\bi\s+must\s+(?:respectfully\s+)?(?:decline|refuse)\b"
    r"|\b(?:against|violates?)\s+(?:my|our|the)\s+(?:usage\s+)?(?:guidelines|polic(?:y|ies)|principles)\b"
)
REFUSAL_WINDOW = 300
"""A refusal is found in the first characters of a response, where models put it."""
_HEDGE = re.compile(r"(?i)\b(?:but|however|probably|likely|perhaps|maybe|although|though|guess)\b")
_BARE = frozenset({"unknown", "none", "n/a", "na", "not mentioned", "not stated", "not given"})
_NUMBER = re.compile(r"[-+]?(?:\d+(?:,\d{3})*|\d*)(?:\.\d+)?")
_MINUS = str.maketrans({"\u2212": "-", "\ufe63": "-", "\uff0d": "-"})  # minus signs
_SPACED_THOUSANDS = re.compile(r"(?<=\d)[\u00a0\u2009\u202f](?=\d{3}(?!\d))")
_CURRENCY = re.compile(r"^([-+]?)\s*\$\s*")
_NUMBER_TOKEN = re.compile(r"(?:(?<![\w.,:/-])[-+])?\d+(?:[.,:/]\d+)*")
_LAST_NUMBER = re.compile(r"(?<![\w.,])[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?![\w]|[.,]\d)")


def plain_digits(text: str) -> str:
    """``text`` with the typeset forms of numbers made plain: the minus sign (U+2212 and its
    small and full-width forms) as ``-``, and a no-break, thin or narrow no-break space
    between groups of three digits (``1 000 000``, the SI style) removed."""
    return _SPACED_THOUSANDS.sub("", text.translate(_MINUS))


def normalize_answer(text: str) -> str:
    """SQuAD normalization plus removal of thousands separators (see the module docstring).

    Numbers keep the punctuation that changes their value (SQuAD's normalization would make
    ``14.4``, ``1-44`` and ``-144`` all equal ``144``): a sign before a number and a ``.``,
    ``:``, ``/`` or ``,`` between digits stay, so ``3/4`` is not ``34``; typeset digits are
    read as :func:`plain_digits` gives them.
    """
    text = _THOUSANDS.sub("", plain_digits(text).lower())
    pieces: list[str] = []
    start = 0
    for number in _NUMBER_TOKEN.finditer(text):
        pieces.append(text[start : number.start()].translate(_PUNCTUATION))
        pieces.append(f" {number.group(0)} ")
        start = number.end()
    pieces.append(text[start:].translate(_PUNCTUATION))
    return " ".join(_ARTICLES.sub(" ", "".join(pieces)).split())


def matches_any(response: str, answers: Iterable[str]) -> bool:
    """``True`` when the normalized response equals one normalized answer (non-empty)."""
    normalized = normalize_answer(response)
    return bool(normalized) and any(normalized == normalize_answer(a) for a in answers)


def is_abstention(response: str) -> bool:
    """``True`` when a short response plainly declines to answer."""
    text = response.replace("’", "'").strip()
    if len(text.split()) > ABSTENTION_MAX_WORDS or _HEDGE.search(text):
        return False
    if text.lower().rstrip(".!") in _BARE:
        return True
    return _ABSTAIN.search(text) is not None


def is_refusal(response: str | None) -> bool:
    """``True`` when the response (its first :data:`REFUSAL_WINDOW` characters) declines to
    do what was asked."""
    if not response:
        return False
    text = response.replace("’", "'")[:REFUSAL_WINDOW]
    return _REFUSAL.search(text) is not None


def to_number(text: str) -> Decimal | None:
    """The number ``text`` consists of (currency sign, also after the sign (``-$5``), ``%``,
    thousands separators, typeset digits (:func:`plain_digits`) and a final period allowed),
    or ``None``."""
    body = _CURRENCY.sub(r"\1", plain_digits(text).strip().rstrip(".").strip())
    body = body.removesuffix("%").strip()
    if not body or _NUMBER.fullmatch(body) is None or not any(c.isdigit() for c in body):
        return None
    try:
        return Decimal(body.replace(",", ""))
    except InvalidOperation:
        return None


def last_number(text: str) -> Decimal | None:
    """The last number written in ``text`` (thousands separators allowed), or ``None``."""
    found = _LAST_NUMBER.findall(plain_digits(text))  # each a well-formed decimal number
    return Decimal(found[-1].replace(",", "")) if found else None
