"""``agent: {type: llm}``: send the prompt to a model and take its answer as the response.

Chat format builds ``[system?, (user, assistant) × few_shot, user=prompt]``; completion
format sends the prompt as plain text. ``labels`` or ``json_schema`` constrain the answer
(the server enforces them). A model failure ends the row ``ERROR``; a reply over
``run_limits.max_total_tokens`` ends it ``TOKEN_BUDGET_EXCEEDED``. With ``tools`` the agent
runs :mod:`assay.agents.tool_loop` in the row's sandbox instead of answering once.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Protocol

from assay.agents.base import (
    Agent,
    AgentContext,
    AgentOutcome,
    OutcomeStatus,
    PreflightCheck,
    PreflightSetup,
)
from assay.agents.tool_loop import ToolLoop
from assay.errors import ModelError, UserError
from assay.providers.base import Choice, Constraint, JsonSchema, Message, ModelRequest, Usage
from assay.providers.constraints import cut_json_reply
from assay.providers.pool import ModelKey
from assay.providers.pricing import Price
from assay.providers.retry import CallRecord
from assay.results.trace import Span
from assay.results.transcript import Transcript, TranscriptEvent
from assay.results.transcript_otlp import agent_attributes
from assay.sandbox.tempdir import Sandbox, SandboxEscape
from assay.spec.task import LlmAgent


class Endpoint(Protocol):
    """What names a model endpoint in a task file: an ``llm`` agent or a ``qa.judge``."""

    @property
    def model(self) -> str: ...
    @property
    def base_url(self) -> str | None: ...
    @property
    def api_key_env(self) -> str | None: ...
    @property
    def request_timeout(self) -> float: ...
    @property
    def cache(self) -> bool: ...


def model_key(config: Endpoint, base_dir: Path) -> ModelKey:
    """The pool key of the model an ``llm`` agent (or a ``qa.judge``) uses; ``base_dir`` is
    the task file's folder (a mock script's path is relative to it)."""
    return ModelKey(
        name=config.model,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        base_dir=str(base_dir),
        timeout=config.request_timeout,
        cache=config.cache,
    )


def build_request(
    config: LlmAgent, prompt: str, context: AgentContext | None = None
) -> ModelRequest:
    """The :class:`ModelRequest` for ``prompt`` under ``config`` (``context`` gives a
    ``mock/`` script the row's ``${row.x}`` values and, in dialog mode, the earlier
    exchanges, sent before ``prompt``)."""
    constraint: Constraint | None = None
    if config.labels:
        constraint = Choice(tuple(config.labels))
    elif config.json_schema is not None:
        constraint = JsonSchema(config.json_schema)
    max_tokens = config.max_tokens
    if config.labels:  # a cut-off label would break the constraint: leave room for the longest
        max_tokens = max(max_tokens, max(len(label) for label in config.labels) + 2)
    common = {
        "temperature": config.temperature,
        "max_tokens": max_tokens,
        "top_p": config.top_p,
        "stop": tuple(config.stop),
        "seed": config.seed,
        "constraint": constraint,
        "extra_body": dict(config.extra_body),
        "script_vars": script_vars(context) if config.model.startswith("mock/") else {},
    }
    if config.prompt_format == "completion":
        return ModelRequest(prompt=prompt, **common)  # type: ignore[arg-type]
    messages: list[Message] = []
    if config.system_prompt:
        messages.append(Message("system", config.system_prompt))
    for shot in config.few_shot:
        messages.append(Message("user", shot.user))
        messages.append(Message("assistant", shot.assistant))
    if context is not None and context.dialog is not None:  # the conversation so far
        messages.extend(Message(role, text) for role, text in context.dialog.history)
    messages.append(Message("user", prompt))
    return ModelRequest(messages=tuple(messages), **common)  # type: ignore[arg-type]


def script_vars(context: AgentContext | None) -> dict[str, str]:
    """A ``mock/`` script's ``${row.x}`` values: the row's scalar fields as text."""
    if context is None or not context.row:
        return {}
    return {f"row.{k}": "" if v is None else str(v) for k, v in context.row.items()
            if isinstance(v, str | int | float | bool) or v is None}  # fmt: skip


def _timed_out(record: CallRecord, seconds: float) -> tuple[OutcomeStatus, str]:
    """A model that was still failing when time ran out is an error with its cause (the row
    is excluded), not a wrong answer; a model that was merely slow is a timeout."""
    if record.attempts:
        last = record.attempts[-1]
        return "error", (
            f"the model endpoint was still failing after {len(record.attempts)} attempt(s) when "
            f"run_limits.task_timeout ({seconds:g} s) ran out; last error: {last.error}"
        )
    return "timeout", f"the model did not answer within {seconds:g} s"


class LlmRunner(Agent[LlmAgent]):
    """Runs :class:`assay.spec.task.LlmAgent`."""

    type_name = "llm"
    config_model = LlmAgent

    def model_keys(self, base_dir: Path) -> list[ModelKey]:
        """The agent's model."""
        return [model_key(self.config, base_dir)]

    def preflight(self, setup: PreflightSetup) -> list[PreflightCheck]:
        """The model can start; an ``anthropic/`` model is asked in chat format; a cost
        limit has a price to be checked against."""
        key = model_key(self.config, setup.base_dir)
        return [
            PreflightCheck(("agent", "model"), lambda: setup.providers.preflight(key)),
            PreflightCheck(("agent", "model"), self._chat_only),
            PreflightCheck(("agent", "tool_protocol"), self._tools_shown),
            PreflightCheck(("run_limits", "max_usd"), lambda: self._priced(setup)),
        ]

    def _tools_shown(self) -> None:
        """A ``local/`` model asked with native tools whose chat template drops them would
        never see its tools (SmolLM2's, the default model's): refused, naming the text
        protocol, which puts them in the prompt."""
        config = self.config
        if not (config.tools and config.tool_protocol == "native"
                and config.model.startswith("local/")):  # fmt: skip
            return
        from assay.providers.local import find_gguf, running_server_url, template_shows_tools

        if running_server_url() is not None:
            return  # a server of one's own: its template is not known here
        try:
            gguf = find_gguf(config.model.partition("/")[2])
        except UserError:
            return  # not installed: the model's own check says so
        if template_shows_tools(gguf) is False:
            raise UserError(f"{config.model}'s chat template drops the request's tools: the "
                            "model would never see them", field="agent.tool_protocol",
                            hint="set agent.tool_protocol: text (the tools are described in "
                            "the prompt and called in <tool_call> blocks)")  # fmt: skip

    def _chat_only(self) -> None:
        config = self.config
        if config.model.startswith("anthropic/") and config.prompt_format == "completion":
            raise UserError("anthropic models have no completion endpoint",
                            field="agent.prompt_format",
                            hint="use prompt_format: chat")  # fmt: skip

    def _priced(self, setup: PreflightSetup) -> None:
        config = self.config
        if setup.limits.max_usd is None or config.price is not None:
            return
        if setup.prices.lookup(config.model) is None:
            raise UserError(
                f"run_limits.max_usd needs a price for {config.model}, and the price table "
                "has none",
                hint="give agent.price {input_per_mtok, output_per_mtok} or a price file "
                "(--prices)",
            )

    async def run(self, context: AgentContext) -> AgentOutcome:
        """Ask the model once, or run the tool loop when ``tools`` is set
        (:mod:`assay.agents.tool_loop`); see the module docstring."""
        model = context.models.get(model_key(self.config, context.base_dir))
        request = build_request(self.config, context.prompt or "", context)
        if self.config.tools:
            loop = ToolLoop(self.config, context, model=model, request=request,
                            price=self.price(context))  # fmt: skip
            outcome = await loop.run()
            if context.dialog is not None:  # the next turn continues these messages
                context.dialog.messages = tuple(loop.messages)
            self._write_response_file(outcome, context.sandbox)
            return outcome
        agent_span = context.root_span.child("invoke_agent llm")
        span = agent_span.child(f"chat {self.config.model}")
        span.attributes.update(
            {
                "gen_ai.operation.name": "chat"
                if self.config.prompt_format == "chat"
                else "text_completion",
                "gen_ai.request.model": self.config.model,
                "gen_ai.request.temperature": float(self.config.temperature),
                "gen_ai.request.max_tokens": self.config.max_tokens,
            }
        )
        started = time.perf_counter()
        outcome = AgentOutcome(model_used=self.config.model, model_calls=1, spans=[span])
        record = CallRecord()
        call = model.generate(
            request, replicate=context.replicate, record=record, on_retry=context.on_retry
        )
        try:
            response = await asyncio.wait_for(call, context.timeout)
        except TimeoutError:
            outcome.status, outcome.error = _timed_out(record, context.timeout)
        except ModelError as exc:
            outcome.status, outcome.error = "error", str(exc)
            if isinstance(exc.usage, Usage):  # a reply refused after it was billed
                outcome.usage = exc.usage
                self._price(outcome, context)
        else:
            outcome.response = response.text
            outcome.usage = response.usage
            outcome.cached = response.cached
            if response.usage is not None:
                span.attributes["gen_ai.usage.input_tokens"] = response.usage.input_tokens
                span.attributes["gen_ai.usage.output_tokens"] = response.usage.output_tokens
            if response.finish_reason:
                span.attributes["gen_ai.response.finish_reasons"] = response.finish_reason
            self._check_budget(outcome, context.max_total_tokens)
            self._check_cost(outcome, context)
            cut = cut_json_reply(response.text, request.constraint, finish=response.finish_reason,
                                 max_tokens=request.max_tokens)  # fmt: skip
            if cut is not None and outcome.error is None:
                outcome.status, outcome.error, outcome.response = "error", cut, None
            self._write_response_file(outcome, context.sandbox)
        outcome.attempts = record.attempts
        outcome.seconds = time.perf_counter() - started
        if record.retries:
            span.attributes["assay.retries"] = record.retries
        span.end(error=outcome.error)
        outcome.transcript = self._transcript(outcome, span)
        agent_span.attributes.update(agent_attributes(outcome.transcript))
        agent_span.end(error=outcome.error)
        outcome.spans = [agent_span, span]
        return outcome

    def _transcript(self, outcome: AgentOutcome, span: Span) -> Transcript:
        """One model call and the answer (or the error)."""
        transcript = Transcript(agent="llm", usage_source="model", stop_reason=outcome.status)
        usage = outcome.usage
        transcript.add(TranscriptEvent(
            "model_call", span.end_ns or time.time_ns(), name=self.config.model,
            usage=usage.buckets() if usage is not None else None, cost_usd=outcome.cost_usd,
            stop_reason=str(span.attributes.get("gen_ai.response.finish_reasons", "")) or None,
            is_error=outcome.error is not None, text=outcome.error or "",
            duration_ns=(span.end_ns or span.start_ns) - span.start_ns,
        ))  # fmt: skip
        if outcome.response is not None:
            transcript.add(TranscriptEvent("final", time.time_ns(), text=outcome.response))
        return transcript

    @staticmethod
    def _check_budget(outcome: AgentOutcome, budget: int | None) -> None:
        usage = outcome.usage
        if budget is not None and usage is not None and usage.total_tokens > budget:
            outcome.status = "token_budget"
            outcome.error = (
                f"the call used {usage.total_tokens} tokens; "
                f"run_limits.max_total_tokens is {budget}"
            )

    def _price(self, outcome: AgentOutcome, context: AgentContext) -> None:
        """The call's cost from its usage, when the model has a price."""
        price = self.price(context)
        if price is not None and outcome.usage is not None:
            outcome.cost_usd = price.cost(outcome.usage)

    def _check_cost(self, outcome: AgentOutcome, context: AgentContext) -> None:
        self._price(outcome, context)
        if outcome.cost_usd is None:
            return
        if context.max_usd is not None and outcome.cost_usd > context.max_usd:
            outcome.status = "cost_budget"
            outcome.error = (
                f"the call cost ${outcome.cost_usd:.6f}; run_limits.max_usd is {context.max_usd}"
            )

    def price(self, context: AgentContext) -> Price | None:
        """The agent's own price, else the run's price table entry for its model."""
        if self.config.price is not None:
            return Price(**self.config.price.model_dump())
        return context.models.settings.prices.lookup(self.config.model)

    def _write_response_file(self, outcome: AgentOutcome, root: Path | None) -> None:
        """Write the response at ``response_file``. What the agent left there that is not a
        regular file (a link, a FIFO) is replaced; a path that leads out of the sandbox
        through a link the agent made, or a folder it made there, is left unwritten, and the
        row is graded as it stands (its criteria that read the file score it 0.0): neither
        takes the row out of the metrics as an error of assay's, nor waits on a FIFO. A
        write that fails otherwise (a full disk) is the row's error."""
        if self.config.response_file is None or outcome.response is None or root is None:
            return
        try:
            target = Sandbox(root).resolve(self.config.response_file)
        except SandboxEscape:
            return
        if target.is_dir() and not target.is_symlink():
            return  # the agent made a folder there: graded as it stands
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or (target.exists() and not target.is_file()):
                target.unlink()
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
            with os.fdopen(os.open(target, flags, 0o644), "w", encoding="utf-8") as handle:
                handle.write(outcome.response)
        except OSError as exc:
            outcome.status, outcome.error = "error", f"cannot write response_file: {exc}"
