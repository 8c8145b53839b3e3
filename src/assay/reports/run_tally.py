"""A run's reports counted one row at a time: each suite's :class:`SuiteTally`, the run's
totals for ``run.json``, each JUnit test suite's counts, and every row's line of
``run.json``/JUnit sent to a sorted spill. Memory holds no row, except compact copies where a
report needs them all at once: a QA suite's rows (``prediction.jsonl`` and the metrics hook
take whole replicates), an experiment's rows (paired bootstrap), and the rows of tasks
without a dataset (a few replicates each)."""

from __future__ import annotations

import json
import platform
import sys
from collections import defaultdict
from datetime import datetime
from typing import Any

from assay.criteria.registry import CriterionRegistry
from assay.metrics.streaming import ExactSum
from assay.reports.junit import SuiteCounts, case_of
from assay.reports.meta import RunMeta, suite_criteria
from assay.reports.rollup import SuiteTally
from assay.reports.spill import SortedLines
from assay.reports.suite_rules import order_key, task_json_relpath
from assay.results.run import RunSummary, SuiteRef, TaskRow
from assay.results.status import FinalStatus, RowCounts
from assay.results.suite import SuiteRollup
from assay.results.task_result import (
    EvaluationResult,
    JudgeCriterionResult,
    JudgeSpend,
    TaskConfigRecord,
    TokenUsage,
    judge_spend,
)
from assay.spec.criteria import CriterionSpec

SuiteKey = tuple[str, str]
SEPARATOR = "\x1e"  # between a spilled line's parts (JSON never holds it unescaped)


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def spilled(line: str) -> tuple[tuple[str, str], str, str]:
    """A spilled line's test suite (variant, suite or task), ``run.json`` row and JUnit case
    (both JSON)."""
    group, row, case = line.split(SEPARATOR)
    variant, name = json.loads(group)
    return (variant, name), row, case


def compact(result: EvaluationResult, *, keep_row: bool) -> EvaluationResult:
    """``result`` without what no report that keeps rows reads: the transcript, the commands'
    output, the resolved task beyond its criteria and ``qa:`` block (and the row itself
    unless ``keep_row``)."""
    resolved = result.task_config.resolved
    config = TaskConfigRecord(
        resolved={k: resolved[k] for k in ("qa", "success_criteria") if k in resolved},
        source_file=result.task_config.source_file, task_dir=result.task_config.task_dir,
    )  # fmt: skip
    return result.model_copy(update={
        "transcript": None, "pre_run_results": [], "post_run_results": [],
        "task_config": config, "row": result.row if keep_row else None,
    })  # fmt: skip


class _Active:
    """Each session's active time: a killed session ends at its last finished row."""

    def __init__(self, sessions: list[tuple[datetime, datetime | None]], now: datetime) -> None:
        self.sessions = sessions
        self.now = now
        self.last: list[datetime | None] = [None] * len(sessions)

    def add(self, completed_at: str) -> None:
        moment = datetime.fromisoformat(completed_at)
        for index, (start, end) in enumerate(self.sessions):
            if end is not None:
                continue
            limit = self.sessions[index + 1][0] if index + 1 < len(self.sessions) else self.now
            seen = self.last[index]
            if start <= moment <= limit and (seen is None or moment > seen):
                self.last[index] = moment

    def seconds(self) -> float:
        total = 0.0
        for index, (start, end) in enumerate(self.sessions):
            total += ((end or self.last[index] or start) - start).total_seconds()
        return total


class RunTally:
    """Everything the reports count, fed one row at a time (:meth:`add`)."""

    def __init__(self, meta: RunMeta, registry: CriterionRegistry) -> None:
        self.meta = meta
        self.registry = registry
        self.variants = {v: i for i, v in enumerate(meta.variant_ids)}
        self.suites: dict[SuiteKey, SuiteTally] = {}
        self.junit: dict[SuiteKey, SuiteCounts] = defaultdict(SuiteCounts)
        self.qa_rows: dict[SuiteKey, list[EvaluationResult]] = defaultdict(list)
        self.kept: list[EvaluationResult] = []
        self.standalone: list[EvaluationResult] = []
        self.standalone_rows: list[TaskRow] = []
        self.judges: dict[tuple[str, str], dict[str, Any]] = {}  # each judge once, first met
        self.counts: dict[str, int] = dict.fromkeys(RowCounts.__dataclass_fields__, 0)
        self.tokens = TokenUsage()
        self.budgets = {FinalStatus.TOKEN_BUDGET_EXCEEDED: 0, FinalStatus.TIMEOUT: 0,
                        FinalStatus.COST_BUDGET_EXCEEDED: 0}  # fmt: skip
        self.cost = ExactSum()
        self.cost_complete = True
        self.simulator = [0, 0]  # input and output tokens of the simulated users
        self.simulator_cost = ExactSum()
        self.usage_from_cli = 0
        self.usage_unknown = 0
        self.judge_tokens = 0
        self.judge_cost = ExactSum()
        self.judge_unpriced = 0
        self.from_cache = 0
        self.active = (_Active(meta.session_times, meta.end_time)
                       if meta.session_times is not None else None)  # fmt: skip

    def suite(self, variant: str, suite_id: str) -> SuiteTally:
        """The tally of a suite (an empty one for a planned suite without rows)."""
        found = self.suites.get((variant, suite_id))
        if found is None:
            criteria = suite_criteria(suite_id, [], self.meta, self.registry)
            found = self.suites[(variant, suite_id)] = self._tally(suite_id, criteria)
        return found

    def _tally(self, suite_id: str, criteria: list[CriterionSpec]) -> SuiteTally:
        """A new suite tally, clustering by the suite's recorded ``cluster_field``."""
        field = next((s.dataset.cluster_field for s in self.meta.selections
                      if s.task_id == suite_id), None)  # fmt: skip
        return SuiteTally(criteria, self.registry, cluster_field=field,
                          sequence=self.meta.sequence)  # fmt: skip

    def add(self, result: EvaluationResult, lines: SortedLines) -> None:
        """Count one row, and send its lines to ``lines``."""
        group = result.suite_id or result.task_id
        if result.suite_id is not None:
            key = (result.variant_id, result.suite_id)
            if key not in self.suites:
                criteria = suite_criteria(result.suite_id, [result], self.meta, self.registry)
                self.suites[key] = self._tally(result.suite_id, criteria)
            self.suites[key].add(result)
            if result.qa_record:
                self.qa_rows[key].append(compact(result, keep_row=False))
        else:
            self.standalone.append(compact(result, keep_row=False))
            self.standalone_rows.append(self._row(result))
        if self.meta.experiment_id is not None:
            self.kept.append(compact(result, keep_row=True))
        self._count(result)
        for item in result.success_criteria_results:
            if isinstance(item, JudgeCriterionResult):
                key = (item.judge.name, item.judge.content_hash)
                if key not in self.judges:
                    self.judges[key] = item.judge.model_dump(mode="json")
        self.junit[(result.variant_id, group)].add(result)
        sort_key = [self.variants.get(result.variant_id, len(self.variants)), result.variant_id,
                    group, *order_key(result)]  # fmt: skip
        lines.add(sort_key, SEPARATOR.join((
            _json([result.variant_id, group]), self._row(result).model_dump_json(),
            _json(case_of(result)),
        )))  # fmt: skip

    def _count(self, result: EvaluationResult) -> None:
        self.counts[result.final_status.category] += 1
        usage = result.total_token_usage
        if usage is not None:
            for name in TokenUsage.model_fields:
                setattr(self.tokens, name, getattr(self.tokens, name) + getattr(usage, name))
        if result.final_status in self.budgets:
            self.budgets[result.final_status] += 1
        if result.cost_usd is not None:
            self.cost.add(result.cost_usd)
        elif result.agent.model_calls and (usage is not None or result.agent.response_chars):
            self.cost_complete = False  # unpriced, or answered without its usage
            self.usage_unknown += usage is None
        self._count_judges([*result.success_criteria_results,
                            *result.post_failure_criteria_results])  # fmt: skip
        dialog = result.simulation
        if dialog is not None:
            self.simulator[0] += dialog.simulator_input_tokens
            self.simulator[1] += dialog.simulator_output_tokens
            if dialog.simulator_cost_usd is not None:
                self.simulator_cost.add(dialog.simulator_cost_usd)
            self._add_judges(JudgeSpend(dialog.check_judge_tokens, dialog.check_judge_cost_usd,
                                        dialog.check_judge_unpriced))  # fmt: skip
        if result.transcript is not None and result.transcript.usage_source == "cli":
            self.usage_from_cli += 1
        self.from_cache += result.agent.cached
        if self.active is not None:
            self.active.add(result.completed_at)

    def _count_judges(self, results: list[Any]) -> None:
        """The judges' tokens and cost (a verdict with tokens but no price counted apart)."""
        self._add_judges(judge_spend(results))

    def _add_judges(self, spend: JudgeSpend) -> None:
        self.judge_tokens += spend.tokens
        if spend.cost_usd is not None:
            self.judge_cost.add(spend.cost_usd)
        self.judge_unpriced += spend.unpriced

    @staticmethod
    def _row(result: EvaluationResult) -> TaskRow:
        return TaskRow(task_id=result.task_id, suite_id=result.suite_id, row_id=result.row_id,
                       variant_id=result.variant_id, replicate_index=result.replicate_index,
                       final_status=result.final_status.value,
                       weighted_score=result.weighted_score,
                       duration_seconds=result.duration_seconds,
                       task_json=task_json_relpath(result))  # fmt: skip

    def suite_order(self) -> list[SuiteKey]:
        """Suites with rows in report order (variant, then suite id), then planned suites
        none of whose rows finished (they still get a report)."""
        ordered = sorted(self.suites, key=lambda k: (self.variants.get(k[0], len(self.variants)),
                                                     k[0], k[1]))  # fmt: skip
        for key in self.meta.planned:
            variant, _, suite_id = key.partition("/")
            if (variant, suite_id) not in self.suites:
                ordered.append((variant, suite_id))
        return ordered

    def standalone_results(self) -> list[EvaluationResult]:
        """The rows of tasks without a dataset."""
        return self.standalone

    def summary(
        self, suites: list[SuiteRollup], refs: list[SuiteRef], exit_code: int
    ) -> RunSummary:
        """``run.json`` without its rows (they are written from the sorted spill)."""
        from assay.version import __version__

        meta, counts = self.meta, RowCounts(**self.counts)
        total = counts.total
        active = self.active.seconds() if self.active is not None else meta.active_seconds
        return RunSummary(
            run_id=meta.run_id, stage=meta.stage, start_time=meta.start_time.isoformat(),
            end_time=meta.end_time.isoformat(),
            total_duration_seconds=active if active is not None
            else (meta.end_time - meta.start_time).total_seconds(),
            sessions=meta.sessions, total_token_usage=self.tokens, tasks_run=total,
            tasks_succeeded=counts.passed, tasks_failed=counts.failed, tasks_error=counts.error,
            tasks_refused=counts.refused, tasks_not_graded=counts.not_graded,
            tasks_graded=counts.graded, pass_rate=counts.pass_rate,
            pass_rate_macro=self._macro_pass_rate(suites),
            pass_rate_macro_left_out=self._macro_left_out(suites),
            refusal_rate=counts.refusal_rate,
            error_share=counts.error / total if total else None,
            tasks_token_budget_exceeded=self.budgets[FinalStatus.TOKEN_BUDGET_EXCEEDED],
            tasks_timeout=self.budgets[FinalStatus.TIMEOUT],
            tasks_cost_budget_exceeded=self.budgets[FinalStatus.COST_BUDGET_EXCEEDED],
            total_cost_usd=self.cost.total if self.cost.count else None,
            cost_complete=self.cost_complete, rows_usage_from_cli=self.usage_from_cli,
            rows_usage_unknown=self.usage_unknown, judge_tokens=self.judge_tokens,
            judge_cost_usd=self.judge_cost.total if self.judge_cost.count else None,
            judge_results_unpriced=self.judge_unpriced,
            rows_from_cache=self.from_cache,
            simulator_input_tokens=self.simulator[0], simulator_output_tokens=self.simulator[1],
            simulator_cost_usd=self.simulator_cost.total if self.simulator_cost.count else None,
            interrupted=meta.interrupted, exit_code=exit_code, max_parallel=meta.max_parallel,
            command=meta.command, skipped_tasks=meta.skipped, selections=meta.selections,
            suites=refs, judges=list(self.judges.values()), task_criteria=meta.criteria,
            warnings=meta.warnings, task_results=[],
            framework_version=__version__,
            environment_info={"python": sys.version.split()[0], "platform": platform.platform()},
        )  # fmt: skip

    def _macro_left_out(self, suites: list[SuiteRollup]) -> list[str]:
        """``variant/suite`` (or ``variant/task``) of every suite the macro pass rate left
        out: it graded no row (every row errored, refused or was not graded)."""
        left = [f"{s.variant_id}/{s.suite_id}" for s in suites if s.pass_rate is None]
        standalone: dict[tuple[str, str], list[FinalStatus]] = defaultdict(list)
        for result in self.standalone:
            standalone[(result.variant_id, result.task_id)].append(result.final_status)
        for (variant, task), statuses in standalone.items():
            if RowCounts.of(statuses).pass_rate is None:
                left.append(f"{variant}/{task}")
        return left

    def _macro_pass_rate(self, suites: list[SuiteRollup]) -> float | None:
        """The mean of the suites' pass rates; each task without a dataset is a suite of its
        replicates; suites that graded nothing are left out (``None`` when none graded)."""
        rates = [s.pass_rate for s in suites if s.pass_rate is not None]
        standalone: dict[tuple[str, str], list[FinalStatus]] = defaultdict(list)
        for result in self.standalone:
            standalone[(result.variant_id, result.task_id)].append(result.final_status)
        for statuses in standalone.values():
            rate = RowCounts.of(statuses).pass_rate
            if rate is not None:
                rates.append(rate)
        return sum(rates) / len(rates) if rates else None
