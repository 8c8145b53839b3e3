"""Live early stop (Coder Eval's ``stop_early``): end a coding agent once its row is decided.

A criterion carrying a ``stop_early`` block is *armed* (unless ``run_limits.stop_early`` is
``false``, the kill switch). While the agent runs, after each line of its event stream, the
monitor asks every armed criterion for its live verdict
(:meth:`assay.criteria.base.Criterion.live_verdict`, over the tool calls that have run): the
first decided failure ends the agent (``criterion_failed``); a decided pass ends it when the
criterion says ``on_pass: stop`` (``criterion_passed``); an armed criterion still undecided
after its ``decide_within`` tool calls ends it too (``decision_budget_exceeded``). The row is
then graded as usual, and passes when the weighted score of its armed criteria reaches
``run_limits.stop_early_gate_threshold`` (Coder Eval's rule for a cut run;
``reference/coder_eval_agents.md`` §2–3).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from assay.criteria.base import Criterion
from assay.results.task_result import EarlyStopRecord
from assay.results.transcript import Transcript
from assay.spec.agent_criteria import StopEarly
from assay.spec.criterion_base import CriterionSpec

RAN_EVENTS = frozenset({"tool_result", "command", "denial"})
"""Transcript events after which a tool call may count as run (``ToolUse.ran``)."""


@dataclass
class LiveMonitor:
    """The armed criteria of one row and the verdict that stopped it (latched).

    Attributes:
        armed: ``(index in success_criteria, criterion, its stop_early block)``.
        gate_threshold: ``run_limits.stop_early_gate_threshold``.
        started: ``time.monotonic()`` when the agent started.
    """

    armed: list[tuple[int, Criterion, StopEarly]]
    gate_threshold: float = 1.0
    started: float = field(default_factory=time.monotonic)
    decided: EarlyStopRecord | None = None
    source: Transcript | None = None
    read: int = 0
    """Events of ``source`` (the transcript last asked about) already looked at."""

    @classmethod
    def of(
        cls, criteria: Sequence[CriterionSpec], *, kill_switch: bool | None, gate_threshold: float
    ) -> LiveMonitor | None:
        """The monitor of a row's criteria (a task's ``success_criteria``: instances of
        the registry's classes); ``None`` when none is armed or the kill switch
        (``run_limits.stop_early: false``) disarms them."""
        if kill_switch is False:
            return None
        armed = [(i, c, block) for i, c in enumerate(criteria)
                 if isinstance(c, Criterion)
                 and isinstance(block := getattr(c, "stop_early", None), StopEarly)]  # fmt: skip
        return cls(armed, gate_threshold) if armed else None

    def __call__(self, transcript: Transcript) -> EarlyStopRecord | None:
        """The verdict that ends the agent now, or ``None`` to let it go on (once decided,
        the same record every time). A verdict changes only when a tool call has run, so the
        tool calls are read again only after an event that says one did (a call's result, a
        command, a denial), not after every line of the stream."""
        events = transcript.events
        new = events[self.read :] if transcript is self.source else events
        self.source, self.read = transcript, len(events)
        if self.decided is None and any(e.kind in RAN_EVENTS for e in new):
            self.decided = self._decide(transcript)
        return self.decided

    def _decide(self, transcript: Transcript) -> EarlyStopRecord | None:
        ran = sum(1 for use in transcript.tool_uses() if use.ran)
        for _, criterion, block in self.armed:
            verdict = criterion.live_verdict(transcript)
            if verdict is False:
                return self._record("criterion_failed", criterion, ran)
            if verdict is True and block.on_pass == "stop":
                return self._record("criterion_passed", criterion, ran)
            if verdict is None and block.decide_within is not None and ran >= block.decide_within:
                return self._record("decision_budget_exceeded", criterion, ran)
        return None

    def _record(self, reason: str, criterion: Criterion, ran: int) -> EarlyStopRecord:
        return EarlyStopRecord.model_validate({
            "reason": reason, "criterion_type": criterion.type,
            "criterion_description": criterion.description,
            "armed": [index for index, _, _ in self.armed], "tool_call_index": ran,
            "elapsed_seconds": round(time.monotonic() - self.started, 3),
            "gate_threshold": self.gate_threshold,
        })  # fmt: skip


def armed_passed(record: EarlyStopRecord, scores: list[tuple[float, float, bool]]) -> bool:
    """Whether a row cut early passes: the weighted score of its armed criteria
    (``scores[i] = (score, weight, graded)`` in ``success_criteria`` order) reaches
    ``record.gate_threshold``; an armed criterion that did not grade fails it."""
    chosen = [scores[i] for i in record.armed if i < len(scores)]
    if not chosen or not all(graded for _, _, graded in chosen):
        return False
    total = sum(weight for _, weight, _ in chosen)
    value = sum(score * weight for score, weight, _ in chosen) / total if total else 0.0
    return value >= record.gate_threshold - 1e-12
