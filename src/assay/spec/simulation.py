"""Dialog mode: the ``simulation:`` block of a task file (Coder Eval's fields and defaults).

An enabled block swaps the single prompt for a conversation: a simulated user (any assay
model, prompted with ``persona``, ``goal`` and ``constraints``) and the agent take turns in
the row's sandbox until one of the stop conditions holds (see
:mod:`assay.orchestration.running.dialog` for the order). ``initial_prompt`` is then the
user's opening message, and may be omitted (the simulated user writes it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool, StrictStr, field_validator, model_validator

from assay.spec.base import StrictModel
from assay.spec.judge import provider_model

CheckCriteria = Literal["end_of_dialog", "every_turn", "both"]
DEFAULT_SIMULATOR = "local/smollm2"
DEFAULT_STOP_TOKEN = "<<<END>>>"


class SimulationConfig(StrictModel):
    """``simulation:``: a simulated user talks with the agent.

    Attributes:
        enabled: dialog mode is on (Coder Eval's default: off, the block is ignored).
        persona: who the simulated user is (free text, e.g. "an impatient data analyst").
        goal: what the user wants from the conversation (required when enabled).
        constraints: rules the user keeps to (each a line of its prompt).
        max_turns: the most exchanges (a user message and the agent's answer), 1 to 100.
        stop_token: what the simulated user says when its goal is met or given up.
        stop_on_criteria_pass: end the dialog as soon as every criterion passes (checked
            after each exchange; needs ``check_criteria`` ``every_turn`` or ``both``).
        max_total_tokens: tokens of the whole dialog (agent and simulated user); reaching it
            ends the dialog, which is still graded.
        n_trials: dialogs per row-task: replicates (``00``, ``01``, …), which override
            ``repeats``.
        check_criteria: when the criteria are run: once at the end (``end_of_dialog``),
            after every exchange (``every_turn``), or both; the row is always graded at
            the end.
        model: the simulated user's model (``provider/name``; Coder Eval's
            ``anthropic.<model>`` is read as ``anthropic/<model>``; default
            ``local/smollm2``).
    """

    enabled: StrictBool = False
    persona: StrictStr = "a user of the assistant"
    goal: StrictStr | None = None
    constraints: list[StrictStr] = Field(default_factory=list)
    max_turns: int = Field(default=8, ge=1, le=100)
    stop_token: StrictStr = Field(default=DEFAULT_STOP_TOKEN, min_length=1)
    stop_on_criteria_pass: StrictBool = False
    max_total_tokens: int | None = Field(default=None, gt=0)
    n_trials: int = Field(default=1, ge=1)
    check_criteria: CheckCriteria = "end_of_dialog"
    model: StrictStr | None = None

    @field_validator("model")
    @classmethod
    def _provider_name(cls, value: str | None) -> str | None:
        return provider_model(value) if value is not None else None

    @model_validator(mode="after")
    def _goal_when_enabled(self) -> SimulationConfig:
        """A disabled block may leave ``goal`` out (Coder Eval's task files do)."""
        if self.enabled and not (self.goal or "").strip():
            raise ValueError(
                "simulation.goal is required when enabled: say what the simulated user wants "
                "from the conversation"
            )
        return self

    @model_validator(mode="after")
    def _criteria_checked_per_turn(self) -> SimulationConfig:
        if self.stop_on_criteria_pass and self.check_criteria == "end_of_dialog":
            raise ValueError(
                "stop_on_criteria_pass needs the criteria checked after each exchange: "
                "set check_criteria: every_turn (or both)"
            )
        return self

    @property
    def simulator_model(self) -> str:
        """The simulated user's model (``model``, else ``local/smollm2``)."""
        return self.model or DEFAULT_SIMULATOR

    @property
    def checks_every_turn(self) -> bool:
        """The criteria run after each exchange (``every_turn`` or ``both``)."""
        return self.check_criteria != "end_of_dialog"


__all__ = ["DEFAULT_STOP_TOKEN", "CheckCriteria", "SimulationConfig"]
