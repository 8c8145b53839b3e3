"""The agent protocol: one context in, one :class:`AgentOutcome` out.

An agent acts on the substituted prompt inside the row's sandbox. It never raises for a
failure of the thing it drives: a crash, a timeout or a model error becomes an outcome with
``status`` and ``error``, so the runner can record the row and go on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from assay.providers.base import Message, Usage
from assay.providers.managed import OnRetry
from assay.providers.pool import ModelKey, ModelPool, ProviderRegistry
from assay.providers.pricing import PriceTable
from assay.providers.retry import Attempt
from assay.results.dialog import SimulationRecord
from assay.results.io import LogFolder
from assay.results.task_result import EarlyStopRecord
from assay.results.trace import Span
from assay.results.transcript import TokenBuckets, Transcript
from assay.sandbox.process import MAX_OUTPUT_BYTES
from assay.spec.agent_base import AgentSpec
from assay.spec.task import RunLimits

if TYPE_CHECKING:
    from assay.agents.dialog_settings import Kept
    from assay.bridge import Bridge
    from assay.sandbox.bwrap import Jail
    from assay.sandbox.docker import DockerJail
    from assay.sandbox.reaper import RowProcesses

OutcomeStatus = Literal[
    "completed", "timeout", "error", "token_budget", "cost_budget", "max_turns",
    "max_tool_calls", "early_stop",
]  # fmt: skip
LiveMonitorFn = Callable[[Transcript], EarlyStopRecord | None]
"""Asked after each event of a coding agent's stream: a record ends the agent
(:class:`assay.criteria.live.LiveMonitor`)."""


@dataclass
class DialogState:
    """Where a dialog (``simulation:``) stands when the agent takes its next turn.

    Attributes:
        history: the earlier exchanges, ``(role, text)`` with role ``user`` or
            ``assistant``, oldest first (the current user message is the context's
            ``prompt``); an ``llm`` agent sends them as its message history.
        session_id: the agent's own session from its previous turn (a CLI's session id,
            read from its stream), resumed by the CLI; ``None`` on the first turn.
        home: a home folder kept for every turn of the dialog (a CLI keeps its sessions
            there); the dialog removes it at the end.
        messages: the ``llm`` agent's tool loop: its whole message list after its previous
            turn (its tool calls and their results included), which its next turn continues
            (``None`` on the first turn).
        session_usage: the running token total of its session a CLI reported at its
            previous turn's end (a CLI whose report is such a total, Codex's), from which
            :meth:`turn_usage` takes a turn's own.
        settings: the settings files a CLI reads from its workspace, as they were at the
            first turn (:mod:`assay.agents.dialog_settings`), put back before each later one.
        put_back: those the agent had changed, put back before the turn now running.
    """

    history: list[tuple[str, str]] = field(default_factory=list)
    session_id: str | None = None
    home: Path | None = None
    messages: tuple[Message, ...] | None = None
    session_usage: TokenBuckets | None = None
    settings: Kept | None = None
    put_back: list[str] = field(default_factory=list)

    def turn_usage(self, total: TokenBuckets | None) -> TokenBuckets | None:
        """This turn's own tokens from the running total of the session a CLI reported at
        the turn's end: the total less the last one reported when this turn resumed the
        session (the total as it is otherwise, or when it is not above that one in every
        bucket); the total is kept for the next turn. A turn that reported none (Codex's
        ``turn.failed``) keeps the one before, so the next turn's count holds its tokens."""
        before = self.session_usage if self.session_id else None
        if total is None:
            return None
        self.session_usage = total
        return total if before is None else total.since(before) or total


@dataclass
class AgentContext:
    """What an agent gets for one row-task.

    Attributes:
        prompt: the substituted prompt (``None`` for ``agent: none``).
        sandbox: the working directory; ``None`` for an ``llm`` agent whose row needs none
            (see :func:`assay.orchestration.running.runner.needs_directory`).
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
        max_output_bytes: what is kept in memory of each output stream of the agent's
            program (``sandbox.limits.max_output_mb``).
        logs: the row's folder, where a stream that passes it is written whole
            (``agent.stdout.log``...); ``None``: the rest is dropped.
        jail: the row's bwrap sandbox or docker container: the agent's programs run inside
            it (:meth:`assay.sandbox.bwrap.Jail.command`, the same shape on both drivers);
            ``None``: plain processes.
        groups: the row's control groups (``tempdir`` and ``bwrap`` where the machine gives
            them, :mod:`assay.sandbox.cgroups`), or a ``tempdir`` row's subreaper where it
            gives none (:mod:`assay.sandbox.reaper`): the agent's programs run inside them
            (:meth:`~assay.sandbox.reaper.RowProcesses.enter`, around the jail's command).
        monitor: the row's live early stop (``stop_early``), for agents with an event stream.
        dialog: in dialog mode, the conversation so far and the session to continue
            (``None``: a single prompt).
        tool_servers: stdio MCP servers the agent's CLI is given besides its own tools, by
            server name (the verdict tool of an ``agent_judge``); a CLI agent allows their
            tools; other agents ignore them.
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
    logs: LogFolder | None = None
    jail: Jail | DockerJail | None = None
    groups: RowProcesses | None = None
    monitor: LiveMonitorFn | None = None
    dialog: DialogState | None = None
    tool_servers: dict[str, ToolServer] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolServer:
    """A stdio MCP server a CLI agent starts for tools assay serves it: the program
    (``command``: an absolute path, or a name looked up on the ``PATH`` where the CLI runs),
    its ``args``, the variables ``env`` it gets besides the CLI's, and the files it needs
    shown read-only (``readable``) where the CLI runs in a container."""

    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    readable: tuple[Path, ...] = ()


@dataclass
class AgentOutcome:
    """What an agent did: final response, status, usage, exit code, spans, and the
    transcript of its events (``None`` for an agent that has none, e.g. ``none``); in
    dialog mode ``simulation`` holds the dialog (every turn's outcome merged into this one).
    """

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
    output_logs: list[str] = field(default_factory=list)
    early_stop: EarlyStopRecord | None = None
    simulation: SimulationRecord | None = None


@dataclass(frozen=True)
class PreflightSetup:
    """What an agent's preflight may consult: the task file's folder, the run's providers
    (to check that a model can start), its price table, and the task's ``run_limits``."""

    base_dir: Path
    providers: ProviderRegistry
    prices: PriceTable
    limits: RunLimits


@dataclass(frozen=True)
class PreflightCheck:
    """One check made before any row runs: ``check`` raises :class:`~assay.errors.UserError`
    (naming what to fix) for what would make every row fail; the planner locates the error
    at the task file's field ``loc`` (for example ``("agent", "cli_path")``)."""

    loc: tuple[str, ...]
    check: Callable[[], object]


Config = TypeVar("Config", bound=AgentSpec)


class Agent(ABC, Generic[Config]):
    """One agent type: runs its config (:attr:`config_model`, the task file's ``agent:``
    block) for one row-task, and answers what the run must prepare for it.

    The config model declares what can be read from the task file alone (may act, answers,
    transcript, needs a directory, model route, credentials; see
    :class:`~assay.spec.agent_base.AgentSpec`); this class adds what needs the machine:
    the model endpoints it uses (:meth:`model_keys`), its preflight (:meth:`preflight`: a CLI
    installed, a model that starts), and what the sandbox must give it (:meth:`folders`).
    A new agent type subclasses this, sets :attr:`type_name` and :attr:`config_model`, and
    is registered by one line (:mod:`assay.agents.registry`) or given to
    ``assay.run(agents=[...])`` or an entry point of the group ``assay.agents``.
    """

    type_name: ClassVar[str]
    """The type task files write (``agent: {type: ...}``); the config model's ``type``."""
    config_model: ClassVar[type[AgentSpec]]
    """The pydantic model of the ``agent:`` block (its fields are the task file's)."""

    def __init__(self, config: Config) -> None:
        self.config = config

    @abstractmethod
    async def run(self, context: AgentContext) -> AgentOutcome:
        """Run once for one row-task; failures are returned, not raised."""

    def model_keys(self, base_dir: Path) -> list[ModelKey]:
        """The models the run starts before any row for this agent (``base_dir``: the task
        file's folder); none by default."""
        return []

    def preflight(self, setup: PreflightSetup) -> list[PreflightCheck]:
        """The checks ``assay plan`` and ``assay run`` make before any row, in order; none by
        default."""
        return []

    def folders(self, base_dir: Path) -> list[Path]:
        """Containment needs: folders (besides the system's and the task's) that a row's
        sandbox must let the agent read, such as its CLI's installation and its plugins.

        Raises:
            UserError: one cannot be found (a CLI not installed).
        """
        return []

    def program(self, base_dir: Path) -> Path | None:
        """The executable the agent runs, found now (``None``: it runs none of its own).

        Raises:
            UserError: it is not installed (with the install command).
        """
        return None
