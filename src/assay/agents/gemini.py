"""``agent: {type: gemini}``: Google's Gemini CLI, headless, in the row's sandbox.

The CLI runs as ``gemini -p PROMPT --output-format stream-json --yolo -m MODEL`` in a fresh
home folder whose ``.gemini/settings.json`` selects an API-key login, turns folder trust off
(an untrusted folder would turn ``--yolo`` off), and turns telemetry, usage statistics and
update checks off. Its model calls go to the model bridge's Gemini wire
(``GOOGLE_GEMINI_BASE_URL`` = the bridge, ``GEMINI_API_KEY`` = the row's credential), which
answers with the task's model whatever model name the CLI sends. The plugins' skills are
copied to its user skills folder (``~/.gemini/skills/<name>``), where its ``activate_skill``
tool finds them. The stream is read by :class:`~assay.agents.gemini_stream.GeminiStreamParser`.
In dialog mode each turn after the first continues the CLI's session (``--resume SESSION_ID``,
the id from its ``init`` event) in a fresh home with the session files carried over.
"""

from __future__ import annotations

import json
from pathlib import Path

from assay.agents.base import AgentContext
from assay.agents.cli import CliLaunch, EventParser, cli_environment
from assay.agents.coding import CliAgent, CliRow
from assay.agents.coding_models import copy_skills
from assay.agents.gemini_stream import GeminiStreamParser
from assay.agents.skill_rules import GEMINI_CLI
from assay.spec.coding_agents import GeminiAgent

DEFAULT_CLI_MODEL = "gemini-2.5-pro"
"""The model name given to the CLI when the task's model is not a ``google/`` one."""
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}
DIALOG_SETTINGS = {**SETTINGS, "advanced": {"ignoreLocalEnv": True}}
"""In dialog mode the CLI does not load the workspace's generic ``.env`` (where the agent could
set, say, ``GEMINI_SYSTEM_MD`` for its next turn); ``.gemini/.env`` is put back each turn."""


class GeminiRunner(CliAgent[GeminiAgent]):
    """Runs :class:`assay.spec.coding_agents.GeminiAgent`."""

    type_name = "gemini"
    config_model = GeminiAgent
    executable = "gemini"
    skills_only = True
    skill_rule = GEMINI_CLI
    keeps_home = True  # a later turn of a dialog resumes the session kept in its home
    session_files = (".gemini/tmp", ".gemini/history", ".gemini/projects.json")
    project_settings = (".gemini/settings.json", ".gemini/.env")

    def parser(self) -> EventParser:
        """:class:`~assay.agents.gemini_stream.GeminiStreamParser`."""
        return GeminiStreamParser()

    def prepare(self, context: AgentContext, cli: Path, parser: EventParser) -> dict[str, Path]:
        """The plugins' skills (refused: a plugin folder it cannot read); the transcript
        names them."""
        skills = self.offered_skills(context, parser)
        return skills

    def launch(self, row: CliRow) -> CliLaunch:
        """The settings file and the plugins' skills (``~/.gemini/skills``) in the home
        folder, the bridge's Gemini wire in the environment, the prompt as ``-p``."""
        (row.home / ".gemini").mkdir(exist_ok=True)  # a dialog's later turn: made at its first
        settings = SETTINGS if row.context.dialog is None else DIALOG_SETTINGS
        (row.home / ".gemini" / "settings.json").write_text(json.dumps(settings),
                                                            encoding="utf-8")  # fmt: skip
        copy_skills(row.prepared, row.home / ".gemini" / "skills")
        env = cli_environment(row.context, self.config, row.home) | {
            "GEMINI_API_KEY": row.token, "GOOGLE_GEMINI_BASE_URL": row.bridge_url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }  # fmt: skip
        argv = [str(row.cli), "-p", row.context.prompt or "", "--output-format", "stream-json",
                "--yolo", "-m", cli_model(self.config)]  # fmt: skip
        dialog = row.context.dialog
        if dialog is not None and dialog.session_id:  # the dialog's next turn
            argv += ["--resume", dialog.session_id]
        return CliLaunch(argv, env)


def cli_model(config: GeminiAgent) -> str:
    """The name given to the CLI: ``cli_model``, else a ``google/`` model's own name, else a
    model the CLI knows (the bridge answers with the task's model whatever the name)."""
    return config.cli_model_name() or DEFAULT_CLI_MODEL
