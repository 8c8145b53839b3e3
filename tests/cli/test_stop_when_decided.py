"""``experiment.stop``: rows in a seeded random order, both variants together, and no new row
once the anytime-valid test is decided; the reports say so and count nothing as missing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from assay.metrics.sequential import mean_confidence_sequence
from assay.spec.ids import ID_PATTERN
from assay.spec.run_names import RUN_FILES, STOPPING_FILE
from tests.cli.test_run import assay, latest
from tests.helpers import write

ROWS = 200
TASK = """\
task_id: toy
description: one keyword decides the answer
initial_prompt: "${row.text}"
agent:
  type: command
  command: 'case "$ASSAY_PROMPT" in *good*) echo positive;; *) echo negative;; esac'
dataset:
  rows:
""" + "".join(
    f"    - {{id: r{i:03d}, text: '{'good' if i % 5 == 0 else 'bad'} {i}', label: positive}}\n"
    for i in range(ROWS)
) + """\
success_criteria:
  - type: classification_match
    expected_label: "${row.label}"
    allowed_labels: [positive, negative]
"""  # fmt: skip


def experiment(stop: str, optimist: str = "echo positive") -> str:
    return f"""\
experiment_id: stopping
variants:
  - variant_id: keyword
  - variant_id: optimist
    agent: {{command: "{optimist}"}}
stop: {stop}
"""


def test_a_clear_difference_stops_early(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", TASK)
    write(tmp_path / "e.yaml", experiment("{alpha: 0.05}"))
    done = assay("run", "t.yaml", "-e", "e.yaml", "-j", "2", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # no gate, and the keyword variant fails rows
    run = latest(tmp_path)
    stop = json.loads((run / "stopping.json").read_text())
    assert stop["stopped"] and stop["decision"] == "b_better"
    assert stop["items_planned"] == 2 * ROWS
    assert stop["rows_decided"] <= stop["rows_scheduled"] < ROWS // 2
    finished = len(list(run.glob("*/toy/*/00/task.json")))
    assert finished == stop["items_finished"] <= stop["items_scheduled"] < ROWS
    report = json.loads((run / "experiment.json").read_text())
    assert report["stopping"]["decision"] == "b_better"
    suite = json.loads((run / "keyword" / "toy" / "suite.json").read_text())
    assert suite["rows_missing"] == 0 and suite["rows_total"] < ROWS
    f1 = report["variants"][0]["metrics"]["classification_match.macro_f1"]
    assert f1["clusters"] == suite["rows_total"]  # rows that never ran are outside it
    markdown = (run / "experiment.md").read_text()
    assert "## Stopped when decided" in markdown
    assert f"of {2 * ROWS}" in markdown and "fewer)" in markdown
    # rows chosen by looking: the fixed-sample p-values get no verdict (they said "survives")
    assert "survives" not in markdown and "Anytime-valid replay" not in markdown
    assert "these fixed-sample intervals and p-values do not hold" in markdown
    # its header and power say what holds (found by a newcomer: "these 872 rows detect…"
    # under a header of fixed-sample intervals, for a run that stopped at 101)
    assert "This run stopped when decided: the decision and its confidence sequence" in markdown
    assert "Achieved power" not in markdown
    (comparison,) = report["comparisons"]
    assert comparison["mcnemar"]["survives"] is None
    assert all(d["survives"] is None for d in comparison["metrics"].values())


def test_no_difference_that_matters_stops_as_equivalent(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", TASK)
    same = 'case \\"$ASSAY_PROMPT\\" in *good*) echo positive;; *) echo negative;; esac'
    write(tmp_path / "e.yaml", experiment("{delta: 0.3}", optimist=same))
    assay("run", "t.yaml", "-e", "e.yaml", "-j", "2", cwd=tmp_path)
    stop = json.loads((latest(tmp_path) / "stopping.json").read_text())
    assert stop["decision"] == "equivalent" and stop["rows_scheduled"] < ROWS
    assert -0.3 < stop["low"] <= 0 <= stop["high"] < 0.3


def test_stop_needs_two_variants(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", TASK)
    write(tmp_path / "e.yaml", "experiment_id: s\nvariants:\n  - variant_id: only\nstop: {}\n")
    done = assay("run", "t.yaml", "-e", "e.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "stop compares two variants, and this experiment has 1" in done.stderr


def test_the_flag_gives_an_experiment_the_default_rule(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", TASK)
    plain = experiment("{}").replace("stop: {}\n", "")
    write(tmp_path / "e.yaml", plain)
    assay("run", "t.yaml", "-e", "e.yaml", "-j", "2", "--stop-when-decided", cwd=tmp_path)
    stop = json.loads((latest(tmp_path) / "stopping.json").read_text())
    assert stop["decision"] == "b_better" and stop["rule"]["alpha"] == 0.05
    assert stop["rows_scheduled"] < ROWS


def test_the_flag_needs_an_experiment_of_two_variants(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", TASK)
    done = assay("run", "t.yaml", "--stop-when-decided", cwd=tmp_path)
    assert done.returncode == 2
    assert "--stop-when-decided stops an experiment: give one with -e" in done.stderr
    three = experiment("{}").replace("stop: {}\n", "  - variant_id: third\n")
    write(tmp_path / "e.yaml", three)
    done = assay("run", "t.yaml", "-e", "e.yaml", "--stop-when-decided", cwd=tmp_path)
    assert done.returncode == 2
    assert "--stop-when-decided compares two variants, and experiment stopping has 3" in done.stderr


def test_a_resume_keeps_the_flags_rule(tmp_path: Path) -> None:
    """``--stop-when-decided`` is recorded in plan.json: a resume of the stopped run applies
    it again (the run is still decided: no row runs), rather than running every row left."""
    write(tmp_path / "t.yaml", TASK)
    write(tmp_path / "e.yaml", experiment("{}").replace("stop: {}\n", ""))
    assay("run", "t.yaml", "-e", "e.yaml", "-j", "2", "--stop-when-decided", cwd=tmp_path)
    run = latest(tmp_path)
    plan = json.loads((run / "plan.json").read_text())
    assert plan["options"]["stop_when_decided"] is True
    finished = len(list(run.glob("*/toy/*/00/task.json")))
    assert finished < ROWS
    assay("run", "--resume", str(run), cwd=tmp_path)
    assert len(list(run.glob("*/toy/*/00/task.json"))) == finished
    assert json.loads((run / "stopping.json").read_text())["decision"] == "b_better"


def test_a_resume_cannot_add_the_flag_to_a_run_without_it(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", TASK.replace(f"range({ROWS})", "range(20)"))
    write(tmp_path / "e.yaml", experiment("{}").replace("stop: {}\n", ""))
    assay("run", "t.yaml", "-e", "e.yaml", "--sample", "6", cwd=tmp_path)
    done = assay("run", "--resume", str(latest(tmp_path)), "--stop-when-decided", cwd=tmp_path)
    assert done.returncode == 2 and "--stop-when-decided" in done.stderr, done.stderr


def small_task(rows: int) -> str:
    """TASK with its first ``rows`` rows."""
    head, tail = TASK.split("success_criteria:")
    lines = head.splitlines(keepends=True)
    start = lines.index("  rows:\n") + 1
    return "".join(lines[: start + rows]) + "success_criteria:" + tail


@pytest.mark.parametrize("name", sorted(n for n in RUN_FILES if ID_PATTERN.fullmatch(n)))
def test_a_variant_cannot_take_the_name_of_a_run_file(tmp_path: Path, name: str) -> None:
    """Every name the run writes beside its variants' folders is refused as a variant id at
    load, with or without a stop rule, before any row runs (``stopping.json`` was missed once:
    the run crashed after every row had run)."""
    write(tmp_path / "t.yaml", small_task(4))
    plain = experiment("{}").replace("stop: {}\n", "")
    write(tmp_path / "e.yaml", plain.replace("variant_id: keyword", f"variant_id: {name}"))
    for extra in ([], ["--stop-when-decided"]):
        done = assay("run", "t.yaml", "-e", "e.yaml", "-q", *extra, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert f"e.yaml:3: variants[0].variant_id: variant_id '{name}' is the name of a run file" \
            in done.stderr  # fmt: skip
        assert not (tmp_path / "runs").exists()


def test_a_run_folder_holds_its_variants_and_the_reserved_names_only(tmp_path: Path) -> None:
    """The names at the top of a real run folder (stopped, resumed, reported with --html) are
    each either a variant's folder or a name variant ids may not take."""
    write(tmp_path / "t.yaml", small_task(40))
    write(tmp_path / "e.yaml", experiment("{alpha: 0.05}"))
    assay("run", "t.yaml", "-e", "e.yaml", "-j", "2", "-q", cwd=tmp_path)
    run = latest(tmp_path)
    assay("run", "--resume", str(run), "-q", cwd=tmp_path)
    assert assay("report", str(run), "--html", cwd=tmp_path).returncode in (0, 1)
    names = {path.name for path in run.iterdir()} - {"keyword", "optimist"}
    assert STOPPING_FILE in names and "report.html" in names and "experiment.md" in names
    assert names <= RUN_FILES, names - RUN_FILES


YES_NO = """\
task_id: yn
description: variant good answers every row right, bad none
initial_prompt: "row ${row.x}"
agent: {type: command, command: "echo yes"}
dataset:
  rows:
""" + "".join(f"    - {{id: r{i:02d}, x: {i}}}\n" for i in range(60)) + """\
success_criteria:
  - type: response_match
    expected: "yes"
    match: exact
"""  # fmt: skip
GOOD_BAD = """\
experiment_id: ab
variants:
  - variant_id: good
  - variant_id: bad
    agent: {command: "echo no"}
stop: {alpha: 0.05}
"""


def test_the_report_names_the_better_variant_and_its_interval_holds_the_mean(
    tmp_path: Path,
) -> None:
    """The first variant better on every row: the reports say which one is better by name
    (never "a is better" next to "`bad` vs `good`"), the confidence sequence holds the mean
    difference of -1 (it ends at -1, not -0.995), and the suite's heading counts the rows
    that ran of those planned."""
    write(tmp_path / "t.yaml", YES_NO)
    write(tmp_path / "e.yaml", GOOD_BAD)
    assay("run", "t.yaml", "-e", "e.yaml", "-j", "2", "-q", cwd=tmp_path)
    run = latest(tmp_path)
    stop = json.loads((run / "stopping.json").read_text())
    assert stop["decision"] == "a_better" and stop["variant_a"] == "good"
    assert stop["reason"].startswith("`good` is better than `bad` (the sequence excludes 0)")
    assert "mean difference (`bad` minus `good`) -1.000" in stop["reason"]
    assert stop["low"] == -1.0 < stop["high"] < 0
    assert "[-1.000, " in stop["reason"]
    markdown = (run / "experiment.md").read_text()
    assert "a is better" not in markdown and "b is better" not in markdown
    assert f"{stop['reason']}." in markdown  # the "Stopped when decided" section
    assert "Anytime-valid replay" not in markdown  # a stopped run states its own decision
    ran = stop["rows_scheduled"]
    assert ran < 60 and f"## Suite `yn` ({ran} of 60 rows)" in markdown
    report = json.loads((run / "experiment.json").read_text())
    assert [v["rows_ran"] for v in report["variants"]] == [ran, ran]


def test_a_resumed_run_counts_the_rows_planned_and_scheduled_as_one_run(tmp_path: Path) -> None:
    """Rows finished before a resume are part of the plan, and a row half finished before
    (one variant's item lost) and scheduled again is one row: the resumed run reports the
    planned rows of the whole design and the distinct rows it scheduled over both sessions."""
    write(tmp_path / "t.yaml", YES_NO)
    write(tmp_path / "e.yaml", GOOD_BAD)
    assay("run", "t.yaml", "-e", "e.yaml", "-j", "2", "-q", cwd=tmp_path)
    run = latest(tmp_path)
    first = json.loads((run / "stopping.json").read_text())
    assert (first["rows_planned"], first["items_planned"]) == (60, 120)
    for path in sorted(run.glob("bad/yn/*/00/task.json"))[:3]:
        path.unlink()  # three rows half finished, as an interrupted session leaves them
    done = assay("run", "--resume", str(run), "-q", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    stop = json.loads((run / "stopping.json").read_text())
    assert stop["decision"] == "a_better"
    assert (stop["rows_planned"], stop["items_planned"]) == (60, 120)
    files = list(run.glob("*/yn/*/00/task.json"))
    rows = {path.parts[-3] for path in files}
    assert stop["rows_scheduled"] == len(rows) < 60
    assert stop["items_scheduled"] == stop["items_finished"] == len(files) == 2 * len(rows)
    markdown = (run / "experiment.md").read_text()
    assert f"Rows scheduled: {len(rows)} of 60; items (row × variant × replicate) " \
        f"{len(files)} of 120" in markdown  # fmt: skip


def test_gates_on_a_stopped_run_use_the_confidence_sequence(tmp_path: Path) -> None:
    """A run that stopped when decided looked at its rows to stop: each variant's interval,
    and a gate on its lower bound, is the anytime-valid confidence sequence of the rows' values
    in the order the stopping test heard them (not a fixed-size interval)."""
    labels = "    allowed_labels: [positive, negative]\n"
    gated = TASK.replace(labels, labels + "    suite_thresholds: {accuracy: {lower: 0.5}}\n")
    write(tmp_path / "t.yaml", gated)
    write(tmp_path / "e.yaml", experiment("{alpha: 0.05}"))
    assay("run", "t.yaml", "-e", "e.yaml", "-j", "2", "-q", cwd=tmp_path)
    run = latest(tmp_path)
    stop = json.loads((run / "stopping.json").read_text())
    assert stop["stopped"] and len(stop["sequence"]) >= stop["rows_decided"]
    for variant in ("keyword", "optimist"):
        suite = json.loads((run / variant / "toy" / "suite.json").read_text())
        aggregate = suite["criterion_aggregates"][0]
        found = aggregate["intervals"]["accuracy"]
        assert found["method"] == "confidence sequence"
        correct = {}
        for path in run.glob(f"{variant}/toy/*/00/task.json"):
            item = json.loads(path.read_text())["success_criteria_results"][0]
            correct[path.parts[-3]] = float(item["expected_label"] == item["observed_label"])
        ordered = [correct[row] for suite_id, row in stop["sequence"] if row in correct]
        ordered += [correct[row] for row in sorted(set(correct) - {r for _, r in stop["sequence"]})]
        low, high = mean_confidence_sequence(np.array(ordered))
        assert found["low"] == pytest.approx(low[-1]) and found["high"] == pytest.approx(high[-1])
        assert found["value"] == pytest.approx(np.mean(ordered))
        # one replicate a row: each graded row is one value and one unit of the sequence
        assert found["observations"] == found["clusters"] == len(ordered)
        check = aggregate["threshold_checks"][0]
        assert check["bound"] == "lower" and check["interval"] == [found["low"], found["high"]]
        assert check["passed"] == (found["low"] >= 0.5)
        report = json.loads((run / "experiment.json").read_text())
        arm = next(v for v in report["variants"] if v["variant_id"] == variant)
        same = arm["metrics"]["classification_match.accuracy"]  # the experiment's report agrees
        assert same["method"] == "confidence sequence"
        assert (same["low"], same["high"]) == pytest.approx((found["low"], found["high"]))
        assert same["clusters"] == len(ordered)
    # the keyword variant answers 1 row in 5 right: its sequence ends well below 0.5
    keyword = json.loads((run / "keyword" / "toy" / "suite.json").read_text())
    assert not keyword["passed"]
    rebuilt = assay("report", str(run), cwd=tmp_path)
    assert rebuilt.returncode == 1, rebuilt.stderr
    again = json.loads((run / "keyword" / "toy" / "suite.json").read_text())
    assert (
        again["criterion_aggregates"][0]["intervals"]
        == keyword["criterion_aggregates"][0]["intervals"]
    )


def test_a_run_that_did_not_stop_keeps_its_clustered_intervals(tmp_path: Path) -> None:
    """Undecided at the last planned row: every row ran, so the fixed-size (clustered)
    interval holds and is the one reported."""
    same = 'case \\"$ASSAY_PROMPT\\" in *good*) echo positive;; *) echo negative;; esac'
    few = TASK.split("  rows:\n")[0] + "  rows:\n" + "".join(
        f"    - {{id: r{i}, text: 'bad {i}', label: positive}}\n" for i in range(6)
    ) + "success_criteria:" + TASK.split("success_criteria:")[1]  # fmt: skip
    write(tmp_path / "t.yaml", few)
    write(tmp_path / "e.yaml", experiment("{alpha: 0.05}", optimist=same))
    assay("run", "t.yaml", "-e", "e.yaml", "-q", cwd=tmp_path)
    run = latest(tmp_path)
    stop = json.loads((run / "stopping.json").read_text())
    assert not stop["stopped"]
    suite = json.loads((run / "keyword" / "toy" / "suite.json").read_text())
    assert suite["intervals"]["pass_rate"]["method"].startswith("cluster")


CLUSTERED = """\
task_id: st
description: rows of one cluster answer alike
agent: {type: command, command: 'test "$ASSAY_PROMPT" = P && printf yes || printf no'}
dataset: {paths: [data.jsonl], cluster_field: grp}
initial_prompt: "${row.A}"
success_criteria: [{type: response_match, expected: "yes"}]
"""


def _clustered(folder: Path, stop: str) -> Path:
    """10 clusters of 8 rows: in 7, `b` passes and `a` fails; in 3 the reverse."""
    rows = [{"id": f"g{g}r{j}", "grp": f"g{g}", "A": "F" if g < 7 else "P",
             "B": "P" if g < 7 else "F"} for g in range(10) for j in range(8)]  # fmt: skip
    write(folder / "data.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    write(folder / "t.yaml", CLUSTERED)
    write(folder / "e.yaml", "experiment_id: ab\nvariants:\n"
          '  - {variant_id: a, initial_prompt: "${row.A}"}\n'
          '  - {variant_id: b, initial_prompt: "${row.B}"}\n' + stop)  # fmt: skip
    assay("run", "t.yaml", "-e", "e.yaml", "-j", "2", cwd=folder)
    return latest(folder)


def test_rows_of_one_cluster_are_one_difference_of_the_stopping_test(tmp_path: Path) -> None:
    """Fed row by row, the test took 20 rows of 9 clusters for 20 independent differences and
    decided `b` better (a statistician's break-test; a null rejected about a third of the
    time). 7 clusters of 10 for `b` is no evidence at 0.05 (sign test p = 0.34)."""
    run = _clustered(tmp_path / "stop", "stop: {alpha: 0.05}\n")
    stop = json.loads((run / STOPPING_FILE).read_text())
    assert stop["unit"] == "clusters" and stop["decision"] == "undecided"
    assert stop["rows_decided"] == 10 and len(stop["sequence"]) == 80
    assert "undecided after 10 clusters" in stop["reason"]
    first = [row[1][:2] for row in stop["sequence"][:8]]
    assert len(set(first)) == 1  # a cluster's rows are heard together
    replayed = _clustered(tmp_path / "fixed", "")
    (comparison,) = json.loads((replayed / "experiment.json").read_text())["comparisons"]
    sequential = comparison["sequential"]
    assert sequential["unit"] == "clusters" and sequential["of_rows"] == 10
    assert sequential["decision"] == "undecided"


def test_a_damaged_stopping_file_is_named_with_its_fix(tmp_path: Path) -> None:
    """A stopping.json cut short (a kill, a full disk: it was not written atomically) made
    `assay report` and `assay evaluate` end in a JSONDecodeError traceback."""
    run = _clustered(tmp_path, "stop: {alpha: 0.05}\n")
    stopping = run / STOPPING_FILE
    stopping.write_text(stopping.read_text()[:200])
    done = assay("report", str(run), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "stopping.json cannot be read" in done.stderr and str(stopping) in done.stderr
    assert "assay run --resume RUN_DIR" in done.stderr
    assert "Traceback" not in done.stderr
    resumed = assay("run", "--resume", str(run), cwd=tmp_path)
    assert resumed.returncode in (0, 1), resumed.stderr
    assert json.loads(stopping.read_text())["unit"] == "clusters"
