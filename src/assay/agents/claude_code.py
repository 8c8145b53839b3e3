"""``agent: {type: claude-code}``: the Claude Code CLI, headless, in the row's sandbox.

The CLI runs as ``claude -p --output-format stream-json --verbose`` with the prompt on
standard input, in a fresh home folder (no user settings, hooks, memory or login), with
``--setting-sources`` from the task (default ``project``: the sandbox's own ``.claude/``),
the task's permission mode and tool lists, ``--plugin-dir`` for each plugin, and
``sdk_options`` as the CLI flags the Claude Agent SDK would pass. In dialog mode each turn
after the first continues the CLI's session (``--resume SESSION_ID``, the id from its
``system/init`` event) in a home folder kept for the whole dialog. Its non-essential
traffic, auto-updater and telemetry are off. Behind the bridge it gets
``ANTHROPIC_BASE_URL`` = the bridge and ``ANTHROPIC_API_KEY`` = the row's credential (never
the user's key), and its own retries are off (the bridge retries); with ``route: direct``
it uses the user's ``ANTHROPIC_API_KEY`` or login. Flags and environment from
``reference/coding_agents_offline.md``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.agents.base import AgentContext, PreflightCheck, ToolServer
from assay.agents.claude_stream import ClaudeStreamParser
from assay.agents.cli import CliLaunch, EventParser, cli_environment, find_cli
from assay.agents.coding import CliAgent, CliRow, OwnCredentials
from assay.agents.coding_models import (
    plugin_dirs,
    read_system_prompt,
    skill_folder_names,
)
from assay.errors import UserError
from assay.spec.coding_agents import ClaudeCodeAgent

QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def bundled_claude() -> Path | None:
    """The CLI inside the ``claude-agent-sdk`` wheel (extra ``agents``), if installed."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "_bundled" / "claude"
        if path.is_file():
            return path
    return None


def find_claude(config: ClaudeCodeAgent, base_dir: Path) -> Path:
    """The ``claude`` executable for ``config`` (see :func:`assay.agents.cli.find_cli`)."""
    return find_cli("claude", configured=config.cli_path, base_dir=base_dir, bundled=bundled_claude)


class ClaudeCodeRunner(CliAgent[ClaudeCodeAgent]):
    """Runs :class:`assay.spec.coding_agents.ClaudeCodeAgent`."""

    type_name = "claude-code"
    config_model = ClaudeCodeAgent
    executable = "claude"  # found by find_claude (the bundled CLI when none is configured)
    keeps_home = True  # a later turn of a dialog resumes the session kept in its home
    session_files = (".claude/projects",)
    project_settings = (".claude/settings.json", ".claude/settings.local.json")
    own_credentials = OwnCredentials(
        ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"), ".claude/.credentials.json",
        "export ANTHROPIC_API_KEY, or log in with `claude login`",
    )  # fmt: skip

    def find(self, base_dir: Path) -> Path:
        """:func:`find_claude`."""
        return find_claude(self.config, base_dir)

    def settings_checks(self, base_dir: Path) -> list[PreflightCheck]:
        """``claude_settings`` can be read (:func:`settings_flags`)."""
        return [PreflightCheck(("agent", "claude_settings"),
                               lambda: settings_flags(self.config, base_dir))]  # fmt: skip

    def parser(self) -> EventParser:
        """:class:`~assay.agents.claude_stream.ClaudeStreamParser`."""
        return ClaudeStreamParser()

    def prepare(
        self, context: AgentContext, cli: Path, parser: EventParser
    ) -> tuple[list[str], list[Path]]:
        """The command line and the plugin folders (refused: a system prompt file, settings
        file or plugin folder it cannot read); the transcript names the skills offered."""
        argv = claude_argv(self.config, cli, context)
        plugins = plugin_dirs(self.config, context.base_dir)
        parser.transcript.skills_offered = skill_folder_names(plugins)
        return argv, plugins

    def launch(self, row: CliRow) -> CliLaunch:
        """The bridge's Anthropic wire in the environment on ``route: bridge``, the user's
        own credentials on ``route: direct``, the prompt on standard input."""
        argv, plugins = row.prepared
        config = self.config
        env = cli_environment(row.context, config, row.home) | QUIET
        if row.session is not None:
            env |= {"ANTHROPIC_BASE_URL": row.bridge_url, "ANTHROPIC_API_KEY": row.token,
                    "CLAUDE_CODE_MAX_RETRIES": "0"}  # fmt: skip
        else:
            env |= _direct_credentials(dict(os.environ), row.home)  # the user's own, on purpose
        if config.permission_mode == "bypassPermissions":
            env["IS_SANDBOX"] = "1"  # the CLI refuses the mode as root otherwise
        readable = [*plugins, *_settings_files(config, row.context.base_dir)]
        return CliLaunch(argv, env, stdin=row.context.prompt or "", readable=readable)


def claude_argv(config: ClaudeCodeAgent, cli: Path, context: AgentContext) -> list[str]:
    """The CLI's command line for one row (the prompt goes on standard input).

    Raises:
        UserError: a system prompt file, settings file or plugin folder that cannot be read.
    """
    sources = ["project"] if config.setting_sources is None else config.setting_sources
    argv = [str(cli), "-p", "--output-format", "stream-json", "--verbose",
            "--permission-mode", config.permission_mode,
            f"--setting-sources={','.join(sources)}"]  # fmt: skip
    served = [f"mcp__{name}" for name in context.tool_servers]
    if config.allowed_tools or served:
        argv += ["--allowedTools", ",".join([*(config.allowed_tools or []), *served])]
    if config.disallowed_tools:
        argv += ["--disallowedTools", ",".join(config.disallowed_tools)]
    if context.max_turns is not None:
        argv += ["--max-turns", str(context.max_turns)]
    if context.dialog is not None and context.dialog.session_id:  # the dialog's next turn
        argv += ["--resume", context.dialog.session_id]
    model = cli_model(config)
    if model:
        argv += ["--model", model]
    argv += _system_prompt(config, context.base_dir)
    argv += settings_flags(config, context.base_dir)
    for folder in plugin_dirs(config, context.base_dir):
        argv += ["--plugin-dir", str(folder)]
    return argv + mcp_flags(context.tool_servers) + sdk_flags(config.sdk_options)


def mcp_flags(servers: Mapping[str, ToolServer]) -> list[str]:
    """``--mcp-config`` (as JSON) with the MCP servers assay serves the CLI, and
    ``--strict-mcp-config`` (no other MCP server of the sandbox's settings); none without
    servers."""
    if not servers:
        return []
    config = {name: {"type": "stdio", "command": server.command, "args": list(server.args),
                     "env": dict(server.env)} for name, server in servers.items()}  # fmt: skip
    return ["--mcp-config", json.dumps({"mcpServers": config}), "--strict-mcp-config"]


def cli_model(config: ClaudeCodeAgent) -> str | None:
    """The name given to ``--model``: ``cli_model``, else an ``anthropic/`` model's own name
    (other models leave the CLI's default: the bridge answers with the task's model)."""
    return config.cli_model_name()


def _system_prompt(config: ClaudeCodeAgent, base_dir: Path) -> list[str]:
    text = read_system_prompt(config, base_dir)
    if text is None:
        return []
    if config.system_prompt_mode == "replace":
        return ["--system-prompt", text]
    return ["--append-system-prompt", text, "--exclude-dynamic-system-prompt-sections"]


def settings_flags(config: ClaudeCodeAgent, base_dir: Path) -> list[str]:
    """``--settings`` for ``claude_settings``: a mapping as JSON, or the file (relative to
    the task file's folder).

    Raises:
        UserError: the file is missing or is not a JSON object (the CLI would ignore it
            silently, and with it any deny rules it holds).
    """
    settings = config.claude_settings
    if settings is None:
        return []
    if isinstance(settings, dict):
        return ["--settings", json.dumps(settings)]
    path = Path(os.path.expandvars(settings))
    path = path if path.is_absolute() else base_dir / path
    if not path.is_file():
        raise UserError(f"agent.claude_settings file not found: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"agent.claude_settings {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"agent.claude_settings {path} must hold a JSON object")
    return ["--settings", str(path)]


def _settings_files(config: ClaudeCodeAgent, base_dir: Path) -> list[Path]:
    """The settings file the CLI reads (``claude_settings`` as a path), if any."""
    if not isinstance(config.claude_settings, str):
        return []
    path = Path(os.path.expandvars(config.claude_settings))
    return [path if path.is_absolute() else base_dir / path]


def sdk_flags(options: dict[str, Any]) -> list[str]:
    """The CLI flags for ``sdk_options``, as the Claude Agent SDK (0.2.189) passes them."""
    flags: list[str] = []
    for key, value in options.items():
        if key == "betas":
            flags += ["--betas", ",".join(value if isinstance(value, list) else [str(value)])]
        elif key in ("effort", "fallback_model", "max_thinking_tokens"):
            flags += ["--" + key.replace("_", "-"), str(value)]
        elif key in ("strict_mcp_config", "include_hook_events") and value:
            flags.append("--" + key.replace("_", "-"))
        elif key == "output_format" and isinstance(value, dict):
            flags += ["--json-schema", json.dumps(value.get("schema", {}))]
        elif key == "thinking" and isinstance(value, dict):
            flags += _thinking(value)
    return flags


def _thinking(value: dict[str, Any]) -> list[str]:
    kind = value.get("type")
    flags = []
    if kind == "adaptive":
        flags = ["--thinking", "adaptive"]
    elif kind == "enabled":
        flags = ["--max-thinking-tokens", str(value.get("budget_tokens", 0))]
    elif kind == "disabled":
        flags = ["--thinking", "disabled"]
    if value.get("display"):
        flags += ["--thinking-display", str(value["display"])]
    return flags


def _direct_credentials(host: dict[str, str], home: Path) -> dict[str, str]:
    """``route: direct``: the user's key or login, copied into the fresh home."""
    env = {k: host[k] for k in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN",
                                "ANTHROPIC_BASE_URL") if host.get(k)}  # fmt: skip
    login = Path(host.get("HOME", "~")).expanduser() / ".claude" / ".credentials.json"
    if login.is_file():
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        shutil.copy2(login, home / ".claude" / ".credentials.json")
    return env
