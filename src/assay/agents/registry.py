"""Build the agent runner for an agent block."""

from __future__ import annotations

from assay.agents.base import Agent
from assay.agents.command import CommandRunner
from assay.agents.llm import LlmRunner
from assay.agents.none import NoAgent
from assay.spec.coding_agents import ClaudeCodeAgent, CodexAgent
from assay.spec.task import AgentConfig, CommandAgent, LlmAgent, NoneAgent


def build_agent(config: AgentConfig) -> Agent:
    """The runner for ``config`` (``none``, ``command``, ``llm``, ``claude-code``, ``codex``)."""
    if isinstance(config, NoneAgent):
        return NoAgent()
    if isinstance(config, CommandAgent):
        return CommandRunner(config)
    if isinstance(config, LlmAgent):
        return LlmRunner(config)
    if isinstance(config, ClaudeCodeAgent):
        from assay.agents.claude_code import ClaudeCodeRunner  # only runs with coding agents

        return ClaudeCodeRunner(config)
    if isinstance(config, CodexAgent):
        from assay.agents.codex import CodexRunner

        return CodexRunner(config)
    raise TypeError(f"no runner for agent config {type(config).__name__}")  # pragma: no cover
