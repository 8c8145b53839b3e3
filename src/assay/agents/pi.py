"""``agent: {type: pi}``: the Pi coding agent, headless, in the row's sandbox.

The CLI runs as ``pi -p --mode json --no-session --provider assay --model MODEL`` with the
prompt on standard input, in a fresh home folder whose ``.pi/agent/models.json`` declares
one provider, ``assay``: the model bridge's OpenAI Chat Completions wire (``/v1``), its key
read from ``ASSAY_BRIDGE_KEY`` (the row's credential). Its start-up network use (update
checks, install telemetry) is off (``PI_OFFLINE``). ``allowed_tools`` /
``disallowed_tools`` become ``--tools``, ``system_prompt`` ``--append-system-prompt`` (or
``--system-prompt``), each plugin skill a ``--skill``. The bridge answers with the task's
model whatever name the CLI sends. The stream is read by
:class:`~assay.agents.pi_stream.PiStreamParser`. In dialog mode the session is kept
(no ``--no-session``) and each turn after the first continues it (``--session
SESSION_ID``, the id of its ``session`` event) in a fresh home with the sessions carried over.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.agents.base import AgentContext
from assay.agents.cli import BRIDGE_KEY_NAME, CliLaunch, EventParser, cli_environment
from assay.agents.coding import CliAgent, CliRow
from assay.agents.coding_models import plugin_dirs, read_system_prompt
from assay.agents.pi_stream import PiStreamParser
from assay.agents.skill_rules import PI
from assay.spec.coding_agents import PiAgent, pi_tools

DEFAULT_CLI_MODEL = "default"
"""The model name given to the CLI when ``cli_model`` is not set (any name works)."""
QUIET = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}


class PiRunner(CliAgent[PiAgent]):
    """Runs :class:`assay.spec.coding_agents.PiAgent`."""

    type_name = "pi"
    config_model = PiAgent
    executable = "pi"
    skill_rule = PI
    keeps_home = True  # a later turn of a dialog resumes the session kept in its home
    session_files = (".pi/agent/sessions",)
    project_settings = (".pi/settings.json", ".pi/SYSTEM.md", ".pi/APPEND_SYSTEM.md",
                        ".pi/extensions/")  # fmt: skip

    def parser(self) -> EventParser:
        """:class:`~assay.agents.pi_stream.PiStreamParser`."""
        return PiStreamParser()

    def prepare(
        self, context: AgentContext, cli: Path, parser: EventParser
    ) -> tuple[list[str], list[Path]]:
        """The command line and the plugin folders (refused: a plugin folder or system
        prompt file it cannot read); the transcript names the skills offered."""
        plugins = plugin_dirs(self.config, context.base_dir)
        skills = self.checked_skills(context.base_dir)
        argv = pi_argv(self.config, cli, context, skills)
        parser.transcript.skills_offered = sorted(skills)
        return argv, plugins

    def launch(self, row: CliRow) -> CliLaunch:
        """``models.json`` (the provider ``assay`` at the bridge) in the home folder, the
        prompt on standard input."""
        argv, plugins = row.prepared
        (row.home / ".pi" / "agent").mkdir(parents=True, exist_ok=True)  # kept in a dialog
        (row.home / ".pi" / "agent" / "models.json").write_text(
            json.dumps(models_file(self.config, bridge_url=row.bridge_url)), encoding="utf-8"
        )
        env = cli_environment(row.context, self.config, row.home) | QUIET | {
            BRIDGE_KEY_NAME: row.token}  # fmt: skip
        return CliLaunch(argv, env, stdin=row.context.prompt or "", readable=plugins)


def pi_argv(
    config: PiAgent, cli: Path, context: AgentContext, skills: dict[str, Path]
) -> list[str]:
    """The CLI's command line for one row (the prompt goes on standard input).

    Raises:
        UserError: a system prompt file that cannot be read.
    """
    dialog = context.dialog
    if dialog is None:
        session = ["--no-session"]
    else:  # kept in the dialog's home; each later turn continues it
        session = ["--session", dialog.session_id] if dialog.session_id else []
    argv = [str(cli), "-p", "--mode", "json", *session, "--provider", "assay",
            "--model", cli_model(config)]  # fmt: skip
    tools = pi_tools(config.allowed_tools, config.disallowed_tools)
    if tools is not None:
        argv += ["--tools", ",".join(tools)] if tools else ["--no-tools"]
    text = read_system_prompt(config, context.base_dir)
    if text is not None:
        flag = "--system-prompt" if config.system_prompt_mode == "replace" else (
            "--append-system-prompt")  # fmt: skip
        argv += [flag, text]
    for folder in skills.values():
        argv += ["--skill", str(folder)]
    return argv


def models_file(config: PiAgent, *, bridge_url: str) -> dict[str, Any]:
    """Pi's ``models.json`` for one row: the provider ``assay`` at the bridge (the key is
    the name of the variable that holds it, not the key)."""
    provider = {"baseUrl": f"{bridge_url}/v1", "api": "openai-completions",
                "apiKey": BRIDGE_KEY_NAME,
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": cli_model(config)}]}  # fmt: skip
    return {"providers": {"assay": provider}}


def cli_model(config: PiAgent) -> str:
    """The name given to the CLI: ``cli_model``, else an ``openai/`` model's own name, else
    ``default`` (the bridge answers with the task's model whatever the name)."""
    return config.cli_model_name() or DEFAULT_CLI_MODEL
