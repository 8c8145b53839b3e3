"""The forms of a shell command a pattern is tried on: as recorded, and shell-unwrapped.

Agents record commands differently: Claude Code's ``Bash`` tool keeps the command as the
model wrote it (``grep -r "TODO" src``); Codex records what it executed, usually wrapped in
a login shell (``/bin/bash -lc 'grep -r "TODO" src'``). A criterion's pattern should not
have to spell either quoting, so it is tried on every form (Coder Eval's rule,
``reference/coder_eval_agents.md`` §2 ``command_executed``): the raw text; the command a
``bash|sh|zsh|dash -c``-style wrapper runs (with any flags clustered with ``c``: ``-lc``,
``-ec``, ``-c``), unwrapped as many times as it is nested; and each of those with its shell
quoting resolved (``shlex``: ``grep -r TODO src``).
"""

from __future__ import annotations

import shlex
from pathlib import PurePosixPath

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
MAX_DEPTH = 4


def shell_forms(command: str) -> list[str]:
    """``command`` and its unwrapped and quote-resolved forms, without duplicates, raw first.

    A command whose quoting does not parse (an unbalanced quote) has only its raw form.
    """
    forms = [command]
    current = command
    for _ in range(MAX_DEPTH):
        words = _split(current)
        if words is None:
            break
        forms.append(" ".join(words))
        inner = _wrapped(words)
        if inner is None:
            break
        forms.append(inner)
        current = inner
    return list(dict.fromkeys(forms))


def _split(text: str) -> list[str] | None:
    try:
        return shlex.split(text, posix=True)
    except ValueError:
        return None


def _wrapped(words: list[str]) -> str | None:
    """The script of ``[env] bash [-flags] -c SCRIPT …``, or ``None``."""
    if words and PurePosixPath(words[0]).name == "env":
        words = words[1:]
    if not words or PurePosixPath(words[0]).name not in SHELLS:
        return None
    for position, word in enumerate(words[1:], start=1):
        if not word.startswith("-") or word.startswith("--"):
            return None
        if "c" in word[1:]:
            return words[position + 1] if position + 1 < len(words) else None
    return None
