"""The shell blocks of the README and the docs pages, read as the docs tests run them.

Every fenced block whose language is a shell (``sh``, ``bash``, ``shell``, ``console``)
carries a marker on the line right above it:

- ``<!-- docs-test: run -->`` the block runs offline, and a test runs it as shown;
  ``run exit=N`` expects exit code N from its last command (the others must exit 0), and
  ``run local_model`` / ``run coding_agent`` mark the test with that component;
- ``<!-- docs-test: skip (REASON) -->`` it does not run here, and the reason says why (the
  network, an API key, a file of the reader's own, a synopsis, a server).

In a ``console`` block a command starts with ``$ `` (a line ending in ``\\`` continues it) and
the lines up to the next command are its output as shown: each must appear, in order, among
the lines the commands print, where ``…`` stands for any text (a duration, a folder name).
A ``sh`` block is commands only (a ``#`` comment after a command is not run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHELLS = {"sh", "bash", "shell", "console"}
MARKER = re.compile(r"^<!-- docs-test: (run(?: [a-z_=0-9]+)*|skip \(.+\)) -->$")
FENCE = re.compile(r"^```([A-Za-z0-9_-]*)\s*$")
COMPONENTS = {"local_model", "coding_agent"}


class BlockError(ValueError):
    """A shell block without a valid marker, or with one the runner cannot follow."""


@dataclass(frozen=True)
class Command:
    """One command of a block and the output lines it is shown with."""

    line: str
    shown: tuple[str, ...] = ()


@dataclass(frozen=True)
class Block:
    """One shell block: where it is, whether it runs, and its commands."""

    file: Path
    line: int
    language: str
    run: bool
    exit_code: int = 0
    components: frozenset[str] = frozenset()
    commands: tuple[Command, ...] = field(default=())

    @property
    def name(self) -> str:
        """``FILE:LINE``, relative to the repository, as a test id."""
        return f"{self.file.relative_to(REPO)}:{self.line}"


def doc_files() -> list[Path]:
    """The README, every page of the docs site and the examples' READMEs."""
    pages = sorted((REPO / "docs").glob("*.md"))
    return [REPO / "README.md", *pages, *sorted((REPO / "examples").glob("*/README.md"))]


def blocks_of(path: Path) -> list[Block]:
    """Every shell block of the Markdown file ``path``.

    Raises:
        BlockError: a shell block without a marker right above it, a marker that is not
            one of the forms above, or a marker above no shell block; the message names the
            file and line.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if lines[index].startswith("<!-- docs-test"):
            _check_marker_is_above_a_shell_block(path, lines, index)
        if opening is None:
            index += 1
            continue
        end = next((j for j in range(index + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise BlockError(f"{path}:{index + 1}: a code block that is never closed")
        if opening.group(1) in SHELLS:
            marker = lines[index - 1] if index else ""
            found.append(_block(path, index + 1, opening.group(1), marker, lines[index + 1 : end]))
        index = end + 1
    return found


def _check_marker_is_above_a_shell_block(path: Path, lines: list[str], index: int) -> None:
    following = lines[index + 1] if index + 1 < len(lines) else ""
    opening = FENCE.match(following)
    if opening is None or opening.group(1) not in SHELLS:
        raise BlockError(f"{path}:{index + 1}: a docs-test marker that is not right above a "
                         "```sh or ```console block")  # fmt: skip


def _block(path: Path, line: int, language: str, marker: str, body: list[str]) -> Block:
    match = MARKER.match(marker)
    if match is None:
        raise BlockError(
            f"{path}:{line}: a ```{language} block without a marker on the line above: add "
            "<!-- docs-test: run --> (a test runs it) or <!-- docs-test: skip (why) -->"
        )
    words = match.group(1).split()
    if words[0] == "skip":
        return Block(path, line, language, run=False)
    exit_code, components = 0, set()
    for word in words[1:]:
        if word.startswith("exit="):
            exit_code = int(word.removeprefix("exit="))
        elif word in COMPONENTS:
            components.add(word)
        else:
            raise BlockError(f"{path}:{line}: unknown docs-test option {word!r} (exit=N, "
                             f"{', '.join(sorted(COMPONENTS))})")  # fmt: skip
    commands = _console(body) if language == "console" else _script(body)
    if not commands:
        raise BlockError(f"{path}:{line}: a runnable block without a command")
    return Block(path, line, language, True, exit_code, frozenset(components), commands)


def _console(body: list[str]) -> tuple[Command, ...]:
    """``$ command`` lines (with ``\\`` continuations) and the output shown under each."""
    commands: list[Command] = []
    current: list[str] = []
    shown: list[str] = []
    continuing = False
    for text in body:
        if continuing or text.startswith("$ "):
            if not continuing and current:
                commands.append(Command(" ".join(current), tuple(shown)))
                current, shown = [], []
            part = text.removeprefix("$ ") if not continuing else text.strip()
            continuing = part.endswith("\\")
            current.append(part.removesuffix("\\").strip())
        elif current and text.strip():
            shown.append(text)
    if current:
        commands.append(Command(" ".join(current), tuple(shown)))
    return tuple(commands)


def _script(body: list[str]) -> tuple[Command, ...]:
    """The commands of a ``sh`` block, a line each (comments and continuations handled)."""
    joined = "\n".join(body).replace("\\\n", " ")
    commands = [line.split("  #", 1)[0].strip() for line in joined.splitlines()]
    return tuple(Command(c) for c in commands if c and not c.startswith("#"))


def shown_lines_match(shown: list[str], printed: str) -> str | None:
    """``None`` when every shown line appears, in order, among the printed lines (``…``
    matches any text); else the first shown line that does not."""
    printed_lines = printed.splitlines()
    position = 0
    for expected in shown:
        pattern = re.compile(".*".join(re.escape(p) for p in expected.strip().split("…")))
        while position < len(printed_lines):
            if pattern.fullmatch(printed_lines[position].strip()):
                break
            position += 1
        if position == len(printed_lines):
            return expected
        position += 1
    return None
