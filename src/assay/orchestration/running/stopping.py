"""``experiment.stop``: run rows in a seeded random order, both variants of a row together,
and stop scheduling rows once the anytime-valid test of the paired difference is decided
(:mod:`assay.metrics.sequential`).

:class:`Stopper` orders the pending work items (row by row, each row's items of both
variants and every replicate together, rows shuffled with the rule's seed), hears every
finished item, turns each row whose items have all finished into one paired difference (the
second variant's pass fraction minus the first's; a row that graded in neither is left out)
and feeds it to the test in the shuffled order: a row that finishes before one ahead of it
waits for it (a variant whose failures take longer would otherwise reach the test late, and
the test's error guarantee needs the rows in random order). With ``dataset.cluster_field``
the test's unit is the cluster: a cluster's rows run together, clusters are shuffled, and a
cluster is one difference (the mean of its rows') once all its rows have finished (rows of
one cluster are not independent, and the test's guarantee needs independent differences:
fed row by row it rejected a true null about a third of the time). Once decided, no new item
starts; the items already running finish.
``stopping.json`` records the decision, the rows and calls spent, and what the fixed design
(every planned row) would have spent; the reports read it (:func:`read_stopping`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from assay.errors import UsageError
from assay.metrics.clustered import cluster_of
from assay.metrics.sequential import SequentialTest
from assay.orchestration.planning.expand import cluster_field
from assay.orchestration.planning.plan import Plan, PlannedTask, WorkItem, WorkItems
from assay.orchestration.running.executors.base import PendingItems
from assay.results.io import Writer
from assay.results.task_result import EvaluationResult
from assay.spec.experiment import StopRule
from assay.spec.run_names import STOPPING_FILE as STOPPING_FILE  # re-exported

RowKey = tuple[str, str]


@dataclass
class Stopper:
    """The stopping rule of one run (module docstring)."""

    rule: StopRule
    variants: tuple[str, str]
    order: list[list[int]]
    """Per unit (a row, or a cluster's rows) with pending items, in the shuffled order: those
    items' indexes (both variants)."""
    expected: dict[RowKey, int]
    """``(suite, row)`` → the items of the row (both variants, every replicate); one entry per
    planned row, those finished in an earlier session included."""
    planned_items: int
    test: SequentialTest
    clustered: bool = False
    """The units are clusters (``dataset.cluster_field``), not rows."""
    seen: dict[RowKey, list[EvaluationResult]] = field(default_factory=lambda: defaultdict(list))
    scheduled: int = 0
    finished: int = 0
    calls: int = 0
    rank: dict[RowKey, int] = field(default_factory=dict)
    """``(suite, row)`` → its unit's position in the shuffled order (for :meth:`replay`)."""
    sizes: dict[int, int] = field(default_factory=dict)
    """A unit's position → its planned rows."""
    keys: list[list[RowKey]] = field(default_factory=list)
    """The rows of each unit of :attr:`order`."""
    started_rows: set[RowKey] = field(default_factory=set)
    """The rows scheduled so far, in this session or an earlier one (a row interrupted
    half-way and scheduled again counts once)."""
    sequence: list[RowKey] = field(default_factory=list)
    """``(suite, row)`` of each row whose items have all finished, in the order the test
    heard them (the gates of a stopped run read each variant's values in this order)."""
    gathering: dict[int, list[tuple[RowKey, float | None]]] = field(default_factory=dict)
    """Finished rows of units not finished yet, by the unit's place."""
    held: dict[int, list[tuple[RowKey, float | None]]] = field(default_factory=dict)
    """Finished units the test has not heard yet, by place in the shuffled order: a unit is
    heard only after every unit before it (rows that take longer to fail would otherwise be
    heard late, and the test's guarantee needs the units in random order)."""
    next_place: int = 0

    @property
    def unit(self) -> str:
        """What the test's differences are of: ``rows`` or ``clusters``."""
        return "clusters" if self.clustered else "rows"

    @property
    def rows_scheduled(self) -> int:
        """The distinct rows scheduled, over every session."""
        return len(self.started_rows)

    @classmethod
    def of(cls, plan: Plan, items: Sequence[WorkItem], kept: bytearray) -> Stopper | None:
        """The stopper of ``plan`` when its experiment has a ``stop`` rule, else ``None``."""
        experiment = plan.experiment
        if experiment is None or experiment.stop is None or len(plan.variants) != 2:
            return None
        if not isinstance(items, WorkItems):
            return None
        rule = experiment.stop
        units: dict[tuple[int, int], list[int]] = defaultdict(list)  # (task, first row) → items
        members: dict[tuple[int, int], list[RowKey]] = defaultdict(list)
        expected: dict[RowKey, int] = {}
        clustered = False
        for block, (planned, _, repeats) in enumerate(items.blocks):
            task_number = plan.tasks.index(planned)
            firsts = _cluster_firsts(planned)
            clustered = clustered or firsts is not None
            for row in range(len(planned.expansion.row_tasks)):
                start = items._starts[block] + row * repeats
                unit = (task_number, firsts[row] if firsts is not None else row)
                units[unit].extend(i for i in range(start, start + repeats) if not kept[i])
                key = _row_key(plan, task_number, row)
                if key not in expected:
                    members[unit].append(key)
                expected[key] = expected.get(key, 0) + repeats
        keys = sorted(units)
        shuffled = [keys[i] for i in np.random.default_rng(rule.seed).permutation(len(keys))]
        stopper = cls(rule, (plan.variants[0], plan.variants[1]),
                      [units[k] for k in shuffled if units[k]], expected, len(items),
                      SequentialTest(alpha=rule.alpha, delta=rule.delta),
                      clustered=clustered)  # fmt: skip
        stopper.rank = {row: place for place, unit in enumerate(shuffled) for row in members[unit]}
        stopper.sizes = {place: len(members[unit]) for place, unit in enumerate(shuffled)}
        stopper.keys = [members[k] for k in shuffled if units[k]]
        return stopper

    def replay(self, results: Iterable[EvaluationResult]) -> None:
        """Hear the items a resumed run finished before, row by row in the rule's shuffled
        order, so the test goes on from where the run left it (a run that was decided stays
        decided, and no new row starts)."""
        ordered = sorted(
            results, key=lambda r: self.rank.get((r.suite_id or "", r.row_id or ""), 0)
        )
        self.started_rows |= {(r.suite_id or "", r.row_id or "") for r in ordered}
        self.scheduled += len(ordered)
        for result in ordered:
            self.observe(result)

    def indexes(self) -> Iterator[int]:
        """The pending items' indexes row by row, until the test is decided."""
        for rows, unit in zip(self.keys, self.order, strict=True):
            if self.test.decision is not None:
                return
            self.started_rows.update(rows)
            for index in unit:
                self.scheduled += 1
                yield index

    def observe(self, result: EvaluationResult) -> None:
        """Hear one finished item; a row whose items have all finished updates the test."""
        self.finished += 1
        self.calls += result.agent.model_calls
        if result.suite_id is None or result.row_id is None:
            return
        key = (result.suite_id, result.row_id)
        self.seen[key].append(result)
        if len(self.seen[key]) < self.expected.get(key, 0):
            return
        place = self.rank.get(key, len(self.rank))
        unit = self.gathering.setdefault(place, [])
        unit.append((key, self._difference(self.seen.pop(key))))
        if len(unit) < self.sizes.get(place, 1):
            return
        self.held[place] = self.gathering.pop(place)
        while self.next_place in self.held:  # in the shuffled order, never as they finish
            heard = self.held.pop(self.next_place)
            self.next_place += 1
            self.sequence.extend(row for row, _ in heard)
            differences = [d for _, d in heard if d is not None]
            if differences:  # a cluster's rows are one difference: the mean of theirs
                self.test.add(sum(differences) / len(differences))

    def _difference(self, results: list[EvaluationResult]) -> float | None:
        """The row's paired difference (the second variant's pass fraction minus the
        first's), or ``None`` when a variant graded none of its items."""
        fractions = []
        for variant in self.variants:
            graded = [r for r in results if r.variant_id == variant and r.final_status.graded]
            if not graded:
                return None  # this row says nothing about the difference
            passed = sum(r.final_status.category == "passed" for r in graded)
            fractions.append(passed / len(graded))
        return fractions[1] - fractions[0]

    def record(self) -> dict[str, Any]:
        """The ``stopping.json`` document."""
        state = self.test.state()
        return {
            "schema_version": 1,
            "rule": self.rule.model_dump(mode="json"),
            "variant_a": self.variants[0],
            "variant_b": self.variants[1],
            "decision": state.decision,
            "stopped": state.decision != "undecided",
            "reason": state.reason(*self.variants, unit=self.unit),
            "unit": self.unit,
            "rows_decided": state.rows,
            "rows_scheduled": self.rows_scheduled,
            "items_scheduled": self.scheduled,
            "items_finished": self.finished,
            "model_calls": self.calls,
            "rows_planned": len(self.expected),
            "items_planned": self.planned_items,
            "low": None if np.isnan(state.low) else state.low,
            "high": None if np.isnan(state.high) else state.high,
            "sequence": [list(key) for key in self.sequence],
        }


@dataclass(frozen=True)
class StoppingItems(PendingItems):
    """:class:`PendingItems` in the stopper's order, ending once it has decided (the local
    executor reads them one at a time, the Ray executor as its nodes have room)."""

    stopper: Stopper | None = None

    def __len__(self) -> int:
        assert self.stopper is not None
        return sum(len(row) for row in self.stopper.order)

    def indexes(self) -> Iterator[int]:
        """The stopper's order (see :meth:`Stopper.indexes`)."""
        assert self.stopper is not None
        return self.stopper.indexes()


def _cluster_firsts(planned: PlannedTask) -> list[int] | None:
    """Per row of ``planned``, the first row of its ``dataset.cluster_field`` cluster (the
    cluster's place in the row order); ``None`` without a cluster field."""
    name = cluster_field(planned.loaded.definition)
    if name is None:
        return None
    firsts: dict[Hashable, int] = {}
    found = []
    for row, row_task in enumerate(planned.expansion.row_tasks):
        cluster = cluster_of(row_task.row, name, row_task.row_id or str(row))
        found.append(firsts.setdefault(cluster, row))
    return found


def _row_key(plan: Plan, task: int, row: int) -> RowKey:
    """``(task_id, row_id)`` of row ``row`` of the plan's task ``task``."""
    planned = plan.tasks[task]
    return planned.loaded.definition.task_id, planned.expansion.row_tasks[row].row_id or ""


def write_stopping(run_dir: Path, stopper: Stopper, writer: Writer) -> None:
    """Write ``stopping.json`` into the run folder, whole or not at all (a temporary file
    renamed into place).

    Raises:
        UsageError: it cannot be written (a full disk), with what to do.
    """
    try:
        writer.json(run_dir / STOPPING_FILE, stopper.record())
    except OSError as exc:
        raise UsageError(
            f"cannot write {STOPPING_FILE} into {run_dir}: {exc}",
            hint="the finished rows are kept: free space (or make the folder writable), "
            "then `assay run --resume RUN_DIR` reads them again and writes it",
        ) from None


def read_stopping(run_dir: Path) -> dict[str, Any] | None:
    """The run's ``stopping.json``, or ``None`` for a run that did not use a stop rule.

    Raises:
        UsageError: it is not a JSON object (cut short by a kill or a full disk), naming it
            and the fix.
    """
    path = run_dir / STOPPING_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        data = exc
    if not isinstance(data, dict):
        why = data if isinstance(data, Exception) else "not a JSON object"
        raise UsageError(
            f"{STOPPING_FILE} cannot be read ({why})",
            file=path,
            hint="`assay run --resume RUN_DIR` reads the finished rows again and writes it anew",
        )
    return data


def stopping_facts(
    run_dir: Path, planned: dict[str, int]
) -> tuple[dict[str, int], dict[tuple[str, str], int] | None]:
    """What the reports take from ``stopping.json`` (read once): the planned items per
    suite, or none when the run stopped when decided (the rows it did not schedule are not
    missing: the rule decided without them); and for a stopped run, ``(suite, row)`` → its
    place in the order the stopping test heard the rows (its intervals and gates are then
    the confidence sequence of the values in that order:
    :func:`assay.metrics.sequential.mean_confidence_sequence`), ``None`` for any other run
    or a ``stopping.json`` written before the order was recorded."""
    found = read_stopping(run_dir)
    if found is None or not found.get("stopped"):
        return planned, None
    order = found.get("sequence")
    sequence = None if order is None else {
        (str(suite), str(row)): place for place, (suite, row) in enumerate(order)}  # fmt: skip
    return {}, sequence
