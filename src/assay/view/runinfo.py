"""What a run folder says about the run as a whole: ``run.json``, ``plan.json``,
``sessions.jsonl``, each suite's ``suite.json`` (and a QA suite's ``metrics.json``),
``experiment.json``, read as they are, with a :class:`~assay.view.reading.Problem` for each
file that could not be read.

A run's ``state``:

- ``finished``: ``run.json`` written by the last session;
- ``interrupted``: ``run.json`` says the run was stopped (Ctrl-C); it can be resumed;
- ``running``: a session started and has not ended, and the process writing the run still
  holds its lock (``RUN_DIR/.lock``, :func:`assay.orchestration.running.runlock.is_held`); for a
  run whose lock cannot be told (written before the lock, or by another host), a row
  finished in the last ``LIVE_SECONDS``;
- ``stopped``: a session started and never ended, and its process is gone (killed: seen
  as soon as the lock is free) or nothing moved for a while; ``assay report RUN_DIR``
  writes its reports;
- ``unreadable``: neither ``run.json`` nor ``plan.json`` could be read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.orchestration.running.runlock import is_held
from assay.results.experiment import EXPERIMENT_SCHEMA_VERSION, ExperimentResult
from assay.results.plan_record import PLAN_FILE, SESSIONS_FILE, PlanRecord
from assay.results.run import RUN_SCHEMA_VERSION, RunSummary, TaskSelection
from assay.results.selection_file import SELECTION_FILE, listed_tasks
from assay.results.suite import SUITE_SCHEMA_VERSION, SuiteRollup
from assay.spec.run_names import is_run_folder
from assay.view.reading import Problem, read_json_text, read_model, read_run_summary, validate

LIVE_SECONDS = 600.0


@dataclass
class SuiteInfo:
    """One suite of one variant: its ``suite.json`` (``None`` until written) and, for a QA
    suite, its ``metrics.json``."""

    suite_id: str
    variant_id: str
    rollup: SuiteRollup | None = None
    qa_metrics: dict[str, Any] | None = None

    @property
    def key(self) -> str:
        """``<variant>/<suite>``."""
        return f"{self.variant_id}/{self.suite_id}"


@dataclass
class RunInfo:
    """A run folder as far as it could be read (see the module docstring)."""

    key: str
    path: Path
    state: str
    summary: RunSummary | None = None
    plan: PlanRecord | None = None
    suites: list[SuiteInfo] = field(default_factory=list)
    experiment: ExperimentResult | None = None
    sessions: int = 0
    open_session: bool = False
    problems: list[Problem] = field(default_factory=list)

    @property
    def planned_rows(self) -> int | None:
        """Row-tasks the plan set out to run (``None`` without a plan)."""
        return sum(self.plan.planned.values()) if self.plan and self.plan.planned else None

    @property
    def task_files(self) -> list[str]:
        """The task files (as the plan recorded them)."""
        if self.plan is not None:
            return list(self.plan.files)
        if self.summary is not None:
            return sorted({s.source_file for s in self.summary.selections})
        return []

    @property
    def variants(self) -> list[str]:
        """The variants, in plan order."""
        if self.plan is not None:
            return list(self.plan.variants)
        return list(dict.fromkeys(s.variant_id for s in self.suites)) or ["default"]

    @property
    def selections(self) -> dict[str, TaskSelection]:
        """Task id → the dataset and rows the run recorded selecting (``run.json``, else
        ``plan.json``), as :func:`assay.reports.compare.recorded_selections` reads them."""
        if self.summary is not None:
            chosen = self.summary.selections
        elif self.plan is not None:
            chosen = self.plan.selections()
        else:
            return {}
        return listed_tasks(self.path, chosen)  # UsageError: a diff is refused, as compare does

    def suite(self, variant: str, suite: str) -> SuiteInfo | None:
        """The suite ``suite`` of ``variant``, if the run has it."""
        return next((s for s in self.suites if s.variant_id == variant
                     and s.suite_id == suite), None)  # fmt: skip


def is_run(folder: Path) -> bool:
    """A run folder: it has ``plan.json`` or ``run.json``."""
    return is_run_folder(folder)


def read_run(key: str, path: Path, *, last_row_at: float | None = None) -> RunInfo:
    """Everything but the rows of the run in ``path`` (``last_row_at``: when its newest
    ``task.json`` was written, as ``time.time()``, for telling running from stopped)."""
    info = RunInfo(key=key, path=path, state="unreadable")
    if (path / "run.json").exists():
        data, problem = read_run_summary(path / "run.json")
        if problem is not None:
            info.problems.append(problem)
        else:
            info.summary, _, problems = validate(data, "run.json", RunSummary,
                                                 current=RUN_SCHEMA_VERSION)  # fmt: skip
            info.problems += problems
    if (path / PLAN_FILE).exists():
        info.plan, _, problems = read_model(path / PLAN_FILE, PLAN_FILE, PlanRecord)
        info.problems += problems
    info.problems += _selection_problems(info)
    info.sessions, info.open_session = _sessions(path, info.problems)
    info.suites = _suites(path, info)
    if (path / "experiment.json").exists():
        info.experiment, _, problems = read_model(path / "experiment.json", "experiment.json",
                                                  ExperimentResult,
                                                  current=EXPERIMENT_SCHEMA_VERSION)  # fmt: skip
        info.problems += problems
    info.state = _state(info, last_row_at)
    return info


def _selection_problems(info: RunInfo) -> list[Problem]:
    """``selection.jsonl`` missing where the run says it lists its rows (its lines are read,
    and checked, when a diff needs them)."""
    chosen = [s.selection for s in info.summary.selections] if info.summary else []
    chosen += [t.selection for t in info.plan.tasks if t.selection] if info.plan else []
    listed = any(s is not None and s.rows_file is not None for s in chosen)
    if listed and not (info.path / SELECTION_FILE).is_file():
        return [Problem(SELECTION_FILE, "is missing: the run's selected rows and their "
                                        "content hashes cannot be read")]  # fmt: skip
    return []


def _state(info: RunInfo, last_row_at: float | None) -> str:
    if info.summary is None and info.plan is None:
        return "unreadable"
    if info.open_session or info.summary is None:
        held = is_held(info.path)
        if held is not None:
            return "running" if held else "stopped"
        moved = last_row_at if last_row_at is not None else _mtime(info.path / PLAN_FILE)
        recent = moved is not None and time.time() - moved < LIVE_SECONDS
        return "running" if recent else "stopped"
    return "interrupted" if info.summary.interrupted else "finished"


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _sessions(path: Path, problems: list[Problem]) -> tuple[int, bool]:
    """How many sessions ``sessions.jsonl`` logs, and whether the last has not ended."""
    try:
        lines = (path / SESSIONS_FILE).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return 0, False
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(Problem(SESSIONS_FILE, f"could not be read ({exc})"))
        return 0, False
    starts, open_session = 0, False
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        event, problem = read_json_text(path, f"{SESSIONS_FILE} line {number}", line)
        if problem is not None or not isinstance(event, dict):
            problems.append(problem or Problem(SESSIONS_FILE, f"line {number} is not an object"))
            continue
        if "start" in event:
            starts, open_session = starts + 1, True
        elif "end" in event:
            open_session = False
    return starts, open_session


def _suites(path: Path, info: RunInfo) -> list[SuiteInfo]:
    """Every suite the run planned or wrote, in plan order, with what could be read."""
    keys: list[tuple[str, str]] = []
    if info.summary is not None:
        keys += [(s.variant_id, s.suite_id) for s in info.summary.suites]
    if info.plan is not None:
        keys += [tuple(k.split("/", 1)) for k in info.plan.planned if "/" in k]  # type: ignore[misc]
    keys += [(p.parent.parent.name, p.parent.name) for p in sorted(path.glob("*/*/suite.json"))]
    suites = []
    for variant, suite_id in dict.fromkeys(keys):
        suite = SuiteInfo(suite_id, variant)
        folder = path / variant / suite_id
        if (folder / "suite.json").exists():
            suite.rollup, _, problems = read_model(folder / "suite.json",
                                                   f"{variant}/{suite_id}/suite.json", SuiteRollup,
                                                   current=SUITE_SCHEMA_VERSION)  # fmt: skip
            info.problems += problems
        if (folder / "metrics.json").exists():
            data, problem = read_json_text(folder / "metrics.json",
                                           f"{variant}/{suite_id}/metrics.json")  # fmt: skip
            if problem is not None:
                info.problems.append(problem)
            elif isinstance(data, dict):
                suite.qa_metrics = data
        suites.append(suite)
    return suites
