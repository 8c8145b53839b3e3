"""Where the rows' own folders are made (``TMPDIR``) against what contained rows see:
inside a ``bwrap`` or ``docker`` task's folder it is refused at plan (every row would see
the others' folders there), and outside ``/tmp`` a ``docker`` task is warned (its rows'
programs cannot be given a folder made there)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

import assay
from assay.errors import TaskFileError
from tests.helpers import write

TASK = """\
task_id: t
description: d
initial_prompt: hello
sandbox: {{driver: {driver}}}
agent: {{type: command, command: "ls -A $ASSAY_TASK_DIR"}}
success_criteria: [{{type: response_match, expected: zzz, description: d}}]
"""


def test_a_tmpdir_inside_a_contained_tasks_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = write(tmp_path / "task" / "t.yaml", TASK.format(driver="bwrap"))
    for inside in (tmp_path / "task", tmp_path / "task" / "scratch"):
        inside.mkdir(exist_ok=True)
        monkeypatch.setattr(tempfile, "tempdir", str(inside))
        with pytest.raises(TaskFileError, match=r"t\.yaml:4: sandbox\.driver: TMPDIR .* lies "
                           r"inside the task's folder .*, which every row sees"):  # fmt: skip
            assay.plan(str(task))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # above it: fine
    assert len(assay.plan(str(task)).work_items()) == 1
    write(task, TASK.format(driver="tempdir"))  # nothing contained: nothing to hide
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "task"))
    assert len(assay.plan(str(task)).work_items()) == 1


@pytest.mark.docker
def test_a_tmpdir_outside_tmp_is_warned_for_a_docker_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_image: tuple[object, str]
) -> None:
    _, image = docker_image
    task = write(tmp_path / "t.yaml", TASK.format(
        driver=f"docker, docker: {{image: '{image}'}}"))  # fmt: skip
    elsewhere = Path.home() / f".assay-test-scratch-{tmp_path.name}"
    elsewhere.mkdir(exist_ok=True)
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(elsewhere))
        warned = assay.plan(str(task)).warnings
        assert any("is outside /tmp and /var/tmp: a docker row's programs" in w for w in warned)
        monkeypatch.setattr(tempfile, "tempdir", "/tmp")
        assert not any("outside /tmp" in w for w in assay.plan(str(task)).warnings)
    finally:
        elsewhere.rmdir()
