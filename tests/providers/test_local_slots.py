"""A local model answers a prompt the same way in every run: one decoding slot by default
(llama.cpp's batched kernels differ by batch size), more only when asked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.providers.local import server_slots
from tests.cli.test_run import EXAMPLES, assay, latest


def test_one_slot_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSAY_LOCAL_MODEL_SLOTS", raising=False)
    assert server_slots() == 1
    monkeypatch.setenv("ASSAY_LOCAL_MODEL_SLOTS", " 3 ")
    assert server_slots() == 3


@pytest.mark.parametrize("value", ["0", "-2", "four", "1.5"])
def test_a_bad_slot_count_is_named_with_the_fix(monkeypatch: pytest.MonkeyPatch,
                                                value: str) -> None:  # fmt: skip
    monkeypatch.setenv("ASSAY_LOCAL_MODEL_SLOTS", value)
    with pytest.raises(UsageError) as caught:
        server_slots()
    assert "ASSAY_LOCAL_MODEL_SLOTS" in str(caught.value) and repr(value) in str(caught.value)
    assert "unset it" in (caught.value.hint or "")


def answers(run_dir: Path) -> dict[str, str]:
    """Each row's criterion results (the label it predicted, its score)."""
    found = {}
    for path in sorted(run_dir.rglob("task.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        found[data["task_id"]] = json.dumps(data["success_criteria_results"], sort_keys=True)
    return found


@pytest.mark.local_model(own_server=True)
def test_the_same_run_twice_gives_the_same_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """12 rows with -j 4, twice, each run starting its own server: every row's answer is the
    same (with four slots, one or two of these rows changed label from run to run)."""
    monkeypatch.delenv("ASSAY_LOCAL_MODEL_SLOTS", raising=False)
    shutil.copytree(EXAMPLES / "first_task", tmp_path / "first_task")
    runs = []
    for _ in range(2):
        done = assay("run", "first_task/task.yaml", "-j", "4", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        runs.append(answers(latest(tmp_path)))
    assert len(runs[0]) == 12 and runs[0] == runs[1]
