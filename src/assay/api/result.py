"""What :func:`assay.run`, :func:`assay.evaluate` and :func:`assay.report` return: the run
folder, its suites with their metrics and gates, the exit code the command line would give,
and the row results, read from their ``task.json`` files only when asked for."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from assay.errors import UsageError
from assay.orchestration.running.rundir import item_dir
from assay.reports.writer import Reports
from assay.results.io import read_json
from assay.results.run import RunSummary, SecretFindingRecord
from assay.results.run_file import iter_task_rows, read_summary
from assay.results.run_folder import entry_task_jsons, is_replicate, load_task_json
from assay.results.suite import CriterionAggregate, SuiteRollup
from assay.results.task_result import EvaluationResult


@dataclass(frozen=True)
class Gate:
    """One suite threshold: ``actual_value >= min_value`` passes; a metric that was never
    produced (``actual_value`` ``None``) fails. ``bound`` is ``point`` (the metric's value)
    or ``lower`` (``actual_value`` is the lower bound of its 95% interval); ``note`` says
    when a point gate's interval straddles the threshold."""

    criterion_type: str
    metric: str
    min_value: float
    actual_value: float | None
    passed: bool
    bound: str = "point"
    note: str | None = None


class SuiteResult:
    """One suite of one variant (its ``suite.json``).

    Attributes:
        suite_id: the task file's ``task_id``.
        variant_id: ``default`` without an experiment.
        folder: ``<run>/<variant>/<suite>/``.
        rollup: the whole ``suite.json`` (:class:`~assay.results.suite.SuiteRollup`).
    """

    def __init__(self, run_dir: Path, rollup: SuiteRollup) -> None:
        self.suite_id = rollup.suite_id
        self.variant_id = rollup.variant_id
        self.folder = run_dir / rollup.variant_id / rollup.suite_id
        self.rollup = rollup

    def __repr__(self) -> str:
        gate = ("passed" if self.passed else "failed") if self.gates else "no gate"
        return f"SuiteResult({self.suite_id!r}, variant={self.variant_id!r}, {gate})"

    @property
    def passed(self) -> bool:
        """``suite.json``'s verdict, which the exit code reads: every gate passed and no
        planned row is missing (a suite without gates has only the second condition; see
        :attr:`gates`)."""
        return self.rollup.passed

    @property
    def criteria(self) -> list[CriterionAggregate]:
        """Each criterion's aggregate, in ``success_criteria`` order: ``metrics`` (``None``
        where undefined, the reason in ``undefined_metrics``), ``threshold_checks``."""
        return self.rollup.criterion_aggregates

    @property
    def metrics(self) -> dict[str, float | None]:
        """The first criterion's metrics (``accuracy``, ``macro_f1``, ``recall.<label>``,
        ``mean``, ``completion_rate``, …); the others' are in :attr:`criteria`. Proportions
        are in [0, 1]; an undefined metric is ``None``."""
        return dict(self.criteria[0].metrics) if self.criteria else {}

    @property
    def gates(self) -> list[Gate]:
        """Every suite threshold of every criterion, with its value; empty: no gate."""
        return [
            Gate(a.criterion_type, c.metric, c.min_value, c.actual_value, c.passed, c.bound, c.note)
            for a in self.criteria
            for c in a.threshold_checks
        ]

    @property
    def rows_total(self) -> int:
        """Row-tasks of the suite (rows × replicates), those that never ran included."""
        return self.rollup.rows_total

    @property
    def pass_rate(self) -> float | None:
        """Passed rows over graded rows (errored rows excluded); ``None`` with none graded."""
        return self.rollup.pass_rate

    def rows(self) -> Iterator[EvaluationResult]:
        """The suite's row results (``task.json``), in row then replicate order, each read
        when reached.

        Raises:
            UsageError: a ``task.json`` is not valid.
        """
        if not self.folder.is_dir():
            return
        for path in entry_task_jsons(self.folder):
            yield load_task_json(path)


class RunResult:
    """One run: its folder, suites, exit code and rows.

    Attributes:
        run_dir: ``runs/<timestamp>/``.
        summary: its ``run.json`` (:class:`~assay.results.run.RunSummary`): counts,
            durations, tokens, cost, selections, warnings; without its rows
            (``task_results`` is left empty, whatever the run's size: :meth:`rows` reads
            them).
        suites: every suite of every variant, in report order.
        exit_code: what ``assay run`` would exit with: 0 green, 1 a gate or row failed or a
            row errored, 130 interrupted.
        html_report: the ``report.html`` written with the result (``html=True``), or
            ``None``.
    """

    def __init__(
        self, run_dir: Path, summary: RunSummary, suites: list[SuiteResult], exit_code: int
    ) -> None:
        self.run_dir = run_dir
        self.summary = summary
        self.suites = suites
        self.exit_code = exit_code
        self.html_report: Path | None = None

    def __repr__(self) -> str:
        return f"RunResult({str(self.run_dir)!r}, exit_code={self.exit_code})"

    @classmethod
    def from_reports(cls, run_dir: Path, reports: Reports) -> RunResult:
        """The result of a run whose reports were just written."""
        suites = [SuiteResult(run_dir, rollup) for rollup in reports.suites]
        return cls(run_dir, reports.summary, suites, reports.exit_code)

    @classmethod
    def open(cls, run_dir: str | Path) -> RunResult:
        """A run as its reports on disk say (``run.json`` and each ``suite.json``), without
        writing anything.

        Raises:
            UsageError: ``run_dir`` has no valid ``run.json`` (it never finished a session:
                :func:`assay.report` writes one).
        """
        folder = Path(run_dir).resolve()
        try:
            summary = read_summary(folder / "run.json")
        except (OSError, ValueError) as exc:
            raise UsageError(f"{folder} has no valid run.json ({str(exc).splitlines()[0]})",
                             hint="rebuild it with assay.report(run_dir)") from None  # fmt: skip
        suites = [
            SuiteResult(folder, SuiteRollup.model_validate(read_json(folder / ref.suite_json)))
            for ref in summary.suites
        ]
        return cls(folder, summary, suites, summary.exit_code or 0)

    @property
    def passed(self) -> bool:
        """The run is green (exit code 0)."""
        return self.exit_code == 0

    @property
    def interrupted(self) -> bool:
        """The run was stopped (Ctrl-C, SIGTERM) before every row finished; finished rows
        are kept and it can be resumed."""
        return self.summary.interrupted

    @property
    def warnings(self) -> list[str]:
        """Warnings of the plan and the run (unused fields, judges that failed their
        sanity check, …)."""
        return list(self.summary.warnings)

    @property
    def secret_findings(self) -> list[SecretFindingRecord]:
        """Secrets the scan found in the run folder (file, line, kind; never the value); any
        makes :attr:`exit_code` 1 where it would have been 0."""
        return list(self.summary.secret_findings)

    def suite(self, suite_id: str, *, variant: str | None = None) -> SuiteResult:
        """The suite ``suite_id`` (of ``variant``; needed when the run has several).

        Raises:
            UsageError: no such suite, or several variants and none chosen.
        """
        found = [s for s in self.suites if s.suite_id == suite_id]
        if variant is not None:
            found = [s for s in found if s.variant_id == variant]
        if len(found) == 1:
            return found[0]
        if found:
            variants = [s.variant_id for s in found]
            raise UsageError(f"suite '{suite_id}' ran in variants {variants}; pass variant=")
        names = sorted({f"{s.suite_id} [{s.variant_id}]" for s in self.suites})
        raise UsageError(f"no suite '{suite_id}'" + (f" in variant '{variant}'" if variant
                         else "") + f"; the run has {names}")  # fmt: skip

    def rows(
        self, *, suite: str | None = None, variant: str | None = None
    ) -> Iterator[EvaluationResult]:
        """Row results (``task.json``) in report order, each read when reached, so asking
        for one suite of a 100,000-row run reads only that suite's files.

        Args:
            suite: only this suite (``None``: every row, tasks without a dataset included).
            variant: only this variant.

        Raises:
            UsageError: a ``task.json`` is not valid.
        """
        for row in iter_task_rows(self.run_dir / "run.json"):
            if suite is not None and row.suite_id != suite:
                continue
            if variant is not None and row.variant_id != variant:
                continue
            yield load_task_json(self.run_dir / row.task_json)

    def row_file(
        self,
        task_id: str,
        *,
        suite: str | None = None,
        row_id: str | None = None,
        replicate: int = 0,
        variant: str = "default",
    ) -> Path:
        """Where the run keeps one row-task's ``task.json`` (it may not exist: a row that
        did not finish); the arguments are :meth:`row`'s.

        Raises:
            UsageError: ``task_id`` is not the row's (``suite`` or ``suite/row_id``).
            TypeError: an argument of another type (naming it).
        """
        _check_row_arguments(task_id, suite=suite, row_id=row_id, replicate=replicate,
                             variant=variant)  # fmt: skip
        if row_id is not None:
            if suite is None:
                own = task_id.endswith(f"/{row_id}")
                suite = task_id[: -len(row_id) - 1] if own else task_id
            if task_id not in (suite, f"{suite}/{row_id}"):
                raise UsageError(
                    f"the row {row_id!r} of suite {suite!r} belongs to the task "
                    f"{suite!r} (its row-task {suite}/{row_id}), not {task_id!r}"
                )
        folder = item_dir(self.run_dir, variant_id=variant, task_id=task_id, suite_id=suite,
                          row_id=row_id, replicate=replicate)  # fmt: skip
        return folder / "task.json"

    def row(
        self,
        task_id: str,
        *,
        suite: str | None = None,
        row_id: str | None = None,
        replicate: int = 0,
        variant: str = "default",
    ) -> EvaluationResult | None:
        """One row-task's result (its ``task.json``), found by where the run keeps it, without
        reading the others; ``None`` when it did not finish (never run, or cut by a stop); a
        variant, suite or task the run does not have is an error, as is a suite's row asked
        for without its ``row_id``.

        Args:
            task_id: the task's id (``suite/row_id``, the row-task's, is taken too); for a
                task without a dataset, the whole row-task.
            suite: the suite (dataset) of a row: the task's id unless given.
            row_id: the row's id in that suite.
            replicate: which replicate (0 for the first).
            variant: the experiment's variant (``"default"`` outside an experiment).

        Raises:
            UsageError: the ``task.json`` is there but not valid, or ``task_id`` is not the
                row's, or the run has no such variant, suite or task (named with what it has).
            TypeError: an argument of another type (naming it).
        """
        path = self.row_file(task_id, suite=suite, row_id=row_id, replicate=replicate,
                             variant=variant)  # fmt: skip
        if path.is_file():
            return load_task_json(path)
        self._check_row_place(task_id if row_id is None else (suite or task_id), row_id,
                              variant)  # fmt: skip
        return None

    def _check_row_place(self, entry: str, row_id: str | None, variant: str) -> None:
        """Tell a mistake from a row that did not finish: the run has no such variant, suite
        or task, or a dataset task's row was asked for without its ``row_id``.

        Raises:
            UsageError: naming what the run has.
        """

        def listed(folder: Path) -> list[str]:
            return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() \
                else []  # fmt: skip

        variants = [v for v in listed(self.run_dir) if listed(self.run_dir / v)]
        if variants and variant not in variants:
            raise UsageError(f"the run has no variant {variant!r}; it has {variants}")
        entries = listed(self.run_dir / variant)
        if entries and entry.split("/", 1)[0] not in entries:
            raise UsageError(f"the run has no suite or task {entry!r} in variant {variant!r}; "
                             f"it has {entries}")  # fmt: skip
        folder = self.run_dir / variant / entry
        if row_id is None and "/" not in entry and any(
                not is_replicate(name, str(folder / name)) and not name.isdigit()
                for name in listed(folder)):  # fmt: skip
            raise UsageError(f"{entry!r} is a suite of rows: give the row's row_id",
                             hint=f"e.g. row({entry!r}, row_id=...)")  # fmt: skip


def _check_row_arguments(
    task_id: object, *, suite: object, row_id: object, replicate: object, variant: object
) -> None:
    """:meth:`RunResult.row`'s arguments, each of its type.

    Raises:
        TypeError: naming the argument and what it takes.
    """
    texts = {"task_id": task_id, "variant": variant}
    optional = {"suite": suite, "row_id": row_id}
    for name, value in [*texts.items(), *optional.items()]:
        if not isinstance(value, str) and not (name in optional and value is None):
            raise TypeError(f"row()'s {name} takes a string" + (" or None" if name in optional
                            else "") + f", not {type(value).__name__}")  # fmt: skip
    if isinstance(replicate, bool) or not isinstance(replicate, int) or replicate < 0:
        raise TypeError(f"row()'s replicate takes a whole number from 0, not {replicate!r}")
