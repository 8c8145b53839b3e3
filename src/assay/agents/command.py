"""``agent: {type: command}``: any program, run in the sandbox.

The prompt is written to the program's stdin and to a file named by ``ASSAY_PROMPT_FILE``
(outside the sandbox), and put in ``ASSAY_PROMPT`` when it fits in an environment variable
(at most 64 KiB and no NUL character; Linux refuses larger ones); its stdout is the final
response. The program is killed (its whole process group) at
``run_limits.task_timeout``; the row then ends ``TIMEOUT``. A non-zero exit code ends the
row ``ERROR`` with the tail of stderr.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from assay.agents.base import Agent, AgentContext, AgentOutcome
from assay.results.trace import Span
from assay.results.transcript import Transcript, TranscriptEvent
from assay.results.transcript_otlp import agent_attributes
from assay.sandbox.process import container_not_started, error_tail, exit_text, run_process, tail
from assay.spec.task import CommandAgent

ENVIRONMENT_LIMIT = 64 * 1024
PROMPT_VARIABLES = CommandAgent.prompt_variables


def fits_in_environment(text: str) -> bool:
    """True when ``text`` can be an environment variable's value."""
    return "\0" not in text and len(text.encode("utf-8", errors="replace")) <= ENVIRONMENT_LIMIT


class CommandRunner(Agent[CommandAgent]):
    """Runs :class:`assay.spec.task.CommandAgent`."""

    type_name = "command"
    config_model = CommandAgent

    async def run(self, context: AgentContext) -> AgentOutcome:
        """Run the program once; see the module docstring."""
        span = context.root_span.child("invoke_agent command")
        command = self.config.command
        span.attributes["process.command"] = (
            command if isinstance(command, str) else " ".join(command)
        )
        prompt = context.prompt or ""
        with tempfile.TemporaryDirectory(prefix="assay-prompt-") as folder:
            prompt_file = Path(folder) / "prompt.txt"
            prompt_file.write_text(prompt, encoding="utf-8", errors="backslashreplace")
            env = {**context.env, **self.config.env, "ASSAY_PROMPT_FILE": str(prompt_file)}
            if fits_in_environment(prompt):
                env["ASSAY_PROMPT"] = prompt
            return await self._run(context, env, span, Path(folder))

    async def _run(
        self, context: AgentContext, env: dict[str, str], span: Span, prompt_folder: Path
    ) -> AgentOutcome:
        command: str | list[str] = self.config.command
        started = time.perf_counter()
        assert context.sandbox is not None  # a command agent always gets a directory
        if context.jail is not None:
            prompt_folder.chmod(0o755)  # the row's own user reads it (assay runs as root)
            (prompt_folder / "prompt.txt").chmod(0o644)
            argv = ["/bin/sh", "-c", command] if isinstance(command, str) else command
            command, env = context.jail.command(argv, env=env, cwd=context.sandbox,
                                                readable=[prompt_folder])  # fmt: skip
        if context.groups is not None:  # the row's control groups (tempdir, bwrap)
            command = context.groups.enter(command)
        try:
            result = await run_process(
                command,
                cwd=context.sandbox,
                env=env,
                timeout=context.timeout,
                stdin=context.prompt or "",
                max_output_bytes=context.max_output_bytes,
                logs=context.logs.logs("agent") if context.logs is not None else None,
            )
        except OSError as exc:
            span.end(error=str(exc))
            return AgentOutcome(
                status="error",
                error=f"cannot start the agent command: {exc}",
                seconds=time.perf_counter() - started,
                spans=[span],
            )
        span.attributes["process.exit_code"] = -1 if result.exit_code is None else result.exit_code
        if result.dropped:  # past max_output_bytes per stream: not kept (in the logs)
            span.attributes["process.output_dropped_bytes"] = result.dropped
        outcome = AgentOutcome(
            response=result.stdout,
            exit_code=result.exit_code,
            stderr_tail=tail(result.stderr),
            seconds=result.seconds,
            spans=[span],
            output_dropped_bytes=result.dropped,
            output_logs=[path.name for path in result.logs],
        )
        if result.timed_out:
            outcome.status = "timeout"
            seconds = round(context.timeout, 2)
            outcome.error = f"the agent command was killed after {seconds:g} s"
        elif result.exit_code != 0:
            outcome.status = "error"
            said = exit_text(
                result.exit_code, stderr=result.stderr, limits=context.jail is not None
            )  # tempdir sets none
            outcome.error = container_not_started(result.exit_code, result.stderr) or (
                f"the agent command {said}"
                + (f": {error_tail(result.stderr)}" if result.stderr.strip() else "")
            )
        outcome.transcript = _transcript(outcome, shown=result.shown_stdout)
        span.attributes.update(agent_attributes(outcome.transcript))
        span.end(error=outcome.error)
        return outcome


def _transcript(outcome: AgentOutcome, *, shown: str | None = None) -> Transcript:
    """The program's answer, or why it failed (a command agent's steps are its own); an
    answer cut at ``max_output_mb`` is ``shown`` with assay's note of the cut where it is
    (the graded response is what the program wrote, without it)."""
    transcript = Transcript(agent="command", stop_reason=outcome.status)
    now = time.time_ns()
    if outcome.error is not None:
        transcript.add(TranscriptEvent("error", now, text=outcome.error))
    elif outcome.response is not None:
        transcript.add(TranscriptEvent("final", now, text=shown or outcome.response))
    return transcript
