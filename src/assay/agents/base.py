"""The agent protocol: one context in, one :class:`AgentOutcome` out.

An agent acts on the substituted prompt inside the row's sandbox. It never raises for a
failure of the thing it drives: a crash, a timeout or a model error becomes an outcome with
``status`` and ``error``, so the runner can record the row and go on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from assay.providers.base import Usage
from assay.providers.managed import OnRetry
from assay.providers.pool import ModelPool
from assay.providers.retry import Attempt
from assay.results.secrets import Redactor
from assay.results.trace import Span
from assay.results.transcript import Transcript
from assay.sandbox.process import MAX_OUTPUT_BYTES

if TYPE_CHECKING:
    from assay.bridge import Bridge
    from assay.sandbox.bwrap import Jail
    from assay.sandbox.docker import DockerJail

OutcomeStatus = Literal[
    "completed", "timeout", "error", "token_budget", "cost_budget", "max_turns", "max_tool_calls"
]


@dataclass
class AgentContext:
    """What an agent gets for one row-task.

    Attributes:
        prompt: the substituted prompt (``None`` for ``agent: none``).
        sandbox: the working directory; ``None`` for an ``llm`` agent whose row needs none
            (see :func:`assay.orchestration.runner.needs_directory`).
        base_dir: the task file's directory (relative files in the agent block).
        timeout: seconds the agent may run (``run_limits.task_timeout``).
        max_total_tokens: the token budget of the row, if any.
        max_usd: the cost budget of the row in US dollars, if any.
        env: environment variables for programs the agent starts.
        models: the run's started models.
        root_span: the row's span; the agent adds children to it.
        replicate: the replicate index (part of the response cache key).
        on_retry: called for every retried model call (the progress display shows them).
        bridge: the run's model bridge (``None`` when no agent of the run needs one).
        label: the row-task and replicate, for messages (``task/row#00``).
        row: the dataset row (``${row.x}`` in ``mock/`` scripts), if any.
        max_turns: the most model calls the agent may make (``run_limits.max_turns``).
        max_tool_calls: the most tool calls its model may ask for (``run_limits.max_tool_calls``).
        max_output_bytes: what is kept of each output stream of the agent's program
            (``sandbox.limits.max_output_mb``).
        redactor: the run's known secrets; an agent that mints a credential (the model
            bridge's per-row key) adds it here before using it, so it is redacted from
            every file and printed line. ``env`` already lacks the host's secrets.
        jail: the row's bwrap sandbox or docker container: the agent's programs run inside
            it (:meth:`assay.sandbox.bwrap.Jail.command`, the same shape on both drivers);
            ``None``: plain processes.
    """

    prompt: str | None
    sandbox: Path | None
    base_dir: Path
    timeout: float
    max_total_tokens: int | None
    env: dict[str, str]
    models: ModelPool
    root_span: Span
    replicate: int = 0
    on_retry: OnRetry | None = None
    max_usd: float | None = None
    bridge: Bridge | None = None
    label: str = ""
    row: dict[str, Any] | None = None
    max_turns: int | None = None
    max_tool_calls: int | None = None
    max_output_bytes: int = MAX_OUTPUT_BYTES
    redactor: Redactor = field(default_factory=Redactor)
    jail: Jail | DockerJail | None = None


@dataclass
class AgentOutcome:
    """What an agent did: final response, status, usage, exit code, spans, and the
    transcript of its events (``None`` for an agent that has none, e.g. ``none``)."""

    response: str | None = None
    status: OutcomeStatus = "completed"
    error: str | None = None
    usage: Usage | None = None
    exit_code: int | None = None
    stderr_tail: str = ""
    model_calls: int = 0
    model_used: str | None = None
    seconds: float = 0.0
    spans: list[Span] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    cached: bool = False
    cost_usd: float | None = None
    stored_trace: dict[str, Any] | None = None
    transcript: Transcript | None = None
    output_dropped_bytes: int = 0


class Agent(Protocol):
    """Acts on a prompt in a sandbox."""

    type_name: str

    async def run(self, context: AgentContext) -> AgentOutcome:
        """Run once for one row-task; failures are returned, not raised."""
        ...
