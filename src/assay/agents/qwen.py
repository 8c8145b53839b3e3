"""``agent: {type: qwen-code}``: the Qwen Code CLI, headless, in the row's sandbox.

The CLI runs as ``qwen --output-format stream-json --auth-type openai --approval-mode MODE`` with
the prompt on standard input, in a fresh home folder whose ``.qwen/settings.json`` turns telemetry,
usage statistics and update checks off. Its model calls go to the model bridge's OpenAI Chat
Completions wire (``OPENAI_BASE_URL`` = the bridge's ``/v1``, ``OPENAI_API_KEY`` = the row's
credential, ``OPENAI_MODEL`` = the name it sends), which answers with the task's model whatever name
the CLI sends. Its stream-json output has Claude Code's shape, so it is read by
:class:`~assay.agents.claude_stream.ClaudeStreamParser` with Qwen Code's tool names mapped to Claude
Code's (:data:`NAMES`); a shell result states its exit code as a line ``Exit Code: N``. The
plugins' skills are copied to its user skills folder (``~/.qwen/skills/<name>``), where its
``skill`` tool finds them. In dialog mode each turn after the first continues the CLI's
session (``--resume SESSION_ID``) in a fresh home with the session files carried over.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from assay.agents.base import AgentContext
from assay.agents.claude_stream import ClaudeStreamParser
from assay.agents.cli import CliLaunch, EventParser, cli_environment
from assay.agents.coding import CliAgent, CliRow
from assay.agents.coding_models import (
    copy_skills,
    read_system_prompt,
)
from assay.agents.skill_rules import QWEN_CODE
from assay.spec.coding_agents import APPROVAL_MODES, QwenCodeAgent

DEFAULT_CLI_MODEL = "qwen3-coder-plus"
"""The model name given to the CLI when the task's model is not an ``openai/`` one."""
NAMES = {"run_shell_command": "Bash", "write_file": "Write", "edit": "Edit",
         "read_file": "Read", "glob": "Glob", "grep_search": "Grep",
         "list_directory": "LS", "web_fetch": "WebFetch", "web_search": "WebSearch",
         "notebook_edit": "NotebookEdit", "todo_write": "TodoWrite", "skill": "Skill",
         "agent": "Task"}  # fmt: skip
"""Qwen Code's tool names as Claude Code's (the aliases Qwen Code itself accepts)."""
EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)$", re.MULTILINE)
SETTINGS = {
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}
DIALOG_SETTINGS = {**SETTINGS, "advanced": {"excludedEnvVars": [
    "DEBUG", "DEBUG_MODE", "QWEN_SYSTEM_MD", "QWEN_WRITE_SYSTEM_MD"]}}  # fmt: skip
"""In dialog mode the workspace's generic ``.env`` cannot replace the CLI's system prompt for
its next turn (Qwen Code itself refuses the variables that would run code from it);
``.qwen/.env`` is put back each turn."""


def qwen_parser() -> ClaudeStreamParser:
    """The stream parser for Qwen Code's stream-json (see the module docstring)."""
    return ClaudeStreamParser(
        agent="qwen-code", names=NAMES, exit_code=EXIT_CODE, session_total=True
    )  # a resumed session's result: its total


class QwenCodeRunner(CliAgent[QwenCodeAgent]):
    """Runs :class:`assay.spec.coding_agents.QwenCodeAgent`."""

    type_name = "qwen-code"
    config_model = QwenCodeAgent
    executable = "qwen"
    skills_only = True
    skill_rule = QWEN_CODE
    keeps_home = True  # a later turn of a dialog resumes the session kept in its home
    session_files = (".qwen/projects", ".qwen/tmp")
    project_settings = (".qwen/settings.json", ".qwen/.env")

    def parser(self) -> EventParser:
        """:func:`qwen_parser`."""
        return qwen_parser()

    def prepare(
        self, context: AgentContext, cli: Path, parser: EventParser
    ) -> tuple[list[str], dict[str, Path]]:
        """The command line (:func:`qwen_argv`) and the plugins' skills (refused: a system
        prompt file or plugin folder it cannot read); the transcript names the skills
        offered."""
        skills = self.offered_skills(context, parser)
        return qwen_argv(self.config, cli, context), skills

    def launch(self, row: CliRow) -> CliLaunch:
        """The settings file and the plugins' skills (``~/.qwen/skills``) in the home
        folder, the bridge's OpenAI wire in the environment, the prompt on standard input."""
        argv, skills = row.prepared
        (row.home / ".qwen").mkdir(exist_ok=True)  # a dialog's later turn: made at its first
        settings = SETTINGS if row.context.dialog is None else DIALOG_SETTINGS
        (row.home / ".qwen" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        copy_skills(skills, row.home / ".qwen" / "skills")
        env = cli_environment(row.context, self.config, row.home) | {
            "OPENAI_API_KEY": row.token, "OPENAI_BASE_URL": row.bridge_url + "/v1",
            "OPENAI_MODEL": cli_model(self.config), "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        }  # fmt: skip
        return CliLaunch(argv, env, stdin=row.context.prompt or "")


def qwen_argv(config: QwenCodeAgent, cli: Path, context: AgentContext) -> list[str]:
    """The CLI's command line for one row (the prompt goes on standard input).

    Raises:
        UserError: a system prompt file that cannot be read.
    """
    # allowed_tools without a mode is Coder Eval's default mode, acceptEdits (as for
    # OpenCode): under yolo the list allowed everything
    mode = config.permission_mode or ("acceptEdits" if config.allowed_tools else None)
    argv = [str(cli), "--output-format", "stream-json",
            "--auth-type", "openai", "--approval-mode", APPROVAL_MODES[mode],
            "--model", cli_model(config)]  # fmt: skip
    if config.allowed_tools:
        argv += ["--allowed-tools", *config.allowed_tools]
    if config.disallowed_tools:
        argv += ["--exclude-tools", *config.disallowed_tools]
    if context.dialog is not None and context.dialog.session_id:  # the dialog's next turn
        argv += ["--resume", context.dialog.session_id]
    text = read_system_prompt(config, context.base_dir)
    if text is not None:
        flag = "--system-prompt" if config.system_prompt_mode == "replace" else (
            "--append-system-prompt")  # fmt: skip
        argv += [flag, text]
    return argv


def cli_model(config: QwenCodeAgent) -> str:
    """The name given to the CLI: ``cli_model``, else an ``openai/`` model's own name, else
    a model the CLI knows (the bridge answers with the task's model whatever the name)."""
    return config.cli_model_name() or DEFAULT_CLI_MODEL
