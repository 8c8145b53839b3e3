"""``agent: {type: gemini}``: Google's Gemini CLI, headless, in the row's sandbox.

The CLI runs as ``gemini -p PROMPT --output-format stream-json --yolo -m MODEL`` in a fresh
home folder whose ``.gemini/settings.json`` selects an API-key login, turns folder trust off
(an untrusted folder would turn ``--yolo`` off), and turns telemetry, usage statistics and
update checks off. Its model calls go to the model bridge's Gemini wire
(``GOOGLE_GEMINI_BASE_URL`` = the bridge, ``GEMINI_API_KEY`` = the row's credential), which
answers with the task's model whatever model name the CLI sends. The stream is read by
:class:`~assay.agents.gemini_stream.GeminiStreamParser`.
"""

from __future__ import annotations

import json
import shutil

from assay.agents.base import AgentContext, AgentOutcome
from assay.agents.cli import (
    CliLaunch,
    cli_environment,
    fresh_home,
    open_session,
    refused,
    run_cli,
)
from assay.agents.coding import CliAgent
from assay.agents.gemini_stream import GeminiStreamParser
from assay.errors import UserError
from assay.sandbox.mounts import install_root
from assay.spec.coding_agents import GeminiAgent

DEFAULT_CLI_MODEL = "gemini-2.5-pro"
"""The model name given to the CLI when the task's model is not a ``google/`` one."""
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}


class GeminiRunner(CliAgent[GeminiAgent]):
    """Runs :class:`assay.spec.coding_agents.GeminiAgent`."""

    type_name = "gemini"
    config_model = GeminiAgent
    executable = "gemini"

    async def run(self, context: AgentContext) -> AgentOutcome:
        """Run the CLI once for the row; see the module docstring."""
        span = context.root_span.child("invoke_agent gemini")
        parser = GeminiStreamParser()
        config = self.config
        home = fresh_home("gemini")
        try:
            cli = self.find(context.base_dir)
        except UserError as exc:
            shutil.rmtree(home, ignore_errors=True)
            return refused(span, parser.transcript, str(exc))
        (home / ".gemini").mkdir()
        (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS), encoding="utf-8")
        session, bridge_url = open_session(context, config)
        env = cli_environment(context, config, home) | {
            "GEMINI_API_KEY": session.token, "GOOGLE_GEMINI_BASE_URL": bridge_url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }  # fmt: skip
        argv = [str(cli), "-p", context.prompt or "", "--output-format", "stream-json",
                "--yolo", "-m", cli_model(config)]  # fmt: skip
        launch = CliLaunch(argv, env, cleanup=[home], readable=[install_root(cli)],
                           writable=[home])  # fmt: skip
        return await run_cli(context, name="gemini", launch=launch, parser=parser,
                             session=session, span=span)  # fmt: skip


def cli_model(config: GeminiAgent) -> str:
    """The name given to the CLI: ``cli_model``, else a ``google/`` model's own name, else a
    model the CLI knows (the bridge answers with the task's model whatever the name)."""
    if config.cli_model:
        return config.cli_model
    if config.model and config.model.startswith("google/"):
        return config.model.partition("/")[2]
    return DEFAULT_CLI_MODEL
