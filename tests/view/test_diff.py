"""Two runs (or two variants) row by row, against the rows' own task.json files: flips each
way, score changes, rows whose content changed between the runs (left out, as ``assay
compare`` leaves them out), refusals with ``assay compare``'s reasons, and variants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.view.diff import Side, build_diff, pair_page
from assay.view.index import RowIndex
from tests.agents.coding import run_assay
from tests.helpers import write
from tests.view.generate import make_run

ROWS = [{"id": f"m{i}", "text": t, "expected": e} for i, (t, e) in enumerate(
    [("love it", "positive"), ("great", "positive"), ("fine", "positive"), ("awful", "negative"),
     ("not good", "negative"), ("boring", "negative")])]  # fmt: skip
TASK = """\
task_id: mood
description: two moods
agent: {type: llm, model: %s, labels: [positive, negative]}
dataset: {rows: %s}
initial_prompt: "Text: ${row.text}"
success_criteria:
  - type: classification_match
    expected_label: "${row.expected}"
    allowed_labels: [positive, negative]
    suite_thresholds: {accuracy: 0.5}
"""


def run(folder: Path, name: str, script: str, rows: list[dict[str, str]], *args: str) -> Path:
    write(folder / f"{name}.yaml", script)
    write(folder / "task.yaml", TASK % (f"mock/{name}.yaml", json.dumps(rows)))
    done = run_assay("run", "task.yaml", "--run-dir", "runs", "-q", *args, cwd=folder)
    assert done.returncode in (0, 1), done.stderr
    target = folder / "runs" / name
    (folder / "runs" / "latest").resolve().rename(target)
    return target


def side(run_dir: Path, scratch: Path, variant: str | None = None) -> Side:
    index = RowIndex(run_dir, scratch / f"{run_dir.name}.sqlite")
    index.refresh()
    return Side(run_dir.name, index, variant)


def statuses(run_dir: Path) -> dict[str, bool]:
    return {json.loads(p.read_text())["row_id"]: json.loads(p.read_text())["final_status"]
            == "SUCCESS" for p in run_dir.glob("*/*/*/*/task.json")}  # fmt: skip


def test_flips_score_changes_and_rows_whose_content_changed(tmp_path: Path) -> None:
    a = run(tmp_path, "a", 'replies: [{match: "love|great|fine|good", reply: positive}]\n'
            "default: negative\n", ROWS)  # fmt: skip
    edited = [dict(r, expected="positive") if r["id"] == "m5" else r for r in ROWS]
    b = run(tmp_path, "b", 'replies: [{match: "love|great|boring", reply: positive}]\n'
            "default: negative\n", edited)  # fmt: skip
    path, summary = build_diff(side(a, tmp_path), side(b, tmp_path), tmp_path)
    pa, pb = statuses(a), statuses(b)
    # m5's gold label was edited between the runs: not a flip, whatever its status did
    flips_up = sorted(r for r in pa if r != "m5" and pb[r] and not pa[r])
    flips_down = sorted(r for r in pa if r != "m5" and pa[r] and not pb[r])
    assert (flips_up, flips_down) == (["m4"], ["m2"])
    assert (summary.counts["became_pass"], summary.counts["became_fail"]) == (1, 1)
    assert summary.counts["data_changed"] == 1 and summary.rows == 6
    assert (summary.mcnemar.a_only, summary.mcnemar.b_only) == (1, 1)
    pairs, total = pair_page(path, change="data_changed", suite="", page=1, size=10)
    assert total == 1 and pairs[0]["row_id"] == "m5"
    pairs, total = pair_page(path, change="changed", suite="", page=1, size=10)
    assert sorted(p["row_id"] for p in pairs) == ["m2", "m4", "m5"]
    assert {p["row_id"]: p["b_score"] - p["a_score"] for p in pairs}["m4"] == 1.0


def test_runs_over_different_rows_are_refused_with_compare_s_reason(tmp_path: Path) -> None:
    script = 'replies: [{match: "love", reply: positive}]\ndefault: negative\n'
    a = run(tmp_path, "a", script, ROWS, "--sample", "3")
    b = run(tmp_path, "b", script, ROWS, "--sample", "4")
    with pytest.raises(UsageError) as refused:
        build_diff(side(a, tmp_path), side(b, tmp_path), tmp_path)
    assert str(refused.value).startswith("suite 'mood' has different rows in the two runs: only")
    assert refused.value.hint is not None
    assert refused.value.hint.startswith("the runs' selections differ in --sample: A 3, B 4")


def test_two_variants_of_one_run(tmp_path: Path) -> None:
    run_dir = make_run(30, tmp_path, variants=("zero-shot", "few-shot"))
    with pytest.raises(UsageError) as unchosen:
        build_diff(side(run_dir, tmp_path), side(run_dir, tmp_path), tmp_path)
    assert str(unchosen.value) == (f"run {run_dir.name} has variants ['few-shot', 'zero-shot']; "
                                   "choose one to compare")  # fmt: skip
    with pytest.raises(UsageError) as unknown:
        build_diff(side(run_dir, tmp_path, "zero-shot"), side(run_dir, tmp_path, "three-shot"),
                   tmp_path)  # fmt: skip
    assert str(unknown.value) == (f"run {run_dir.name} has no variant 'three-shot'; it has "
                                  "['few-shot', 'zero-shot']")  # fmt: skip
    _, summary = build_diff(side(run_dir, tmp_path, "zero-shot"),
                            side(run_dir, tmp_path, "few-shot"), tmp_path)  # fmt: skip
    report = json.loads((run_dir / "experiment.json").read_text())
    comparison = report["comparisons"][0]
    assert (comparison["variant_a"], comparison["variant_b"]) == ("zero-shot", "few-shot")
    assert summary.counts["became_pass"] == comparison["became_pass_total"]
    assert summary.counts["became_fail"] == comparison["became_fail_total"]
    assert summary.mcnemar.p_value == pytest.approx(comparison["mcnemar"]["p_value"])


def test_the_viewer_s_run_info_lists_the_recorded_rows_for_a_diff(tmp_path: Path) -> None:
    from assay.view.runinfo import read_run

    a = run(tmp_path, "a", "default: negative\n", ROWS)
    edited = [dict(r, expected="positive") if r["id"] == "m5" else r for r in ROWS]
    b = run(tmp_path, "b", "default: negative\n", edited)
    info_a, info_b = read_run("a", a), read_run("b", b)
    listed = info_a.selections["mood"].selection
    assert listed.row_ids == [r["id"] for r in ROWS] and len(listed.row_hashes) == 6
    sides = [
        Side(s.label, s.index, None, info.selections)  # as the app makes them
        for s, info in ((side(a, tmp_path), info_a), (side(b, tmp_path), info_b))
    ]
    _, summary = build_diff(*sides, tmp_path)
    assert summary.counts["data_changed"] == 1
    (a / "selection.jsonl").write_text("not json\n")  # a diff is refused, as compare refuses
    with pytest.raises(UsageError) as damaged:
        read_run("a", a).selections  # noqa: B018 - the property reads the file
    assert "selection.jsonl" in str(damaged.value) and "damaged" in str(damaged.value)
    (a / "selection.jsonl").unlink()
    assert any(p.file == "selection.jsonl" and "missing" in p.message
               for p in read_run("a", a).problems)  # fmt: skip
