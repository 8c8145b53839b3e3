"""Agents: what acts on the prompt inside the sandbox (``none``, ``command``, ``llm``)."""

from assay.agents.base import Agent, AgentContext, AgentOutcome
from assay.agents.registry import build_agent

__all__ = ["Agent", "AgentContext", "AgentOutcome", "build_agent"]
