"""A task pins the calibration its judge's corrected pass rate rests on (``judge.yaml#ID``,
``grader@2#ID``): a later calibration does not silently change it; a pin that names no
calibration of this judge's content, several, or one that compared nothing is refused
(issue 28 item 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import assay
from assay.api.judges import judge_asset
from assay.errors import StoreError, TaskFileError, UsageError
from tests.helpers import write
from tests.judges.test_empty_calibration import NOTHING_COMPARED, calibrate, setup

TASK = """\
task_id: judged
description: a scripted model answers; a pinned calibration corrects the judge's pass rate
agent: {{type: llm, model: mock/answers.yaml}}
dataset:
  rows:
    - {{id: a, q: one}}
    - {{id: b, q: two}}
    - {{id: c, q: three}}
initial_prompt: "${{row.q}}"
success_criteria:
  - type: llm_judge
    judge: "{judge}"
"""
ANSWERS = "replies:\n  - {match: one, reply: 'yes'}\ndefault: 'no'\n"


def _suite_calibration(tmp_path: Path, judge: str) -> str:
    write(tmp_path / "answers.yaml", ANSWERS)
    result = assay.run(write(tmp_path / "task.yaml", TASK.format(judge=judge)))
    suite = json.loads((result.run_dir / "default" / "judged" / "suite.json").read_text())
    corrected = suite["criterion_aggregates"][0]["details"]["corrected_pass_rate"]
    return str(corrected["calibration_id"])


def test_a_pinned_calibration_outlives_a_newer_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge, url = setup(tmp_path, [{"id": "n1", "out": "yes", "human": True},
                                  {"id": "n2", "out": "no", "human": False}])  # fmt: skip
    first = calibrate(judge, url, "good", tmp_path / "c1").record.calibration_id
    newer = calibrate(judge, url, "empty", tmp_path / "c2").record.calibration_id
    assert judge_asset(str(judge), store=url).calibration.calibration_id == newer  # type: ignore[union-attr]
    pinned = judge_asset(f"{judge}#{first[:8]}", store=url).calibration
    assert pinned is not None and pinned.calibration_id == first and pinned.rows == 6
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ASSAY_STORE", url)
    assert _suite_calibration(tmp_path, "judge.yaml") == newer
    assert _suite_calibration(tmp_path, f"judge.yaml#{first[:8]}") == first


def test_pins_that_name_no_usable_calibration_of_this_judge_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge, url = setup(tmp_path, NOTHING_COMPARED["every-row-unlabelled"])
    calibrate(judge, url, "good", tmp_path / "c1")
    empty = calibrate(judge, url, "empty", tmp_path / "c2").record.calibration_id
    with pytest.raises(StoreError, match="has no calibration whose id starts with 'ffff0000'"):
        judge_asset(f"{judge}#ffff0000", store=url)
    with pytest.raises(StoreError, match="compared no row and cannot be pinned"):
        judge_asset(f"{judge}#{empty[:8]}", store=url)
    with pytest.raises(UsageError, match="'#xyz' is not a calibration id"):
        judge_asset(f"{judge}#xyz", store=url)
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "answers.yaml", ANSWERS)
    with pytest.raises(TaskFileError) as caught:
        assay.run(write(tmp_path / "task.yaml", TASK.format(judge="judge.yaml#12")))
    assert "'#12' is not a calibration id" in caught.value.render()
    assert str(caught.value.field).startswith("success_criteria[0]")
