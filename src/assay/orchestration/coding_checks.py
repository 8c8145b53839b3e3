"""Before any row runs: a coding agent's CLI, model, plugins and limits can work.

``assay plan`` and ``assay run`` refuse, with the task file's line, what would otherwise fail
in every row: a CLI that is not installed, a model that cannot start (no key, no mock
script), a plugin folder or system prompt file that does not exist, and limits the chosen
route cannot enforce.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from assay.agents.coding_models import bridge_key, plugin_dirs, read_system_prompt
from assay.errors import TaskFileError, UserError
from assay.orchestration.task_loader import LoadedTask
from assay.providers.pool import ProviderRegistry
from assay.providers.pricing import PriceTable
from assay.spec.coding_agents import ClaudeCodeAgent, CodexAgent, CodingAgent
from assay.spec.task import TaskDefinition


def check_coding_agent(
    loaded: LoadedTask, task: TaskDefinition, registry: ProviderRegistry, prices: PriceTable
) -> None:
    """Check ``task``'s coding agent (nothing for other agents).

    Raises:
        TaskFileError: what would make every row fail, located at its field.
    """
    agent = task.agent
    if not isinstance(agent, CodingAgent):
        return
    where = ("agent", "cli_path") if agent.cli_path else ("agent", "type")
    _located(loaded, where, lambda: find_agent_cli(agent, loaded.base_dir))
    _located(loaded, ("agent", "plugins"), lambda: plugin_dirs(agent, loaded.base_dir))
    _located(loaded, ("agent", "system_prompt_file"),
             lambda: read_system_prompt(agent, loaded.base_dir))  # fmt: skip
    if isinstance(agent, ClaudeCodeAgent):
        from assay.agents.claude_code import settings_flags

        _located(loaded, ("agent", "claude_settings"),
                 lambda: settings_flags(agent, loaded.base_dir))  # fmt: skip
    if agent.route == "bridge":
        key = bridge_key(agent, loaded.base_dir)
        _located(loaded, ("agent", "model"), lambda: registry.preflight(key))
    else:
        _located(loaded, ("agent", "route"), lambda: _own_credentials(agent))
    _check_limits(loaded, task, agent, prices)


_OWN_CREDENTIALS = {
    "anthropic": (("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"), ".claude/.credentials.json",
                  "export ANTHROPIC_API_KEY, or log in with `claude login`"),
    "openai": (("CODEX_API_KEY",), ".codex/auth.json",
               "export CODEX_API_KEY, or log in with `codex login`"),
}  # fmt: skip


def _own_credentials(agent: CodingAgent) -> None:
    """``route: direct`` needs the user's own key or login, else every row fails (Codex
    would retry until the timeout).

    Raises:
        UserError: neither is there.
    """
    variables, login, fix = _OWN_CREDENTIALS[agent.native_provider]
    if any(os.environ.get(v) for v in variables) or (Path.home() / login).is_file():
        return
    raise UserError(f"route 'direct' runs the CLI on your own credentials, and there are none: "
                    f"no {' or '.join(variables)} and no ~/{login}", hint=fix)  # fmt: skip


def find_agent_cli(agent: CodingAgent, base_dir: Path) -> Path:
    """The executable of a coding agent's CLI (a relative ``cli_path`` is relative to the
    task file's folder, ``base_dir``).

    Raises:
        UsageError: it is not installed (with the install command).
    """
    if isinstance(agent, ClaudeCodeAgent):
        from assay.agents.claude_code import find_claude  # only plans with coding agents

        return find_claude(agent, base_dir)
    assert isinstance(agent, CodexAgent)
    from assay.agents.codex import find_codex

    return find_codex(agent, base_dir)


def _located(loaded: LoadedTask, loc: tuple[str, ...], check: Callable[[], object]) -> None:
    try:
        check()
    except UserError as exc:
        if exc.file is not None and exc.file != loaded.display:
            raise TaskFileError(exc.message, file=exc.file, line=exc.line, field=exc.field,
                                hint=f"used by {loaded.display} ({'.'.join(loc)})"
                                + (f"; {exc.hint}" if exc.hint else "")) from None  # fmt: skip
        raise TaskFileError(
            exc.message,
            field=exc.field or ".".join(loc),
            hint=exc.hint,
            file=loaded.display,
            line=loaded.document.line_of(loc),
        ) from None


def _check_limits(
    loaded: LoadedTask, task: TaskDefinition, agent: CodingAgent, prices: PriceTable
) -> None:
    limits = task.run_limits

    def refuse(field: str, message: str, hint: str) -> TaskFileError:
        return TaskFileError(message, field=f"run_limits.{field}", hint=hint, file=loaded.display,
                             line=loaded.document.line_of(("run_limits", field)))  # fmt: skip

    if agent.route == "direct":
        budgets = [n for n in ("max_total_tokens", "max_usd", "max_tool_calls")
                   if getattr(limits, n) is not None]  # fmt: skip
        if isinstance(agent, CodexAgent) and limits.max_turns is not None:
            budgets.append("max_turns")
        if budgets:
            raise refuse(budgets[0], f"run_limits.{budgets[0]} is enforced by the model bridge, "
                         "and route 'direct' does not use it",
                         "use route: bridge (the default), or remove the limit")  # fmt: skip
        return
    if limits.max_usd is None:
        return
    if agent.model is None:
        raise refuse("max_usd", "run_limits.max_usd needs agent.model: the bridge prices each "
                     "call by the task's model, and the CLI's own choice has no known price",
                     "set agent.model (e.g. anthropic/claude-sonnet-4-5)")  # fmt: skip
    if agent.price is None and prices.lookup(agent.model) is None:
        raise refuse("max_usd", f"run_limits.max_usd needs a price for {agent.model}, and the "
                     "price table has none",
                     "give agent.price {input_per_mtok, output_per_mtok} or a price file "
                     "(--prices)")  # fmt: skip
