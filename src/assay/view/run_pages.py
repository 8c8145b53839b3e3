"""What the runs page and a run's page show, gathered from the run folders and the row
indexes (rendering is the templates' job)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.results.experiment import ExperimentResult
from assay.results.task_result import EvaluationResult
from assay.view import figures as fg
from assay.view.estimates import Estimate
from assay.view.index import IndexState
from assay.view.reading import Problem
from assay.view.runinfo import RunInfo
from assay.view.suite_view import SuiteView, build_suite_view, dataset_text, gate_text
from assay.view.workspace import RunEntry, Workspace, stamp

HEADLINE = ("accuracy", "qa.accuracy", "mean")
CROSSES_ZERO = "A difference whose interval crosses 0 is not distinguishable from no difference."


@dataclass
class SuiteLine:
    """A suite on the runs page: ``variant/suite``, gate, headline metric, dataset."""

    name: str
    gate: str
    headline: str
    dataset: str


@dataclass
class RunLine:
    """One run on the runs page."""

    key: str
    path: str
    state: str
    started: str
    task_files: list[str]
    suites: list[SuiteLine]
    models: list[str]
    rows_done: int | None
    rows_planned: int | None
    duration: float | None
    tokens: int | None
    cost: float | None
    exit_code: int | None
    problems: list[Problem] = field(default_factory=list)


def _headline(metrics: dict[str, float | None]) -> str:
    for name in HEADLINE:
        if name in metrics:
            value = metrics[name]
            return f"{name} {'—' if value is None else f'{value:.3f}'}"
    return "—"


def models_of(path: Path, info: RunInfo) -> list[str]:
    """The models the run's rows used: ``model_used`` of the first finished row of each
    suite (a look at one ``task.json`` per suite, not the whole run); a run of tasks without
    a dataset (no suites) is looked at in its first task folders of each variant."""
    found: list[str] = []
    folders = [path / suite.variant_id / suite.suite_id for suite in info.suites]
    if not folders:
        folders = [task for variant in info.variants
                   for task in sorted(_folders(path / variant))[:MODEL_LOOKS]]  # fmt: skip
    for folder in folders:
        first = _first_task_json(folder)
        if first is None:
            continue
        try:
            result = EvaluationResult.model_validate_json(first.read_bytes())
        except (OSError, ValueError):
            continue
        if result.model_used and result.model_used not in found:
            found.append(result.model_used)
    return found


MODEL_LOOKS = 20
"""Task folders of a variant looked at for its models when the run has no suites."""


def _folders(folder: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _first_task_json(folder: Path) -> Path | None:
    try:
        with os.scandir(folder) as rows:
            for row in sorted(rows, key=lambda e: e.name):
                if not row.is_dir(follow_symlinks=False):
                    continue
                direct = Path(row.path) / "task.json"
                if direct.is_file():
                    return direct
                for replicate in sorted(Path(row.path).iterdir()):
                    if (replicate / "task.json").is_file():
                        return replicate / "task.json"
    except OSError:
        return None
    return None


def run_line(ws: Workspace, entry: RunEntry) -> RunLine:
    """The runs page's line for one run."""
    info = ws.info(entry)
    summary = info.summary
    done: int | None = summary.tasks_run if summary is not None else None
    if info.state in ("running", "stopped"):
        done = ws.index(entry).state().indexed
    usage = summary.total_token_usage if summary else None
    suites = [
        SuiteLine(suite.key, gate_text(suite.rollup),
                  _headline(suite.rollup.criterion_aggregates[0].metrics)
                  if suite.rollup and suite.rollup.criterion_aggregates else "—",
                  dataset_text(suite.rollup))
        for suite in info.suites
    ]  # fmt: skip
    return RunLine(
        key=entry.key, path=str(entry.path), state=info.state,
        started=summary.start_time[:19].replace("T", " ") if summary else entry.path.name,
        task_files=info.task_files, suites=suites, models=models_of(entry.path, info),
        rows_done=done, rows_planned=info.planned_rows,
        duration=summary.total_duration_seconds if summary else None,
        tokens=usage.total_tokens if usage else None,
        cost=summary.total_cost_usd if summary else None,
        exit_code=summary.exit_code if summary else None, problems=info.problems,
    )  # fmt: skip


@dataclass
class RunPage:
    """A run's page: the run, its suites, the experiment's figures, standalone tasks, and
    how far the row index is (intervals and histograms wait for it)."""

    info: RunInfo
    line: RunLine
    index: IndexState
    suites: list[SuiteView]
    experiment: list[fg.Figure]
    standalone: list[dict[str, Any]]
    unreadable: int = 0


def run_page(ws: Workspace, entry: RunEntry, *, wait: bool = False) -> RunPage:
    """Gather a run's page (``wait``: index every row first, as the static report does);
    with every row indexed, its suites are worked out once per state of the run."""
    index = ws.index(entry)
    if wait:
        index.wait()
    info = ws.info(entry)
    state = index.state()
    with index.connect() as db:
        complete = state.complete

        def views() -> list[SuiteView]:
            built = [build_suite_view(s, db, intervals=complete) for s in info.suites]
            for view in built:
                if info.experiment is not None:
                    use_experiment_estimates(view, info.experiment)
                figure = suite_interval_figure(view)
                if figure is not None:
                    view.figures.insert(0, figure)
            return built

        suites = (ws.memo(("suites", entry.path, index.generation, stamp(entry.path)), views)
                  if complete else views())  # fmt: skip
        standalone = [dict(r) for r in db.execute(
            "SELECT folder, task_id, variant, status, score, duration, reason FROM rows "
            "WHERE row_id IS NULL ORDER BY variant, task_id, replicate")]  # fmt: skip
        unreadable = int(db.execute("SELECT COUNT(*) FROM rows WHERE category = "
                                    "'unreadable'").fetchone()[0])  # fmt: skip
    figures = experiment_figures(info.experiment) if info.experiment is not None else []
    return RunPage(info, run_line(ws, entry), state, suites, figures, standalone, unreadable)


def use_experiment_estimates(view: SuiteView, report: ExperimentResult) -> None:
    """Show the intervals ``experiment.json`` holds for this suite and variant (the run
    computed them row by row), so the page shows one interval per metric."""
    arm = next((v for v in report.variants if v.suite_id == view.suite_id
                and v.variant_id == view.variant_id), None)  # fmt: skip
    if arm is None:
        return

    def of(name: str, metric: str) -> Estimate | None:
        found = arm.metrics.get(name)
        if found is None:
            return None
        return Estimate(metric, found.value, found.low, found.high, found.method, found.rows,
                        found.reason)  # fmt: skip

    view.pass_rate = of("pass_rate", "pass_rate") or view.pass_rate
    types = [c.title.split(" ", 1)[1] for c in view.criteria]
    for position, criterion in enumerate(view.criteria):
        kind = types[position]
        prefix = kind if types.count(kind) == 1 else f"{kind}#{position}"
        for line in criterion.metrics:
            if line.name in ("accuracy", "macro_f1", "mean"):
                line.estimate = of(f"{prefix}.{line.name}", line.name) or line.estimate


def experiment_figures(report: ExperimentResult) -> list[fg.Figure]:
    """Per suite: every variant's metrics with 95% intervals (a forest plot), and each
    pair's paired differences (B − A) with their intervals."""
    found = []
    for suite in dict.fromkeys(v.suite_id for v in report.variants):
        points = [
            {"metric": name, "group": arm.variant_id, "value": est.value, "low": est.low,
             "high": est.high, "method": est.method, "reason": est.reason}
            for arm in report.variants if arm.suite_id == suite
            for name, est in arm.metrics.items()
        ]  # fmt: skip
        found.append(fg.interval_plot(f"experiment-{suite}", points,
                                      title=f"{suite}: every variant's metrics, 95% intervals",
                                      axis="value (0–1)"))  # fmt: skip
        diffs = [
            {"metric": name, "group": f"{c.variant_b} − {c.variant_a}", "value": d.difference,
             "low": d.low, "high": d.high, "method": f"paired {d.method}", "reason": d.reason}
            for c in report.comparisons if c.suite_id == suite
            for name, d in c.metrics.items()
        ]  # fmt: skip
        if diffs:
            found.append(fg.interval_plot(f"differences-{suite}", diffs,
                                          title=f"{suite}: paired differences (B − A), 95% "
                                                "intervals", axis="difference (B − A)",
                                          zero_line=True,
                                          note=CROSSES_ZERO))  # fmt: skip
    return found


def suite_interval_figure(view: SuiteView) -> fg.Figure | None:
    """The suite's headline metrics with their intervals, as a forest plot."""
    points = []
    if view.pass_rate is not None:
        points.append(_point("pass rate", view.pass_rate))
    for criterion in view.criteria:
        for line in criterion.metrics:
            if line.estimate is not None and line.name in ("accuracy", "macro_f1", "mean"):
                points.append(_point(f"{criterion.title} {line.name}", line.estimate))
    if not points:
        return None
    return fg.interval_plot(f"{view.anchor}-intervals", points,
                            title=f"{view.suite_id}: metrics with 95% intervals",
                            axis="value (0–1)")  # fmt: skip


def _point(metric: str, est: Any) -> dict[str, Any]:
    return {"metric": metric, "group": "", "value": est.value, "low": est.low,
            "high": est.high, "method": est.method, "reason": est.reason}  # fmt: skip
