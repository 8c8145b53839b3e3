"""The ``llm`` agent's tool loop (``agent: {type: llm, tools: [...]}``): assay's own coding
agent for any chat model.

Each turn is one model call with the offered tools (:mod:`assay.agents.llm_tools`); the
calls it asks for run in the row's sandbox, in order, and their results go back in the next
request (natively, or with ``tool_protocol: text`` as ``<tool_call>`` blocks in the text:
:mod:`assay.agents.tool_text`). The loop ends when the model calls ``submit_answer`` (its
``answer`` is the response; calls after it in the same answer are not run) or answers
without a tool call (that text is the response), and stops early, keeping the last text the
model wrote as the response, with a status and its reason:

- ``max_turns``: a model call past ``agent.max_turns`` or ``run_limits.max_turns`` (the
  smaller; :data:`DEFAULT_MAX_TURNS` when neither is set) would be needed;
- ``max_tool_calls``: the answers so far asked for ``run_limits.max_tool_calls`` tool calls
  and the model would be called again (as the model bridge counts them for CLI agents);
- ``token_budget`` / ``cost_budget``: the calls so far passed ``run_limits.max_total_tokens``
  or ``max_usd``;
- ``timeout``: ``run_limits.task_timeout`` ran out (a model call or a command is cut at the
  time left);
- ``error``: the model failed (after its retries);
- ``early_stop``: a criterion's ``stop_early`` live verdict decided the row after a tool
  call that ran (:class:`assay.criteria.live.LiveMonitor`, asked after each tool result, as
  the CLI agents ask it after each event of their stream).

The transcript has every model call, tool call, tool result, command (with its exit code)
and file change, as the CLI agents' do, and becomes the row's spans.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

from assay.agents.base import AgentContext, AgentOutcome, OutcomeStatus
from assay.agents.llm_tools import SandboxTools, ToolRun, tool_definitions
from assay.agents.tool_text import INVALID, parse_calls, results_message, text_request
from assay.errors import ModelError
from assay.providers.base import Message, ModelRequest, ModelResponse, ToolCall, ToolResult, Usage
from assay.providers.constraints import CUT_FINISH_REASONS
from assay.providers.managed import ManagedModel
from assay.providers.pricing import Price
from assay.providers.retry import CallRecord
from assay.results.secrets import clip_tail
from assay.results.task_result import EarlyStopRecord
from assay.results.trace import Span
from assay.results.transcript import Transcript, TranscriptEvent
from assay.results.transcript_otlp import to_spans
from assay.sandbox.tempdir import Sandbox
from assay.spec.task import LlmAgent

DEFAULT_MAX_TURNS = 30
"""Model calls of a tool loop when neither ``agent.max_turns`` nor ``run_limits.max_turns``
is set."""


@dataclasses.dataclass
class _Stop:
    status: OutcomeStatus
    error: str | None = None


class ToolLoop:
    """One row's tool loop.

    Args:
        config: the agent block (``tools`` set).
        context: the row's context (a sandbox is required).
        model: the started model.
        request: the first request (system prompt, few-shot examples, the prompt).
        price: the model's price, if any (cost per call, ``max_usd``).
    """

    def __init__(
        self,
        config: LlmAgent,
        context: AgentContext,
        *,
        model: ManagedModel,
        request: ModelRequest,
        price: Price | None,
    ) -> None:
        assert context.sandbox is not None  # an llm agent with tools needs a directory
        self.config, self.context, self.model, self.price = config, context, model, price
        offered = config.tools or []
        self.text = config.tool_protocol == "text"
        self.request = dataclasses.replace(
            request, tools=tool_definitions(offered),
            script_vars={**request.script_vars, "sandbox": str(context.sandbox)}
            if config.model.startswith("mock/") else {},
        )  # fmt: skip
        if self.text:
            self.request = text_request(self.request, tool_definitions(offered))
        dialog = context.dialog
        if dialog is not None and dialog.messages is not None and self.request.messages:
            # a later turn of a dialog continues the loop's own messages, then the new prompt
            self.request = dataclasses.replace(
                self.request, messages=(*dialog.messages, self.request.messages[-1])
            )
        self.messages: list[Message] = list(self.request.messages or ())
        sandbox = Sandbox(context.sandbox, context.jail, max_output_bytes=context.max_output_bytes,
                          logs=context.logs, groups=context.groups)  # fmt: skip
        owner = context.jail.uid if context.jail is not None else None
        self.tools = SandboxTools(sandbox, offered=offered, env=context.env, owner=owner)
        self.transcript = Transcript(agent="llm", usage_source="model")
        self.usage = Usage()
        self.usage_missing = False
        self.cost: float | None = None
        self.calls = 0
        self.tool_calls = 0
        self.last_text: str | None = None
        self.early: EarlyStopRecord | None = None  # a live verdict (criterion stop_early)
        limits = [(n, where) for n, where in ((config.max_turns, "agent.max_turns"),
                  (context.max_turns, "run_limits.max_turns")) if n is not None]  # fmt: skip
        self.max_turns, self.turns_set_by = min(limits) if limits else (DEFAULT_MAX_TURNS, "")

    async def run(self) -> AgentOutcome:
        """Run the loop to its end; failures are in the outcome, never raised."""
        started = time.perf_counter()
        deadline = time.monotonic() + self.context.timeout
        agent_span = self.context.root_span.child("invoke_agent llm")
        outcome = AgentOutcome(model_used=self.config.model)
        messages = self.messages
        stop: _Stop | None = None
        response: str | None = None
        while stop is None:
            stop = _late(deadline, self.context.timeout) or self._refusal()  # time first
            if stop is not None:
                break
            reply = await self._call(messages, deadline, outcome)
            if isinstance(reply, _Stop):
                stop = reply
                break
            text, calls = self._read(reply)
            native = () if self.text else calls
            messages.append(Message("assistant", reply.text, tool_calls=native))
            if text:
                self.last_text = text
            stop = self._over_budget()
            if stop is not None:
                break
            if not calls:
                response, stop = text, _Stop("completed", None)
                self.transcript.stop_reason = "end_turn"
                break
            if text:
                self.transcript.add(TranscriptEvent("text", time.time_ns(), text=text))
            self.tool_calls += len(calls)
            cut = (reply.finish_reason or "") in CUT_FINISH_REASONS
            results, submitted = await self._run_tools(calls, deadline, cut=cut)
            if self.early is not None:  # a live verdict ended the row after a call that ran
                stop = _Stop("early_stop", self.early.message())
                break
            messages.append(self._results(calls, results, submitted is not None))
            if submitted is not None:
                response, stop = submitted, _Stop("completed", None)
                self.transcript.stop_reason = "submit_answer"
                break
        if stop.status != "completed":
            response = self.last_text
            self.transcript.stop_reason = stop.status
        outcome.status, outcome.error, outcome.response = stop.status, stop.error, response
        outcome.early_stop = self.early
        return self._finish(outcome, agent_span, started)

    def _results(
        self, calls: tuple[ToolCall, ...], results: list[ToolResult], submitted: bool
    ) -> Message:
        """The message that returns ``results``; after a submitted answer, every call of the
        reply gets one (the submission's, and the calls after it that did not run), so a
        later turn of a dialog continues a well-formed conversation."""
        if submitted:  # the calls before the submission ran, in order; none after it
            at = len(results)
            results = [*results, ToolResult(calls[at].id, "submitted", False),
                       *(ToolResult(c.id, "not run: an answer was submitted", True)
                         for c in calls[at + 1:])]  # fmt: skip
        if self.text:
            return results_message(calls, results)
        return Message("user", "", tool_results=tuple(results))

    def _read(self, reply: ModelResponse) -> tuple[str, tuple[ToolCall, ...]]:
        """The reply's text and tool calls: native, or read from its ``<tool_call>``
        blocks (the text protocol), each with an id no earlier call of the conversation
        has (a dialog's earlier turns included): the text protocol numbers them by the
        conversation's assistant turn; a native call whose id is empty or taken (a server
        that numbers calls per turn, ``call_0`` each time) gets one, sent back with its
        result, so each call keeps its own result."""
        turn = 1 + sum(1 for m in self.messages if m.role == "assistant")
        if self.text:
            return parse_calls(reply.text, turn)
        taken = {c.id for m in self.messages for c in m.tool_calls}
        calls = []
        for position, call in enumerate(reply.tool_calls, 1):
            if not call.id or call.id in taken:
                fresh = f"{call.id or 'call'}_{turn}_{position}"
                while fresh in taken:
                    fresh += "_"
                call = dataclasses.replace(call, id=fresh)
            taken.add(call.id)
            calls.append(call)
        return reply.text, tuple(calls)

    def _refusal(self) -> _Stop | None:
        """Why the next model call may not be made (as the model bridge's limits)."""
        if self.calls >= self.max_turns:
            return _Stop("max_turns", f"the agent would make model call {self.calls + 1}; "
                                      f"max_turns is {self.max_turns}"
                                      + (f" ({self.turns_set_by})" if self.turns_set_by
                                         else ""))  # fmt: skip
        cap = self.context.max_tool_calls
        if cap is not None and self.tool_calls >= cap:
            asked = self.tool_calls
            calls = "1 tool call" if asked == 1 else f"{asked} tool calls"
            return _Stop("max_tool_calls", f"the agent's model asked for {calls}; "
                                           f"run_limits.max_tool_calls is {cap}")  # fmt: skip
        return None

    async def _call(
        self, messages: list[Message], deadline: float, outcome: AgentOutcome
    ) -> ModelResponse | _Stop:
        """One model call, recorded in the transcript."""
        self.calls += 1
        request = dataclasses.replace(self.request, messages=tuple(messages))
        record = CallRecord()
        started = time.time_ns()
        left = max(deadline - time.monotonic(), 0.001)
        context = self.context
        call = self.model.generate(request, replicate=context.replicate, record=record,
                                   on_retry=context.on_retry)  # fmt: skip
        result: ModelResponse | _Stop
        try:
            result = await asyncio.wait_for(call, left)
        except TimeoutError:
            seconds = context.timeout
            result = _Stop("timeout", f"the model did not answer within the {seconds:g} s "
                                      "of run_limits.task_timeout")  # fmt: skip
            if record.attempts:
                result = _Stop("error", f"the model endpoint was still failing when "
                                        f"run_limits.task_timeout ran out; last error: "
                                        f"{record.attempts[-1].error}")  # fmt: skip
        except ModelError as exc:
            result = _Stop("error", str(exc))
        outcome.attempts.extend(record.attempts)
        cost = None
        if isinstance(result, ModelResponse):
            outcome.cached = outcome.cached or result.cached
            self.usage_missing = self.usage_missing or result.usage is None
            if result.usage is not None:
                self.usage = self.usage + result.usage
                if self.price is not None:
                    cost = self.price.cost(result.usage)
                    self.cost = (self.cost or 0.0) + cost
        failed = isinstance(result, _Stop)
        answer = result if isinstance(result, ModelResponse) else None
        self.transcript.add(TranscriptEvent(
            "model_call", time.time_ns(), name=self.config.model,
            usage=answer.usage.buckets() if answer is not None and answer.usage else None,
            cost_usd=cost, stop_reason=answer.finish_reason if answer is not None else None,
            arguments=[c.name for c in self._read(answer)[1]] if answer is not None else None,
            is_error=failed, text=result.error or "" if isinstance(result, _Stop) else "",
            duration_ns=time.time_ns() - started,
        ))  # fmt: skip
        return result

    def _over_budget(self) -> _Stop | None:
        budget = self.context.max_total_tokens
        if budget is not None and self.usage.total_tokens > budget:
            return _Stop("token_budget", f"the calls used {self.usage.total_tokens} tokens; "
                                         f"run_limits.max_total_tokens is {budget}")  # fmt: skip
        cap = self.context.max_usd
        if cap is not None and self.cost is not None and self.cost > cap:
            return _Stop("cost_budget", f"the calls cost ${self.cost:.6f}; "
                                        f"run_limits.max_usd is {cap}")  # fmt: skip
        return None

    async def _run_tools(
        self, calls: tuple[ToolCall, ...], deadline: float, *, cut: bool = False
    ) -> tuple[list[ToolResult], str | None]:
        """Run ``calls`` in order; the results, and the answer if one was submitted. In an
        answer ``cut`` at ``max_tokens``, a call whose arguments do not read as JSON was cut
        short, and the model is told so (not that it wrote malformed JSON)."""
        results: list[ToolResult] = []
        for call in calls:
            self.transcript.add(TranscriptEvent("tool_call", time.time_ns(), name=call.name,
                                                call_id=call.id, arguments=call.input))  # fmt: skip
            if cut and (call.name == INVALID if self.text else not isinstance(call.input, dict)):
                run = ToolRun(f"error: the answer was cut at agent.max_tokens "
                              f"({self.config.max_tokens}) before this call's arguments "
                              "ended: write less in one call, or raise agent.max_tokens",
                              True)  # fmt: skip
            elif self.text and call.name == INVALID:
                run = ToolRun(f"error: {call.input.get('error', 'unreadable tool call')}", True)
            elif call.name == "submit_answer" and "submit_answer" in self.tools.offered:
                answer = call.input.get("answer") if isinstance(call.input, dict) else None
                if isinstance(answer, str):
                    self._record(call, ToolRun("submitted"))
                    return results, answer
                run = ToolRun("error: submit_answer needs the argument 'answer' (a string)", True)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    run = ToolRun("error: run_limits.task_timeout ran out", True)
                else:
                    run = await self.tools.call(call, timeout=min(self.config.command_timeout,
                                                                  left))  # fmt: skip
            self._record(call, run)
            results.append(ToolResult(call.id, run.output, run.is_error))
            if self.context.monitor is not None:
                self.early = self.context.monitor(self.transcript)
                if self.early is not None:  # decided: the calls after it do not run
                    return results, None
        return results, None

    def _record(self, call: ToolCall, run: ToolRun) -> None:
        now = time.time_ns()
        self.transcript.add(TranscriptEvent("tool_result", now, name=call.name, call_id=call.id,
                                            text=run.output, is_error=run.is_error))  # fmt: skip
        if run.command:
            self.transcript.add(TranscriptEvent(
                "command", now, name=call.name, call_id=call.id, command=run.command,
                exit_code=run.exit_code, text=clip_tail(run.output, 2000),
            ))  # fmt: skip
        if run.change:
            self.transcript.add(TranscriptEvent("file_change", now, name=call.name,
                                                call_id=call.id, path=run.path,
                                                change=run.change))  # fmt: skip

    def _finish(self, outcome: AgentOutcome, agent_span: Span, started: float) -> AgentOutcome:
        outcome.model_calls = self.calls
        # a call answered without its usage: the row's tokens and cost are unknown, not 0
        # (the run counts it in rows_usage_unknown, its totals incomplete)
        known = self.calls and not self.usage_missing
        outcome.usage = self.usage if known else None
        outcome.cost_usd = self.cost if known else None
        outcome.output_dropped_bytes, outcome.output_logs = self.tools.dropped, self.tools.logs
        outcome.seconds = time.perf_counter() - started
        if outcome.response is not None:
            self.transcript.add(TranscriptEvent("final", time.time_ns(), text=outcome.response))
        if outcome.error is not None:
            self.transcript.add(TranscriptEvent("error", time.time_ns(), text=outcome.error))
        outcome.transcript = self.transcript
        spans = to_spans(self.transcript, agent_span)
        agent_span.end(error=outcome.error)
        outcome.spans = [agent_span, *spans]
        return outcome


def _late(deadline: float, seconds: float) -> _Stop | None:
    if time.monotonic() < deadline:
        return None
    return _Stop("timeout", f"run_limits.task_timeout ({seconds:g} s) ran out")


__all__ = ["DEFAULT_MAX_TURNS", "ToolLoop"]
