"""What a coding-agent CLI needs of a skill's ``SKILL.md`` before it loads the skill.

A skill follows the Agent Skills format (agentskills.io): front matter between two ``---``
lines with ``name`` and ``description``, then the instructions. The CLIs differ in what they
forgive, and a skill they pass over is silent (no error, the skill never offered to the
model), so assay checks each skill against its CLI's :class:`SkillRule` before any row runs.
A rule refuses only what its CLI certainly skips or renames, so a skill the CLI loads is never
refused: the front matter is read as the CLIs read it (every value as text, as a YAML 1.2
reader keeps ``yes`` and ``123``; a block that is not valid YAML read line by line where the
CLI falls back to that). What each CLI does was read from its pinned release and tried on
its own loader (see each rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from assay.errors import UserError

FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---", re.DOTALL)
"""The front matter at the top of a ``SKILL.md``."""

SIMPLE_FIELD = re.compile(r"^[ \t]*(name|description):[ \t]*(.*?)[ \t]*$", re.MULTILINE)
"""A ``name:`` or ``description:`` line, as the CLIs' line-by-line fallback reads it."""

FRONT_MATTER_HINT = (
    "start its SKILL.md with front matter, each on its own line: '---', 'name: <name>', "
    "'description: <what it does and when to use it>', '---'"
)


def front_matter(skill_md: Path) -> dict[str, str]:
    """The ``name`` and ``description`` (and the other text fields) of a ``SKILL.md``'s front
    matter as the CLIs read them: every value as text (``name: 123`` is ``"123"``), and a
    block that is not valid YAML line by line; empty when the file cannot be read or has no
    front matter (a leading byte-order mark is dropped)."""
    block = _block(skill_md, strip_bom=True)
    fields = _read_fields(block, lenient=True) if block is not None else {}
    return fields if isinstance(fields, dict) else {}


def _read_fields(block: str, *, lenient: bool, lines_first: bool = False) -> dict[str, str] | str:
    """The front matter's values as text (YAML read with every scalar as text), or why it
    cannot be read. ``lenient``: a block that is not a valid YAML mapping is read line by
    line; ``lines_first``: so is one whose YAML gives no string ``name`` and ``description``."""
    fields = _text_fields(block)
    if isinstance(fields, str):
        return dict(SIMPLE_FIELD.findall(block)) if lenient else fields
    if lines_first and not {"name", "description"} <= fields.keys():
        return dict(SIMPLE_FIELD.findall(block))
    return fields


def _text_fields(block: str) -> dict[str, str] | str:
    """The front matter's text values, or why YAML cannot read it."""
    try:
        data = yaml.load(block, Loader=yaml.BaseLoader)  # every scalar as text
    except yaml.YAMLError as exc:
        return f"its front matter is not valid YAML ({str(exc).splitlines()[0]})"
    if not isinstance(data, dict):
        return "its front matter is not a mapping of fields"
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _block(skill_md: Path, *, strip_bom: bool) -> str | None:
    """The text between the two ``---`` lines, or ``None``."""
    try:
        text = skill_md.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if strip_bom:
        text = text.removeprefix("\ufeff")
    found = FRONT_MATTER.match(text)
    return found.group(1) if found else None


@dataclass(frozen=True)
class SkillRule:
    """What one CLI loads as a skill.

    Attributes:
        cli: the CLI's name in messages (``"Qwen Code"``).
        strips_bom: the CLI reads a ``SKILL.md`` that starts with a byte-order mark.
        lenient: front matter that is not valid YAML is still read (line by line, or
            mended), so only its ``name:`` and ``description:`` lines matter.
        needs_name: the front matter must give ``name`` (no fallback to the folder's).
        non_empty: the fields whose value must be non-blank text.
        name_pattern: a regular expression the name must match whole (``None``: any).
        name_rule: the pattern in words, for the error.
        renamed: characters the CLI replaces with ``-`` in a name (the skill is then
            offered under another name than its own).
        lines_first: the CLI reads the front matter line by line whenever YAML does not
            give it a ``name`` and ``description`` (an indented ``name:`` line counts).
    """

    cli: str
    strips_bom: bool = False
    lenient: bool = True
    needs_name: bool = True
    non_empty: tuple[str, ...] = ()
    name_pattern: str | None = None
    name_rule: str = ""
    renamed: str = ""
    lines_first: bool = False

    def check(self, skill: Path, *, field: str) -> None:
        """Refuse a skill folder whose ``SKILL.md`` the CLI would pass over or rename.

        Raises:
            UserError: at ``field``, naming the ``SKILL.md``, what the CLI needs and the fix.
        """
        problem = self.problem(skill / "SKILL.md")
        if problem is not None:
            why, hint = problem
            raise UserError(f"{self.cli} would not load the skill {skill / 'SKILL.md'} as "
                            f"it is: {why}", field=field, hint=hint)  # fmt: skip

    def problem(self, skill_md: Path) -> tuple[str, str] | None:
        """Why the CLI would not load this ``SKILL.md`` as it is, and the fix; ``None``:
        it loads."""
        block = _block(skill_md, strip_bom=self.strips_bom)
        if block is None:
            bom = "" if self.strips_bom else " (a byte-order mark before it hides it)"
            return f"it has no front matter{bom}", FRONT_MATTER_HINT
        data = _read_fields(block, lenient=self.lenient, lines_first=self.lines_first)
        if isinstance(data, str):
            return data, FRONT_MATTER_HINT
        return self._field_problem(data)

    def _field_problem(self, data: dict[str, str]) -> tuple[str, str] | None:
        required = ("name", "description") if self.needs_name else ("description",)
        for key in required:
            if key not in data:
                return f"its front matter has no {key}", FRONT_MATTER_HINT
            if key in self.non_empty and not data[key].strip():
                return f"its front matter's {key} is empty", FRONT_MATTER_HINT
        name = data.get("name")
        if name is None:
            return None
        fix = "rename it (the name of its SKILL.md front matter)"
        if self.name_pattern is not None and re.fullmatch(self.name_pattern, name) is None:
            return f"its name {name!r} is not one it loads: {self.name_rule}", fix
        if self.renamed and set(name) & set(self.renamed):
            loaded = re.sub(f"[{re.escape(self.renamed)}]", "-", name)
            return (f"it would offer it as {loaded!r}, not as its name {name!r} (it replaces "
                    f"{' '.join(sorted(set(self.renamed)))} with '-')", fix)  # fmt: skip
        return None


QWEN_CODE = SkillRule(
    cli="Qwen Code", strips_bom=True, non_empty=("name", "description"),
    name_pattern=r"[\w:.-]+",
    name_rule="letters, digits, '_', ':', '.' and '-' only (Qwen Code's own check)",
)  # fmt: skip
"""Qwen Code (0.24): front matter with a non-empty ``name`` and ``description`` (read as
YAML, else line by line); the name as written matches ``^[\\p{L}\\p{N}_:.-]+$``; a leading
byte-order mark is dropped."""

GEMINI_CLI = SkillRule(cli="Gemini CLI", renamed=':\\/<>*?"|', lines_first=True)
"""Gemini CLI (0.61): front matter with ``name`` and ``description`` (read as YAML; line by
line when that fails or gives no string ``name`` and ``description``; either may be empty);
``:\\/<>*?"|`` in the name replaced by ``-``; no byte-order mark before the front matter."""

OPENCODE = SkillRule(cli="OpenCode", strips_bom=True)
"""OpenCode (1.18): front matter with ``name`` and ``description`` (gray-matter, which mends
a value such as ``Use when: …``); a leading byte-order mark is dropped."""

PI = SkillRule(cli="Pi", lenient=False, needs_name=False, non_empty=("description",))
"""Pi (0.73): front matter that is valid YAML with a non-empty ``description`` (a warning on
its stderr otherwise, and the skill is not loaded); the name falls back to the folder's."""
