"""Trees an agent made, removed and walked at any depth: Python 3.11's ``shutil.rmtree`` and
``os.walk`` recursed once per level, so a row whose agent left a folder a thousand levels
deep crashed in its clean-up and left a scratch folder that crashed every later command's
start-up sweep (a break-test). The oracle is the file system itself."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.sandbox.trees import remove_tree, walk_tree

DEPTH = sys.getrecursionlimit() + 500


@pytest.fixture(autouse=True)
def no_deep_tree_left(tmp_path: Path) -> Iterator[None]:
    """Whatever a test leaves is removed here: pytest's own clean-up of old temporary
    folders would stop on a deep tree with the same RecursionError."""
    yield
    remove_tree(tmp_path)


def deep_tree(root: Path, depth: int = DEPTH) -> None:
    """``root/d/d/…/d/leaf.txt``, ``depth`` folders deep, made relative to each folder (its
    full path is past ``PATH_MAX``), the deepest one made read-only by its owner."""
    root.mkdir()
    here = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=here)
        below = os.open("d", os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = below
    with open(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=here), "w") as leaf:
        leaf.write("x")
    os.fchmod(here, 0o500)
    os.close(here)


def test_a_tree_deeper_than_the_recursion_limit_is_removed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    deep_tree(tmp_path / "row")
    (tmp_path / "row" / "link").symlink_to(outside)
    remove_tree(tmp_path / "row")
    assert not (tmp_path / "row").exists()
    assert outside.read_text() == "keep"  # a link is removed, never followed


def test_a_file_a_link_and_a_missing_path_are_removed_or_left_alone(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    (tmp_path / "l").symlink_to(tmp_path)
    for name in ("f", "l", "missing"):
        remove_tree(tmp_path / name)
    assert sorted(os.listdir(tmp_path)) == []


def test_walk_tree_walks_as_os_walk_does_without_recursion(tmp_path: Path) -> None:
    for folder in ("a/b/c", "a/e", "f"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "a" / "b" / "x.txt").write_text("x")
    (tmp_path / "a" / "link").symlink_to(tmp_path / "f")
    ours = sorted((f, sorted(d), sorted(n)) for f, d, n in walk_tree(tmp_path))
    theirs = sorted((f, sorted(d), sorted(n)) for f, d, n in os.walk(tmp_path))
    a = str(tmp_path / "a")  # a link to a folder is a name of its folder's, never a folder
    assert ours == [(f, d, n) if f != a else (f, ["b", "e"], ["link"]) for f, d, n in theirs]
    deep_tree(tmp_path / "deep", depth=DEPTH)
    assert sum(1 for _ in walk_tree(tmp_path / "deep")) > 1000  # no RecursionError
    remove_tree(tmp_path / "deep")


def test_a_deep_tree_a_row_left_is_graded_and_gone_and_an_old_one_is_swept(
    tmp_path: Path,
) -> None:
    import assay
    from assay.cli.shared.scratch import LOCK, PREFIX, sweep

    task = tmp_path / "task.yaml"
    task.write_text(
        "task_id: deep\ndescription: d\ninitial_prompt: go\nsandbox: {driver: tempdir}\n"
        'agent:\n  type: command\n  command: >-\n    python3 -c "import os\n'
        f"    [(os.mkdir('d'), os.chdir('d')) for _ in range({DEPTH})]\"; echo answer\n"
        "success_criteria:\n  - {type: response_match, expected: answer, match: contains}\n"
    )
    result = assay.run([str(task)], run_dir=str(tmp_path / "runs"))
    assert (result.exit_code, result.summary.tasks_succeeded) == (0, 1)
    (tmp_path / "scratch").mkdir()
    left = tmp_path / "scratch" / f"{PREFIX}old"  # a leftover of a run before this fix
    deep_tree(left)
    (left / LOCK).touch()
    assert sweep(tmp_path / "scratch") == [left] and not left.exists()
