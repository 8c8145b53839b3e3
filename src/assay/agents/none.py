"""``agent: {type: none}``: no agent runs; criteria grade what templates and pre_run left."""

from __future__ import annotations

from assay.agents.base import Agent, AgentContext, AgentOutcome
from assay.spec.task import NoneAgent


class NoAgent(Agent[NoneAgent]):
    """The agent that does nothing."""

    type_name = "none"
    config_model = NoneAgent

    async def run(self, context: AgentContext) -> AgentOutcome:
        """Return an outcome with no response."""
        return AgentOutcome(response=None)
