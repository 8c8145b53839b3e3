"""Gates on an interval's lower bound (``suite_thresholds: {accuracy: {lower: 0.5}}``), point
gates whose interval straddles the threshold, and the load errors of a bad gate spec."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_clustered_run import task
from tests.cli.test_run import assay, latest
from tests.helpers import write

# 36 rows, 12 stories; accuracy 24/36 = 0.667


def gated(thresholds: str, cluster: bool = True) -> str:
    return (
        task("  cluster_field: story\n" if cluster else "")
        + f"    suite_thresholds: {thresholds}\n"
    )


def run(tmp_path: Path, thresholds: str, cluster: bool = True) -> tuple[Any, dict[str, Any]]:
    write(tmp_path / "t.yaml", gated(thresholds, cluster))
    done = assay("run", "t.yaml", cwd=tmp_path)
    suite = json.loads((latest(tmp_path) / "default" / "toy" / "suite.json").read_text())
    return done, suite


def test_a_lower_bound_gate_fails_where_the_point_gate_passes(tmp_path: Path) -> None:
    done, suite = run(tmp_path, "{accuracy: {min: 0.6, lower: 0.6}}")
    assert done.returncode == 1
    point, bound = suite["criterion_aggregates"][0]["threshold_checks"]
    interval = suite["criterion_aggregates"][0]["intervals"]["accuracy"]
    assert (
        "bound" not in point  # a point gate, as Coder Eval writes it
        and point["passed"]
        and point["actual_value"] == pytest.approx(2 / 3)
    )
    assert bound["bound"] == "lower" and not bound["passed"]
    assert bound["actual_value"] == pytest.approx(interval["low"])
    assert interval["low"] < 0.6
    assert "straddles 0.6" in point["note"]
    assert "classification_match.accuracy (95% lower bound)" in " ".join(suite["result_reasons"])
    markdown = (latest(tmp_path) / "default" / "toy" / "suite.md").read_text()
    assert "| `accuracy` (95% lower bound) |" in markdown
    assert "the point estimate decided this gate, the data cannot" in markdown


@pytest.mark.parametrize(("minimum", "passes"), [(0.3, True), (0.45, None), (0.9, False)])
def test_the_bound_decides_by_the_interval(
    tmp_path: Path, minimum: float, passes: bool | None
) -> None:
    done, suite = run(tmp_path, f"{{accuracy: {{lower: {minimum}}}, mean: {{lower: 0.0}}}}")
    check = suite["criterion_aggregates"][0]["threshold_checks"][0]
    low = suite["criterion_aggregates"][0]["intervals"]["accuracy"]["low"]
    assert check["passed"] == (low >= minimum)
    if passes is not None:
        assert check["passed"] is passes
    assert done.returncode == (0 if check["passed"] else 1)


def test_a_passing_gate_whose_interval_straddles_it_says_so_in_the_console_and_junit(
    tmp_path: Path,
) -> None:
    write(tmp_path / "t.yaml", gated("{accuracy: 0.6}"))
    done = assay("run", "t.yaml", "--junit-xml", "j.xml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (check,) = json.loads((latest(tmp_path) / "default" / "toy" / "suite.json").read_text())[
        "criterion_aggregates"][0]["threshold_checks"]  # fmt: skip
    assert check["passed"] and "straddles 0.6" in check["note"]
    said = f"classification_match: accuracy = 0.667 >= 0.6 ({check['note']})"
    assert f"  note: {said}" in done.stdout.splitlines()
    case = ET.parse(tmp_path / "j.xml").getroot().find(".//testcase[@name='suite gate']")
    assert case is not None and case.find("failure") is None
    assert case.findtext("system-out") == said


def test_a_point_gate_far_from_its_threshold_has_no_note(tmp_path: Path) -> None:
    _, suite = run(tmp_path, "{accuracy: 0.1}")
    (check,) = suite["criterion_aggregates"][0]["threshold_checks"]
    assert check["passed"] and "note" not in check and check["interval"][0] > 0.1


def test_a_bound_gate_without_an_interval_fails_and_says_why(tmp_path: Path) -> None:
    rows = [("r0", "s0", "good"), ("r1", "s0", "bad")]  # one story: one cluster
    text = (
        task("  cluster_field: story\n", rows) + "    suite_thresholds: {accuracy: {lower: 0.1}}\n"
    )
    write(tmp_path / "t.yaml", text)
    done = assay("run", "t.yaml", cwd=tmp_path)
    assert done.returncode == 1
    suite = json.loads((latest(tmp_path) / "default" / "toy" / "suite.json").read_text())
    (check,) = suite["criterion_aggregates"][0]["threshold_checks"]
    assert not check["passed"] and check["actual_value"] is None
    assert "needs at least 2 clusters" in check["note"]


@pytest.mark.parametrize(
    ("thresholds", "message"),
    [
        ("{accuracy: {upper: 0.2}}", "suite_thresholds.accuracy gives 'upper' (every gated metric "
         "is higher-is-better"),
        ("{accuracy: {lowr: 0.2}}", "suite_thresholds.accuracy gives 'lowr'; write a number"),
        ("{accuracy: {}}", "suite_thresholds.accuracy gives nothing"),
        ("{accuracy: {lower: high}}", "suite_thresholds.accuracy.lower must be a number"),
        ("{completion_rate: {lower: 0.5}}", "has no interval for 'completion_rate'"),
        ("{macro_f1: {lower: 0.5}}", "has no interval for 'macro_f1'"),
        ("{accuracy: {lower: 1.5}}", "minimum 1.5 for the lower bound of 'accuracy' is outside"),
    ],
)  # fmt: skip
def test_a_bad_gate_spec_is_a_load_error(tmp_path: Path, thresholds: str, message: str) -> None:
    write(tmp_path / "t.yaml", gated(thresholds))
    done = assay("run", "t.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert message in done.stderr
    assert "t.yaml" in done.stderr and "suite_thresholds" in done.stderr


def test_plan_lists_bound_gates(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", gated("{accuracy: {min: 0.6, lower: 0.5}}"))
    done = assay("plan", "t.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "classification_match.accuracy ≥ 0.6" in done.stdout
    assert "classification_match.accuracy 95% lower bound ≥ 0.5" in done.stdout
