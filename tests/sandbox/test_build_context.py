"""What a Dockerfile's build context leaves out (:mod:`assay.sandbox.build_context`): what
assay keeps in a task's folder, so that neither the image nor its tag changes with a run."""

from __future__ import annotations

import os
from pathlib import Path

from assay.sandbox.build_context import context_hash, copy_context, left_out, needs_copy
from tests.helpers import write


def run_folder(path: Path) -> None:
    write(path / "plan.json", "{}")
    write(path / "run.json", "{}")


def test_the_runs_root_goes_with_its_runs_but_a_folder_with_anything_else_stays(
    tmp_path: Path,
) -> None:
    write(tmp_path / "Dockerfile", "FROM scratch\n")
    write(tmp_path / "notes.txt", "part of the image\n")
    write(tmp_path / "elsewhere" / "data.csv", "a,b\n")
    before = context_hash(tmp_path / "Dockerfile")
    run_folder(tmp_path / "runs" / "2026-12-06_10-00-00")
    os.symlink("2026-12-06_10-00-00", tmp_path / "runs" / "latest")
    run_folder(tmp_path / "elsewhere" / "one")
    assert left_out(tmp_path, os.listdir(tmp_path)) == {"runs"}
    assert left_out(tmp_path / "elsewhere", ["one", "data.csv"]) == {"one"}
    assert needs_copy(tmp_path) and context_hash(tmp_path / "Dockerfile") == before
    copied = tmp_path.parent / "copied"
    copy_context(tmp_path, copied)
    assert sorted(p.name for p in copied.iterdir()) == ["Dockerfile", "elsewhere", "notes.txt"]
    assert sorted(p.name for p in (copied / "elsewhere").iterdir()) == ["data.csv"]


def test_an_empty_folder_stays_in_the_context(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()  # the user's own empty folder, not a folder of runs
    assert left_out(tmp_path, ["runs"]) == set()


def test_a_folder_above_the_runs_with_nothing_else_goes_too_and_an_empty_one_counts(
    tmp_path: Path,
) -> None:
    write(tmp_path / "Dockerfile", "FROM scratch\n")
    before = context_hash(tmp_path / "Dockerfile")
    run_folder(tmp_path / "results" / "nested" / "2026-12-06_10-00-00")  # --run-dir results/nested
    assert left_out(tmp_path, ["results", "Dockerfile"]) == {"results"}
    assert context_hash(tmp_path / "Dockerfile") == before
    (tmp_path / "placeholder").mkdir()  # an empty folder of the user's: the engine copies it
    assert context_hash(tmp_path / "Dockerfile") != before
