"""``task.json``'s ``simulation``: the dialog of a row in dialog mode (Coder Eval's
``simulation`` block, plus every turn's text and tokens).

A dialog alternates the user's messages (the task's ``initial_prompt``, then the simulated
user's) and the agent's answers; ``turns`` keeps them in order, one entry per message.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DialogStop = Literal["run_limit_exceeded", "criteria_passed", "max_turns", "budget",
                     "stop_token", "error"]  # fmt: skip
"""Why a dialog ended (Coder Eval's reasons): a ``run_limits`` limit ended the agent's turn,
every criterion passed (``stop_on_criteria_pass``), ``simulation.max_turns`` exchanges were
made, ``simulation.max_total_tokens`` was reached, the simulated user said the
``stop_token``, or the agent or the simulated user failed."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class DialogTurn(_Record):
    """One message of the dialog.

    Attributes:
        exchange: the exchange it belongs to (1-based: a user message and the agent's
            answer).
        role: ``user`` or ``agent``.
        text: what was said (a user message that holds the stop token is kept as said).
        simulated: a user message the simulated user wrote (``False``: ``initial_prompt``).
        input_tokens, output_tokens: the tokens of the call that wrote it (the agent's: its
            whole turn, every model call), ``None`` when not counted.
        stop_requested: the simulated user said the stop token in it.
        criteria_passed: after this agent turn, whether every criterion passed
            (``check_criteria`` ``every_turn`` or ``both``; ``None``: not checked).
        status: the agent turn's outcome (``completed``, ``timeout``, ``token_budget``, …).
        error: why this message failed (the simulated user's or the agent's error).
        settings_put_back: before this agent turn, the settings files the CLI reads from
            its workspace that the agent had changed in an earlier turn, put back as they
            were at the first (:mod:`assay.agents.dialog_settings`).
    """

    exchange: int
    role: Literal["user", "agent"]
    text: str = ""
    simulated: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    stop_requested: bool = False
    criteria_passed: bool | None = None
    status: str | None = None
    error: str | None = None
    settings_put_back: list[str] = []


class SimulationRecord(_Record):
    """The dialog of one row-task replicate.

    Attributes:
        n_trials: dialogs per row-task (``simulation.n_trials``).
        replicate_index: which of them this is.
        stop_reason: why it ended (:data:`DialogStop`).
        total_turns: exchanges made.
        simulator_model: the simulated user's model.
        simulator_input_tokens, simulator_output_tokens: the simulated user's tokens.
        simulator_failures: calls of the simulated user that failed.
        simulator_cost_usd: what the simulated user's calls cost (US dollars, from the price
            table; ``None``: its model has no price). Not part of the row's ``cost_usd``.
        dialog_tokens: tokens of the whole dialog (agent and simulated user), what
            ``simulation.max_total_tokens`` bounds.
        check_judge_tokens, check_judge_cost_usd, check_judge_unpriced: what the judges of
            the criteria checked after each exchange (``check_criteria: every_turn`` or
            ``both``) used (tokens; US dollars, ``None``: none priced; verdicts with tokens
            but no price), counted in the run's judge totals with the final grading's.
        turns: every message, in order.
    """

    n_trials: int = 1
    replicate_index: int = 0
    stop_reason: DialogStop
    total_turns: int = 0
    simulator_model: str | None = None
    simulator_input_tokens: int = 0
    simulator_output_tokens: int = 0
    simulator_failures: int = 0
    simulator_cost_usd: float | None = None
    dialog_tokens: int = 0
    check_judge_tokens: int = 0
    check_judge_cost_usd: float | None = None
    check_judge_unpriced: int = 0
    turns: list[DialogTurn] = Field(default_factory=list)


__all__ = ["DialogStop", "DialogTurn", "SimulationRecord"]
