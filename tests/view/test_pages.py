"""What a run's page gathers, by kind of run: an experiment (its intervals are
``experiment.json``'s), replicates (per-replicate metrics and pass@k), a QA suite (accuracy
by group with the intervals of ``metrics.json``), a suite still running (live numbers, no
gate yet), tasks without a dataset, and the figures' axes and numbers."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

import assay
from assay.view.figures import Figure
from assay.view.run_pages import models_of, run_page
from assay.view.runinfo import read_run
from assay.view.suite_figures import _bins
from assay.view.workspace import RunEntry, Workspace
from tests.agents.coding import run_assay
from tests.helpers import write
from tests.view.generate import SUITE, make_run

REPO = Path(__file__).resolve().parents[2]


def page_of(run: Path, scratch: Path):  # type: ignore[no-untyped-def]
    ws = Workspace([run], scratch=scratch)
    entry = RunEntry(run.name, run)
    ws.index(entry, start=False).refresh()
    return run_page(ws, entry)


def kinds(figures: list[Figure]) -> list[str]:
    return [f.kind for f in figures]


def test_an_experiment_shows_its_own_intervals_and_differences(tmp_path: Path) -> None:
    run = make_run(40, tmp_path, variants=("zero-shot", "few-shot"), replicates=2)
    page = page_of(run, tmp_path)
    report = json.loads((run / "experiment.json").read_text())
    assert kinds(page.experiment) == ["intervals", "intervals"]
    assert page.experiment[1].title == f"{SUITE}: paired differences (B − A), 95% intervals"
    # each difference is labelled with the method experiment.json records (a cluster t
    # interval for rates and means), not one name for all
    recorded = {name: d["method"] for c in report["comparisons"]
                for name, d in c["metrics"].items()}  # fmt: skip
    shown = {p["metric"]: p["method"] for p in page.experiment[1].spec["data"]["values"]}
    assert shown and shown == {name: f"paired {method}" for name, method in recorded.items()
                               if name in shown}  # fmt: skip
    assert "paired cluster t" in shown.values()
    for view in page.suites:
        arm = next(v for v in report["variants"] if v["variant_id"] == view.variant_id)
        accuracy = next(m for m in view.criteria[0].metrics if m.name == "accuracy")
        expected = arm["metrics"]["classification_match.accuracy"]
        assert accuracy.estimate is not None
        assert (accuracy.estimate.low, accuracy.estimate.high) == (
            expected["low"],
            expected["high"],
        )
        assert (
            view.pass_rate is not None and view.pass_rate.low == arm["metrics"]["pass_rate"]["low"]
        )
        assert {"lines"} <= set(kinds(view.figures))  # per replicate and pass@k
        titles = [f.title for f in view.figures if f.kind == "lines"]
        assert titles == [f"{SUITE}: metrics per replicate", f"{SUITE}: pass@k and pass^k"]


def test_a_classification_suite_has_every_figure_with_titled_axes(tmp_path: Path) -> None:
    page = page_of(make_run(50, tmp_path), tmp_path)
    view = page.suites[0]
    assert kinds(view.figures) == ["intervals", "labels", "confusion", "histogram", "histogram",
                                   "histogram", "histogram"]  # fmt: skip
    for figure in view.figures:
        spec = figure.spec.get("spec", figure.spec)  # a faceted chart's inner chart
        encodings = [spec.get("encoding", {})] + [
            layer.get("encoding", {}) for layer in spec.get("layer", [])
        ]
        # category axes of forest plots are labelled by their values (and facet headers)
        axes = ("x",) if figure.kind == "intervals" else ("x", "y")
        titles = [e[axis].get("title") for e in encodings for axis in axes if axis in e
                  and "field" in e[axis]]  # fmt: skip
        assert titles and all(titles), figure.title
        assert figure.rows, figure.title  # the numbers as a table
    confusion = view.figures[2]
    assert (
        sum(int(c) for row in confusion.rows for c in row[1:])
        == view.counts["passed"] + (view.counts["failed"])
    )
    histogram = view.figures[3]
    assert sum(int(r[1]) for r in histogram.rows) == view.counts["passed"] + view.counts["failed"]


def test_a_qa_suite_shows_accuracy_by_group_with_its_intervals(tmp_path: Path) -> None:
    done = run_assay("run", str(REPO / "examples/qa/cosmosqa/task.yaml"), "--sample", "12",
                     "-m", "mock/echo", "--run-dir", str(tmp_path / "runs"), "-q",
                     cwd=tmp_path)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    run = (tmp_path / "runs" / "latest").resolve()
    page = page_of(run, tmp_path)
    view = page.suites[0]
    groups = {f.title: f for f in view.figures if f.kind == "groups"}
    figure = groups["cosmosqa-mc: QA accuracy by label_index"]
    metrics = json.loads((run / "default" / "cosmosqa-mc" / "metrics.json").read_text())
    average = metrics["avg_metrics"]
    assert [r[0] for r in figure.rows] == list(average["by_label_index"])
    first = figure.rows[0]
    interval = average["by_label_index_ci"][first[0]]
    assert first[2] == f"[{interval['low']:.3f}, {interval['high']:.3f}]"
    assert view.criteria[0].title == "#1 qa"
    recorded = json.loads((run / "default" / "cosmosqa-mc" / "suite.json").read_text())["dataset"]
    assert recorded["content_hash"]
    assert (
        view.dataset == f"cosmosqa_valid_first100.qa.jsonl · hash {recorded['content_hash'][:12]}"
    )
    assert page.line.suites[0].dataset == view.dataset  # the runs page says the same


def test_a_suite_still_running_is_shown_live_without_a_gate(tmp_path: Path) -> None:
    source = make_run(30, tmp_path / "source")
    live = tmp_path / "live"
    live.mkdir()
    shutil.copy(source / "plan.json", live / "plan.json")
    (live / "sessions.jsonl").write_text('{"start": "2026-12-01T09:00:00"}\n')
    for row in sorted((source / "default" / SUITE).glob("r*"))[:12]:
        shutil.copytree(row, live / "default" / SUITE / row.name)
    page = page_of(live, tmp_path)
    view = page.suites[0]
    assert (page.info.state, view.live, view.gate, view.verdict) == ("running", True, "pending",
                                                                     None)  # fmt: skip
    assert view.counts["total"] == 12 and page.line.rows_planned == 30
    assert "labels" in kinds(view.figures) and "confusion" in kinds(view.figures)
    accuracy = next(m for m in view.criteria[0].metrics if m.name == "accuracy")
    rows = [json.loads(p.read_text()) for p in (live / "default" / SUITE).glob("*/00/task.json")]
    graded = [r["success_criteria_results"][0] for r in rows if r["success_criteria_results"]]
    assert accuracy.value == pytest.approx(
        sum(c["expected_label"] == c["observed_label"] for c in graded) / len(graded)
    )


def test_tasks_without_a_dataset_are_listed(tmp_path: Path) -> None:
    write(tmp_path / "one.yaml", """\
task_id: single
description: one task, no dataset
agent: {type: llm, model: mock/echo}
initial_prompt: "hello"
success_criteria:
  - type: response_match
    expected: "hello"
""")  # fmt: skip
    done = run_assay("run", "one.yaml", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = page_of((tmp_path / "runs" / "latest").resolve(), tmp_path)
    assert [(t["task_id"], t["status"]) for t in page.standalone] == [("single", "SUCCESS")]
    assert page.suites == []


def test_a_finished_suite_shows_the_intervals_and_bound_gate_suite_json_holds(
    tmp_path: Path,
) -> None:
    """The run page shows the interval ``suite.json`` records (cluster-robust, what its
    gates read), not one of its own (it showed Wilson beside a passed lower-bound gate whose
    bound its own interval put below the threshold)."""
    import assay

    rows = "".join(f"    - {{id: r{i:03d}, say: {'yes' if i % 3 else 'no'}}}\n" for i in range(60))
    task = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: '${row.say}'\n"
                 "agent: {type: command, command: 'printf %s \"$ASSAY_PROMPT\"'}\n"
                 "dataset:\n  rows:\n" + rows +
                 "success_criteria:\n  - type: classification_match\n    expected_label: 'yes'\n"
                 "    allowed_labels: ['yes', 'no']\n"
                 "    suite_thresholds: {accuracy: {lower: 0.5}}\n")  # fmt: skip
    run = assay.run([str(task)], run_dir=str(tmp_path / "runs")).run_dir
    suite = json.loads((run / "default" / "t" / "suite.json").read_text())
    recorded = suite["criterion_aggregates"][0]["intervals"]["accuracy"]
    (tmp_path / "scratch").mkdir()
    (view,) = page_of(run, tmp_path / "scratch").suites
    lines = {m.name: m for m in view.criteria[0].metrics}
    accuracy = lines["accuracy"].estimate
    assert accuracy is not None and accuracy.method == recorded["method"]
    assert (accuracy.low, accuracy.high) == (recorded["low"], recorded["high"])
    bound = lines["accuracy (95% lower bound)"]
    assert bound.gate is not None and bound.value == recorded["low"] == bound.gate.actual_value
    assert view.pass_rate is not None
    assert view.pass_rate.low == suite["intervals"]["pass_rate"]["low"]


def test_a_score_just_under_a_bin_edge_by_float_rounding_is_in_the_bin_it_starts() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE rows (s REAL)")
    scores = [0.6 + 0.2 * 1.0 - 0.0000000000000001, 0.8, 1.0, 0.0, 0.35, 0.7999, None]
    db.executemany("INSERT INTO rows VALUES (?)", [(s,) for s in scores])
    counts = {low: n for low, _, n in _bins(db, "SELECT s FROM rows", []) if n}
    # 0.7999999999999999 (a weighted 0.8 after float sums) with 0.8; 0.7999 stays below
    assert counts == {0.0: 1, 0.3: 1, 0.7: 1, 0.8: 2, 0.9: 1}


def test_a_run_of_tasks_without_a_dataset_names_its_models(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
                 "agent: {type: llm, model: mock/echo}\n"
                 "success_criteria: [{type: response_match, expected: hi}]\n")  # fmt: skip
    run = assay.run([str(task)], run_dir=str(tmp_path / "runs")).run_dir
    info = read_run(run.name, run)
    assert info.suites == []  # no dataset: no suite
    assert models_of(run, info) == ["mock/echo"]
