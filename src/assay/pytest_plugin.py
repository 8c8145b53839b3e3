"""The pytest plugin (entry point ``pytest11``): task files as tests, and a fixture.

``pytest tasks/`` collects every YAML task file (a mapping with ``task_id``) under the paths
named on the command line: one test per row-task (named by its row id; ``row[01]`` for the
second replicate) and one per suite gate (``gate[<criterion>.<metric>>=<min>]``). The first
test of a file runs the file once, through :func:`assay.run`, with only the rows still
selected after ``-k``/``-m`` (all of them when a gate test is selected: a gate is over the
whole suite). A row test passes when its row succeeded; in a suite with gates, a row that
was graded and failed is reported ``xfail`` (the gates decide, as ``assay run``'s exit code
does); an errored row fails, unless the suite gates ``completion_rate`` itself. Failures
show each criterion's score, threshold and details, and the row's ``task.json``.

When task files are collected (ini option ``assay_collect``): ``auto`` (the default) only
under paths given on the command line (``pytest tasks/``), never from ``testpaths`` or a
bare ``pytest``, so a project's own test run does not start evaluations; ``always``;
``never``. ``--assay`` collects them in any case. Options: ``--assay-sample N``,
``--assay-model NAME``, ``--assay-jobs N``, ``--assay-run-dir DIR`` (default ``runs``).

The fixture ``assay_run`` runs tasks from a test function and returns the
:class:`~assay.api.RunResult` (runs go under the test's ``tmp_path`` unless ``run_dir`` is
given)::

    def test_sentiment(assay_run):
        result = assay_run("tasks/sentiment.yaml", sample=50)
        assert result.suite("sentiment").metrics["accuracy"] >= 0.8
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from assay.spec.source import load_yaml

if TYPE_CHECKING:
    from assay.api import RunResult
    from assay.orchestration.planning.plan import Plan
    from assay.results.task_result import EvaluationResult

SUFFIXES = (".yaml", ".yml")
TASK_KEY = re.compile(r"^task_id\s*:", re.MULTILINE)


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``--assay*`` options and the ``assay_collect`` ini option."""
    group = parser.getgroup("assay", "assay task files as tests")
    group.addoption("--assay", action="store_true", default=False,
                    help="Collect assay task files wherever pytest looks.")  # fmt: skip
    group.addoption("--assay-sample", type=int, default=None, metavar="N",
                    help="Run a uniform sample of N rows of each task file.")  # fmt: skip
    group.addoption("--assay-model", default=None, metavar="NAME",
                    help="Use this model in every task (agent.model).")  # fmt: skip
    group.addoption("--assay-jobs", type=int, default=4, metavar="N",
                    help="Row-tasks running at once (default 4).")  # fmt: skip
    group.addoption("--assay-run-dir", default="runs", metavar="DIR",
                    help="Folder that receives the runs (default runs).")  # fmt: skip
    parser.addini("assay_collect", "When task files are collected: auto (only under paths "
                  "named on the command line), always, never.", default="auto")  # fmt: skip


def _collecting(config: pytest.Config) -> bool:
    if config.getoption("assay"):
        return True
    mode = str(config.getini("assay_collect")).strip().lower()
    if mode == "always":
        return True
    if mode == "never":
        return False
    return config.args_source is pytest.Config.ArgsSource.ARGS


def is_task_file(path: Path) -> bool:
    """A YAML mapping with ``task_id``, or a file that does not parse but has a ``task_id``
    line (collected, so that its error is shown rather than the file skipped)."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        data = load_yaml(text)
    except yaml.YAMLError:
        return bool(TASK_KEY.search(text))
    return isinstance(data, dict) and "task_id" in data


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A :class:`TaskFile` for each task file, when collecting them (see the module)."""
    if file_path.suffix.lower() not in SUFFIXES or not _collecting(parent.config):
        return None
    if not is_task_file(file_path):
        return None
    node: pytest.Collector = TaskFile.from_parent(parent, path=file_path)
    return node


class TaskFile(pytest.File):
    """One task file: its row tests and gate tests, and the run they share."""

    plan: Plan
    _outcome: tuple[RunResult | None, BaseException | None] | None = None

    def collect(self) -> Iterator[pytest.Item]:
        """Plan the file (as ``assay plan``) and yield its tests.

        Raises:
            UserError: the file (or its dataset) is invalid; shown as a collection error.
        """
        from assay import api

        config = self.config
        self.plan = api.plan(self.path, sample=config.getoption("assay_sample"),
                             model=config.getoption("assay_model"))  # fmt: skip
        for planned in self.plan.tasks:
            repeats = planned.loaded.definition.replicates(self.plan.repeats_override)
            for row_task in planned.expansion.row_tasks:
                for replicate in range(repeats):
                    name = row_task.row_id or row_task.task_id
                    name += f"[{replicate:02d}]" if repeats > 1 else ""
                    yield RowTest.from_parent(
                        self, name=name, task_id=row_task.task_id, suite_id=row_task.suite_id,
                        row_id=row_task.row_id, replicate=replicate,
                    )  # fmt: skip
            for criterion in planned.loaded.definition.success_criteria:
                for metric, minimum in (criterion.suite_thresholds or {}).items():
                    yield GateTest.from_parent(
                        self, name=f"gate[{criterion.type}.{metric}>={minimum:g}]",
                        suite_id=planned.loaded.definition.task_id,
                        criterion_type=criterion.type, metric=metric,
                    )  # fmt: skip
                for metric, minimum in (criterion.suite_lower_bounds or {}).items():
                    yield GateTest.from_parent(
                        self, name=f"gate[{criterion.type}.{metric}.lower95>={minimum:g}]",
                        suite_id=planned.loaded.definition.task_id,
                        criterion_type=criterion.type, metric=metric, bound="lower",
                    )  # fmt: skip

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        """A task file error as assay prints it (file, line, field, hint)."""
        from assay.errors import UserError

        if isinstance(excinfo.value, UserError):
            return excinfo.value.render()
        return super().repr_failure(excinfo)

    def run_result(self) -> RunResult:
        """Run the file once (rows still selected); later calls return the same result.

        Raises:
            AssayError: the run could not start (every test of the file reports it).
        """
        if self._outcome is None:
            self._outcome = self._run()
        result, error = self._outcome
        if error is not None:
            raise error
        assert result is not None
        return result

    def _run(self) -> tuple[RunResult | None, BaseException | None]:
        from assay import api
        from assay.errors import AssayError

        mine = [item for item in self.session.items if item.parent is self]
        rows: dict[str, list[str]] | None = None
        if not any(isinstance(item, GateTest) for item in mine):
            rows = {}
            for item in mine:
                if isinstance(item, RowTest) and item.suite_id and item.row_id:
                    rows.setdefault(item.suite_id, []).append(item.row_id)
        config = self.config
        planned = {t.loaded.definition.task_id for t in self.plan.tasks}
        sample = None if rows and planned <= rows.keys() else config.getoption("assay_sample")
        try:
            result = api.run(self.path, sample=sample,
                             model=config.getoption("assay_model"),
                             jobs=config.getoption("assay_jobs"),
                             run_dir=config.getoption("assay_run_dir"), rows=rows)  # fmt: skip
        except AssayError as exc:
            return None, exc
        if result.interrupted:  # Ctrl-C stopped the run (its finished rows are reported)
            raise KeyboardInterrupt
        return result, None


class RowFailed(Exception):
    """A row-task that did not succeed; its message lists the criteria and their reasons."""


class RowTest(pytest.Item):
    """One row-task (one replicate) of a task file."""

    def __init__(
        self,
        *,
        task_id: str,
        suite_id: str | None,
        row_id: str | None,
        replicate: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.task_id, self.suite_id, self.row_id = task_id, suite_id, row_id
        self.replicate = replicate

    @property
    def task_file(self) -> TaskFile:
        """The task file this row belongs to."""
        assert isinstance(self.parent, TaskFile)
        return self.parent

    def runtest(self) -> None:
        """Pass when the row succeeded (see the module docstring for ``xfail``).

        Raises:
            RowFailed: the row did not succeed.
        """
        result = self.task_file.run_result()
        path = result.row_file(self.task_id, suite=self.suite_id, row_id=self.row_id,
                               replicate=self.replicate)  # fmt: skip
        row = result.row(self.task_id, suite=self.suite_id, row_id=self.row_id,
                         replicate=self.replicate)  # fmt: skip
        if row is None:
            raise RowFailed(f"{self.task_id} did not finish (no {path})")
        category = row.final_status.category
        if category == "passed":
            return
        text = describe(row, path)
        if self._gate_decides(result, category):
            pytest.xfail(text)
        raise RowFailed(text)

    def _gate_decides(self, result: RunResult, category: str) -> bool:
        if self.suite_id is None:
            return False
        gates = {g.metric for g in result.suite(self.suite_id).gates}
        return bool(gates) and (category == "failed" or "completion_rate" in gates)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        """The failed criteria and their reasons, or an assay error as assay prints it."""
        from assay.errors import UserError

        if isinstance(excinfo.value, RowFailed):
            return str(excinfo.value)
        if isinstance(excinfo.value, UserError):
            return excinfo.value.render()
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the test is: the task file and the row-task id."""
        return self.path, None, self.task_id


class GateTest(pytest.Item):
    """One suite threshold of a task file."""

    def __init__(
        self, *, suite_id: str, criterion_type: str, metric: str, bound: str = "point",
        **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self.suite_id, self.criterion_type, self.metric = suite_id, criterion_type, metric
        self.bound = bound

    def runtest(self) -> None:
        """Pass when the gate passed.

        Raises:
            RowFailed: the gate failed (its value, or why it has none).
        """
        assert isinstance(self.parent, TaskFile)
        from assay.reports.numbers import fmt_close

        suite = self.parent.run_result().suite(self.suite_id)
        for gate in suite.gates:
            if (gate.criterion_type, gate.metric, gate.bound) == (
                self.criterion_type, self.metric, self.bound):  # fmt: skip
                if gate.passed:
                    return
                value = (
                    "no value"
                    if gate.actual_value is None
                    else fmt_close(gate.actual_value, gate.min_value)
                )
                why = _undefined_reason(suite.criteria, self.criterion_type, self.metric)
                raise RowFailed(
                    f"suite {self.suite_id}: {self.criterion_type} {self.metric} = {value}, "
                    f"below the gate {gate.min_value:g}" + (f" ({why})" if why else "")
                    + (f" ({gate.note})" if gate.note else "")
                    + f"\n  report: {suite.folder / 'suite.md'}"
                )  # fmt: skip
        raise RowFailed(f"suite {self.suite_id} has no gate {self.metric}")

    repr_failure = RowTest.repr_failure

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the test is: the task file and the gate."""
        return self.path, None, f"{self.suite_id} {self.name}"


def _undefined_reason(criteria: list[Any], criterion_type: str, metric: str) -> str | None:
    for aggregate in criteria:
        if aggregate.criterion_type == criterion_type and metric in aggregate.undefined_metrics:
            return str(aggregate.undefined_metrics[metric])
    return None


def describe(row: EvaluationResult, task_json: Path) -> str:
    """A row that did not succeed: its status and error, each criterion with its score,
    threshold and details, and where its ``task.json`` is."""
    lines = [f"{row.task_id}: {row.final_status.value}"
             + (f" ({row.error_message})" if row.error_message else "")]  # fmt: skip
    for criterion in row.success_criteria_results:
        mark = "passed" if criterion.passed else "FAILED"
        reason = criterion.error or criterion.details
        lines.append(
            f"  {mark} {criterion.criterion_type}: score {criterion.score:.2f} "
            f"(threshold {criterion.pass_threshold:g})" + (f": {reason}" if reason else "")
        )
    lines.append(f"  task.json: {task_json}")
    return "\n".join(lines)


@pytest.fixture
def assay_run(tmp_path: Path) -> Callable[..., RunResult]:
    """Run tasks from a test: ``assay_run(tasks, **options)`` is :func:`assay.run` with
    ``run_dir`` under the test's ``tmp_path`` by default; it returns the
    :class:`~assay.api.RunResult` to assert on."""
    from assay import api

    def run(tasks: Any = None, **options: Any) -> RunResult:
        options.setdefault("run_dir", tmp_path / "runs")
        return api.run(tasks, **options)

    return run
