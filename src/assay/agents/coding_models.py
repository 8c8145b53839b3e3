"""What a coding agent's task block resolves to: its bridge model, its plugin folders and the
skills they offer, its system prompt."""

from __future__ import annotations

import os
from pathlib import Path

from assay.errors import UserError
from assay.providers.pool import ModelKey
from assay.spec.coding_agents import CodingAgent

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

    Raises:
        UserError: a folder that does not exist.
    """
    folders = []
    for index, plugin in enumerate(config.plugins or []):
        path = Path(os.path.expandvars(plugin.path)).expanduser()
        path = path if path.is_absolute() else base_dir / path
        if not path.is_dir():
            raise UserError(
                f"plugin folder not found: {path}", field=f"agent.plugins[{index}].path"
            )
        folders.append(path.resolve())
    return folders


def skills_offered(folders: list[Path]) -> list[str]:
    """The skills the plugin folders offer: ``skills/<name>/SKILL.md`` under each plugin
    root (the layout Claude Code loads), sorted."""
    names = {p.parent.name for folder in folders for p in folder.glob("skills/*/SKILL.md")}
    return sorted(names)


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
