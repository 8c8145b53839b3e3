"""A row whose id is a number (``10``, ``001``) is a row in every reader of a run folder, not
a replicate's folder (``NN``) of a task without a dataset: the reports, a resume, the
viewer's index and QA's files all count it."""

from __future__ import annotations

import json
from pathlib import Path

from assay import api
from assay.results.run_folder import scan_task_jsons, task_json_paths
from assay.view.index import scan_rows
from tests.helpers import write

IDS = [str(n) for n in range(1, 13)] + ["001", "0010"]
TASK = """\
task_id: numeric-ids
description: ids that are numbers; the last three answer wrong
agent: {type: command, command: cat}
dataset: {paths: [rows.jsonl]}
initial_prompt: "${row.pred}"
success_criteria:
  - {type: classification_match, expected_label: "${row.expected}", allowed_labels: [a, b]}
"""


def _rows(tmp_path: Path) -> Path:
    wrong = set(IDS[-3:])
    lines = [json.dumps({"id": i, "pred": "b" if i in wrong else "a", "expected": "a"})
             for i in IDS]  # fmt: skip
    write(tmp_path / "rows.jsonl", "\n".join(lines) + "\n")
    return write(tmp_path / "t.yaml", TASK)


def test_numeric_row_ids_are_rows_in_the_reports_a_resume_and_the_index(tmp_path: Path) -> None:
    result = api.run([str(_rows(tmp_path))], run_dir=str(tmp_path / "runs"))
    (suite,) = result.suites
    assert (suite.rollup.rows_passed, suite.rollup.rows_failed) == (11, 3)
    suite_json = json.loads((suite.folder / "suite.json").read_text())
    accuracy = suite_json["criterion_aggregates"][0]["metrics"]["accuracy"]
    assert accuracy == 11 / 14
    run = result.run_dir
    expected = {f"default/numeric-ids/{i}/00" for i in IDS}
    assert set(scan_rows(run)) == expected
    assert {str(p.parent.relative_to(run)) for p in task_json_paths(run)} == expected
    assert {str(p.parent.relative_to(run)) for p in scan_task_jsons(run)} == expected
    again = api.resume(str(run))  # nothing left to run: every row is found finished
    assert (again.summary.tasks_run, again.summary.tasks_failed) == (14, 3)
    assert again.exit_code == result.exit_code


def test_a_task_without_a_dataset_keeps_its_replicates(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", "task_id: plain\ndescription: d\ninitial_prompt: go\n"
                 "agent: {type: command, command: 'echo a'}\n"
                 "success_criteria: [{type: response_match, expected: a}]\n")  # fmt: skip
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"), repeats=12)
    expected = {f"default/plain/{n:02d}" for n in range(12)}
    assert set(scan_rows(result.run_dir)) == expected
    assert {str(p.parent.relative_to(result.run_dir))
            for p in scan_task_jsons(result.run_dir)} == expected  # fmt: skip
