"""Dialog mode: a simulated user and the agent take turns in the row's sandbox.

The task's ``initial_prompt`` opens the dialog (without one, the simulated user writes the
opening message). Each exchange is the user's message and the agent's turn: the agent
continues its own session (an ``llm`` agent gets the message history, a coding-agent CLI
resumes its session, :class:`assay.agents.base.DialogState`). After each exchange the
dialog stops, checked in Coder Eval's order, when:

1. ``run_limit_exceeded``: the agent's turn ended on a ``run_limits`` limit (time, tokens,
   cost, model calls, tool calls), which bound the whole dialog; the row keeps that limit's
   status and is graded;
2. ``criteria_passed``: ``stop_on_criteria_pass`` and every criterion passed after this
   exchange (``check_criteria`` ``every_turn`` or ``both``);
3. ``max_turns``: ``simulation.max_turns`` exchanges were made;
4. ``budget``: the dialog's tokens (agent and simulated user) reached
   ``simulation.max_total_tokens``; the row is still graded;
5. ``stop_token``: the simulated user's next message holds ``simulation.stop_token``.

An agent turn that fails, or a simulated user that fails (a model error, an empty message),
ends the dialog with ``error`` and the row ``ERROR`` (never a pass). Every turn's outcome is
merged into one: the last answer is the response criteria grade, the transcript holds every
turn with the user's messages between them (``user`` events), usage and cost are summed,
and ``simulation`` (:class:`~assay.results.dialog.SimulationRecord`) keeps the dialog.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.agents.base import Agent, AgentContext, AgentOutcome, DialogState, OutcomeStatus
from assay.agents.llm import script_vars
from assay.errors import ModelError
from assay.orchestration.planning.variants import simulator_key
from assay.providers.base import Message, ModelRequest, Usage
from assay.providers.managed import ManagedModel
from assay.providers.retry import CallRecord
from assay.results.dialog import DialogStop, DialogTurn, SimulationRecord
from assay.results.task_result import BasicCriterionResult, JudgeSpend, judge_spend
from assay.results.trace import Span, new_trace_id
from assay.results.transcript import Transcript, TranscriptEvent
from assay.results.transcript_otlp import to_spans
from assay.sandbox.trees import remove_tree
from assay.spec.simulation import SimulationConfig

CriteriaCheck = Callable[[AgentOutcome], Awaitable[tuple[bool, Sequence[BasicCriterionResult]]]]
"""Grades the row as it stands (the merged outcome so far): whether every criterion passed,
and the criterion results (their judges' tokens and cost count in the run's)."""

SIMULATOR_MAX_TOKENS = 512
"""The longest message the simulated user may write (tokens): a user's turn is short."""
OPENER = "(The conversation starts: write your first message to the assistant.)"
LIMIT_FIELDS: dict[OutcomeStatus, str] = {
    "timeout": "timeout", "token_budget": "max_total_tokens", "cost_budget": "max_usd",
    "max_turns": "max_turns", "max_tool_calls": "max_tool_calls",
}  # fmt: skip
"""A limit status → the :class:`AgentContext` field (and ``run_limits`` field) it stops at."""
LIMIT_STATUSES: frozenset[OutcomeStatus] = frozenset(LIMIT_FIELDS)


class SimulatorFailed(Exception):
    """The simulated user gave no message (a model error, or an empty answer)."""


@dataclass(frozen=True)
class DialogSetup:
    """What a dialog needs besides the agent and its context.

    Attributes:
        config: the task's ``simulation:`` block.
        description: the task's ``description`` (the simulated user sees it).
        opener: ``initial_prompt`` (``None``: the simulated user opens).
        simulator: the simulated user's model.
        check: grades the row after an exchange (``None``: never checked per turn).
    """

    config: SimulationConfig
    description: str
    opener: str | None
    simulator: ManagedModel
    check: CriteriaCheck | None = None


def simulator_prompt(config: SimulationConfig, description: str) -> str:
    """The simulated user's system prompt: its persona, goal and constraints, the task's
    description, and when to say the stop token."""
    lines = [
        "You play the user in a conversation with an AI assistant. Stay in your role: write "
        "as this user would, and never say that you are an AI or that this is a simulation.",
        f"Who you are: {config.persona}",
        f"Your goal: {config.goal or ''}",
    ]
    if config.constraints:
        lines.append("Keep to these rules:")
        lines.extend(f"- {rule}" for rule in config.constraints)
    lines.append(f"What the assistant was asked to work on: {description}")
    lines.append(
        "Each time, write only your next message to the assistant. When your goal is met, "
        f"or you give up on it, answer with {config.stop_token} alone."
    )
    return "\n".join(lines)


@dataclass
class _Dialog:
    """The state of one dialog while it runs."""

    agent: Agent[Any]
    context: AgentContext
    setup: DialogSetup
    state: DialogState = field(default_factory=DialogState)
    turns: list[DialogTurn] = field(default_factory=list)
    outcomes: list[AgentOutcome] = field(default_factory=list)
    users: list[tuple[int, str, str]] = field(default_factory=list)
    """``(at_ns, from, text)`` of each user message, for the transcript."""
    simulator_usage: Usage = field(default_factory=Usage)
    simulator_failures: int = 0
    started: float = field(default_factory=time.perf_counter)
    grading: float = 0.0
    """Seconds the per-turn criteria checks took: not the agent's, so not out of
    ``task_timeout`` (the runner's bound on the whole dialog moves by as much)."""
    judged: JudgeSpend = field(default_factory=JudgeSpend)
    """What the judges of the per-turn checks used (the final grading's are the row's)."""

    @property
    def tokens(self) -> int:
        """The dialog's tokens so far: every agent turn's and the simulated user's."""
        agent = sum(o.usage.total_tokens for o in self.outcomes if o.usage is not None)
        return agent + self.simulator_usage.total_tokens

    def said(self, exchange: int, text: str, *, simulated: bool, usage: Usage | None) -> None:
        self.turns.append(DialogTurn(
            exchange=exchange, role="user", text=text, simulated=simulated,
            input_tokens=usage.input_tokens if usage is not None else None,
            output_tokens=usage.output_tokens if usage is not None else None,
            stop_requested=simulated and self.setup.config.stop_token in text,
        ))  # fmt: skip
        self.users.append((time.time_ns(), "simulated" if simulated else "initial_prompt", text))

    async def simulate(self) -> tuple[str, Usage | None]:
        """The simulated user's next message (the conversation so far, its roles swapped).

        Raises:
            SimulatorFailed: the model failed, said nothing, or did not answer before the
                dialog's time ran out (the row is an ``ERROR``, not the agent's timeout).
        """
        config = self.setup.config
        messages = [Message("system", simulator_prompt(config, self.setup.description)),
                    Message("user", OPENER)]  # fmt: skip
        for role, text in self.state.history:
            messages.append(Message("assistant" if role == "user" else "user", text))
        request = ModelRequest(
            messages=tuple(messages), temperature=0.7, max_tokens=SIMULATOR_MAX_TOKENS,
            seed=self.context.replicate,
            script_vars=script_vars(self.context) if config.simulator_model.startswith("mock/")
            else {},
        )  # fmt: skip
        record = CallRecord()
        call = self.setup.simulator.generate(
            request, replicate=self.context.replicate, record=record,
            on_retry=self.context.on_retry,
        )  # fmt: skip
        left = max(self._time_left(), 0.001)
        try:
            response = await asyncio.wait_for(call, left)
        except ModelError as exc:
            self.simulator_failures += 1
            raise SimulatorFailed(f"the simulated user's model failed: {exc}") from None
        except TimeoutError:  # the harness's model, not the agent: the row did not grade
            self.simulator_failures += 1
            last = f"; its last attempt failed: {record.attempts[-1].error}" if (
                record.attempts) else ""  # fmt: skip
            raise SimulatorFailed(
                f"the simulated user's model did not answer in the {left:.1f} s "
                f"run_limits.task_timeout ({self.context.timeout:g} s) left it "
                f"({record.retries} attempt(s) failed{last})") from None  # fmt: skip
        if response.usage is not None:
            self.simulator_usage = self.simulator_usage + response.usage
        if not response.text.strip():
            self.simulator_failures += 1
            raise SimulatorFailed("the simulated user's model answered with an empty message")
        return response.text.strip(), response.usage

    def _time_left(self) -> float:
        return self.context.timeout - (time.perf_counter() - self.started - self.grading)

    def turn_context(self, prompt: str) -> AgentContext | tuple[OutcomeStatus, str]:
        """The agent's context for its next turn: ``run_limits`` bound the whole dialog, so
        the turn gets what is left of each; a limit already spent is its status and why."""
        left = self._left()
        spent = self.spent(left)
        if spent is not None:
            return spent
        return dataclasses.replace(
            self.context, prompt=prompt, dialog=self.state,
            root_span=Span(name="dialog turn", trace_id=new_trace_id()), **left,  # type: ignore[arg-type]
        )  # fmt: skip

    def spent(
        self, left: dict[str, float | int | None] | None = None
    ) -> tuple[OutcomeStatus, str] | None:
        """The ``run_limits`` limit the dialog's turns have spent (its status and why), or
        ``None``: asked before the simulated user is, so a spent dialog costs no more."""
        statuses = {field: status for status, field in LIMIT_FIELDS.items()}
        for name, value in (left if left is not None else self._left()).items():
            if value is not None and value <= 0:
                return statuses[name], (f"run_limits.{_limit_name(name)} was spent by the "
                                        "dialog's earlier turns")  # fmt: skip
        return None

    def _left(self) -> dict[str, float | int | None]:
        """What the dialog's turns left of each ``run_limits`` limit (``None``: unset)."""
        context, outcomes = self.context, self.outcomes
        used_tokens = sum(o.usage.total_tokens for o in outcomes if o.usage is not None)
        used_usd = sum(o.cost_usd for o in outcomes if o.cost_usd is not None)
        calls = sum(o.model_calls for o in outcomes)
        tools = sum(o.transcript.tool_calls_asked() for o in outcomes
                    if o.transcript is not None)  # fmt: skip
        return {
            "timeout": self._time_left(),
            "max_total_tokens": _less(context.max_total_tokens, used_tokens),
            "max_usd": _less(context.max_usd, used_usd),
            "max_turns": _less(context.max_turns, calls),
            "max_tool_calls": _less(context.max_tool_calls, tools),
        }

    def answered(self, exchange: int, outcome: AgentOutcome, prompt: str) -> None:
        self.outcomes.append(outcome)
        usage = outcome.usage
        self.turns.append(DialogTurn(
            exchange=exchange, role="agent", text=outcome.response or "",
            input_tokens=usage.input_tokens if usage is not None else None,
            output_tokens=usage.output_tokens if usage is not None else None,
            status=outcome.status, error=outcome.error,
            settings_put_back=self.state.put_back,
        ))  # fmt: skip
        self.state.put_back = []
        self.state.history += [("user", prompt), ("assistant", outcome.response or "")]
        session = outcome.transcript.cli.get("session_id") if outcome.transcript else None
        self.state.session_id = session or self.state.session_id

    async def criteria_passed(self) -> bool:
        """Grade the row as it stands and mark the last agent turn (the time it takes is
        not the dialog's: :attr:`grading`): whether every criterion passed, or, where one
        could not grade (a judge's error), neither, with that error."""
        assert self.setup.check is not None
        begun = time.perf_counter()
        try:
            passed, results = await self.setup.check(self.merged("completed", None, "max_turns"))
        finally:
            self.grading += time.perf_counter() - begun
        self.judged = self.judged + judge_spend(results)
        failed = next((r for r in results if r.grader_failed), None)
        update: dict[str, object] = {"criteria_passed": passed}
        if failed is not None:  # not graded: neither passed nor failed (the row's rule)
            update = {"criteria_passed": None, "error": (
                f"criterion {failed.description or failed.criterion_type!r} could not grade "
                f"after this turn: {failed.error}")}  # fmt: skip
        self.turns[-1] = self.turns[-1].model_copy(update=update)
        return passed and failed is None

    def merged(self, status: OutcomeStatus, error: str | None, stop: DialogStop) -> AgentOutcome:
        """Every turn's outcome as one (module docstring)."""
        outcomes = self.outcomes
        last = outcomes[-1] if outcomes else AgentOutcome()
        usages = [o.usage for o in outcomes if o.usage is not None]
        costs = [o.cost_usd for o in outcomes if o.cost_usd is not None]
        transcript = self._transcript(status)
        span = self.context.root_span.child(f"invoke_agent {transcript.agent}")
        span.attributes["assay.dialog.stop_reason"] = stop
        span.end(error=error)
        config = self.setup.config
        exchanges = max((t.exchange for t in self.turns if t.role == "agent"), default=0)
        return AgentOutcome(
            response=_last_answer(outcomes), status=status, error=error,
            usage=sum(usages[1:], usages[0]) if usages else None,
            exit_code=last.exit_code, stderr_tail=last.stderr_tail,
            model_calls=sum(o.model_calls for o in outcomes), model_used=last.model_used,
            seconds=time.perf_counter() - self.started,
            spans=[span, *to_spans(transcript, span)],
            attempts=[a for o in outcomes for a in o.attempts],
            cached=bool(outcomes) and all(o.cached for o in outcomes),
            cost_usd=sum(costs) if costs else None, transcript=transcript,
            output_dropped_bytes=sum(o.output_dropped_bytes for o in outcomes),
            simulation=SimulationRecord(
                n_trials=config.n_trials, replicate_index=self.context.replicate,
                stop_reason=stop, total_turns=exchanges,
                simulator_model=config.simulator_model,
                simulator_input_tokens=self.simulator_usage.input_tokens,
                simulator_output_tokens=self.simulator_usage.output_tokens,
                simulator_failures=self.simulator_failures, dialog_tokens=self.tokens,
                simulator_cost_usd=self._simulator_cost(),
                check_judge_tokens=self.judged.tokens,
                check_judge_cost_usd=self.judged.cost_usd,
                check_judge_unpriced=self.judged.unpriced,
                turns=list(self.turns),
            ),
        )  # fmt: skip

    def _simulator_cost(self) -> float | None:
        price = self.context.models.settings.prices.lookup(self.setup.config.simulator_model)
        return price.cost(self.simulator_usage) if price is not None else None

    def _transcript(self, status: OutcomeStatus) -> Transcript:
        """The turns' transcripts one after another, each after the user message it
        answered; the CLI's facts of the last turn, its own usage summed (unknown when the
        last turn reported none: a failed Codex turn's tokens are in no later report)."""
        parts = [o.transcript for o in self.outcomes if o.transcript is not None]
        last = parts[-1] if parts else None
        transcript = Transcript(
            agent=last.agent if last else self.agent.type_name,
            stop_reason=last.stop_reason if last else status,
            cli=dict(last.cli) if last else {},
            skills_offered=parts[0].skills_offered if parts else [],
            skills_loaded=last.skills_loaded if last else None,
            usage_source=last.usage_source if last else None,
        )  # fmt: skip
        cli_usages = [p.cli_usage for p in parts if p.cli_usage is not None]
        if cli_usages and parts[-1].cli_usage is not None:  # else the CLI's count is short
            transcript.cli_usage = sum(cli_usages[1:], cli_usages[0])
        cli_costs = [p.cli_cost_usd for p in parts if p.cli_cost_usd is not None]
        transcript.cli_cost_usd = sum(cli_costs) if cli_costs else None
        for index, (at_ns, source, text) in enumerate(self.users):
            transcript.add(TranscriptEvent("user", at_ns, name=source, text=text))
            if index < len(parts):
                transcript.events.extend(parts[index].events)
        return transcript


def _less(limit: float | None, used: float) -> float | None:
    return None if limit is None else limit - used


async def run_dialog(agent: Agent[Any], context: AgentContext, setup: DialogSetup) -> AgentOutcome:
    """Hold the dialog of one row-task replicate (module docstring); never raises for a
    failure of the agent or the simulated user: the outcome says it."""
    dialog = _Dialog(agent, context, setup)
    try:
        return await _converse(dialog)
    finally:
        if dialog.state.home is not None:
            remove_tree(dialog.state.home)


async def _converse(dialog: _Dialog) -> AgentOutcome:
    setup, config = dialog.setup, dialog.setup.config
    prompt = setup.opener
    try:
        if prompt is None:
            prompt, usage = await dialog.simulate()
            dialog.said(1, prompt, simulated=True, usage=usage)
            if config.stop_token in prompt:  # before the agent said a word: nothing to grade
                dialog.simulator_failures += 1
                return dialog.merged("error", "the simulated user ended the dialog with its stop "
                                     f"token ({config.stop_token!r}) before the agent was asked "
                                     "anything", "error")  # fmt: skip
        else:
            dialog.said(1, prompt, simulated=False, usage=None)
        for exchange in range(1, config.max_turns + 1):
            turn = dialog.turn_context(prompt)
            if isinstance(turn, tuple):
                return dialog.merged(turn[0], turn[1], "run_limit_exceeded")
            outcome = await dialog.agent.run(turn)
            dialog.answered(exchange, outcome, prompt)
            if outcome.status in LIMIT_STATUSES:
                why = outcome.error if exchange == 1 or not _run_limit(outcome, turn) else (
                    f"{outcome.error} (in exchange {exchange}: "
                    f"{_whole_limit(outcome.status, dialog.context)}each turn gets what the "
                    "dialog's earlier turns left of run_limits)")  # fmt: skip
                return dialog.merged(outcome.status, why, "run_limit_exceeded")
            if outcome.status != "completed":
                return dialog.merged(outcome.status, outcome.error, "error")
            checked = config.checks_every_turn and setup.check is not None
            if checked and await dialog.criteria_passed() and config.stop_on_criteria_pass:
                return dialog.merged("completed", None, "criteria_passed")
            if exchange == config.max_turns:
                return dialog.merged("completed", None, "max_turns")
            if config.max_total_tokens is not None and dialog.tokens >= config.max_total_tokens:
                return dialog.merged("completed", None, "budget")
            spent = dialog.spent()
            if spent is not None:  # the agent could not answer the next message: not asked
                return dialog.merged(spent[0], spent[1], "run_limit_exceeded")
            prompt, usage = await dialog.simulate()
            dialog.said(exchange + 1, prompt, simulated=True, usage=usage)
            if config.stop_token in prompt:
                return dialog.merged("completed", None, "stop_token")
    except SimulatorFailed as exc:
        return dialog.merged("error", str(exc), "error")
    except TimeoutError:
        why = f"the dialog ran out of run_limits.task_timeout ({dialog.context.timeout:g} s)"
        return dialog.merged("timeout", why, "run_limit_exceeded")
    raise AssertionError("unreachable: the last exchange stops the dialog")


def _whole_limit(status: OutcomeStatus, context: AgentContext) -> str:
    """``run_limits.NAME is VALUE for the whole dialog; `` for the limit of ``status`` (the
    turn's own error names what its turn was left of it), ``""`` when it is not set."""
    field = LIMIT_FIELDS[status]
    value = getattr(context, field)
    if value is None:
        return ""
    return f"run_limits.{_limit_name(field)} is {value:g} for the whole dialog; "


def _limit_name(field: str) -> str:
    """The ``run_limits`` name of an :class:`AgentContext` limit field."""
    return "task_timeout" if field == "timeout" else field


def _run_limit(outcome: AgentOutcome, turn: AgentContext) -> bool:
    """The limit an agent's turn ran into is the run's (``run_limits``: what the earlier
    turns left of it, given to the turn), not the agent's own per-turn ``agent.max_turns``:
    a turn cap is the run's when the turn's calls reached what it was left."""
    if outcome.status != "max_turns":
        return True  # tokens, cost and time have no per-turn setting of the agent's own
    return turn.max_turns is not None and outcome.model_calls >= turn.max_turns


__all__ = [
    "CriteriaCheck",
    "DialogSetup",
    "SimulatorFailed",
    "run_dialog",
    "simulator_key",
    "simulator_prompt",
]


def _last_answer(outcomes: list[AgentOutcome]) -> str | None:
    """The dialog's answer: the last turn's response, or, where that turn was cut (by a
    limit, its timeout or an error) before it wrote any, the last one an earlier turn wrote.
    A turn that ended as it chose keeps its answer, an empty one too."""
    if not outcomes:
        return None
    last = outcomes[-1]
    if last.response or last.status == "completed":
        return last.response
    return next((o.response for o in reversed(outcomes) if o.response), last.response)
