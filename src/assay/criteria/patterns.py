"""A pattern the task wrote, searched in text the agent wrote, in bounded time.

Python's ``re`` cannot be stopped: a pattern with nested quantifiers (``^(a|aa)+$``,
``(\\w+\\s?)*$``) on the right text backtracks for hours and holds the event loop, so no row
advances and no signal ends the run. The search runs in the ``regex`` package (``re``'s
syntax and flags, version 0), whose ``timeout`` stops it; a search that does not finish in
:data:`PATTERN_SECONDS` is evidence the criterion cannot read, so the criterion scores 0.0
saying why (an agent cannot take its row out of the averages by writing such a text).
"""

from __future__ import annotations

import re
from typing import Any

from assay.criteria.base import EvidenceError

PATTERN_SECONDS = 2.0
"""Seconds one search may take."""

_FLAGS = ("IGNORECASE", "MULTILINE", "DOTALL", "VERBOSE", "ASCII", "UNICODE")


def search(pattern: str, text: str, flags: int = 0) -> Any:
    """``re.search(pattern, text, flags)``, as a ``regex`` match object or ``None``.

    Args:
        flags: ``re`` flags (their bits are translated to ``regex``'s).

    Raises:
        EvidenceError: the search took more than :data:`PATTERN_SECONDS`.
        re.error: the pattern does not compile (the caller's message names its field).
    """
    import regex  # on use: a run without pattern criteria does not load it

    chosen = 0
    for name in _FLAGS:
        if flags & getattr(re, name):
            chosen |= getattr(regex, name)
    try:
        return regex.search(pattern, text, flags=chosen, timeout=PATTERN_SECONDS)
    except TimeoutError:
        raise EvidenceError(
            f"the pattern {pattern!r} did not finish on this text in {PATTERN_SECONDS:g} s "
            "(catastrophic backtracking: nested quantifiers such as (a+)+ or (\\w+\\s?)*; "
            "write it without them)"
        ) from None
    except regex.error as exc:
        raise re.error(str(exc)) from None
