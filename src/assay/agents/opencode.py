"""``agent: {type: opencode}``: the OpenCode CLI, headless, in the row's sandbox.

The CLI runs as ``opencode run --format json -m assay/MODEL`` with the prompt on standard
input, in a fresh home folder. Its configuration comes whole in ``OPENCODE_CONFIG_CONTENT``
(:func:`opencode_config`): one provider, ``assay``, on the OpenAI Chat Completions wire of the
model bridge (``@ai-sdk/openai-compatible``, which OpenCode 1.18 carries inside its binary,
so nothing is fetched; the row's credential read from ``ASSAY_BRIDGE_KEY``), its
``permission`` rules from Claude Code's permission fields
(:func:`~assay.spec.coding_agents.opencode_permission`), the session-title model call off, sharing
and update checks off; ``system_prompt`` becomes a file of its ``instructions``, and the plugins'
skills are copied to a folder its ``skills.paths`` names, where its ``skill`` tool finds them.
Its fetch of the models.dev catalogue, its default plugins and its language-server downloads are off
(``OPENCODE_DISABLE_*``). The bridge answers with the task's model whatever name the CLI
sends. The stream is read by :class:`~assay.agents.opencode_stream.OpenCodeStreamParser`.
In dialog mode each turn after the first continues the CLI's session (``--session
SESSION_ID``, the events' ``sessionID``) in a fresh home with its data folder carried over.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.agents.base import AgentContext
from assay.agents.cli import BRIDGE_KEY_NAME, CliLaunch, EventParser, cli_environment
from assay.agents.coding import CliAgent, CliRow
from assay.agents.coding_models import (
    copy_skills,
    read_system_prompt,
)
from assay.agents.opencode_stream import OpenCodeStreamParser
from assay.agents.skill_rules import OPENCODE
from assay.spec.coding_agents import OpenCodeAgent, opencode_permission

SKILLS_FOLDER = "assay-skills"
"""The home folder's folder of the plugins' skills, which the configuration's ``skills.paths``
names (OpenCode finds each ``**/SKILL.md`` under it)."""
DEFAULT_CLI_MODEL = "default"
"""The model name given to the CLI when ``cli_model`` is not set (any name works)."""
QUIET = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}


class OpenCodeRunner(CliAgent[OpenCodeAgent]):
    """Runs :class:`assay.spec.coding_agents.OpenCodeAgent`."""

    type_name = "opencode"
    config_model = OpenCodeAgent
    executable = "opencode"
    skills_only = True
    skill_rule = OPENCODE
    keeps_home = True  # a later turn of a dialog resumes the session kept in its home
    session_files = (".local/opencode",)
    project_settings = ("opencode.json", "opencode.jsonc", ".opencode/")  # its plugins too

    def parser(self) -> EventParser:
        """:class:`~assay.agents.opencode_stream.OpenCodeStreamParser`."""
        return OpenCodeStreamParser()

    def prepare(
        self, context: AgentContext, cli: Path, parser: EventParser
    ) -> tuple[str | None, dict[str, Path]]:
        """The system prompt's text and the plugins' skills (refused: a file or folder it
        cannot read); the transcript names the skills offered."""
        skills = self.offered_skills(context, parser)
        return read_system_prompt(self.config, context.base_dir), skills

    def launch(self, row: CliRow) -> CliLaunch:
        """The system prompt as an instructions file and the plugins' skills in the home
        folder, the whole configuration in ``OPENCODE_CONFIG_CONTENT``, the prompt on
        standard input."""
        text, offered = row.prepared
        files = []
        if text is not None:
            files.append(row.home / "assay-instructions.md")
            files[0].write_text(text, encoding="utf-8")
        skills = row.home / SKILLS_FOLDER
        copy_skills(offered, skills)
        settings = opencode_config(self.config, bridge_url=row.bridge_url, instructions=files,
                                   skills=[skills] if offered else [])  # fmt: skip
        env = cli_environment(row.context, self.config, row.home) | QUIET | {
            "OPENCODE_CONFIG_CONTENT": json.dumps(settings), BRIDGE_KEY_NAME: row.token,
        }  # fmt: skip
        argv = [str(row.cli), "run", "--format", "json", "-m", f"assay/{cli_model(self.config)}"]
        dialog = row.context.dialog
        if dialog is not None and dialog.session_id:  # the dialog's next turn
            argv += ["--session", dialog.session_id]
        return CliLaunch(argv, env, stdin=row.context.prompt or "")


def opencode_config(config: OpenCodeAgent, *, bridge_url: str, instructions: list[Path],
                    skills: Sequence[Path] = ()) -> dict[str, Any]:  # fmt: skip
    """OpenCode's configuration for one row (see the module docstring); the credential is
    not in it (``{env:ASSAY_BRIDGE_KEY}``)."""
    model = cli_model(config)
    provider = {"npm": "@ai-sdk/openai-compatible", "name": "assay",
                "options": {"baseURL": f"{bridge_url}/v1",
                            "apiKey": "{env:" + BRIDGE_KEY_NAME + "}"},
                "models": {model: {}}}  # fmt: skip
    return {
        "provider": {"assay": provider}, "model": f"assay/{model}",
        "small_model": f"assay/{model}",
        "permission": opencode_permission(config.permission_mode, config.allowed_tools,
                                          config.disallowed_tools),
        "agent": {"title": {"disable": True}}, "autoupdate": False, "share": "disabled",
        "instructions": [str(path) for path in instructions],
        "skills": {"paths": [str(path) for path in skills]},
    }  # fmt: skip


def cli_model(config: OpenCodeAgent) -> str:
    """The name given to the CLI: ``cli_model``, else an ``openai/`` model's own name, else
    ``default`` (the bridge answers with the task's model whatever the name)."""
    return config.cli_model_name() or DEFAULT_CLI_MODEL
