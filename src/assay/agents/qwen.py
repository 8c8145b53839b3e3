"""``agent: {type: qwen-code}``: the Qwen Code CLI, headless, in the row's sandbox.

The CLI runs as ``qwen --output-format stream-json --auth-type openai --approval-mode MODE`` with
the prompt on standard input, in a fresh home folder whose ``.qwen/settings.json`` turns telemetry,
usage statistics and update checks off. Its model calls go to the model bridge's OpenAI Chat
Completions wire (``OPENAI_BASE_URL`` = the bridge's ``/v1``, ``OPENAI_API_KEY`` = the row's
credential, ``OPENAI_MODEL`` = the name it sends), which answers with the task's model whatever name
the CLI sends. Its stream-json output has Claude Code's shape, so it is read by
:class:`~assay.agents.claude_stream.ClaudeStreamParser` with Qwen Code's tool names mapped to Claude
Code's (:data:`NAMES`); a shell result states its exit code as a line ``Exit Code: N``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from assay.agents.base import AgentContext, AgentOutcome
from assay.agents.claude_stream import ClaudeStreamParser
from assay.agents.cli import (
    CliLaunch,
    cli_environment,
    fresh_home,
    open_session,
    refused,
    run_cli,
)
from assay.agents.coding import CliAgent
from assay.agents.coding_models import read_system_prompt
from assay.errors import UserError
from assay.sandbox.mounts import install_root
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


def qwen_parser() -> ClaudeStreamParser:
    """The stream parser for Qwen Code's stream-json (see the module docstring)."""
    return ClaudeStreamParser(agent="qwen-code", names=NAMES, exit_code=EXIT_CODE)


class QwenCodeRunner(CliAgent[QwenCodeAgent]):
    """Runs :class:`assay.spec.coding_agents.QwenCodeAgent`."""

    type_name = "qwen-code"
    config_model = QwenCodeAgent
    executable = "qwen"

    async def run(self, context: AgentContext) -> AgentOutcome:
        """Run the CLI once for the row; see the module docstring."""
        span = context.root_span.child("invoke_agent qwen-code")
        parser = qwen_parser()
        config = self.config
        try:
            cli = self.find(context.base_dir)
            argv = qwen_argv(config, cli, context)
        except UserError as exc:
            return refused(span, parser.transcript, str(exc))
        home = fresh_home("qwen")
        (home / ".qwen").mkdir()
        (home / ".qwen" / "settings.json").write_text(json.dumps(SETTINGS), encoding="utf-8")
        session, bridge_url = open_session(context, config)
        env = cli_environment(context, config, home) | {
            "OPENAI_API_KEY": session.token, "OPENAI_BASE_URL": bridge_url + "/v1",
            "OPENAI_MODEL": cli_model(config), "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        }  # fmt: skip
        launch = CliLaunch(argv, env, stdin=context.prompt or "", cleanup=[home],
                           readable=[install_root(cli)], writable=[home])  # fmt: skip
        return await run_cli(context, name="qwen-code", launch=launch, parser=parser,
                             session=session, span=span)  # fmt: skip


def qwen_argv(config: QwenCodeAgent, cli: Path, context: AgentContext) -> list[str]:
    """The CLI's command line for one row (the prompt goes on standard input).

    Raises:
        UserError: a system prompt file that cannot be read.
    """
    argv = [str(cli), "--output-format", "stream-json",
            "--auth-type", "openai", "--approval-mode", APPROVAL_MODES[config.permission_mode],
            "--model", cli_model(config)]  # fmt: skip
    if config.allowed_tools:
        argv += ["--allowed-tools", *config.allowed_tools]
    if config.disallowed_tools:
        argv += ["--exclude-tools", *config.disallowed_tools]
    text = read_system_prompt(config, context.base_dir)
    if text is not None:
        flag = "--system-prompt" if config.system_prompt_mode == "replace" else (
            "--append-system-prompt")  # fmt: skip
        argv += [flag, text]
    return argv


def cli_model(config: QwenCodeAgent) -> str:
    """The name given to the CLI: ``cli_model``, else an ``openai/`` model's own name, else
    a model the CLI knows (the bridge answers with the task's model whatever the name)."""
    if config.cli_model:
        return config.cli_model
    if config.model and config.model.startswith("openai/"):
        return config.model.partition("/")[2]
    return DEFAULT_CLI_MODEL
