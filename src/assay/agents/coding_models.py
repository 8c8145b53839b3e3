"""What a coding agent's task block resolves to: its bridge model, its plugin folders and the
skills they offer, its system prompt."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from assay.agents.skill_rules import SkillRule, front_matter
from assay.errors import UserError
from assay.providers.pool import ModelKey
from assay.spec.coding_agents import CodingAgent
from assay.spec.task import UNSET_VARIABLE

DEFAULT_MODEL = "default"
"""The model name of an ``anthropic/`` key whose model the CLI chooses (``model`` unset)."""


def bridge_key(config: CodingAgent, base_dir: Path) -> ModelKey:
    """The pool key of the model that answers a coding agent's calls through the bridge
    (``model`` unset: the CLI's own model on its native provider's API)."""
    name = config.model or f"{config.native_provider}/{DEFAULT_MODEL}"
    return ModelKey(name=name, base_url=config.base_url, api_key_env=config.api_key_env,
                    base_dir=str(base_dir), timeout=config.request_timeout,
                    cache=config.cache)  # fmt: skip


def plugin_dirs(config: CodingAgent, base_dir: Path) -> list[Path]:
    """The plugin folders, ``$VAR`` expanded and made absolute (relative to the task file).

    A ``claude-code`` plugin must be a plugin root (``skills/<name>/SKILL.md``, or
    ``.claude-plugin/plugin.json``, ``commands/``, ``agents/``, ``hooks/``): Claude Code
    silently loads nothing from a folder of skill folders or from a skill folder itself, so
    those are refused with the path to give instead. Codex takes any of the three depths
    (assay links the skills where Codex finds them).

    Raises:
        UserError: a folder that does not exist, or (claude-code) is not a plugin root.
    """
    folders = []
    for index, plugin in enumerate(config.plugins or []):
        path = Path(os.path.expandvars(plugin.path)).expanduser()
        path = path if path.is_absolute() else base_dir / path
        where = f"agent.plugins[{index}].path"
        unset = UNSET_VARIABLE.search(str(path))
        if unset is not None:
            raise UserError(f"plugin folder {plugin.path} names ${unset.group(1)}, which is not "
                            "set", field=where)  # fmt: skip
        if path.exists() and not path.is_dir():
            raise UserError(f"plugin folder {path} is a file, not a folder", field=where)
        if not path.is_dir():
            raise UserError(f"plugin folder not found: {path}", field=where)
        if getattr(config, "type", "") == "claude-code":
            check_plugin_root(path.resolve(), where)
        folders.append(path.resolve())
    return folders


PLUGIN_PARTS = ("skills", "commands", "agents", "hooks", ".claude-plugin")


def check_plugin_root(path: Path, where: str) -> None:
    """Refuse a folder Claude Code would load nothing from (see :func:`plugin_dirs`).

    Raises:
        UserError: a skill folder, a folder of skill folders, or a folder without a plugin.
    """
    if any((path / part).exists() for part in PLUGIN_PARTS):
        return
    if (path / "SKILL.md").is_file():
        root = path.parent.parent if path.parent.name == "skills" else None
        fix = (f"use {root}, the plugin root that holds skills/{path.name}/SKILL.md"
               if root is not None else f"move it to <plugin root>/skills/{path.name}/SKILL.md "
               "and use the plugin root")  # fmt: skip
        raise UserError(f"{path} is a skill folder, not a plugin root: Claude Code would "
                        "silently load no skill from it", field=where, hint=fix)  # fmt: skip
    nested = sorted(p.parent.name for p in path.glob("*/SKILL.md"))
    if nested:
        fix = (f"use {path.parent}, the plugin root that holds skills/<name>/SKILL.md"
               if path.name == "skills" else f"move them into {path}/skills/ (a plugin root "
               "holds skills/<name>/SKILL.md)")  # fmt: skip
        raise UserError(f"{path} is a folder of skill folders ({', '.join(nested[:5])}), not "
                        "a plugin root: Claude Code would silently load no skill from it",
                        field=where, hint=fix)  # fmt: skip
    raise UserError(f"{path} is not a plugin: it holds no skills/<name>/SKILL.md (nor "
                    ".claude-plugin/plugin.json, commands/, agents/ or hooks/)", field=where,
                    hint="a plugin root holds skills/<name>/SKILL.md")  # fmt: skip


def plugin_skills(folders: list[Path]) -> dict[str, Path]:
    """Skill name (:func:`skill_name`) → its folder, for every skill the plugin folders
    offer: ``skills/<name>/SKILL.md`` under a plugin root, and (Codex takes them too)
    ``<name>/SKILL.md`` and a skill folder itself. The first plugin that offers a name
    wins."""
    found: dict[str, Path] = {}
    for folder in folders:
        for name, skill in _named_skills(folder):
            found.setdefault(name, skill)
    return found


def _named_skills(folder: Path) -> list[tuple[str, Path]]:
    """``(name, skill folder)`` for each skill one plugin folder offers, in
    :func:`plugin_skills`'s order."""
    own = [folder / "SKILL.md"]
    candidates = [skill for skill in [*sorted(folder.glob("skills/*/SKILL.md")),
                                      *sorted(folder.glob("*/SKILL.md")), *own]
                  if skill.is_file()]  # fmt: skip
    return [(skill_name(skill.parent), skill.parent) for skill in candidates]


def skill_name(folder: Path) -> str:
    """The name a CLI loads a skill folder as: the ``name`` of its ``SKILL.md``'s YAML front
    matter (the Agent Skills format, agentskills.io), as written, else the folder's name."""
    name = front_matter(folder / "SKILL.md").get("name", "")
    return name if name.strip() else folder.name


def skill_folders(skills: dict[str, Path]) -> dict[str, tuple[str, Path]]:
    """Skill name → ``(folder name, skill folder)``: where each skill goes in a CLI's own
    skills folder. The folder is named as the skill where that is a plain, visible folder
    name (no ``/``, not starting with ``.``; the CLIs name a skill by its front matter, not
    its folder), else as its own folder, with ``-2``, ``-3``… where two would meet."""
    taken: set[str] = set()
    placed = {}
    for name, folder in skills.items():
        base = next((c for c in (name, folder.name) if _plain(c)), "skill")
        chosen, number = base, 2
        while chosen in taken:
            chosen, number = f"{base}-{number}", number + 1
        taken.add(chosen)
        placed[name] = (chosen, folder)
    return placed


def _plain(name: str) -> bool:
    return bool(name.strip()) and not name.startswith(".") and not set(name) & {"/", "\\", "\0"}


def skill_plugins(
    config: CodingAgent, base_dir: Path, *, rule: SkillRule | None = None, one_folder: bool = True
) -> dict[str, Path]:
    """The skills the plugins offer (:func:`plugin_skills`, each ``SKILL.md`` read once),
    each one the CLI loads (``rule``). ``one_folder``: the CLI takes only the plugins'
    skills, copied into one folder (Qwen Code, Gemini CLI, OpenCode), so each plugin folder
    (:func:`plugin_dirs`) must offer one and no two may share a name.

    Raises:
        UserError: as :func:`plugin_dirs`; a skill the CLI would not load
            (:meth:`SkillRule.check`); with ``one_folder``, a plugin folder that offers no
            skill, or two skills of the same name (in one plugin or two).
    """
    cli = getattr(config, "type", "this CLI")
    found: dict[str, Path] = {}
    for index, folder in enumerate(plugin_dirs(config, base_dir)):
        field = f"agent.plugins[{index}].path"
        _check_links(folder, cli=cli, field=field)
        skills = _named_skills(folder)
        if not skills and one_folder:
            raise UserError(f"plugin folder {folder} offers no skill (skills/<name>/SKILL.md): "
                            f"{cli} takes only the skills of a plugin", field=field)  # fmt: skip
        for name, skill in skills:
            if rule is not None:
                rule.check(skill, field=field)
            if one_folder and name in found and found[name].resolve() != skill.resolve():
                raise UserError(
                    f"two skills are named '{name}': {found[name] / 'SKILL.md'} and "
                    f"{skill / 'SKILL.md'}; {cli} reads its skills from one folder, so one "
                    "would silently hide the other",
                    field=field,
                    hint="rename one of them (the name of its SKILL.md front matter, else "
                    "its folder's name)",
                )
            found.setdefault(name, skill)
    return found


def _check_links(folder: Path, *, cli: str, field: str) -> None:
    """Refuse what the plugin ``folder`` seems to offer and no CLI loads, which every CLI
    passes over without a word (and :func:`plugin_skills` does not see): a ``SKILL.md``,
    a skill's folder or the ``skills`` folder that is a link to nothing, and a ``SKILL.md``
    that is not a file.

    Raises:
        UserError: at ``field``, naming the path (and a link's target).
    """
    skills = folder / "skills"
    entries = sorted(skills.glob("*"))  # a glob of */SKILL.md leaves out a link to nothing
    places = [skills, *entries, *(entry / "SKILL.md" for entry in entries),
              *(entry / "SKILL.md" for entry in sorted(folder.glob("*"))),
              folder / "SKILL.md"]  # fmt: skip
    for path in places:
        if path.is_symlink() and not path.exists():
            raise UserError(f"{path} is a link to nothing ({os.readlink(path)}): {cli} would "
                            "silently not offer the skill", field=field,
                            hint="point the link at what it stands for, or remove it")  # fmt: skip
        if path.name == "SKILL.md" and path.exists() and not path.is_file():
            raise UserError(f"{path} is not a file: {cli} would not offer the skill",
                            field=field, hint="make SKILL.md the skill's file, with its front "
                            "matter (name, description)")  # fmt: skip


def copy_skills(skills: dict[str, Path], into: Path) -> None:
    """Copy each skill (name → folder: :func:`plugin_skills`) into ``into`` (a folder each:
    :func:`skill_folders`): the user skills folder of a CLI that reads skills but no plugin
    folder (Qwen Code's ``~/.qwen/skills``, Gemini CLI's ``~/.gemini/skills``, a folder
    OpenCode's configuration names), in the row's fresh home, so the sandbox needs no view of
    the plugin folders. Links are copied as links, never followed (a link out of the plugin
    shows the row nothing the sandbox hides, and a loop copies nothing), except the
    ``SKILL.md`` itself: a link to it is copied as the file it names (the copy of a link
    would point at nothing, and the CLI would pass the skill over).

    Raises:
        OSError: a skill folder cannot be read or the copy cannot be written.
    """
    for folder_name, folder in skill_folders(skills).values():
        copied = into / folder_name
        shutil.copytree(folder, copied, symlinks=True)
        if (folder / "SKILL.md").is_symlink():
            (copied / "SKILL.md").unlink()
            shutil.copyfile(folder / "SKILL.md", copied / "SKILL.md")


def skill_folder_names(folders: list[Path]) -> list[str]:
    """The folder names of the skills the plugin folders offer, sorted: the names Claude Code
    gives a plugin's skills (``plugin:folder``, whatever the front matter's ``name``)."""
    return sorted({skill.name for folder in folders for _, skill in _named_skills(folder)})


def read_system_prompt(config: CodingAgent, base_dir: Path) -> str | None:
    """``system_prompt``, or the text of ``system_prompt_file`` (relative to the task file).

    Raises:
        UserError: the file cannot be read.
    """
    if config.system_prompt is not None:
        return config.system_prompt
    if config.system_prompt_file is None:
        return None
    path = Path(config.system_prompt_file)
    path = path if path.is_absolute() else base_dir / path
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read agent.system_prompt_file {path}: {exc}") from None
