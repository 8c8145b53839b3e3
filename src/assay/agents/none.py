"""``agent: {type: none}``: no agent runs; criteria grade what templates and pre_run left."""

from __future__ import annotations

from assay.agents.base import AgentContext, AgentOutcome


class NoAgent:
    """The agent that does nothing."""

    type_name = "none"

    async def run(self, context: AgentContext) -> AgentOutcome:
        """Return an outcome with no response."""
        return AgentOutcome(response=None)
