"""Agents: what acts on the prompt inside the sandbox (``none``, ``command``, ``llm``,
``claude-code``, ``codex``, and the types users add)."""

from assay.agents.base import Agent, AgentContext, AgentOutcome, PreflightCheck, PreflightSetup
from assay.agents.registry import AgentRegistry, default_agents

__all__ = [
    "Agent",
    "AgentContext",
    "AgentOutcome",
    "AgentRegistry",
    "PreflightCheck",
    "PreflightSetup",
    "default_agents",
]
