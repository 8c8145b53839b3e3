"""What the coding-agent CLIs share: finding the program, a fresh home per row, the bridge
session, running the CLI with its events read as they arrive, and the outcome.

A CLI run ends in one of these ways, checked in this order: the bridge stopped the session
(a budget or ``max_turns`` was crossed: the CLI is killed, the row ends with that status),
the row's ``task_timeout`` ran out (killed, ``TIMEOUT``), the CLI reported its own
``max_turns`` (``MAX_TURNS_EXHAUSTED``), the CLI reported an API error or crashed
(``ERROR`` with the cause: the bridge's own error for the failed call when there is one),
or it finished (its final answer is the response). In every case the transcript so far is
kept.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from assay.agents.base import AgentContext, AgentOutcome, LiveMonitorFn, OutcomeStatus
from assay.agents.coding_models import bridge_key
from assay.bridge import BridgeSession, CallLog, SessionLimits
from assay.bridge.session import BRIDGE_KEY_NAME as BRIDGE_KEY_NAME  # re-exported
from assay.errors import UsageError
from assay.install import TOOLS, clone_root, install_hint
from assay.providers.base import Usage
from assay.providers.pricing import Price
from assay.results.secrets import clip_head
from assay.results.task_result import EarlyStopRecord
from assay.results.trace import Span
from assay.results.transcript import TokenBuckets, Transcript, TranscriptEvent
from assay.results.transcript_otlp import to_spans
from assay.sandbox.process import (
    StreamResult,
    container_not_started,
    error_tail,
    exit_text,
    stream_process,
    tail,
)
from assay.sandbox.trees import remove_tree
from assay.spec.coding_agents import CodingAgent

CLI_PREFIXES = CodingAgent.withheld_prefixes
"""Variables a coding agent never sees (:attr:`CodingAgent.withheld_prefixes`)."""


PROJECT_CLIS = TOOLS / "npm" / "node_modules" / ".bin"
"""Where ``make install-dev`` puts the pinned coding-agent CLIs in a clone of assay (assay
installed from it, editable): found there when they are not on ``PATH``."""
CLI_DIR_VARIABLE = "ASSAY_CLI_DIR"
"""Names another folder of CLIs to look in after ``PATH`` instead of :data:`PROJECT_CLIS`."""


def project_clis() -> Path:
    """The folder of CLIs looked in after ``PATH``: ``$ASSAY_CLI_DIR``, else
    :data:`PROJECT_CLIS`."""
    return Path(os.environ.get(CLI_DIR_VARIABLE) or PROJECT_CLIS)


def find_cli(
    name: str, *, configured: str | None, base_dir: Path, bundled: Callable[[], Path | None]
) -> Path:
    """The CLI's executable: ``agent.cli_path`` (``$VAR`` expanded; a relative path is
    relative to the task file's folder ``base_dir``), else ``name`` on ``PATH``, else the
    copy ``make install-dev`` put in the clone assay runs from (:func:`project_clis`), else
    the copy a Python package bundles.

    Raises:
        UsageError: none of them exists (the hint says how to install it).
    """
    if configured:
        path = Path(os.path.expandvars(configured)).expanduser()
        path = path if path.is_absolute() else (base_dir / path).resolve()
        if path.is_file() and os.access(path, os.X_OK):
            return _real_folder(path)
        raise UsageError(f"{configured} is not an executable file"
                         + (f" ({path})" if str(path) != configured else ""),
                         field="agent.cli_path")  # fmt: skip
    found = shutil.which(name) or shutil.which(name, path=str(project_clis()))
    if found:
        return _real_folder(Path(found))
    packaged = bundled()
    if packaged is not None:
        return _real_folder(packaged)
    raise UsageError(f"the {name} CLI was not found (agent.cli_path, then PATH, then "
                     f"{project_clis()})",
                     hint=install_cli_hint(name))  # fmt: skip


_NPM_PACKAGES = {
    "codex": ("@openai/codex@0.171.0", "codex"),
    "gemini": ("@google/gemini-cli@0.61.0", "gemini"),
    "qwen": ("@qwen-code/qwen-code@0.24.4", "qwen"),
    "opencode": ("opencode-ai@1.18.33", "opencode"),
    "pi": ("@mariozechner/pi-coding-agent@0.73.1", "pi"),
}
"""Each npm CLI's pinned package (as the Makefile pins it) and its Makefile target's name
(``.tools/.installed-<target>``)."""


def _real_folder(path: Path) -> Path:
    """``path`` in its folder's real place (links on the way resolved, the file's own name
    kept: ``node_modules/.bin/pi`` stays the link npm made): a sandbox shows a CLI's folder
    where it really is, so a CLI found through a linked folder (``.tools`` a link) ran as a
    path the sandbox did not have (exit 127)."""
    return Path(os.path.realpath(path.parent)) / path.name


def install_cli_hint(name: str) -> str:
    """How to install the CLI ``name``: in a clone, its Makefile target first (the pinned
    version into ``.tools/npm``); everywhere, npm's global install or ``agent.cli_path``."""
    if name == "claude":
        return (install_hint("agents") + " (the claude-agent-sdk wheel bundles the CLI), or "
                "npm install -g @anthropic-ai/claude-code, or set agent.cli_path")  # fmt: skip
    package, target = _NPM_PACKAGES[name]
    hint = f"npm install -g {package}, or set agent.cli_path"
    root = clone_root()
    if root is None:
        return hint
    return (
        f"make .tools/.installed-{target} (in {root}: the pinned CLI, with those the Makefile "
        f"installs before it, into {TOOLS / 'npm/node_modules/.bin'}; make install-dev "
        "installs every one), or " + hint
    )


def json_event(line: str) -> dict[str, Any] | None:
    """One line of a CLI's JSON event stream as an object; ``None`` for anything else (a
    blank line, a log line the CLI printed among its events)."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


class EventParser(Protocol):
    """Reads one CLI's event stream into a transcript, line by line."""

    transcript: Transcript

    def feed(self, line: str) -> None:
        """Read one line of the CLI's stdout."""

    def ending(self) -> CliEnding:
        """How the CLI said the run ended (after the last line)."""
        ...


@dataclass
class CliEnding:
    """What the CLI reported at its end: its final answer, whether it hit its own turn
    limit or an API error (and the message), and its own usage and cost totals;
    ``session_total``: the usage is its session's running total, a resumed session's
    earlier turns included (Codex's ``exec resume``)."""

    final: str | None = None
    max_turns: bool = False
    api_error: str | None = None
    usage: TokenBuckets | None = None
    cost_usd: float | None = None
    session_total: bool = False


@dataclass
class CliLaunch:
    """How to start the CLI for one row: argv, environment, standard input, the folders it
    reads (its installation, plugins) and writes (its home) besides the sandbox's, and
    whether it is sealed from the commands it runs (:meth:`Jail.command
    <assay.sandbox.bwrap.Jail.command>`)."""

    argv: list[str]
    env: dict[str, str]
    stdin: str | None = None
    cleanup: list[Path] = field(default_factory=list)
    readable: list[Path] = field(default_factory=list)
    writable: list[Path] = field(default_factory=list)
    sealed: bool = True

    def contained(self, context: AgentContext, *, bridge: bool) -> tuple[list[str], dict[str, str]]:
        """argv and environment, inside the row's bwrap sandbox when it has one; a CLI on
        its own credentials (no bridge) keeps the host's network to reach its API."""
        argv, env = self.argv, self.env
        if context.jail is not None:
            argv, env = context.jail.command(self.argv, env=self.env, cwd=context.sandbox,
                                             readable=self.readable, writable=self.writable,
                                             bridge=bridge, agent=True,
                                             network=not bridge,
                                             sealed=self.sealed)  # fmt: skip
        return (argv if context.groups is None else context.groups.enter(argv)), env


def count(value: object) -> int:
    """A token count a CLI reported: a non-negative whole number, else 0 (a CLI that prints
    ``"abc"`` or ``1e400`` does not cost the row its transcript)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0
    return max(0, int(value))


def fresh_home(prefix: str) -> Path:
    """An empty home folder for one row (no user settings, hooks, logins or memory), with a
    ``tmp`` folder of its own that the CLI uses as its temporary folder."""
    home = Path(tempfile.mkdtemp(prefix=f"assay-{prefix}-home-"))
    (home / "tmp").mkdir()
    return home


def dialog_home(
    context: AgentContext, prefix: str, *, carried: tuple[str, ...] | None = None
) -> tuple[Path, bool]:
    """The CLI's home folder and whether it is kept: in dialog mode the one kept for every
    turn (the CLI's sessions live there; made on the first turn, removed by the dialog),
    else a fresh one removed after the run (:func:`fresh_home`). With ``carried`` (paths
    relative to the home: where the CLI keeps its sessions), each later turn of a dialog
    gets a fresh home instead, with only those moved into it from the one before: what
    else the agent wrote into the CLI's home (an extension, a plugin, a configuration the
    CLI loads at its start) does not reach its next turn."""
    dialog = context.dialog
    if dialog is None:
        return fresh_home(prefix), False
    if dialog.home is not None and carried is not None:
        home = fresh_home(prefix)
        for name in carried:
            if os.path.lexists(dialog.home / name):
                (home / name).parent.mkdir(parents=True, exist_ok=True)
                os.rename(dialog.home / name, home / name)
        remove_tree(dialog.home)
        dialog.home = home
    if dialog.home is None:
        dialog.home = fresh_home(prefix)
    return dialog.home, True


def cli_environment(context: AgentContext, config: CodingAgent, home: Path) -> dict[str, str]:
    """The CLI's environment: the row's, without any model credential or CLI configuration
    of the user's (:data:`CLI_PREFIXES`, and the variable ``agent.api_key_env`` names), with
    a fresh home and temporary folder, and the task's ``agent.env``."""
    dropped = {config.api_key_env} if config.api_key_env else set()
    env = {k: v for k, v in context.env.items()
           if not k.startswith(CLI_PREFIXES) and k not in dropped}  # fmt: skip
    env.update({
        "HOME": str(home), "TMPDIR": str(home / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local"), "XDG_STATE_HOME": str(home / ".local" / "state"),
    })  # fmt: skip
    env.update(config.env)
    return env


def open_session(context: AgentContext, config: CodingAgent) -> tuple[BridgeSession, str]:
    """Register the row with the bridge (its credential, the model that answers,
    :func:`~assay.agents.coding_models.bridge_key`, budgets and script variables); the
    session and the bridge's base URL (``http://127.0.0.1:PORT``) the CLI is pointed at.

    Raises:
        UsageError: the run has no bridge (a caller that did not start one).
        UserError: the model that answers cannot be named (see ``bridge_key``).
    """
    key = bridge_key(config, context.base_dir)
    if context.bridge is None:
        raise UsageError("this agent's model calls go through the model bridge, which the run "
                         "did not start")  # fmt: skip
    row = context.row or {}
    variables = {f"row.{k}": "" if v is None else str(v) for k, v in row.items()
                 if isinstance(v, str | int | float | bool) or v is None}  # fmt: skip
    if context.sandbox is not None:
        variables["sandbox"] = str(context.sandbox)
    prices = context.models.settings.prices
    price = (Price(**config.price.model_dump()) if config.price is not None
             else prices.lookup(key.name))  # fmt: skip
    session = BridgeSession(
        label=context.label, model_key=key, keep_model=config.model is None, price=price,
        prices=prices, script_vars=variables, replicate=context.replicate,
        limits=SessionLimits(context.max_total_tokens, context.max_usd, context.max_turns,
                             context.max_tool_calls),
    )  # fmt: skip
    return context.bridge.open(session), context.bridge.url


async def run_cli(
    context: AgentContext,
    *,
    name: str,
    launch: CliLaunch,
    parser: EventParser,
    session: BridgeSession | None,
    span: Span,
) -> AgentOutcome:
    """Run the CLI in the sandbox and make its outcome; see the module docstring."""
    assert context.sandbox is not None  # a coding agent always gets a directory
    transcript = parser.transcript
    started = time.perf_counter()
    argv, env = launch.contained(context, bridge=session is not None)
    on_line, stop = _guarded(parser), session.stop_event if session is not None else None
    watch = _Watch.of(context, transcript, session)
    if watch is not None:
        on_line, stop = watch.after(on_line), watch.stop
    try:
        result = await stream_process(
            argv, cwd=context.sandbox, env=env, timeout=context.timeout,
            on_line=on_line, stdin=launch.stdin, stop=stop,
            logs=context.logs.logs("agent") if context.logs is not None else None,
        )  # fmt: skip
    except OSError as exc:
        return _failed(span, transcript, f"cannot start the {name} CLI: {exc}", started)
    finally:
        if session is not None and context.bridge is not None:
            context.bridge.close(session)
        for path in launch.cleanup:
            shutil.rmtree(path, ignore_errors=True)
    try:
        ending = parser.ending()
    except Exception as exc:  # what the CLI reported is kept; its last event was unreadable
        transcript.add(
            TranscriptEvent(
                "error", time.time_ns(), text=f"the CLI's final event could not be read: {exc!r}"
            )
        )
        ending = CliEnding()
    _relative_paths(transcript, context.sandbox)
    early = watch.record if watch is not None else None
    killed = result.timed_out or early is not None or (
        session is not None and session.stopped is not None)  # fmt: skip
    if not (killed and session is not None):  # a count cut where it was killed: the bridge's
        transcript.cli_usage, transcript.cli_cost_usd = ending.usage, ending.cost_usd
        if ending.session_total and context.dialog is not None:
            transcript.cli_usage = context.dialog.turn_usage(ending.usage)
    if session is not None:
        _merge_calls(transcript, session.calls)
    transcript.usage_source = "bridge" if session is not None else "cli"
    status, error = _status(name, result, ending, session, context.timeout, early,
                            limits=context.jail is not None)  # fmt: skip
    transcript.stop_reason = transcript.stop_reason or _stop_reason(status, ending)
    if ending.final is not None and not any(e.kind == "final" for e in transcript.events):
        transcript.add(TranscriptEvent("final", time.time_ns(), text=ending.final))
    outcome = AgentOutcome(
        response=ending.final if ending.final is not None else "",
        status=status, error=error, exit_code=result.exit_code,
        stderr_tail=tail(result.stderr), seconds=result.seconds,
        model_calls=transcript.model_calls,
        model_used=session.model_key.name if session is not None else None,
        transcript=transcript, early_stop=early if status == "early_stop" else None,
        output_logs=[path.name for path in result.logs],
    )  # fmt: skip
    _usage_and_cost(outcome, transcript, session)
    if session is not None:
        outcome.attempts = [a for call in session.calls for a in call.attempts]
    span.end(error=error)
    outcome.spans = [span, *to_spans(transcript, span)]
    return outcome


@dataclass
class _Watch:
    """The row's live early stop while its CLI runs (:mod:`assay.criteria.live`): after
    each event line, the monitor's verdict; a decided one stops the session (when the CLI
    talks to the bridge) and sets ``stop``, which ends the CLI."""

    monitor: LiveMonitorFn
    transcript: Transcript
    stop: asyncio.Event
    session: BridgeSession | None
    record: EarlyStopRecord | None = None

    @classmethod
    def of(
        cls, context: AgentContext, transcript: Transcript, session: BridgeSession | None
    ) -> _Watch | None:
        if context.monitor is None:
            return None
        stop = session.stop_event if session is not None else asyncio.Event()
        return cls(context.monitor, transcript, stop, session)

    def after(self, feed: Callable[[str], None]) -> Callable[[str], None]:
        def watched(line: str) -> None:
            feed(line)
            if self.record is None and (record := self.monitor(self.transcript)) is not None:
                self.record = record
                if self.session is not None:
                    self.session.stop("early_stop", record.message())
                self.stop.set()

        return watched


def _guarded(parser: EventParser) -> Callable[[str], None]:
    """``parser.feed`` that records a line it cannot read instead of losing the row."""

    def feed(line: str) -> None:
        try:
            parser.feed(line)
        except Exception as exc:
            parser.transcript.add(
                TranscriptEvent(
                    "error",
                    time.time_ns(),
                    text=f"an event line of the CLI could not be read ({exc!r}): "
                    + clip_head(line, 300),
                )
            )

    return feed


def refused(span: Span, transcript: Transcript, error: str) -> AgentOutcome:
    """The outcome of a CLI that could not be started (missing, or a file it needs)."""
    return _failed(span, transcript, error, time.perf_counter())


def _failed(span: Span, transcript: Transcript, error: str, started: float) -> AgentOutcome:
    transcript.add(TranscriptEvent("error", time.time_ns(), text=error))
    transcript.stop_reason = "crashed"
    span.end(error=error)
    return AgentOutcome(status="error", error=error, transcript=transcript,
                        seconds=time.perf_counter() - started,
                        spans=[span, *to_spans(transcript, span)])  # fmt: skip


def _relative_paths(transcript: Transcript, sandbox: Path) -> None:
    """File changes inside the sandbox are named relative to it (``out.txt``), as criteria
    name them; a change outside it keeps its absolute path."""
    root = sandbox.resolve()
    for index, event in enumerate(transcript.events):
        if event.kind != "file_change" or not event.path:
            continue
        path = Path(event.path)
        path = path if path.is_absolute() else root / path
        try:
            relative = path.resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        transcript.events[index] = dataclasses.replace(event, path=relative)


def _merge_calls(transcript: Transcript, calls: list[CallLog]) -> None:
    """Put the bridge's calls into the transcript, in time order with the CLI's events."""
    events = [
        TranscriptEvent(
            "model_call", call.ended_ns, name=call.model,
            usage=call.usage.buckets() if call.usage is not None else None,
            cost_usd=call.cost_usd, stop_reason=call.stop_reason,
            is_error=call.error is not None, text=call.error or "",
            duration_ns=max(0, call.ended_ns - call.started_ns),
            arguments=list(call.tool_calls) or None,
        ) if not call.refused else TranscriptEvent(
            "error", call.ended_ns, text=f"model call {call.index} refused: {call.error}")
        for call in calls
    ]  # fmt: skip
    merged = transcript.events + events
    merged.sort(key=lambda e: e.at_ns)
    transcript.events = merged


def _status(
    name: str,
    result: StreamResult,
    ending: CliEnding,
    session: BridgeSession | None,
    timeout: float,
    early: EarlyStopRecord | None = None,
    *,
    limits: bool = True,
) -> tuple[OutcomeStatus, str | None]:
    if session is not None and session.stopped is not None:
        return session.stopped, session.stop_message
    if early is not None:
        return "early_stop", early.message()
    if result.timed_out:
        seconds = round(timeout, 2)
        return "timeout", f"the {name} CLI was killed after {seconds:g} s (task_timeout)"
    if ending.max_turns:
        return "max_turns", f"the {name} CLI reached its turn limit (run_limits.max_turns)"
    failed_call = next((c for c in reversed(session.calls) if c.error), None) if session else None
    if ending.api_error is not None or (result.exit_code != 0 and failed_call is not None):
        cause = failed_call.error if failed_call is not None else ending.api_error
        return "error", f"the {name} CLI ended with an API error: {cause}"
    if result.exit_code != 0:
        unstarted = container_not_started(result.exit_code, result.stderr)
        if unstarted is not None:
            return "error", unstarted
        stderr = error_tail(result.stderr)
        said = exit_text(result.exit_code, stderr=result.stderr, limits=limits)
        return "error", f"the {name} CLI {said}" + (
            f": {stderr}" if stderr else " without a result"
        )
    if ending.final is None:
        return "error", f"the {name} CLI exited without a final answer"
    return "completed", None


def _stop_reason(status: OutcomeStatus, ending: CliEnding) -> str:
    if status == "completed":
        return "end_turn"
    if status == "error":
        return "api_error" if ending.api_error is not None else "crashed"
    return status


def _usage_and_cost(
    outcome: AgentOutcome, transcript: Transcript, session: BridgeSession | None
) -> None:
    """Usage and cost: the bridge's counts when it carried the calls, else the CLI's own."""
    if session is not None:
        known = bool(session.calls) and session.usage_known
        outcome.usage = session.usage if known else None
        outcome.cost_usd = session.cost_usd if known else None
        return
    reported = transcript.cli_usage
    if reported is not None:
        outcome.usage = Usage(reported.input, reported.output, reported.cache_read,
                              reported.cache_write, reported.reasoning)  # fmt: skip
    outcome.cost_usd = transcript.cli_cost_usd
