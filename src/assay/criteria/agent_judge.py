"""``agent_judge``: a coding agent judges the row by exploring what its agent left.

After the row's agent finished, the judge's CLI (Claude Code or Codex, from the criterion's
``agent:`` block; :class:`assay.spec.agent_judge.AgentJudge`) runs in a copy of the row's
sandbox (made in the temporary folder without :data:`~assay.spec.agent_judge.DEFAULT_IGNORED`;
the task's reference, if any, at ``_reference/``), so what it writes never reaches the row's
files. It is contained as the row's agent was: inside a ``bwrap`` sandbox of its own (same
limits, network and readable folders) when the row ran in one, in a container of the row's
image (same limits, network and readable folders; the model bridge through its unix socket)
when the row ran in a ``docker`` one, as a plain process when the row did. Its model calls
go through the
run's model bridge (so any assay model judges, a ``mock/`` script included), limited to
``max_turns`` calls and ``turn_timeout`` seconds. It submits its verdict with the tool
``submit_verdict`` (:mod:`assay.judges.verdict_tool`, an MCP server its CLI starts); the
verdict is read back from the judge's transcript: the last call the tool accepted.

The row's score is the verdict's ``score`` (0 to 1), with its rationale and findings. A
judge that never submits a valid verdict (never called, every call invalid, timed out or
crashed first) leaves the criterion not graded: a ``judge_error``, excluded from every
average and counted apart, never a 0.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from assay.agents.base import AgentContext, AgentOutcome, ToolServer
from assay.agents.registry import AgentRegistry
from assay.criteria.base import Criterion, CriterionError, GradingContext, Service, sandbox_of
from assay.criteria.code_checks import REFERENCE_DIR
from assay.errors import SandboxError
from assay.judges import verdict_tool
from assay.judges.prompt import transcript_text
from assay.judges.verdict_tool import (
    QUALIFIED,
    RECEIVED,
    SERVER,
    TOOL,
    Verdict,
    VerdictError,
    check_verdict,
)
from assay.providers.pool import ModelPool
from assay.results.secrets import clip_head
from assay.results.sparse import copy_file
from assay.results.task_result import CriterionResult, JudgeCriterionResult, JudgeRef
from assay.results.trace import Span, new_trace_id
from assay.results.transcript import Transcript
from assay.sandbox.bwrap import Jail
from assay.sandbox.trees import remove_tree
from assay.spec.agent_judge import AgentJudge

if TYPE_CHECKING:
    from assay.bridge import Bridge
    from assay.sandbox.docker import DockerJail

NEVER_CALLED = "Judge did not call submit_verdict"
"""Coder Eval's message for a judge that ended without a verdict."""
MAX_RAW_CHARS = 4000
DROPPED_VARIABLES = ("TASK_DIR", "REFERENCE_DIR", "ASSAY_TASK_DIR")
"""The grading programs' pointers to the task's folder and reference: the judge finds the
reference at ``_reference/`` and never sees the task's folder (``ASSAY_SANDBOX`` names its
copy)."""


@dataclass(frozen=True)
class AgentHost:
    """What a row offers a criterion that runs a coding agent to grade it: the agent types
    (``agents``), the run's started models (``pool``) and model bridge, the task file's
    folder (``base_dir``, for a ``mock/`` script's path), the row's label and replicate (in
    messages and the bridge's session)."""

    agents: AgentRegistry
    pool: ModelPool
    bridge: Bridge | None
    base_dir: Path
    label: str
    replicate: int = 0


AGENT_HOST: Service[AgentHost] = Service("the run's coding-agent services (models, bridge)")
"""Offered by ``assay run`` and ``assay evaluate`` (which start the model bridge for it); not
by ``assay judge calibrate`` or a prediction file's grading."""


class AgentJudgeCriterion(AgentJudge, Criterion):
    """Grades ``agent_judge`` (see the module docstring)."""

    check_seconds: ClassVar[float | None] = None  # the judge agent has its own run_limits

    async def check(self, context: GradingContext) -> CriterionResult:
        """Run the judge agent on a copy of the row's sandbox and read its verdict.

        Raises:
            CriterionError: no agent services (graded outside ``assay run`` and ``assay
                evaluate``), no sandbox kept, or the copy or the judge's sandbox cannot be
                made.
        """
        if not self.enabled:
            return self._result(0.0, "(skipped: enabled=false)", status="skipped")
        host = context.need(AGENT_HOST)
        if host is None or host.bridge is None:
            raise CriterionError(
                "agent_judge runs a coding agent through the model bridge, which only assay "
                "run and assay evaluate start; grade this task with one of them"
            )
        sandbox = sandbox_of(context)
        reference = context.need(REFERENCE_DIR) if self.include_reference else None
        workdir = Path(tempfile.mkdtemp(prefix="assay-agent-judge-"))
        try:
            copy = workdir / "workspace"
            try:
                copy_workspace(sandbox.root, copy, ignored=self.agent.ignored())
                if reference is not None and reference.is_dir():
                    copy_workspace(reference, copy / "_reference", ignored=frozenset())
            except OSError as exc:
                raise CriterionError(
                    f"the judge's copy of the sandbox cannot be made: {exc}"
                ) from None
            jail = judge_jail(sandbox.jail, copy)
            try:
                outcome = await self._run(context, host, copy, jail, reference is not None)
            finally:
                if jail is not None:
                    jail.close()
        finally:
            remove_tree(workdir)
        return self._graded(outcome)

    async def _run(
        self, context: GradingContext, host: AgentHost, copy: Path, jail: Jail | DockerJail | None,
        reference: bool,
    ) -> AgentOutcome:  # fmt: skip
        config = self.agent.config()
        env = {k: v for k, v in context.env.items() if k not in DROPPED_VARIABLES}
        env["ASSAY_SANDBOX"] = str(copy)
        span = Span(name="agent_judge", trace_id=new_trace_id())
        judge_context = AgentContext(
            prompt=self.judge_prompt(context, reference=reference), sandbox=copy,
            base_dir=host.base_dir, timeout=self.turn_timeout, max_total_tokens=None,
            env=env, models=host.pool, root_span=span, replicate=host.replicate,
            bridge=host.bridge, label=f"{host.label} agent_judge", row=context.row,
            max_turns=self.max_turns, jail=jail,
            tool_servers={SERVER: verdict_server(jail)},
        )  # fmt: skip
        return await host.agents.build(config).run(judge_context)

    def judge_prompt(self, context: GradingContext, *, reference: bool) -> str:
        """What the judge is told: where it is, the rubric, what to read, and how to
        answer."""
        where = ("You are judging the work a coding agent left in your current working "
                 "directory (a copy: anything you change there is thrown away).")  # fmt: skip
        if reference:
            where += " The task's reference solution is in the folder _reference/."
        parts = [where, "What to judge:\n" + self.prompt.strip()]
        if self.files:
            parts.append("Read these files first: " + ", ".join(self.files))
        if self.include_agent_output:
            response = context.response or "(the agent gave no final response)"
            parts.append("The agent's final response:\n" + clip_head(response, self.max_file_chars))
        if self.include_tool_calls:
            text = transcript_text(context.transcript, limit=self.max_transcript_chars)
            parts.append("What the agent did:\n" + (text or "(no transcript)"))
        parts.append(f"Explore as much as you need, then call the tool {TOOL} once with score "
                     "(0 to 1, 1 the best), rationale and findings (a list of short strings), "
                     "and stop.")  # fmt: skip
        return "\n\n".join(parts)

    def _graded(self, outcome: AgentOutcome) -> JudgeCriterionResult:
        transcript = outcome.transcript
        verdict, problem = read_verdict(transcript)
        tokens = outcome.usage.total_tokens if outcome.usage is not None else 0
        if verdict is None:
            ending = _ending(outcome)
            message = f"{problem}{f' ({ending})' if ending else ''}"
            raw = "\n".join(transcript.lines()) if transcript is not None else None
            return self._result(0.0, f"judge_error: {message}", status="error",
                                error=f"judge_error: {message}", judge_tokens=tokens,
                                judge_cost_usd=outcome.cost_usd,
                                raw=clip_head(raw, MAX_RAW_CHARS) if raw else None)  # fmt: skip
        found = f" ({len(verdict.findings)} finding(s))" if verdict.findings else ""
        return self._result(verdict.score, f"verdict {verdict.score:g}: {verdict.rationale}{found}",
                            verdict=verdict.score, reason=verdict.rationale,
                            findings=list(verdict.findings), judge_tokens=tokens,
                            judge_cost_usd=outcome.cost_usd,
                            attempts=outcome.model_calls)  # fmt: skip

    def _result(self, score: float, details: str, *, status: str = "evaluated",
                **fields: Any) -> JudgeCriterionResult:  # fmt: skip
        skipped = status == "skipped"
        return JudgeCriterionResult(
            criterion_type=self.type, description=self.description,
            score=min(1.0, max(0.0, score)), details=details, evaluation_status=status,
            pass_threshold=self.pass_threshold, gating=self.gating and not skipped,
            weight=0.0 if skipped else self.weight, judge=self.judge_ref(),
            verdict_kind="scale", **fields,
        )  # fmt: skip

    def judge_ref(self) -> JudgeRef:
        """What a graded row records of its judge: ``agent_judge``, the content hash of the
        rubric and the agent block, and the judge's model."""
        content = self.model_dump(mode="json", include={"prompt", "files", "agent", "max_turns",
                                                         "include_agent_output",
                                                         "include_tool_calls"})  # fmt: skip
        text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return JudgeRef(name="agent_judge", content_hash=hashlib.sha256(text.encode()).hexdigest(),
                        source="inline", model=self.agent.model)  # fmt: skip


def read_verdict(transcript: Transcript | None) -> tuple[Verdict | None, str]:
    """The last verdict the judge's tool accepted in ``transcript`` (checked again), or
    ``None`` and why there is none."""
    if transcript is None:
        return None, NEVER_CALLED
    accepted: Verdict | None = None
    problem = NEVER_CALLED
    for use in transcript.tool_uses():
        if use.name != QUALIFIED:
            continue
        if not use.ran or use.is_error or RECEIVED not in (use.result or ""):
            why = (use.result or "no answer").strip()
            problem = f"the judge's submit_verdict call was not accepted: {clip_head(why, 300)}"
            continue
        try:
            accepted = check_verdict(use.arguments)
        except VerdictError as exc:
            problem = f"the judge's verdict is not valid: {exc}"
    return (accepted, "") if accepted is not None else (None, problem)


def _ending(outcome: AgentOutcome) -> str:
    """How the judge's run ended, when not on its own."""
    if outcome.status == "completed":
        return ""
    if outcome.status == "timeout":
        return f"the judge agent was stopped at turn_timeout: {outcome.error}"
    if outcome.status == "max_turns":
        # the CLI's own message names run_limits.max_turns, the row's limit, not the judge's
        return "the judge agent reached the criterion's max_turns"
    return f"the judge agent {outcome.status}: {outcome.error}"


def verdict_server(jail: Jail | DockerJail | None) -> ToolServer:
    """The verdict tool's MCP server: :mod:`assay.judges.verdict_tool` run as a script
    (standard library only) by the Python of the judge's sandbox (this one, or a container
    image's ``python3``), the file shown to it read-only where it lies."""
    script = Path(verdict_tool.__file__).resolve()
    python = jail.python if jail is not None else sys.executable
    return ToolServer(python, ("-I", "-S", str(script)), readable=(script,))


def judge_jail(row_jail: Jail | DockerJail | None, copy: Path) -> Jail | DockerJail | None:
    """The judge's own sandbox, made as the row's was (``for_copy``): a ``bwrap`` sandbox of
    the same policy, limits, network and readable folders; for a ``docker`` row, a container
    of the row's image with its limits, network and read-only folders (never the task's
    folder nor ``extra_mounts``: a judge is a coding agent); none for a plain row.

    Raises:
        CriterionError: the sandbox cannot be made.
    """
    if row_jail is None:
        return None
    try:
        return row_jail.for_copy(copy)
    except SandboxError as exc:
        raise CriterionError(f"the judge's sandbox cannot be made: {exc}") from None


def copy_workspace(source: Path, target: Path, *, ignored: frozenset[str]) -> None:
    """Copy ``source`` to ``target`` without the names in ``ignored`` (at any depth) and
    without anything but folders, regular files and symbolic links (kept as links: a FIFO
    would block the copy).

    Raises:
        OSError: a file cannot be read or written.
    """
    ignore = shutil.ignore_patterns(*ignored) if ignored else None
    shutil.copytree(source, target, symlinks=True, ignore=ignore, copy_function=_regular_only,
                    dirs_exist_ok=True)  # fmt: skip


def _regular_only(source: str, target: str) -> None:
    if stat.S_ISREG(os.lstat(source).st_mode):
        copy_file(source, target)  # a sparse file's holes stay holes
