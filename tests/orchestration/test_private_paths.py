"""What rows may not see: every assay run folder in a task's folder (a baseline's --run-dir
held each row's expected answer), found to RUN_SEARCH_DEPTH levels, outermost paths only."""

from __future__ import annotations

from pathlib import Path

from assay.orchestration.planning.containment import (
    RUN_SEARCH_DEPTH,
    private_paths,
    run_folders_in,
)
from tests.helpers import write


def run_folder(path: Path) -> Path:
    write(path / "plan.json", "{}")
    write(path / "run.json", "{}")
    return path


def test_run_folders_are_found_to_the_depth_and_not_inside_hidden_or_vendored_folders(
    tmp_path: Path,
) -> None:
    shallow = run_folder(tmp_path / "baseline" / "2026-12-01_10-00-00")
    deep = run_folder(tmp_path.joinpath(*["results", "ci", "2026", "12", "01", "b"], "run"))
    too_deep = run_folder(tmp_path.joinpath(*[f"d{i}" for i in range(RUN_SEARCH_DEPTH)], "run"))
    run_folder(tmp_path / ".cache" / "run")
    run_folder(tmp_path / "node_modules" / "run")
    run_folder(shallow / "inner")  # inside a run folder: its own, never searched
    write(tmp_path / "plan.json", "{}")  # a plan.json alone is no run folder
    found = run_folders_in(tmp_path)
    assert sorted(found) == sorted([shallow, deep])
    assert too_deep not in found


def test_private_paths_keep_the_outermost_of_nested_ones(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    this = run_folder(runs / "2026-12-07_08-00-00")
    other = run_folder(tmp_path / "baseline" / "2026-12-06_08-00-00")
    found = private_paths(this, cache=None, task_dirs=[tmp_path])
    assert runs.absolute() in found and other.absolute() in found
    assert this.absolute() not in found  # inside the runs folder, hidden with it
    assert not any(a in b.parents for a in found for b in found)


def test_run_folders_in_read_only_and_extra_mounts_are_private(tmp_path: Path) -> None:
    """A baseline run kept in a folder shown with ``sandbox.read_only`` or mounted with
    ``sandbox.docker.extra_mounts`` (outside the task's folder) handed every row's expected
    answer to the agent (a break-test, docker and bwrap)."""
    from assay.criteria.registry import default_criteria
    from assay.orchestration.planning.containment import shown_folders

    shared, data = tmp_path / "shared", tmp_path / "data"
    in_shared = run_folder(shared / "baseline" / "2026-12-06_08-00-00")
    in_data = run_folder(data / "runs" / "2026-12-06_09-00-00")
    task = default_criteria().task_model().model_validate({
        "task_id": "t", "description": "d", "initial_prompt": "p",
        "agent": {"type": "command", "command": "true"},
        "success_criteria": [{"type": "response_match", "expected": "x"}],
        "sandbox": {"driver": "docker", "read_only": [str(shared)],
                    "docker": {"image": "img", "extra_mounts": ["../data:/data"]}},
    })  # fmt: skip
    base = tmp_path / "tasks"
    assert shown_folders(task, base) == [base, shared, data]
    found = private_paths(tmp_path / "runs" / "x", cache=None,
                          task_dirs=shown_folders(task, base))  # fmt: skip
    assert in_shared.absolute() in found and in_data.absolute() in found
