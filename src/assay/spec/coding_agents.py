"""Coding-agent CLIs as task-file agents: ``claude-code`` and ``codex`` (Coder Eval's fields,
``reference/coder_eval_agents.md`` §1.2–1.4).

Both run their CLI headless in the row's sandbox. With ``route: bridge`` (the default) the
CLI's model calls go to assay's model bridge, which forwards them to ``model`` (any assay
model: ``anthropic/…`` passed through untranslated, ``openai/…``, ``local/…``, ``mock/…``)
and counts them; with ``route: direct`` the CLI uses its own credentials and assay only
reads what the CLI reports.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, StrictStr, ValidationInfo, field_validator, model_validator

from assay.spec.agent_base import ModelFieldsSpec
from assay.spec.base import BaseUrl, StrictModel, check_variable_names, no_nul
from assay.spec.price import ModelPrice

PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions")
_TOOL_RULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\(.*\))?$|^mcp__[A-Za-z0-9_\-]+(__[\w\-]+)?$")

SDK_FLAGS = frozenset({
    "betas", "effort", "fallback_model", "max_thinking_tokens", "thinking", "output_format",
    "strict_mcp_config", "include_hook_events",
})  # fmt: skip
"""``sdk_options`` keys that become flags of the CLI."""
SDK_FRAMEWORK = frozenset({
    "model", "permission_mode", "allowed_tools", "disallowed_tools", "plugins", "system_prompt",
    "system_prompt_file", "settings", "cwd", "env", "stderr", "debug_stderr", "resume",
    "max_turns", "session_id", "session_store", "session_store_flush", "continue_conversation",
    "fork_session", "max_budget_usd", "task_budget", "hooks", "mcp_servers", "cli_path",
    "extra_args", "agents", "can_use_tool", "permission_prompt_tool_name", "tools", "sandbox",
    "skills", "add_dirs", "setting_sources", "user", "include_partial_messages",
})  # fmt: skip
"""``sdk_options`` keys the harness owns (Coder Eval's list)."""
SDK_TRANSPORT = frozenset({
    "enable_file_checkpointing", "max_buffer_size", "load_timeout_ms", "forward_subagent_text",
    "verbatim_prompts", "client_app", "resume_drops_turn", "resume_session_at",
})  # fmt: skip
"""``ClaudeAgentOptions`` fields of the Python SDK's own transport (claude-agent-sdk 0.2.189)."""


ACTING_TOOLS = frozenset({"Bash", "Write", "Edit", "MultiEdit", "NotebookEdit"})
"""Claude Code's tools that write files or run commands."""


TOOL_NAMES = frozenset({
    # Coder Eval's canonical names (coder_eval_agents.md §1.1)
    "Agent", "Bash", "Edit", "Glob", "Grep", "NotebookEdit", "Read", "Skill", "Task",
    "TodoWrite", "ToolSearch", "WebFetch", "WebSearch", "Write",
    # and the other tools Claude Code has offered (its stream's init event lists them)
    "MultiEdit", "LS", "NotebookRead", "BashOutput", "KillShell", "KillBash", "ExitPlanMode",
    "SlashCommand", "CronCreate", "CronDelete", "CronList", "EnterWorktree", "ExitWorktree",
    "ListAgents", "Monitor", "ReportFindings", "ScheduleWakeup", "SendMessage", "TaskStop",
    "Workflow",
})  # fmt: skip
"""The tool names ``allowed_tools`` / ``disallowed_tools`` may use (besides ``mcp__`` tools
and rules on one of these, ``Bash(git status:*)``): a name that is not one of them (``bash``,
``Writ``) would allow or deny nothing, so it is refused at load, as Coder Eval refuses it."""


def check_tool_rules(value: list[str] | None) -> list[str] | None:
    """``allowed_tools`` / ``disallowed_tools``: Claude Code's tool names or rules.

    Raises:
        ValueError: an entry that is neither, or names a tool Claude Code does not have (with
            the closest name).
    """
    for name in value or []:
        if not _TOOL_RULE.match(name.strip()):
            raise ValueError(
                f"tool {name!r} is not a tool name (Bash, Edit, Write, …), a rule such "
                "as Bash(git status:*), or mcp__<server>[__<tool>]"
            )
        tool = name.strip().split("(")[0]
        if not tool.startswith("mcp__") and tool not in TOOL_NAMES:
            raise ValueError(f"tool {name!r} is not one of Claude Code's tools"
                             + _closest_tool(tool) + "; names are case-sensitive")  # fmt: skip
    return value


def _closest_tool(tool: str) -> str:
    by_case = [t for t in TOOL_NAMES if t.lower() == tool.lower()]
    found = by_case or difflib.get_close_matches(tool, sorted(TOOL_NAMES), n=1, cutoff=0.6)
    return f" (did you mean {found[0]!r}?)" if found else ""


def permitted_to_act(mode: str | None, allowed: list[str] | None,
                     denied: list[str] | None) -> bool:  # fmt: skip
    """Whether a CLI with Claude Code's permission modes may write files or run commands:
    every mode but ``plan`` and ``default`` (``None``: the CLI's own full access), and
    ``default`` when ``allowed`` lets a writing or shell tool run (``Bash``, ``Write``,
    ``Edit``, ``MultiEdit``, ``NotebookEdit``, an ``mcp__`` tool, or a rule on one of
    them) that ``denied`` does not name."""
    if mode == "plan":
        return False
    if mode != "default":
        return True
    refused = set(denied or [])
    return any(
        name not in refused and (name.split("(")[0] in ACTING_TOOLS or name.startswith("mcp__"))
        for name in allowed or []
    )


class PluginSource(StrictModel):
    """A plugin folder offered to the agent (its ``skills/<name>/SKILL.md`` become skills).

    ``path`` may use ``$VAR`` / ``${VAR}``; a relative path is relative to the task file.
    """

    type: Literal["local"]
    path: StrictStr


_BEDROCK_CLAUDE = re.compile(
    r"^(?:[a-z]{2,4}\.)?anthropic\.(?P<name>claude-[A-Za-z0-9.\-]+?)(?:-v\d+(?::\d+)?)?$"
)
_NATIVE_NAMES: Mapping[str, re.Pattern[str]] = {
    "anthropic": re.compile(r"^claude-[A-Za-z0-9.\-]+$"),
    "openai": re.compile(
        r"^(?:gpt-[A-Za-z0-9.\-]+|o[1-9](?:-[A-Za-z0-9.\-]+)?|codex-[A-Za-z0-9.\-]+)$"
    ),
}


def native_model_name(name: str, provider: str) -> str | None:
    """A model name as Coder Eval's task files write it, as an assay model of the CLI's own
    ``provider`` (``None`` when it is not one): ``claude-sonnet-4-5`` →
    ``anthropic/claude-sonnet-4-5``; Bedrock's ``anthropic.claude-sonnet-4-6`` (with an
    optional region prefix such as ``us.`` and version suffix such as ``-v1:0``) →
    ``anthropic/claude-sonnet-4-6``; ``gpt-5.5``, ``o3``, ``codex-mini-latest`` →
    ``openai/…``."""
    text = name.strip()
    if provider == "anthropic":
        bedrock = _BEDROCK_CLAUDE.match(text)
        if bedrock:
            return f"anthropic/{bedrock.group('name')}"
    pattern = _NATIVE_NAMES.get(provider)
    return f"{provider}/{text}" if pattern is not None and pattern.match(text) else None


class CodingAgent(ModelFieldsSpec):
    """Fields shared by the coding-agent CLIs.

    ``model``: the assay model that answers the CLI's calls through the bridge (``None``:
    the CLI's own default model on its own API). ``cli_model``: the model name given to the
    CLI itself (its ``--model``), when it should differ from ``model``'s. ``cli_path``: the
    CLI's executable (else found on ``PATH``, else bundled). ``env``: extra environment
    variables for the CLI. ``env_passthrough``: secret variables of the host that the row's
    programs receive anyway (as for every agent; behind the bridge the CLI still gets no model
    credential but the row's own). ``base_url``, ``api_key_env``, ``request_timeout``,
    ``cache`` and ``price`` configure ``model`` as for an ``llm`` agent.
    """

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        "ignore_patterns": "no judge sub-agent copies the workspace",
        "context_window": "not used",
    }
    native_provider: ClassVar[str] = ""
    """The provider whose API the CLI speaks natively."""
    isolated_from_project: ClassVar[bool] = True
    takes_turns: ClassVar[bool] = True
    enforces_max_turns: ClassVar[bool] = False
    """Capability (turn boundary): the CLI stops itself after ``run_limits.max_turns`` (a
    flag of its own), so the limit holds on ``route: direct`` too; otherwise only the
    bridge, which sees each model call, enforces it."""

    withheld_prefixes: ClassVar[tuple[str, ...]] = (
        "ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "AWS_BEARER_TOKEN_BEDROCK", "GOOGLE_VERTEX_",
        "VERTEX_", "AZURE_OPENAI_", "GEMINI_", "GOOGLE_GEMINI_", "GOOGLE_API_KEY", "GOOGLE_GENAI_",
    )  # fmt: skip
    """Variables through which a CLI would reach a model on the user's account or read the
    user's own configuration (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``,
    ``ANTHROPIC_CUSTOM_HEADERS``): a coding agent never sees them; behind the bridge it gets
    the row's credential instead."""

    model: StrictStr | None = None
    cli_model: StrictStr | None = None
    cli_path: StrictStr | None = None
    route: Literal["bridge", "direct"] = "bridge"
    env: dict[str, StrictStr] = Field(default_factory=dict)
    env_passthrough: list[StrictStr] = Field(default_factory=list)
    system_prompt: StrictStr | None = None
    system_prompt_file: StrictStr | None = None
    plugins: list[PluginSource] | None = None
    base_url: BaseUrl | None = None
    api_key_env: StrictStr | None = None
    request_timeout: float = Field(default=600, gt=0)
    cache: bool = False
    price: ModelPrice | None = None

    @property
    def withheld_passthrough(self) -> list[str]:
        """The ``env_passthrough`` names the CLI never gets (:attr:`withheld_prefixes`)."""
        return [name for name in self.env_passthrough if name.startswith(self.withheld_prefixes)]

    @property
    def may_act(self) -> bool:
        """A coding agent's CLI acts (writes files, runs commands) unless its settings say
        it may not."""
        return True

    @property
    def uses_bridge(self) -> bool:
        """``route: bridge``."""
        return self.route == "bridge"

    def cli_model_name(self) -> str | None:
        """The model name to give the CLI: ``cli_model``, else the task's model's own name
        when it is one of the CLI's :attr:`native_provider` (``openai/gpt-x`` → ``gpt-x``),
        else ``None`` (the CLI's default; on the bridge any name is answered by the task's
        model)."""
        if self.cli_model:
            return self.cli_model
        prefix = self.native_provider + "/"
        if self.native_provider and self.model and self.model.startswith(prefix):
            return self.model.removeprefix(prefix)
        return None

    @property
    def program_env(self) -> dict[str, str]:
        """``env``."""
        return self.env

    def local_paths(self) -> list[str]:
        """The plugin folders (``$VAR`` and ``~`` expanded)."""
        return [os.path.expanduser(os.path.expandvars(p.path)) for p in self.plugins or []]

    @field_validator("model", mode="before")
    @classmethod
    def _coder_eval_model(cls, value: Any) -> Any:
        """Coder Eval's model names as assay's: see :func:`native_model_name`."""
        if isinstance(value, str) and "/" not in value and cls.native_provider:
            return native_model_name(value, cls.native_provider) or value
        return value

    @field_validator("system_prompt", "cli_model", "cli_path", "env", "base_url",
                     "api_key_env", "system_prompt_file")  # fmt: skip
    @classmethod
    def _no_nul(cls, value: Any, info: ValidationInfo) -> Any:
        return no_nul(value, str(info.field_name))

    _passthrough = field_validator("env_passthrough")(check_variable_names)

    @model_validator(mode="after")
    def _shared(self) -> CodingAgent:
        if self.system_prompt is not None and self.system_prompt_file is not None:
            raise ValueError(
                "Only one of 'system_prompt' or 'system_prompt_file' can be provided, not both"
            )
        if self.model is not None and "/" not in self.model:
            raise ValueError(
                f"model '{self.model}' must be an assay model named provider/name (e.g. "
                "anthropic/claude-sonnet-4-5, openai/gpt-4.1, mock/script.yaml); the CLI's own "
                "model name goes in cli_model"
            )
        if (
            self.route == "direct"
            and self.model is not None
            and not self.model.startswith(self.native_provider + "/")
        ):
            raise ValueError(
                f"route 'direct' runs the CLI on its own credentials, so model must be a "
                f"{self.native_provider}/ model or unset (got '{self.model}'); use route: "
                "bridge for any other model"
            )
        return self


class ClaudeCodeAgent(CodingAgent):
    """``agent: {type: claude-code}``: the Claude Code CLI.

    ``permission_mode`` (default ``acceptEdits``), ``allowed_tools`` / ``disallowed_tools``
    (tool names or rules such as ``Bash(git status:*)``), ``system_prompt_mode``
    (``append`` to Claude Code's own prompt, or ``replace`` it), ``setting_sources``
    (``user`` / ``project`` / ``local``; unset = ``[project]``: the sandbox's own
    ``.claude/`` and ``CLAUDE.md``; the user's settings never leak in, the home folder is
    fresh), ``claude_settings`` (a settings file or mapping, the CLI's ``--settings``),
    ``sdk_options`` (``ClaudeAgentOptions`` fields that map onto CLI flags: ``effort``,
    ``betas``, ``fallback_model``, ``max_thinking_tokens``, ``thinking``, ``output_format``,
    …).
    """

    type: Literal["claude-code"]
    permission_mode: Literal["default", "acceptEdits", "plan", "bypassPermissions"] = "acceptEdits"
    allowed_tools: list[StrictStr] | None = None
    disallowed_tools: list[StrictStr] | None = None
    system_prompt_mode: Literal["append", "replace"] = "append"
    setting_sources: list[Literal["user", "project", "local"]] | None = None
    claude_settings: StrictStr | dict[str, Any] | None = None
    sdk_options: dict[str, Any] = Field(default_factory=dict)

    native_provider: ClassVar[str] = "anthropic"
    enforces_max_turns: ClassVar[bool] = True
    prefixes_skills: ClassVar[bool] = True

    @property
    def dialog_problem(self) -> str | None:
        """Claude Code continues its session between turns (``--resume SESSION_ID``)."""
        return None

    def local_paths(self) -> list[str]:
        """The plugin folders and a ``claude_settings`` file."""
        settings = self.claude_settings
        return super().local_paths() + ([settings] if isinstance(settings, str) else [])

    @property
    def may_act(self) -> bool:
        """Whether the CLI may write files or run commands: every mode but ``plan`` and
        ``default``, and ``default`` when ``allowed_tools`` lets a writing or shell tool run
        (``Bash``, ``Write``, ``Edit``, ``MultiEdit``, ``NotebookEdit``, an ``mcp__`` tool,
        or a rule on one of them)."""
        return permitted_to_act(self.permission_mode, self.allowed_tools, self.disallowed_tools)

    _tool_names = field_validator("allowed_tools", "disallowed_tools")(check_tool_rules)

    @field_validator("sdk_options")
    @classmethod
    def _sdk_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        valid = sorted(SDK_FLAGS | SDK_FRAMEWORK | SDK_TRANSPORT)
        for key in value:
            if key in SDK_FRAMEWORK:
                raise ValueError(f"sdk_options key '{key}' is framework-managed; set it as a "
                                 "top-level AgentConfig field instead")  # fmt: skip
            if key in SDK_TRANSPORT:
                raise ValueError(f"sdk_options key '{key}' configures the Python SDK's "
                                 "transport; assay runs the CLI itself, so it would have no "
                                 "effect: remove it")  # fmt: skip
            if key not in SDK_FLAGS:
                raise ValueError(f"sdk_options key '{key}' is not a ClaudeAgentOptions field "
                                 f"(valid keys: {valid})")  # fmt: skip
        return value

    @model_validator(mode="after")
    def _replace_needs_text(self) -> ClaudeCodeAgent:
        if self.system_prompt_mode == "replace" and not (
            (self.system_prompt or "").strip() or self.system_prompt_file
        ):
            raise ValueError("system_prompt_mode 'replace' needs a non-blank system_prompt "
                             "(or system_prompt_file)")  # fmt: skip
        return self


def _without_claude_options(agent: str, why: str) -> dict[str, str]:
    """The Coder Eval fields a CLI without Claude Code's permission modes, tool lists and
    SDK options loads with a warning each: ``why`` says what the CLI does instead."""
    return {
        **CodingAgent.coder_eval_only,
        **{name: f"not enforced: {why}"
           for name in ("permission_mode", "allowed_tools", "disallowed_tools")},
        "sdk_options": f"not used: these are Claude Agent SDK options; {agent} takes none",
    }  # fmt: skip


CODEX_DIRECT = (
    "codex runs through the model bridge only: on route 'direct' Codex cannot be pointed "
    "at another endpoint (it ignores OPENAI_BASE_URL), and where its own API cannot be "
    "reached it reconnects without end, so every row would hang until task_timeout; "
    "remove route: direct (route: bridge is the default) and name the model the bridge "
    "answers with, e.g. model: openai/gpt-5.5 (your OPENAI_API_KEY stays with assay)"
)


class CodexAgent(CodingAgent):
    """``agent: {type: codex}``: the OpenAI Codex CLI (``codex exec --json``).

    ``system_prompt`` (or ``system_prompt_file``) is added to Codex's own instructions.
    Codex has no permission modes or tool lists (it runs every command with full access
    inside assay's sandbox): ``permission_mode``, ``allowed_tools``, ``disallowed_tools`` and
    ``sdk_options``, as Coder Eval's task files write them for any agent, load with one
    warning each saying what Codex does instead; Claude Code's own settings are refused.
    """

    coder_eval_only: ClassVar[Mapping[str, str]] = _without_claude_options(
        "codex",
        "codex has no permission modes or tool lists; it runs every command with full access "
        "inside the row's sandbox (contain it with sandbox.driver: bwrap, the default for codex)",
    )
    refused_fields: ClassVar[Mapping[str, str]] = {
        "system_prompt_mode": "codex always adds system_prompt to its own instructions",
        "setting_sources": "a claude-code field",
        "claude_settings": "a claude-code field",
    }

    type: Literal["codex"]

    native_provider: ClassVar[str] = "openai"

    @property
    def dialog_problem(self) -> str | None:
        """Codex continues its session between turns (``codex exec resume SESSION_ID``)."""
        return None

    @property
    def may_act(self) -> bool:
        """Codex always may: it runs every command with full access inside the sandbox."""
        return True

    @field_validator("route")
    @classmethod
    def _bridge_only(cls, value: str) -> str:
        """``route: direct`` is refused when the task is loaded (so by ``assay plan`` and
        ``assay run``, exit 2): Codex cannot be pointed at another endpoint than its own
        API from outside (it ignores ``OPENAI_BASE_URL``), and where that API cannot be
        reached it reconnects without end, so every row would hang until ``task_timeout``."""
        if value == "direct":
            raise ValueError(CODEX_DIRECT)
        return value


class GeminiAgent(CodingAgent):
    """``agent: {type: gemini}``: Google's Gemini CLI (``gemini -p … --output-format
    stream-json --yolo``), its model calls on the Gemini API's wire through the model bridge
    (any assay model answers). It runs every tool with full access inside assay's sandbox
    (``--yolo``); like Codex, Coder Eval's ``permission_mode``, ``allowed_tools`` and
    ``sdk_options`` load with a warning and Claude Code's own settings are refused; each skill
    of ``plugins`` is one of its user skills. ``route: direct`` is not offered (assay has no
    Google login to pass through)."""

    coder_eval_only: ClassVar[Mapping[str, str]] = _without_claude_options(
        "gemini",
        "gemini runs with --yolo, every tool with full access inside the row's sandbox "
        "(contain it with sandbox.driver: bwrap, the default)",
    )
    refused_fields: ClassVar[Mapping[str, str]] = {
        "system_prompt_mode": "gemini takes no system prompt from assay",
        "setting_sources": "a claude-code field",
        "claude_settings": "a claude-code field",
        "system_prompt": "gemini takes no system prompt from assay: put it in the prompt",
        "system_prompt_file": "gemini takes no system prompt from assay: put it in the prompt",
    }

    type: Literal["gemini"]

    native_provider: ClassVar[str] = "google"

    @property
    def dialog_problem(self) -> str | None:
        """Gemini CLI continues its session between turns (``--resume SESSION_ID``)."""
        return None

    @property
    def may_act(self) -> bool:
        """Gemini with --yolo always may."""
        return True

    @model_validator(mode="after")
    def _bridge_only(self) -> GeminiAgent:
        if self.route != "bridge":
            raise ValueError("gemini runs through the model bridge only (route: bridge): assay "
                             "has no Google login to give it")  # fmt: skip
        return self


APPROVAL_MODES: Mapping[str | None, str] = {
    None: "yolo",
    "bypassPermissions": "yolo",
    "acceptEdits": "auto-edit",
    "default": "default",
    "plan": "plan",
}
"""Claude Code's permission modes as Qwen Code's ``--approval-mode`` (unset: ``yolo``)."""


class QwenCodeAgent(CodingAgent):
    """``agent: {type: qwen-code}``: Alibaba's Qwen Code CLI (``qwen PROMPT --output-format
    stream-json``), its model calls on the OpenAI Chat Completions wire through the model
    bridge (any assay model answers).

    Qwen Code reads Claude Code's tool names and rules, so ``allowed_tools`` (its
    ``--allowed-tools``) and ``disallowed_tools`` (``--exclude-tools``) pass through;
    ``permission_mode`` becomes its ``--approval-mode`` (``acceptEdits`` → ``auto-edit``,
    ``bypassPermissions`` → ``yolo``, ``default``, ``plan``; unset: ``yolo``, every tool
    with full access inside assay's sandbox); ``system_prompt`` is appended to its own
    (``system_prompt_mode: replace`` replaces it); each skill of ``plugins`` is one of its
    user skills. ``route: direct`` is not offered; Claude Code's own settings and
    ``sdk_options`` are refused or warned about."""

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        **CodingAgent.coder_eval_only,
        "sdk_options": "not used: these are Claude Agent SDK options; qwen-code takes none",
    }
    refused_fields: ClassVar[Mapping[str, str]] = {
        "setting_sources": "a claude-code field",
        "claude_settings": "a claude-code field",
    }

    type: Literal["qwen-code"]
    permission_mode: Literal["default", "acceptEdits", "plan", "bypassPermissions"] | None = None
    allowed_tools: list[StrictStr] | None = None
    disallowed_tools: list[StrictStr] | None = None
    system_prompt_mode: Literal["append", "replace"] = "append"

    native_provider: ClassVar[str] = "openai"

    _tool_names = field_validator("allowed_tools", "disallowed_tools")(check_tool_rules)

    @property
    def dialog_problem(self) -> str | None:
        """Qwen Code continues its session between turns (``--resume SESSION_ID``)."""
        return None

    @property
    def may_act(self) -> bool:
        """As for Claude Code (:func:`permitted_to_act`); unset mode: ``yolo``, it may."""
        return permitted_to_act(self.permission_mode, self.allowed_tools, self.disallowed_tools)

    @model_validator(mode="after")
    def _bridge_only(self) -> QwenCodeAgent:
        if self.route != "bridge":
            raise ValueError("qwen-code runs through the model bridge only (route: bridge): "
                             "give it any assay model as agent.model")  # fmt: skip
        if self.system_prompt_mode == "replace" and not (
            (self.system_prompt or "").strip() or self.system_prompt_file
        ):
            raise ValueError("system_prompt_mode 'replace' needs a non-blank system_prompt "
                             "(or system_prompt_file)")  # fmt: skip
        return self


OPENCODE_PERMISSIONS: Mapping[str, str] = {
    "Bash": "bash", "Write": "edit", "Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit",
    "Read": "read", "Glob": "glob", "Grep": "grep", "LS": "list", "WebFetch": "webfetch",
    "WebSearch": "websearch", "Task": "task", "Skill": "skill", "TodoWrite": "todowrite",
}  # fmt: skip
"""Claude Code's tool names as OpenCode's permission keys (``edit`` covers every write)."""
_RULE = re.compile(r"^(?P<tool>[A-Za-z_]+)(?:\((?P<pattern>.*)\))?$")


OPENCODE_UNASKED = ("read", "glob", "grep", "list", "todowrite")
"""OpenCode's permissions for the tools Claude Code runs in every mode without asking."""


def opencode_permission(
    mode: str | None, allowed: list[str] | None, denied: list[str] | None
) -> dict[str, Any]:
    """Claude Code's ``permission_mode``, ``allowed_tools`` and ``disallowed_tools`` as
    OpenCode's ``permission`` rules, for a run where no one can approve a request (as Claude
    Code's ``-p``, where a tool that would ask is refused): with neither a mode nor
    ``allowed_tools``, and in ``bypassPermissions``, every permission is allowed; otherwise
    (``allowed_tools`` alone means Coder Eval's default mode, ``acceptEdits``) everything is
    denied but the tools Claude Code never asks for (:data:`OPENCODE_UNASKED`), the edits in
    ``acceptEdits``, and the tools ``allowed_tools`` names (``Bash(prefix:*)`` allows the
    commands that start so), none that writes or runs in ``plan``. ``disallowed_tools`` is
    denied last. Key order matters: OpenCode's last matching rule wins
    (https://opencode.ai/docs/permissions).

    Raises:
        ValueError: a name OpenCode has no permission for (the names it has), or a rule on
            another tool than Bash.
    """
    if (mode is None and allowed is None) or mode == "bypassPermissions":
        rules: dict[str, Any] = {"*": "allow"}
    else:
        rules = {"*": "deny", **dict.fromkeys(OPENCODE_UNASKED, "allow")}
        if (mode or "acceptEdits") == "acceptEdits":
            rules["edit"] = "allow"
        for key, pattern in _opencode_rules(allowed or [], "allowed_tools"):
            if mode == "plan" and key in ("edit", "bash"):
                continue
            _set_rule(rules, key, pattern, "allow")
    for key, pattern in _opencode_rules(denied or [], "disallowed_tools"):
        _set_rule(rules, key, pattern, "deny")
    return rules


def _opencode_rules(names: list[str], field: str) -> list[tuple[str, str | None]]:
    """Each of ``names`` (Claude Code's tool names and ``Bash(command)`` /
    ``Bash(prefix:*)`` rules) as OpenCode permissions and command patterns (``None``: the
    whole tool). ``prefix:*`` is the command ``prefix`` alone or followed by a space and
    arguments (Claude Code's meaning: ``git:*`` allows ``git status``, never ``gitk``), so
    it becomes two patterns, ``prefix`` and ``prefix *``.

    Raises:
        ValueError: a name OpenCode has no permission for (the names it has; spaces around
            a name are refused, not dropped), an empty rule, or a rule on another tool than
            Bash.
    """
    found: list[tuple[str, str | None]] = []
    for name in names:
        match = _RULE.match(name)
        key = OPENCODE_PERMISSIONS.get(match.group("tool")) if match else None
        if match is None or key is None:
            raise ValueError(f"{field}: opencode has no permission for {name!r} "
                             f"(it has: {', '.join(sorted(OPENCODE_PERMISSIONS))}, and "
                             "Bash(command prefix:*) rules)")  # fmt: skip
        pattern = match.group("pattern")
        if pattern is not None and key != "bash":
            raise ValueError(f"{field}: opencode takes a rule on Bash only, not {name!r}")
        if pattern is None:
            found.append((key, None))
            continue
        prefix = pattern[:-2] if pattern.endswith(":*") else None
        if not (prefix if prefix is not None else pattern).strip():
            raise ValueError(f"{field}: {name!r} names no command")
        found += [(key, prefix), (key, prefix + " *")] if prefix else [(key, pattern)]
    return found


def _set_rule(rules: dict[str, Any], key: str, pattern: str | None, action: str) -> None:
    """Set ``rules[key]`` to ``action``, or (a command pattern) add ``pattern: action``
    after what the tool had, so that it wins where it matches."""
    if pattern is None:
        rules.pop(key, None)  # re-inserted last: it wins over an earlier "*"
        rules[key] = action
        return
    current = rules.get(key, rules.get("*", "allow"))
    if isinstance(current, str):
        if current == action:
            return
        current = {"*": current}
    current.pop(pattern, None)
    current[pattern] = action
    rules.pop(key, None)
    rules[key] = current


class OpenCodeAgent(CodingAgent):
    """``agent: {type: opencode}``: the OpenCode CLI (``opencode run --format json``), its
    model calls on the OpenAI Chat Completions wire through the model bridge (a provider of
    its own, given in ``OPENCODE_CONFIG_CONTENT``; any assay model answers).

    Claude Code's ``permission_mode``, ``allowed_tools`` and ``disallowed_tools`` (its tool
    names, and ``Bash(prefix:*)`` rules) become OpenCode's ``permission`` rules
    (:func:`opencode_permission`): without a mode or ``allowed_tools`` it runs with every
    permission allowed inside assay's sandbox; a denied tool is taken away from the model.
    ``system_prompt`` is added to its instructions; each skill of ``plugins`` is one of its
    skills. Coder Eval's ``sdk_options`` loads with a warning; ``route: direct`` and Claude
    Code's own settings are refused."""

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        **CodingAgent.coder_eval_only,
        "sdk_options": "not used: these are Claude Agent SDK options; opencode takes none",
    }
    refused_fields: ClassVar[Mapping[str, str]] = {
        "system_prompt_mode": "opencode adds system_prompt to its own instructions",
        "setting_sources": "a claude-code field",
        "claude_settings": "a claude-code field",
    }

    type: Literal["opencode"]
    permission_mode: Literal["default", "acceptEdits", "plan", "bypassPermissions"] | None = None
    allowed_tools: list[StrictStr] | None = None
    disallowed_tools: list[StrictStr] | None = None

    native_provider: ClassVar[str] = "openai"

    @property
    def dialog_problem(self) -> str | None:
        """OpenCode continues its session between turns (``--session SESSION_ID``)."""
        return None

    @property
    def may_act(self) -> bool:
        """OpenCode may write or run unless its permissions say it may not (``plan``, or
        ``default`` allowing no writing or shell tool)."""
        return permitted_to_act(self.permission_mode, self.allowed_tools, self.disallowed_tools)

    @field_validator("allowed_tools", "disallowed_tools")
    @classmethod
    def _known_tools(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        _opencode_rules(value or [], str(info.field_name))
        return value

    @model_validator(mode="after")
    def _bridge_only(self) -> OpenCodeAgent:
        if self.route != "bridge":
            raise ValueError("opencode runs through the model bridge only (route: bridge): "
                             "give it any assay model as agent.model")  # fmt: skip
        return self


PI_TOOLS: Mapping[str, str] = {
    "Bash": "bash", "Read": "read", "Edit": "edit", "Write": "write", "Grep": "grep",
    "Glob": "find", "LS": "ls",
}  # fmt: skip
"""Claude Code's tool names as Pi's built-in tools."""
PI_DEFAULT_TOOLS = ("read", "bash", "edit", "write")
"""The tools Pi enables when it is given no ``--tools``."""


def pi_tools(allowed: list[str] | None, denied: list[str] | None) -> list[str] | None:
    """``allowed_tools`` minus ``disallowed_tools`` as Pi's ``--tools`` allowlist (``None``:
    neither is set, Pi's defaults); ``disallowed_tools`` alone removes from the defaults.

    Raises:
        ValueError: a name Pi has no tool for, or a rule (Pi has none).
    """
    for name in [*(allowed or []), *(denied or [])]:
        if name not in PI_TOOLS:
            raise ValueError(f"pi has no tool {name!r} (it has: {', '.join(PI_TOOLS)}; it "
                             "takes no rules such as Bash(git status:*))")  # fmt: skip
    if allowed is None and denied is None:
        return None
    chosen = [PI_TOOLS[n] for n in allowed] if allowed is not None else list(PI_DEFAULT_TOOLS)
    refused = {PI_TOOLS[n] for n in denied or []}
    return [tool for tool in dict.fromkeys(chosen) if tool not in refused]


class PiAgent(CodingAgent):
    """``agent: {type: pi}``: the Pi coding agent (``pi -p --mode json``), its model calls on
    the OpenAI Chat Completions wire through the model bridge (a provider ``assay`` in its
    ``models.json``; any assay model answers).

    ``allowed_tools`` / ``disallowed_tools`` (Claude Code's names of Pi's tools: ``Bash``,
    ``Read``, ``Edit``, ``Write``, ``Grep``, ``Glob``, ``LS``) become its ``--tools``
    allowlist; ``system_prompt`` is appended to its own (``system_prompt_mode: replace``
    replaces it); each skill of ``plugins`` is given as ``--skill``. It runs every tool it
    has with full access inside assay's sandbox: Coder Eval's ``permission_mode`` and
    ``sdk_options`` load with a warning; ``route: direct`` and Claude Code's own settings
    are refused."""

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        **CodingAgent.coder_eval_only,
        "permission_mode": "not enforced: pi has no permission modes; it runs the tools it is "
        "given (allowed_tools) with full access inside the row's sandbox (contain it with "
        "sandbox.driver: bwrap, the default)",
        "sdk_options": "not used: these are Claude Agent SDK options; pi takes none",
    }
    refused_fields: ClassVar[Mapping[str, str]] = {
        "setting_sources": "a claude-code field",
        "claude_settings": "a claude-code field",
    }

    type: Literal["pi"]
    allowed_tools: list[StrictStr] | None = None
    disallowed_tools: list[StrictStr] | None = None
    system_prompt_mode: Literal["append", "replace"] = "append"

    native_provider: ClassVar[str] = "openai"

    @property
    def dialog_problem(self) -> str | None:
        """Pi continues its session between turns (``--session SESSION_ID``)."""
        return None

    @property
    def may_act(self) -> bool:
        """Whether a writing or shell tool is among those Pi is given."""
        tools = pi_tools(self.allowed_tools, self.disallowed_tools)
        return tools is None or bool({"bash", "edit", "write"} & set(tools))

    @model_validator(mode="after")
    def _checks(self) -> PiAgent:
        if self.route != "bridge":
            raise ValueError("pi runs through the model bridge only (route: bridge): give it "
                             "any assay model as agent.model")  # fmt: skip
        pi_tools(self.allowed_tools, self.disallowed_tools)
        if self.system_prompt_mode == "replace" and not (
            (self.system_prompt or "").strip() or self.system_prompt_file
        ):
            raise ValueError("system_prompt_mode 'replace' needs a non-blank system_prompt "
                             "(or system_prompt_file)")  # fmt: skip
        return self


__all__ = [
    "ClaudeCodeAgent",
    "CodexAgent",
    "CodingAgent",
    "GeminiAgent",
    "OpenCodeAgent",
    "PiAgent",
    "PluginSource",
    "QwenCodeAgent",
]
