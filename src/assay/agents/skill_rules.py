"""What a coding-agent CLI needs of a skill's ``SKILL.md`` before it loads the skill.

A skill follows the Agent Skills format (agentskills.io): YAML front matter between two
``---`` lines with ``name`` and ``description``, then the instructions. The CLIs differ in
what they forgive, and a skill they pass over is silent (no error, the skill never offered
to the model), so assay checks each skill against its CLI's :class:`SkillRule` before any
row runs, and a skill that does not load is refused at plan instead of being listed as
offered. What each CLI does was read from its pinned release (see each agent module).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from assay.errors import UserError

FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---", re.DOTALL)
"""The YAML front matter at the top of a ``SKILL.md``."""

HINT = (
    "start its SKILL.md with front matter, each on its own line: '---', 'name: <name>', "
    "'description: <what it does and when to use it>', '---'"
)


def front_matter(skill_md: Path) -> dict[str, Any] | None:
    """The front matter of a ``SKILL.md`` as a mapping; ``None`` when the file cannot be
    read, has no front matter, or its front matter is not a YAML mapping."""
    try:
        text = skill_md.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = FRONT_MATTER.match(text)
    try:
        data = yaml.safe_load(found.group(1)) if found else None
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class SkillRule:
    """What one CLI loads as a skill.

    Attributes:
        cli: the CLI's name in messages (``"Qwen Code"``).
        needs_name: the front matter must give ``name`` (the CLI names the skill by it and
            does not fall back to the folder's name).
        name_pattern: a regular expression the name must match whole (``None``: any).
        name_rule: the pattern in words, for the error.
    """

    cli: str
    needs_name: bool = True
    name_pattern: str | None = None
    name_rule: str = ""

    def check(self, skill: Path, *, field: str) -> None:
        """Refuse a skill folder whose ``SKILL.md`` the CLI would pass over.

        Raises:
            UserError: at ``field``, naming the ``SKILL.md``, what the CLI needs and the fix.
        """
        problem = self.problem(front_matter(skill / "SKILL.md"))
        if problem is not None:
            raise UserError(f"{self.cli} would not load the skill {skill / 'SKILL.md'}: "
                            f"{problem}", field=field, hint=HINT)  # fmt: skip

    def problem(self, data: dict[str, Any] | None) -> str | None:
        """Why a skill with this front matter does not load (``None``: it loads)."""
        if data is None:
            return "it has no YAML front matter"
        description = data.get("description")
        if not isinstance(description, str) or not description.strip():
            return "its front matter has no description (a non-empty string)"
        name = data.get("name")
        if name is None and not self.needs_name:
            return None
        if not isinstance(name, str) or not name.strip():
            return "its front matter has no name (a non-empty string)"
        name = name.strip()
        if name in {".", ".."} or (
            self.name_pattern is not None and re.fullmatch(self.name_pattern, name) is None
        ):
            return f"its name {name!r} is not one it loads: {self.name_rule}"
        return None


QWEN_CODE = SkillRule(
    cli="Qwen Code", name_pattern=r"[\w:.-]+",
    name_rule="letters, digits, '_', ':', '.' and '-' only (Qwen Code's own check)",
)  # fmt: skip
"""Qwen Code (0.24): front matter with ``name`` and ``description``; the name matches
``^[\\p{L}\\p{N}_:.-]+$`` or the skill fails to load."""

GEMINI_CLI = SkillRule(
    cli="Gemini CLI", name_pattern=r'[^.:\\/<>*?"|][^:\\/<>*?"|]*',
    name_rule="no ':', '/', '\\', '<', '>', '*', '?', '\"' or '|' (Gemini CLI renames the "
    "skill with '-' in their place) and no leading '.' (its search skips hidden folders)",
)  # fmt: skip
"""Gemini CLI (0.61): front matter with string ``name`` and ``description``, else passed over;
``:\\/<>*?"|`` in the name replaced by ``-``; skill folders found by a glob without hidden
ones."""

OPENCODE = SkillRule(
    cli="OpenCode", name_pattern=r"[^./\\\x00][^/\\\x00]*",
    name_rule="no '/' or '\\' and no leading '.' (assay copies the skill into a folder of "
    "its name, which OpenCode's search must find)",
)  # fmt: skip
"""OpenCode (1.18): front matter with string ``name`` and ``description``."""

PI = SkillRule(cli="Pi", needs_name=False)
"""Pi (0.73): a skill without a ``description`` is not loaded (a warning on its stderr); the
name falls back to the folder's."""
