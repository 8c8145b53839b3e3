"""How alike two pieces of source code are, for ``reference_comparison`` (Coder Eval's
``comparison_method``: ``ast``, ``token`` or ``complexity``; ``coder_eval_agents.md`` §2).

Each method returns a similarity in [0, 1] (1: alike in what the method looks at):

- ``ast``: the sequences of Python syntax-node types of both files (names and literal values
  left out, so a renamed variable is the same structure), compared with
  :class:`difflib.SequenceMatcher`'s ratio ``2·M / (|a| + |b|)`` (M: matched nodes);
- ``token``: the sequences of tokens (Python's :mod:`tokenize` without comments, blank lines
  and indentation tokens; any other language: words and single punctuation characters), with
  the same ratio;
- ``complexity``: the total cyclomatic complexity of each file (McCabe 1976; ``radon``'s
  ``total_complexity``: module-level decision points, functions and methods, 1 for
  straight-line code), compared as ``1 − |a − b| / max(a, b)``.
"""

from __future__ import annotations

import ast
import difflib
import io
import re
import tokenize
from collections.abc import Callable, Sequence
from typing import Literal

Method = Literal["ast", "token", "complexity"]
METHODS: tuple[Method, ...] = ("ast", "token", "complexity")
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENCODING, tokenize.ENDMARKER}  # fmt: skip
_WORDS = re.compile(r"\w+|[^\w\s]")


class ComparisonError(ValueError):
    """A file the method cannot read (Python that does not parse, for ``ast`` and
    ``complexity``); ``which`` is ``agent`` or ``reference``."""

    def __init__(self, message: str, *, which: str) -> None:
        super().__init__(message)
        self.which = which


def similarity(agent: str, reference: str, *, method: Method) -> float:
    """How alike ``agent``'s code is to ``reference``'s, in [0, 1] (see the module docstring).

    Raises:
        ComparisonError: a file that does not parse (naming which and where).
        ValueError: an unknown method.
    """
    measures: dict[str, Callable[[str, str], float]] = {
        "ast": _ast_similarity,
        "token": _token_similarity,
        "complexity": _complexity_similarity,
    }
    if method not in measures:
        raise ValueError(f"unknown comparison_method {method!r}; use one of {list(METHODS)}")
    return measures[method](agent, reference)


def ratio(first: Sequence[str], second: Sequence[str]) -> float:
    """:class:`difflib.SequenceMatcher`'s ratio without its junk heuristic (two empty
    sequences are alike: 1.0)."""
    if not first and not second:
        return 1.0
    return difflib.SequenceMatcher(None, first, second, autojunk=False).ratio()


def _parse(text: str, which: str) -> ast.Module:
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        raise ComparisonError(f"the {which} file is not valid Python: {exc.msg} "
                              f"(line {exc.lineno})", which=which) from None  # fmt: skip


def node_types(text: str, which: str = "agent") -> list[str]:
    """The syntax-node type names of ``text`` in walk order (module node left out)."""
    return [type(node).__name__ for node in ast.walk(_parse(text, which))][1:]


def _ast_similarity(agent: str, reference: str) -> float:
    return ratio(node_types(agent, "agent"), node_types(reference, "reference"))


def code_tokens(text: str) -> list[str]:
    """The tokens of ``text``: Python's, without comments and layout; if it does not
    tokenize as Python, its words and punctuation characters."""
    try:
        found = tokenize.generate_tokens(io.StringIO(text).readline)
        return [token.string for token in found if token.type not in _SKIPPED]
    except (tokenize.TokenError, SyntaxError):
        return _WORDS.findall(text)


def _token_similarity(agent: str, reference: str) -> float:
    return ratio(code_tokens(agent), code_tokens(reference))


def complexity(text: str, which: str = "agent") -> int:
    """The total cyclomatic complexity of ``text`` (``radon``'s ``total_complexity``; at
    least 1).

    Raises:
        ComparisonError: ``text`` is not valid Python.
    """
    from radon.visitors import ComplexityVisitor

    return int(ComplexityVisitor.from_ast(_parse(text, which)).total_complexity)


def _complexity_similarity(agent: str, reference: str) -> float:
    first, second = complexity(agent, "agent"), complexity(reference, "reference")
    if max(first, second) == 0:
        return 1.0
    return 1.0 - abs(first - second) / max(first, second)
