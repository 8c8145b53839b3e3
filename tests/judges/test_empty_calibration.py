"""A calibration that compared no row is stored marked unusable, says so, and never replaces
the calibration a judge already had (which keeps correcting pass rates)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.api.judges import calibrate_judge, judge_asset
from assay.store import Schema, open_store
from tests.agents.coding import run_assay
from tests.helpers import write

SCRIPT = """\
replies:
  - match: 'Answer: yes'
    reply: '{"reason": "y", "verdict": true}'
  - match: 'Answer: no'
    reply: '{"reason": "n", "verdict": false}'
default: 'I cannot say.'
"""

GOOD = [{"id": f"g{i}", "out": out, "human": out == "yes"}
        for i, out in enumerate(["yes", "no", "yes", "no", "yes", "no"])]  # fmt: skip
NOTHING_COMPARED = {
    "every-row-unlabelled": [{"id": "u1", "out": "yes", "human": None},
                             {"id": "u2", "out": "no", "human": None}],
    "every-verdict-an-error": [{"id": "e1", "out": "huh", "human": True},
                               {"id": "e2", "out": "what", "human": False}],
    "unlabelled-and-errors": [{"id": "m1", "out": "yes", "human": None},
                              {"id": "m2", "out": "huh", "human": True}],
}  # fmt: skip


def setup(tmp_path: Path, rows: list[dict[str, Any]]) -> tuple[Path, str]:
    write(tmp_path / "script.yaml", SCRIPT)
    judge = write(tmp_path / "judge.yaml", "model: mock/script.yaml\nrubric: 'Answer: "
                  "${response}'\nverdict: {kind: binary}\nretries: 0\n")  # fmt: skip
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        for name, data in (("good", GOOD), ("empty", rows)):
            store.create_dataset(name, Schema({"out": "string", "human": "json"}))
            store.add(name, data)
    return judge, url


def calibrate(judge: Path, url: str, dataset: str, folder: Path) -> Any:
    return calibrate_judge(str(judge), dataset=dataset, label_field="human",
                           output_field="out", store=url, output_dir=folder)  # fmt: skip


@pytest.mark.parametrize("rows", NOTHING_COMPARED.values(), ids=NOTHING_COMPARED.keys())
def test_a_newer_calibration_that_compared_nothing_keeps_the_older_one(
    tmp_path: Path, rows: list[dict[str, Any]]
) -> None:
    judge, url = setup(tmp_path, rows)
    first = calibrate(judge, url, "good", tmp_path / "c1")
    assert first.report["rows_compared"] == 6 and first.report["usable"] is True
    empty = calibrate(judge, url, "empty", tmp_path / "c2")
    assert empty.report["rows_compared"] == 0
    assert empty.report["usable"] is False
    note = empty.report["notes"][0]
    assert "nothing was compared" in note and "stored marked unusable" in note
    assert f"keeps calibration {first.record.calibration_id} (6 rows compared)" in note
    assert "stored marked unusable" in (tmp_path / "c2" / "calibration.md").read_text()
    chosen = judge_asset(str(judge), store=url).calibration
    assert chosen is not None
    assert chosen.calibration_id == first.record.calibration_id and chosen.rows == 6


def test_a_calibration_that_compared_nothing_leaves_the_judge_uncalibrated(
    tmp_path: Path,
) -> None:
    judge, url = setup(tmp_path, NOTHING_COMPARED["every-row-unlabelled"])
    empty = calibrate(judge, url, "empty", tmp_path / "c")
    assert empty.report["usable"] is False
    assert "the judge stays uncalibrated" in empty.report["notes"][0]
    assert judge_asset(str(judge), store=url).calibration is None


def test_the_command_exits_1_when_nothing_was_compared(tmp_path: Path) -> None:
    judge, url = setup(tmp_path, NOTHING_COMPARED["every-row-unlabelled"])
    done = run_assay("judge", "calibrate", str(judge), "--dataset", "empty", "--label", "human",
                     "--output-field", "out", "--store", url, "-o", str(tmp_path / "c"),
                     cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no row was compared: the calibration is stored marked unusable" in done.stderr
    good = run_assay("judge", "calibrate", str(judge), "--dataset", "good", "--label", "human",
                     "--output-field", "out", "--store", url, "-o", str(tmp_path / "g"),
                     cwd=tmp_path)  # fmt: skip
    assert good.returncode == 0, good.stdout + good.stderr
