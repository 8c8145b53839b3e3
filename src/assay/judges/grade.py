"""One case judged: ``samples`` verdicts asked at once, combined into one.

Binary and label verdicts take the majority of the readable samples (a tie is a
``judge_error``: the judge could not decide, which an odd ``samples`` avoids); scale verdicts
take the mean. Samples that could not be read are left out and counted; when none could be
read the outcome is a ``judge_error`` with the last problem and raw reply. The judge's
agreement with itself is the share of agreeing pairs of samples (binary, labels) and the
population standard deviation of the scores (scale). Distinct samples use distinct seeds, so
a sampling judge (``temperature`` > 0) answers each one afresh and the cache keeps them apart.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import Counter
from dataclasses import dataclass, field

from assay.judges.prompt import (
    JudgeCase,
    Reading,
    Verdict,
    judge_messages,
    read_verdict,
    reply_schema,
    reply_shape,
)
from assay.judges.verdict import Attempted, ask_json
from assay.metrics.agreement import pairwise_agreement
from assay.providers.base import Model, Usage
from assay.spec.judge import JudgeDefinition


@dataclass(frozen=True)
class Sample:
    """One asked verdict: its value and reason (``None`` when unreadable), the model calls
    made, the problem, and the raw reply."""

    value: Verdict | None
    reason: str | None
    attempts: int
    error: str | None = None
    raw: str | None = None


@dataclass(frozen=True)
class JudgeOutcome:
    """The combined verdict of one case.

    Attributes:
        value: the majority label / boolean, or the mean score; ``None`` on a judge error.
        reason: the reason of a sample that gave the combined verdict.
        samples: every sample, in order.
        error: why there is no verdict (a ``judge_error``), else ``None``.
        self_agreement: share of agreeing sample pairs (binary, labels; ≥ 2 readable).
        spread: population standard deviation of the scores (scale; ≥ 2 readable).
        usage: tokens of every call.
    """

    value: Verdict | None
    reason: str | None
    samples: tuple[Sample, ...]
    error: str | None = None
    self_agreement: float | None = None
    spread: float | None = None
    usage: Usage = field(default_factory=Usage)

    @property
    def judge_error(self) -> bool:
        """No verdict could be read."""
        return self.value is None

    @property
    def raw(self) -> str | None:
        """The raw reply behind the outcome: the last sample's (its failure, on an error)."""
        return self.samples[-1].raw if self.samples else None

    @property
    def attempts(self) -> int:
        """Model calls made over every sample."""
        return sum(s.attempts for s in self.samples)


async def judge_case(
    model: Model, definition: JudgeDefinition, case: JudgeCase, *, include_response: bool = True
) -> JudgeOutcome:
    """Ask ``model`` for ``definition.samples`` verdicts on ``case`` and combine them.

    Raises:
        PlaceholderKeyError: a ``${row.x}`` the row does not have.
    """
    messages = judge_messages(definition, case, include_response=include_response)
    verdict = definition.verdict

    def read(data: dict[str, object]) -> Reading:
        return read_verdict(verdict, dict(data))

    count = definition.samples
    asked: list[Attempted[Reading]] = await asyncio.gather(
        *(
            ask_json(
                model,
                messages,
                schema=reply_schema(verdict),
                read=read,
                retries=definition.retries,
                max_tokens=definition.max_tokens,
                temperature=definition.temperature,
                seed=index if count > 1 else None,
                reply_shape=reply_shape(verdict),
            )
            for index in range(count)
        )
    )
    usage = Usage()
    samples = []
    for item in asked:
        usage = usage + item.usage
        reading = item.value
        samples.append(
            Sample(
                reading.value if reading else None,
                reading.reason if reading else None,
                item.attempts,
                item.error,
                item.raw,
            )
        )
    return combine(definition, tuple(samples), usage)


def combine(definition: JudgeDefinition, samples: tuple[Sample, ...], usage: Usage) -> JudgeOutcome:
    """The combined verdict of ``samples`` (see the module docstring)."""
    readable = [s for s in samples if s.value is not None]
    if not readable:
        last = samples[-1].error if samples else "no sample asked"
        failed = f"{len(samples)} samples, none readable; last: " if len(samples) > 1 else ""
        return JudgeOutcome(None, None, samples, error=f"{failed}{last}", usage=usage)
    if definition.verdict.kind == "scale":
        scores = [float(s.value) for s in readable if s.value is not None]
        mean = statistics.fmean(scores)
        nearest = min(readable, key=lambda s: abs(float(s.value or 0.0) - mean))
        spread = statistics.pstdev(scores) if len(scores) > 1 else None
        return JudgeOutcome(mean, nearest.reason, samples, spread=spread, usage=usage)
    votes = Counter(s.value for s in readable)
    ranked = votes.most_common()
    agreement = pairwise_agreement([s.value for s in readable])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        tally = ", ".join(f"{value!r}: {n}" for value, n in ranked)
        return JudgeOutcome(
            None,
            None,
            samples,
            usage=usage,
            self_agreement=agreement,
            error=f"the {len(readable)} readable samples tied ({tally}); use "
            "an odd number of samples",
        )
    winner = ranked[0][0]
    reason = next(s.reason for s in readable if s.value == winner)
    return JudgeOutcome(winner, reason, samples, self_agreement=agreement, usage=usage)
