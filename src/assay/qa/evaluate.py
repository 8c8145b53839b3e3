"""Grade a whole ``prediction.jsonl`` again: ToMEval's metric stage, without the answering model.

Records are read and graded one at a time (:func:`evaluate_file`): a choice record is graded
by rule as it is read, and only the small fields the metrics group by are kept, so memory
stays near the size of the results, not of the file. Open records the rules cannot decide wait
for the judge, ``parallel`` calls at a time. With a metrics hook every record is kept whole
(the hook receives them). The result is the ``metrics.json`` document
(:func:`assay.qa.metrics_document`), one entry per replicate, each replicate's records in
sample order (``reference/originals.md`` §2.4).
"""

from __future__ import annotations

import asyncio
import gc
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from assay.providers.base import Model
from assay.qa.grading import (
    SampleResult,
    answer_error,
    decide_open,
    from_verdict,
    grade_choice,
)
from assay.qa.hooks import MetricsHook
from assay.qa.judge import OpenJudge
from assay.qa.metrics import metrics_document, pooled_intervals, replicate_metrics
from assay.qa.open_judge import open_judge
from assay.qa.records import PredictionRecord
from assay.spec.qa import QaJudge

_VIEW_FIELDS = ("sample_id", "sample_index", "repeat", "prompt_type", "meta", "story")


@dataclass(frozen=True)
class JudgeSettings:
    """How open records are judged: the judge (``None``: rules only) and whether the rules
    go first."""

    judge: OpenJudge | None = None
    rules: bool = True

    @classmethod
    def of(cls, config: QaJudge | None, model: Model | None) -> JudgeSettings:
        """The settings of a ``qa.judge`` block (``None``: rules only) on its started model
        (:func:`assay.qa.open_judge.open_judge`)."""
        return cls(judge=open_judge(config, model), rules=config.rules if config else True)


def decide(record: PredictionRecord, judge: JudgeSettings) -> SampleResult | None:
    """The grade of ``record`` when no judge call is needed, else ``None``.

    Raises:
        UsageError: an open record with the rules off and no judge.
    """
    if record.error is not None:
        return answer_error(record)
    if record.is_choice:
        return grade_choice(record, record.pred.content)
    return decide_open(record, record.pred.content, rules=judge.rules,
                       judged=judge.judge is not None)  # fmt: skip


async def judge_pending(
    pending: Sequence[PredictionRecord], judge: JudgeSettings, *, parallel: int
) -> list[SampleResult]:
    """Ask the judge about each record the rules left open, ``parallel`` at a time."""
    assert judge.judge is not None
    asker = judge.judge
    limit = asyncio.Semaphore(max(1, parallel))

    async def one(record: PredictionRecord) -> SampleResult:
        content = record.pred.content
        assert content is not None
        async with limit:
            verdict = await asker(record.to_item(), content)
        return from_verdict(record, verdict)

    return list(await asyncio.gather(*(one(record) for record in pending)))


async def evaluate_records(
    records: Iterable[PredictionRecord],
    judge: JudgeSettings,
    *,
    group_by: Sequence[str] = (),
    hook: MetricsHook | None = None,
    hook_file: str = "metrics hook",
    parallel: int = 4,
    before_judging: Callable[[], Awaitable[None]] | None = None,
) -> dict[str, Any]:
    """Grade ``records`` (any iterable: a list, or :func:`~assay.qa.records.iter_predictions`
    to stream a file) and return the ``metrics.json`` document.

    ``before_judging`` is awaited once, only if some record needs the judge (to start it).

    Raises:
        UsageError: see :func:`decide`.
        DatasetError: a bad line, when ``records`` streams a file.
        TaskFileError: the metrics hook failed or returned an invalid dict.
    """
    views: list[Mapping[str, Any]] = []
    results: list[SampleResult | None] = []
    pending: list[tuple[int, PredictionRecord]] = []
    keys = (*_VIEW_FIELDS, *{path.split(".")[0] for path in group_by} - set(_VIEW_FIELDS))
    for record in records:
        result = decide(record, judge)
        if result is None:
            pending.append((len(results), record))
        results.append(result)
        views.append(record.model_dump(mode="json") if hook is not None else
                     _view(record.__dict__, keys))  # fmt: skip
    if pending:
        if before_judging is not None:
            await before_judging()
        judged = await judge_pending([r for _, r in pending], judge, parallel=parallel)
        for (position, _), result in zip(pending, judged, strict=True):
            results[position] = result
    graded = [result for result in results if result is not None]
    all_metrics = []
    replicates = []
    for positions in _replicates(views):
        replicates.append(([views[i] for i in positions], [graded[i] for i in positions]))
        all_metrics.append(replicate_metrics(
            *replicates[-1], group_by=group_by, hook=hook, hook_file=hook_file,
        ))  # fmt: skip
    return metrics_document(all_metrics, pooled_intervals(replicates, group_by=group_by))


def _view(fields: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """What the metrics read from a record (a hook gets every field instead): the ids, the
    prompt type, ``meta`` and the top-level fields ``group_by`` names; the long texts are
    not kept, so memory does not grow with the prompts."""
    return {key: fields.get(key) for key in keys}


def _replicates(views: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """Record positions per replicate (ascending), each in sample order."""
    groups: dict[int, list[int]] = defaultdict(list)
    for position, view in enumerate(views):
        groups[view["repeat"]].append(position)
    return [
        sorted(groups[replicate], key=lambda i: views[i]["sample_index"])
        for replicate in sorted(groups)
    ]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while many long-lived objects are built.

    Grading 100,000 records allocates millions of containers that all stay alive; every
    collection the allocations trigger scans them again, which doubled the time of reading and
    grading a large ``prediction.jsonl``. Nothing built here forms a reference cycle, and the
    collector is restored (and run by the interpreter as usual) afterwards.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            # Everything allocated while paused sits in the youngest generation, which the
            # first allocation after gc.enable() would scan whole (0.2 s at 100,000 records);
            # freeze + unfreeze moves it to the oldest generation instead, scanned as rarely
            # as any long-lived object.
            gc.freeze()
            gc.enable()
            gc.unfreeze()
